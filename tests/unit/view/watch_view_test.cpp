#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "core/text.hpp"
#include "gpu/fake/fake_backend.hpp"
#include "support/temp_dir.hpp"
#include "telemetry/live_state.hpp"
#include "telemetry/sampler.hpp"
#include "view/watch_render.hpp"

namespace gpudoc::view {
namespace {

using namespace std::chrono_literals;
using gpu::Metric;

gpu::DeviceInfo h200(int index) {
  gpu::DeviceInfo d;
  d.index = index;
  d.name = "NVIDIA H200";
  d.pci_bus_id = "00000000:18:00.0";
  d.memory_total_bytes = 143771ULL << 20;
  d.sm_clock_max_mhz = 1980;
  d.temperature_slowdown_celsius = 89;
  d.power_limit_default_watts = 700;
  return d;
}

telemetry::SamplerRecord samples(int gpu, std::int64_t t_ns, std::vector<std::pair<Metric, double>> v) {
  telemetry::SamplerRecord r;
  r.gpu = gpu;
  for (auto [m, x] : v) r.samples.push_back({m, x, t_ns});
  return r;
}

constexpr std::int64_t kSec = 1'000'000'000;

TEST(WatchRender, FitsEightyColumnsAndShowsWhatItKnows) {
  telemetry::LiveState s({h200(0), h200(1)}, telemetry::SamplerConfig::default_periods());
  for (int i = 0; i < 20; ++i)
    s.add(samples(0, 10 * kSec + i * kSec / 5,
                  {{Metric::kGpuUtilizationPercent, 100},
                   {Metric::kPowerWatts, 690},
                   {Metric::kSmClockMhz, 1530},
                   {Metric::kClockEventReasonsMask, 4},
                   {Metric::kGpmSmActivityPercent, 92},
                   {Metric::kMemoryUsedBytes, 40.0 * (1ULL << 30)}}));
  telemetry::SamplerRecord lost;
  lost.kind = telemetry::SamplerRecord::Kind::kEvent;
  lost.gpu = 1;
  lost.event_kind = "gpu_lost";
  s.add(lost);
  s.set_now(14 * kSec);
  std::string frame = render_watch(s, {.title = "gpudoc watch — test", .banner = "", .clock = "12:00:00"});
  std::size_t start = 0;
  while (start < frame.size()) {
    auto end = frame.find('\n', start);
    std::string line = frame.substr(start, end - start);
    EXPECT_LE(core::display_width(line), 80u) << line;
    start = end + 1;
  }
  EXPECT_NE(frame.find("100 %"), std::string::npos) << frame;
  EXPECT_NE(frame.find("690 W / 700 W"), std::string::npos) << frame;
  EXPECT_NE(frame.find("SM 1530 / 1980 MHz"), std::string::npos) << frame;
  EXPECT_NE(frame.find("████████   sw_power_cap ← held down"), std::string::npos) << frame;  // held down all along
  EXPECT_NE(frame.find("GPU 1 NVIDIA H200 · 00000000:18:00.0  [LOST]"), std::string::npos) << frame;
  EXPECT_NE(frame.find("40.0 GiB / 140.4 GiB"), std::string::npos) << frame;
  auto j = watch_json(s);
  EXPECT_EQ(j["gpus"][0]["power_watts"], 690);
  EXPECT_FALSE(j["gpus"][1].contains("power_watts"));
  EXPECT_EQ(j["gpus"][1]["status"], "lost");
}

TEST(WatchRender, NamesFromGpusProcessesAndTracesCannotDriveTheTerminal) {
  gpu::DeviceInfo d = h200(0);
  d.name = "H200\x1b[2J\nERROR: fake";
  telemetry::LiveState s({d}, telemetry::SamplerConfig::default_periods());
  s.add(samples(0, 10 * kSec, {{Metric::kPowerWatts, 300}}));
  telemetry::SamplerRecord procs;
  procs.kind = telemetry::SamplerRecord::Kind::kProcesses;
  procs.gpu = 0;
  procs.time_unix_ns = 10 * kSec;
  gpu::ProcessSample p;
  p.pid = 42;
  p.name = "py\x1b]0;x\x07";
  p.memory_used_bytes = 1ULL << 30;
  procs.processes = {p};
  s.add(procs);
  telemetry::SamplerRecord ev;
  ev.kind = telemetry::SamplerRecord::Kind::kEvent;
  ev.gpu = 0;
  ev.event_kind =
      "x\xc2\x9b"
      "31mid";
  s.add(ev);
  s.set_now(10 * kSec + kSec / 10);
  const std::string frame = render_watch(s, {.title = "gpudoc watch — test", .banner = "", .clock = "12:00:00"});
  EXPECT_EQ(frame.find('\x1b'), std::string::npos) << frame;
  EXPECT_EQ(frame.find('\x07'), std::string::npos) << frame;
  EXPECT_EQ(frame.find("\xc2\x9b"), std::string::npos) << frame;
  EXPECT_NE(frame.find("GPU 0 H200\\x1b[2J\\x0aERROR: fake"), std::string::npos) << frame;
  EXPECT_NE(frame.find("py\\x1b]0;x"), std::string::npos) << frame;
  EXPECT_NE(frame.find("x\\u{009b}31mid"), std::string::npos) << frame;
  // Every line still fits: the escapes are counted in the width.
  std::size_t start = 0;
  while (start < frame.size()) {
    auto end = frame.find('\n', start);
    EXPECT_LE(core::display_width(frame.substr(start, end - start)), 80u);
    start = end + 1;
  }
  // JSON carries the names exactly.
  const auto j = watch_json(s);
  EXPECT_EQ(j["gpus"][0]["name"], d.name);
  EXPECT_EQ(j["gpus"][0]["processes"][0]["name"], p.name);
}

// A replay of a trace cut off mid-line says so before its first frame; a clean trace and fake GPUs
// say nothing.
TEST(WatchStartWarnings, NameWhatTheReplayDropped) {
  const std::string source = std::string(GPUDOC_SOURCE_DIR) + "/tests/data/sawtooth_p1000_d50.jsonl";
  const testing::TempDir dir("gpudoc-watch-view");
  const std::string cut = dir.file("cut.jsonl");
  {
    std::ifstream in(source);
    std::ofstream out(cut);
    std::string line, previous;
    bool first = true;
    while (std::getline(in, line)) {  // every line but the end line
      if (!first) out << previous << "\n";
      previous = line;
      first = false;
    }
    out << "{\"type\":\"samp";  // the recording stopped mid-line
  }
  telemetry::BackendSource replay(*telemetry::parse_backend_spec("replay:" + cut, "--backend"));
  auto live = replay.open_gpus();
  ASSERT_TRUE(live.ok()) << live.error().message();
  const std::string text = watch_start_warnings(*live);
  EXPECT_EQ(text.rfind("gpudoc: warning: " + cut + " line ", 0), 0u) << text;
  EXPECT_NE(text.find("cut off in the middle of this line"), std::string::npos) << text;
  EXPECT_EQ(text.back(), '\n');

  telemetry::BackendSource clean(*telemetry::parse_backend_spec("replay:" + source, "--backend"));
  EXPECT_EQ(watch_start_warnings(*clean.open_gpus()), "");
  telemetry::BackendSource fake(*telemetry::parse_backend_spec("fake:1", "--backend"));
  EXPECT_EQ(watch_start_warnings(*fake.open_gpus()), "");
}

// The note after a view: a replay names its file, other GPUs that are not this machine's their spec;
// real GPUs and --json get none.
TEST(WatchEndNote, SaysWhenTheGpusWereNotLive) {
  telemetry::BackendSource fake(*telemetry::parse_backend_spec("fake:2", "--backend"));
  auto fake_live = fake.open_gpus();
  ASSERT_TRUE(fake_live.ok()) << fake_live.error().message();
  EXPECT_EQ(watch_end_note(*fake_live, false), "gpudoc: those were fake:2, not this machine's GPUs.\n");
  EXPECT_EQ(watch_end_note(*fake_live, true), "");

  const std::string trace = std::string(GPUDOC_SOURCE_DIR) + "/tests/data/sawtooth_p1000_d50.jsonl";
  telemetry::BackendSource replay(*telemetry::parse_backend_spec("replay:" + trace + "@20", "--backend"));
  auto replay_live = replay.open_gpus();
  ASSERT_TRUE(replay_live.ok()) << replay_live.error().message();
  EXPECT_EQ(watch_end_note(*replay_live, false), "gpudoc: that was a replay of " + trace + ", not a live GPU.\n");
  EXPECT_EQ(watch_end_note(*replay_live, true), "");

  const telemetry::BackendSpec nvml;
  telemetry::Live real;
  real.spec = &nvml;
  EXPECT_EQ(watch_end_note(real, false), "");
}

}  // namespace
}  // namespace gpudoc::view
