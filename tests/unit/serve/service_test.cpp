// serve::Service end to end on the backends every command uses: a real H200 sawtooth trace
// replayed ten times as fast must come out of the sliding diagnosis as the same finding that
// `gpudoc diagnose` gives the file, in the metrics snapshot and the JSON state; fake GPUs' values
// and processes reach the snapshot, the event sequence advances, and stop() wakes every waiter.
#include "serve/service.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "telemetry/backend_source.hpp"
#include "telemetry/recorder.hpp"

namespace gpudoc::serve {
namespace {

using namespace std::chrono_literals;

struct Opened {
  std::unique_ptr<telemetry::BackendSource> source;
  telemetry::Live live;
  telemetry::TraceHeader header;
  telemetry::SamplerConfig config;
};

Opened open(const std::string& spec_text) {
  Opened o;
  auto spec = telemetry::parse_backend_spec(spec_text, "test");
  EXPECT_TRUE(spec) << spec.error().message();
  o.source = std::make_unique<telemetry::BackendSource>(*spec);
  auto live = o.source->open_gpus();
  EXPECT_TRUE(live) << live.error().message();
  o.live = *live;
  o.config.periods[gpu::index(gpu::MetricGroup::kUtilization)] = 1000ms;
  auto header = telemetry::make_header(*o.live.backend, *o.live.clock, o.config, {});
  EXPECT_TRUE(header) << header.error().message();
  o.header = *header;
  return o;
}

template <typename Pred>
bool eventually(Pred pred, std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return pred();
}

TEST(Service, SlidingDiagnosisOfAReplayedSawtoothTrace) {
  auto o = open(std::string("replay:") + GPUDOC_SOURCE_DIR + "/tests/data/sawtooth_p1000_d50.jsonl@10");
  ServiceOptions so;
  so.sampler = o.config;
  so.diagnose_window = 20s;
  so.diagnose_every = 1s;
  so.backend = "replay";
  Service service(o.live, o.header, so);
  ASSERT_TRUE(service.start());
  const bool found = eventually(
      [&] {
        for (const auto& f : service.metrics_snapshot().findings)
          if (f.id == "sawtooth") return true;
        return false;
      },
      10s);
  ASSERT_TRUE(found) << service.state_json().dump(2);
  const Snapshot s = service.metrics_snapshot();
  for (const auto& f : s.findings)
    if (f.id == "sawtooth") {
      EXPECT_EQ(f.gpu, 0);
      ASSERT_TRUE(f.gpu_time_lost_s);
      EXPECT_GT(*f.gpu_time_lost_s, 0);
    }
  EXPECT_TRUE(s.self.last_diagnosis_seconds);
  const auto j = service.state_json();
  EXPECT_EQ(j["schema"], 1);
  EXPECT_EQ(j["backend"], "replay");
  ASSERT_EQ(j["gpus"].size(), 1u);
  EXPECT_EQ(j["gpus"][0]["name"], "NVIDIA H200");
  bool in_json = false;
  for (const auto& f : j["findings"]) {
    if (f["id"] != "sawtooth") continue;
    in_json = true;
    EXPECT_EQ(f["gpus"], nlohmann::json::array({0}));
    EXPECT_LT(f["window_start_unix_ns"].get<std::int64_t>(), f["window_end_unix_ns"].get<std::int64_t>());
    // The window lies in the trace's own time (a replay runs on the recording's clock).
    EXPECT_GE(f["window_start_unix_ns"].get<std::int64_t>(), o.header.start_unix_ns);
    EXPECT_FALSE(f["summary"].get<std::string>().empty());
    EXPECT_FALSE(f["next_step"].get<std::string>().empty());
  }
  EXPECT_TRUE(in_json) << j.dump(2);
  const auto h = service.history_json(30);
  EXPECT_TRUE(h["gpus"][0]["series"].contains("gpu_utilization_percent")) << h.dump();
  EXPECT_TRUE(service.liveness().ok) << service.liveness().reason;  // the sampling loop ticks
  EXPECT_TRUE(service.metrics_snapshot().self.sampler_running);     // gpudoc_sampler_up says the same
  EXPECT_EQ(service.state_json()["sampler_up"], true);
  service.stop();
  EXPECT_FALSE(service.running());
  EXPECT_FALSE(service.liveness().ok);
  EXPECT_EQ(service.liveness().reason, "the sampler is not running");
  EXPECT_FALSE(service.metrics_snapshot().self.sampler_running);
  EXPECT_EQ(service.state_json()["sampler_up"], false);
}

TEST(Service, FakeGpusValuesProcessesAndUpdates) {
  auto o = open("fake:2");
  ServiceOptions so;
  so.sampler = o.config;
  std::atomic<int> labelled{0};
  so.label_process = [&labelled](ProcessSnapshot& p) {
    ++labelled;
    p.container_id = "c-" + std::to_string(p.pid);
  };
  Service service(o.live, o.header, so);
  ASSERT_TRUE(service.start());
  const std::uint64_t first = service.wait_for_update(0, 3s);
  EXPECT_GT(first, 0u);
  const std::uint64_t second = service.wait_for_update(first, 3s);
  EXPECT_GT(second, first);  // about once a second
  ASSERT_TRUE(eventually(
      [&] {
        const auto s = service.metrics_snapshot();
        return s.gpus.size() == 2 && s.gpus[1].latest[gpu::index(gpu::Metric::kPowerWatts)].has_value() &&
               !s.gpus[1].processes.empty();
      },
      5s));
  const auto s = service.metrics_snapshot();
  EXPECT_TRUE(s.self.sampler_running);
  ASSERT_EQ(s.self.gpus.size(), 2u);
  EXPECT_GT(s.self.gpus[0].reads, 0u);
  ASSERT_FALSE(s.gpus[1].processes.empty());
  for (const auto& g : s.gpus)
    for (const auto& p : g.processes) EXPECT_EQ(p.container_id, "c-" + std::to_string(p.pid));
  EXPECT_GT(labelled, 0);
  // A stream's loop: it ends only when stop() wakes it with 0.
  std::atomic<int> updates{0};
  std::thread waiter([&] {
    for (std::uint64_t seq = second; (seq = service.wait_for_update(seq, 30s)) != 0;) ++updates;
  });
  std::this_thread::sleep_for(1500ms);
  const auto t0 = std::chrono::steady_clock::now();
  service.stop();
  waiter.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);  // hang guard: normally ~ms (the wait is 30 s); 10x+ margin
  EXPECT_GE(updates.load(), 1);                          // it did see the updates while running
  EXPECT_EQ(service.wait_for_update(second, 30s), 0u);   // and once stopped, 0 at once
  EXPECT_FALSE(service.metrics_snapshot().self.sampler_running);
}

}  // namespace
}  // namespace gpudoc::serve
