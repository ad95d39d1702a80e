// The backend chosen once per run: the spec forms and their errors, which source wins, opening a
// fake and a replay (marked as such), the replay's clock, and that nothing is opened before asked.
#include "telemetry/backend_source.hpp"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>

#include "core/clock.hpp"
#include "telemetry/replay_backend.hpp"

namespace gpudoc::telemetry {
namespace {

std::string data_file(const std::string& name) { return std::string(GPUDOC_SOURCE_DIR) + "/tests/data/" + name; }

TEST(BackendSpec, ParsesTheThreeForms) {
  auto nvml = parse_backend_spec("nvml", "--backend");
  ASSERT_TRUE(nvml.ok());
  EXPECT_EQ(nvml->kind, BackendKind::kNvml);

  auto fake = parse_backend_spec("fake:8", "GPUDOC_BACKEND");
  ASSERT_TRUE(fake.ok());
  EXPECT_EQ(fake->kind, BackendKind::kFake);
  EXPECT_EQ(fake->gpus, 8);
  EXPECT_EQ(fake->origin, "GPUDOC_BACKEND");
  EXPECT_EQ(fake->text, "fake:8");

  auto replay = parse_backend_spec("replay:run.jsonl", "--backend");
  ASSERT_TRUE(replay.ok());
  EXPECT_EQ(replay->kind, BackendKind::kReplay);
  EXPECT_EQ(replay->file, "run.jsonl");
  EXPECT_EQ(replay->speed, 1.0);

  auto fast = parse_backend_spec("replay:/data/run@host.jsonl@12.5", "--backend");
  ASSERT_TRUE(fast.ok());
  EXPECT_EQ(fast->file, "/data/run@host.jsonl");  // an @ not followed by a number is the file's
  EXPECT_EQ(fast->speed, 12.5);
  auto at_name = parse_backend_spec("replay:run@host.jsonl", "--backend");
  ASSERT_TRUE(at_name.ok());
  EXPECT_EQ(at_name->file, "run@host.jsonl");
  EXPECT_EQ(at_name->speed, 1.0);
}

TEST(BackendSpec, BadSpecsAreUsageErrorsNamingTheSpecAndTheForms) {
  for (const char* bad :
       {"", "nvm", "NVML", "fake", "fake:", "fake:0", "fake:65", "fake:1.5", "fake:two", "replay:", "replay:@2",
        "replay:run.jsonl@0", "replay:run.jsonl@-1", "replay:run.jsonl@1001", "cuda:0"}) {
    auto r = parse_backend_spec(bad, "--backend");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().kind(), core::ErrorKind::kUsage) << bad;
    EXPECT_NE(r.error().message().find(std::string("--backend '") + bad + "'"), std::string::npos)
        << r.error().message();
    EXPECT_NE(r.error().message().find("nvml, replay:FILE[@SPEED]"), std::string::npos) << r.error().message();
    EXPECT_NE(r.error().message().find("fake:N"), std::string::npos) << r.error().message();
  }
}

TEST(BackendSpec, TheFlagWinsOverTheEnvironmentWhichWinsOverTheDefault) {
  EXPECT_EQ(choose_backend_spec(std::nullopt, nullptr)->kind, BackendKind::kNvml);
  EXPECT_EQ(choose_backend_spec(std::nullopt, "")->kind, BackendKind::kNvml);
  EXPECT_EQ(choose_backend_spec(std::nullopt, "fake:2")->origin, "GPUDOC_BACKEND");
  auto flag = choose_backend_spec(std::string("fake:3"), "fake:2");
  EXPECT_EQ(flag->gpus, 3);
  EXPECT_EQ(flag->origin, "--backend");
  auto bad_env = choose_backend_spec(std::nullopt, "fake:zero");
  ASSERT_FALSE(bad_env.ok());
  EXPECT_NE(bad_env.error().message().find("GPUDOC_BACKEND 'fake:zero'"), std::string::npos);
}

TEST(BackendSource, FakeGpusAreH200LikeAndMarked) {
  BackendSource source(*parse_backend_spec("fake:2", "--backend"));
  auto live = source.open_gpus();
  ASSERT_TRUE(live.ok()) << live.error().message();
  EXPECT_EQ(live->gpu_count, 2);
  EXPECT_FALSE(live->real());
  EXPECT_EQ(live->replay, nullptr);
  EXPECT_NE(live->banner.find("FAKE GPUs, not this machine: 2 scripted H200s"), std::string::npos) << live->banner;
  auto info = live->backend->device_info(1);
  ASSERT_TRUE(info.ok());
  EXPECT_NE(info->name.find("H200"), std::string::npos);
  EXPECT_TRUE(live->backend->health_facts(0).ok());
  auto fast = live->backend->read(0, gpu::MetricGroup::kFast);
  ASSERT_TRUE(fast.ok());
  for (const auto& m : fast->metrics)
    if (m.metric == gpu::Metric::kPowerWatts) {
      EXPECT_GE(m.value, 500.0);  // a steady load, not idle
      EXPECT_LE(m.value, 700.0);
    }
  // Opened once: the same backend again.
  EXPECT_EQ(source.open()->backend, live->backend);
  EXPECT_EQ(describe(source.spec())["kind"], "fake");
  EXPECT_EQ(describe(source.spec())["gpus"], 2);
}

TEST(BackendSource, AReplayIsMarkedAndRunsOnTheTracesClock) {
  BackendSource source(*parse_backend_spec("replay:" + data_file("sawtooth_p1000_d50.jsonl") + "@20", "--backend"));
  auto live = source.open_gpus();
  ASSERT_TRUE(live.ok()) << live.error().message();
  EXPECT_EQ(live->gpu_count, 1);
  ASSERT_NE(live->replay, nullptr);
  EXPECT_EQ(live->banner.rfind("REPLAY, not live (×20): sawtooth_p1000_d50.jsonl, recorded 2026-11-29", 0), 0u)
      << live->banner;
  EXPECT_EQ(live->backend->system_info()->backend, "replay");
  // The command's clock runs 20 times as fast as the wall: 50 ms of waiting is a second of trace.
  const auto t0 = live->clock->now();
  core::SystemClock wall;
  wall.sleep_until(wall.now() + std::chrono::milliseconds(50));
  EXPECT_GE(core::to_seconds(live->clock->now() - t0), 0.9);
  EXPECT_FALSE(live->backend->finished());
}

TEST(BackendSource, ReplayErrorsNameTheFileAndWhereTheSpecCameFrom) {
  BackendSource source(*parse_backend_spec("replay:/nonexistent/run.jsonl", "GPUDOC_BACKEND"));
  auto live = source.open();
  ASSERT_FALSE(live.ok());
  EXPECT_EQ(core::exit_code(live.error().kind()), 2);
  EXPECT_NE(live.error().message().find("GPUDOC_BACKEND replay:/nonexistent/run.jsonl"), std::string::npos)
      << live.error().message();
  // The same error again, not a second attempt.
  EXPECT_EQ(source.open().error().message(), live.error().message());
}

// `watch TRACE`: the replay --backend replay:TRACE@SPEED gives, unless a --backend was given too.
TEST(TraceArgumentSpec, IsTheReplayOfTheTraceAndRefusesASecondBackend) {
  const std::string trace = data_file("sawtooth_p1000_d50.jsonl");
  auto spec = trace_argument_spec(BackendSpec{}, trace, 2.5);
  ASSERT_TRUE(spec.ok()) << spec.error().message();
  EXPECT_EQ(spec->kind, BackendKind::kReplay);
  EXPECT_EQ(spec->file, trace);
  EXPECT_DOUBLE_EQ(spec->speed, 2.5);
  EXPECT_EQ(spec->origin, "");
  // The environment's backend gives way to the argument; the flag's does not.
  EXPECT_TRUE(trace_argument_spec(*choose_backend_spec(std::nullopt, "fake:2"), trace, 1).ok());
  auto both = trace_argument_spec(*choose_backend_spec(std::string("fake:2"), nullptr), trace, 1);
  ASSERT_FALSE(both.ok());
  EXPECT_EQ(both.error().kind(), core::ErrorKind::kUsage);
  EXPECT_EQ(both.error().message(), "give a TRACE or --backend fake:2, not both");
  EXPECT_FALSE(trace_argument_spec(BackendSpec{}, "", 1).ok());  // replay: needs a file
}

TEST(BackendSource, WithoutNvmlTheErrorSaysWhatStillWorks) {
  if (dlopen("libnvidia-ml.so.1", RTLD_LAZY | RTLD_LOCAL) != nullptr) GTEST_SKIP() << "NVML is installed here";
  BackendSource source;
  auto live = source.open_gpus();
  ASSERT_FALSE(live.ok());
  EXPECT_EQ(live.error().kind(), core::ErrorKind::kEnvironment);
  EXPECT_NE(live.error().message().find("libnvidia-ml.so.1"), std::string::npos);
  EXPECT_NE(live.error().message().find("--backend fake:2"), std::string::npos);
  EXPECT_NE(live.error().message().find("gpudoc watch tests/data/"), std::string::npos);
  auto maybe = source.open_or_reason();
  EXPECT_EQ(maybe.backend, nullptr);
  EXPECT_EQ(maybe.why_not, live.error().message());
}

TEST(ReplayClock, RunsSpeedTimesAsFastAsItsBase) {
  core::ManualClock base;
  ReplayClock clock(base, 10.0);
  const auto t0 = clock.now();
  const auto u0 = clock.unix_now_ns();
  base.advance(std::chrono::seconds(1));
  EXPECT_EQ(clock.now() - t0, std::chrono::seconds(10));
  EXPECT_EQ(clock.unix_now_ns() - u0, 10'000'000'000);
  // Sleeping 5 s of replay time is 0.5 s of the base's.
  const auto b0 = base.now();
  clock.sleep_until(clock.now() + std::chrono::seconds(5));
  EXPECT_EQ(base.now() - b0, std::chrono::milliseconds(500));
}

TEST(ReplayBackend, LiveTimestampsStartWhenTheReplayOpens) {
  core::ManualClock clock;
  auto trace = parse_trace(
      R"({"type":"header","format":"gpudoc-trace","version":1,"host":"h","start_unix_ns":1000,"gpus":[{"index":0,"name":"X"}],"metrics":[]})"
      "\n"
      R"({"type":"sample","t":0.5,"gpu":0,"power_watts":100})"
      "\n",
      "t.jsonl");
  ASSERT_TRUE(trace.ok());
  auto r = open_replay_backend(std::move(*trace), clock, {.speed = 1.0, .live_timestamps = true});
  ASSERT_TRUE(r.ok());
  clock.advance(std::chrono::seconds(1));
  auto fast = (*r)->read(0, gpu::MetricGroup::kFast);
  ASSERT_TRUE(fast.ok());
  ASSERT_EQ(fast->metrics.size(), 1u);
  EXPECT_EQ(fast->metrics[0].time_unix_ns, clock.unix_now_ns() - 1'000'000'000 + 500'000'000);
  EXPECT_TRUE((*r)->finished());
}

}  // namespace
}  // namespace gpudoc::telemetry
