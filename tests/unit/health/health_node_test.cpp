// The whole node check against the fake backend: the load runs beside the readings (an injected
// load, no CUDA), XIDs arrive through the backend's events, a lost GPU is named, --gpus is checked,
// and every next step a check prints is one of its catalog entry's steps.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <regex>
#include <set>
#include <string>

#include "findings/finding.hpp"
#include "gpu/fake/fake_backend.hpp"
#include "health/load.hpp"
#include "health/node.hpp"

namespace gpudoc::health {
namespace {

// A machine that answers nothing: no files, no commands, no CPUs known. Read-only, so thread-safe.
class EmptyHost final : public HostReader {
 public:
  std::optional<std::string> read_file(const std::string&) override { return std::nullopt; }
  std::vector<std::string> glob(const std::string&) override { return {}; }
  std::optional<std::string> real_path(const std::string&) override { return std::nullopt; }
  std::optional<CommandOutput> run(const std::vector<std::string>&, std::chrono::milliseconds) override {
    return std::nullopt;
  }
  std::vector<int> allowed_cpus() override { return {}; }
  std::optional<std::string> env(const std::string&) override { return std::nullopt; }
};

// A load that "runs" at once: the readings beside it count as under load.
LoadFn instant_load(std::atomic<int>& calls) {
  return [&calls](int, core::MonoTime, std::atomic<bool>& started) {
    ++calls;
    started = true;
    return core::ok_status();
  };
}

const CheckResult* find(const std::vector<CheckResult>& rs, const std::string& check, std::optional<int> gpu) {
  for (const auto& r : rs)
    if (r.check == check && r.gpu == gpu) return &r;
  return nullptr;
}

TEST(HealthNode, LoadRunsOnEveryGpuAndTheClocksAreJudgedUnderIt) {
  core::SystemClock clock;
  gpu::FakeBackend fake(clock, 2);
  fake.set_value_fn(gpu::FakeBackend::steady_load());
  EmptyHost host;
  std::atomic<int> calls{0};
  NodeOptions opt;
  opt.load.seconds = kMinLoadSeconds;
  opt.with_torch = false;
  auto node = check_node(fake, clock, host, opt, instant_load(calls));
  ASSERT_TRUE(node.ok()) << node.error().message();
  EXPECT_EQ(calls.load(), 2);
  ASSERT_EQ(node->gpus.size(), 2u);
  for (const auto& in : node->gpus) {
    EXPECT_TRUE(in.load.ran) << in.load.why_not;
    EXPECT_GE(in.load.samples.size(), 10u);  // every 100 ms for 1.5 s
  }
  const CheckResult* clocks = find(node->results, "clocks", 1);
  ASSERT_NE(clocks, nullptr);
  EXPECT_EQ(clocks->status, Status::kPass) << clocks->evidence;  // the fake runs at its 1980 MHz maximum
  EXPECT_FALSE(any_failed(node->results));
  EXPECT_DOUBLE_EQ(node->load_seconds, kMinLoadSeconds);
  const auto j = to_json(*node);
  EXPECT_EQ(j["gpus"].size(), 2u);
  EXPECT_EQ(j["gpus"][0]["load_ran"], true);
  EXPECT_EQ(j["driver_version"], "999.99.99");
}

TEST(HealthNode, WithoutALoadTheReadingsAreIdleAndSayWhy) {
  core::SystemClock clock;
  gpu::FakeBackend fake(clock, 1);
  EmptyHost host;
  std::atomic<int> calls{0};
  NodeOptions opt;
  opt.load.why_not = "the fake backend's GPUs are not this machine's";
  opt.with_torch = false;
  auto node = check_node(fake, clock, host, opt, instant_load(calls));
  ASSERT_TRUE(node.ok());
  EXPECT_EQ(calls.load(), 0);
  EXPECT_FALSE(node->gpus[0].load.ran);
  EXPECT_EQ(node->gpus[0].load.why_not, opt.load.why_not);
  EXPECT_DOUBLE_EQ(node->load_seconds, kIdleSeconds);
  const CheckResult* clocks = find(node->results, "clocks", 0);
  ASSERT_NE(clocks, nullptr);
  EXPECT_EQ(clocks->status, Status::kSkip);
}

TEST(HealthNode, AFailedLoadIsNamedPerGpu) {
  core::SystemClock clock;
  gpu::FakeBackend fake(clock, 1);
  EmptyHost host;
  NodeOptions opt;
  opt.with_torch = false;
  opt.load.seconds = 60;  // a check that waited out the load would read for a minute
  const LoadFn broken = [](int, core::MonoTime, std::atomic<bool>&) {
    return core::Status(core::Error(core::ErrorKind::kNotSupported, "built without CUDA"));
  };
  auto node = check_node(fake, clock, host, opt, broken);
  ASSERT_TRUE(node.ok());
  EXPECT_FALSE(node->gpus[0].load.ran);
  EXPECT_EQ(node->gpus[0].load.why_not, "built without CUDA");
  // Every load failed: a few idle readings are enough (3, every 100 ms), the check does not wait out
  // the load (600 readings).
  EXPECT_LT(node->gpus[0].load.samples.size(), 100u);
  EXPECT_LT(node->wall_seconds, 10.0);  // hang guard: normally ~0.4 s, the load 60 s; 10x+ margin
}

TEST(HealthNode, XidEventsAndALostGpuAreReported) {
  core::SystemClock clock;
  gpu::FakeBackend fake(clock, 2);
  fake.push_event({1, 0, "xid", 79});
  fake.lose_gpu(0, clock.now());
  EmptyHost host;
  std::atomic<int> calls{0};
  NodeOptions opt;
  opt.load.why_not = "--no-load";
  opt.with_torch = false;
  auto node = check_node(fake, clock, host, opt, instant_load(calls));
  ASSERT_TRUE(node.ok());
  const CheckResult* lost = find(node->results, "gpu_lost", 0);
  ASSERT_NE(lost, nullptr);
  EXPECT_EQ(lost->status, Status::kFail);
  const CheckResult* xid = find(node->results, "xid", 1);
  ASSERT_NE(xid, nullptr) << to_json(*node).dump();
  EXPECT_EQ(xid->status, Status::kFail);
  EXPECT_TRUE(any_failed(node->results));
}

TEST(HealthNode, AGpuThatDoesNotExistIsAUsageError) {
  core::SystemClock clock;
  gpu::FakeBackend fake(clock, 2);
  EmptyHost host;
  std::atomic<int> calls{0};
  NodeOptions opt;
  opt.gpus = {0, 2};
  auto node = check_node(fake, clock, host, opt, instant_load(calls));
  ASSERT_FALSE(node.ok());
  EXPECT_EQ(node.error().kind(), core::ErrorKind::kUsage);
  EXPECT_EQ(node.error().message(), "--gpus: GPU 2 does not exist (this machine has 2)");
}

TEST(HealthNode, ReadLoadSampleTakesTheFastAndSlowGroups) {
  core::ManualClock clock;
  gpu::FakeBackend fake(clock, 1);
  fake.set_value_fn(gpu::FakeBackend::steady_load());
  auto s = read_load_sample(fake, 0, 1.5);
  ASSERT_TRUE(s.ok());
  EXPECT_DOUBLE_EQ(s->t_s, 1.5);
  EXPECT_EQ(s->sm_clock_mhz, 1980.0);
  EXPECT_EQ(s->pcie_link_generation, 5);
  EXPECT_EQ(s->pcie_link_width, 16);
  EXPECT_TRUE(s->power_watts.has_value());
  fake.lose_gpu(0, clock.now());
  EXPECT_EQ(read_load_sample(fake, 0, 2).error().kind(), core::ErrorKind::kGpuLost);
}

// A catalog step with its {placeholders} as a pattern.
std::regex step_pattern(std::string_view step) {
  std::string out;
  for (char c : step) {
    if (std::string_view("\\^$.|?*+()[]").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  out = std::regex_replace(out, std::regex(R"(\{[a-z]+\})"), ".+");
  return std::regex(out);
}

bool from_catalog(const CheckResult& r) {
  const findings::CatalogEntry* e = findings::find_entry(r.finding_id);
  if (e == nullptr) return false;
  for (std::string_view step : e->next_steps)
    if (std::regex_match(r.next_step, step_pattern(step))) return true;
  return false;
}

TEST(HealthNextSteps, EveryNextStepIsTheCatalogs) {
  // Inputs that make every per-GPU check warn or fail, XIDs of every class, versions too new,
  // a remote NUMA node, a governor that is not performance and a sysctl.
  GpuInput in;
  in.gpu = 0;
  in.info.sm_clock_max_mhz = 1980;
  gpu::HealthFacts f = gpu::FakeBackend::default_health_facts();
  f.persistence_mode = false;
  f.compute_mode = gpu::ComputeMode::kProhibited;
  f.mig_current = true;
  f.ecc_volatile_uncorrected = 2;
  f.remap_failed = true;
  f.retired_pages_pending = true;
  f.power_limit_enforced_watts = 500;
  f.nvlinks[3].active = false;
  in.facts = f;
  in.load.ran = true;
  in.load.warmup_s = 0;
  for (int i = 0; i < 5; ++i) in.load.samples.push_back({double(i), 1200.0, 0x40, 96.0, 80.0, 500.0, 3, 16});
  std::vector<CheckResult> all = check_gpu(in);
  XidInput xids;
  for (std::uint64_t x : {79u, 48u, 13u, 9999u, 43u}) xids.events.push_back({std::nullopt, x, "kernel_log", {}});
  for (auto& r : check_xids(xids, 1)) all.push_back(r);
  VersionFacts v;
  v.driver_version = "580.0";
  v.cuda_driver_version = "12.2";
  v.libraries.push_back({"cudart", "/x", "13.0.1"});
  for (auto& r : check_versions(v)) all.push_back(r);
  HostFacts h;
  h.governors = {{"powersave", 4}};
  h.allowed_cpus = {0, 1};
  h.gpus.push_back({0, "00000000:18:00.0", 1, {8, 9}});
  h.sysctls = {{"vm.swappiness", "60"}};
  for (auto& r : check_host(h)) all.push_back(r);
  GpuInput lost;
  lost.lost = core::Error(core::ErrorKind::kGpuLost, "gone");
  for (auto& r : check_gpu(lost)) all.push_back(r);

  std::set<std::string> ids;
  for (const auto& r : all) {
    if (r.next_step.empty()) continue;
    ids.insert(r.finding_id);
    EXPECT_TRUE(from_catalog(r)) << r.check << ": " << r.next_step;
  }
  EXPECT_GE(ids.size(), 14u);  // most entries were exercised
}

TEST(HealthNextSteps, PlaceholdersAreFilledIn) {
  EXPECT_NE(findings::next_step("health_numa", 0, {{"node", "1"}}).find("--cpunodebind=1 --membind=1"),
            std::string::npos);
  EXPECT_NE(findings::next_step("health_sysctl", 0, {{"name", "vm.swappiness"}}).find("`sysctl vm.swappiness`"),
            std::string::npos);
  EXPECT_THROW((void)findings::next_step("health_numa", 7), std::logic_error);
  EXPECT_THROW((void)findings::next_step("no_such_id", 0), std::logic_error);
}

// No load on GPUs that are not this machine's or whose CUDA numbers may not be NVML's; --no-load
// is said first.
TEST(WhyNoLoad, SaysWhyInOrderAndNothingWhenTheLoadMayRun) {
  const char* old = std::getenv("CUDA_VISIBLE_DEVICES");
  const std::optional<std::string> saved = old != nullptr ? std::optional<std::string>(old) : std::nullopt;
  ::unsetenv("CUDA_VISIBLE_DEVICES");
  EXPECT_EQ(why_no_load(false, ""), "");
  EXPECT_EQ(why_no_load(true, "fake"), "--no-load");
  EXPECT_EQ(why_no_load(false, "replay"), "the replay backend's GPUs are not this machine's: no load runs on them");
  ::setenv("CUDA_VISIBLE_DEVICES", "1", 1);
  EXPECT_EQ(why_no_load(false, ""), "CUDA_VISIBLE_DEVICES is set, so CUDA's and NVML's GPU numbers may differ");
  EXPECT_EQ(why_no_load(true, ""), "--no-load");
  if (saved)
    ::setenv("CUDA_VISIBLE_DEVICES", saved->c_str(), 1);
  else
    ::unsetenv("CUDA_VISIBLE_DEVICES");
}

}  // namespace
}  // namespace gpudoc::health
