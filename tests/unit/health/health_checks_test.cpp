// The per-GPU and XID checks on facts from the fake backend: every case the issue names.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>

#include "core/clock.hpp"
#include "gpu/fake/fake_backend.hpp"
#include "health/health.hpp"

namespace gpudoc::health {
namespace {

const CheckResult& find(const std::vector<CheckResult>& rs, const std::string& check) {
  auto it = std::find_if(rs.begin(), rs.end(), [&](const CheckResult& r) { return r.check == check; });
  if (it == rs.end()) throw std::runtime_error("no check " + check);
  return *it;
}

// Facts and info from the fake backend, plus a 5 s load at the given clock / PCIe / reasons.
GpuInput input(gpu::FakeBackend& fake, int gpu, double clock_mhz = 1980, int gen = 5, int width = 16,
               std::uint64_t reasons = 0, double temp = 60) {
  GpuInput in;
  in.gpu = gpu;
  auto info = fake.device_info(gpu);
  if (info) in.info = *info;
  auto facts = fake.health_facts(gpu);
  if (facts)
    in.facts = *facts;
  else if (facts.error().kind() == core::ErrorKind::kGpuLost)
    in.lost = facts.error();
  in.load.ran = true;
  in.load.warmup_s = 1.0;
  for (int i = 0; i < 50; ++i) {
    LoadSample s;
    s.t_s = i * 0.1;
    // The first second (warm-up) idles low: it must not count.
    s.sm_clock_mhz = s.t_s < 1.0 ? 345.0 : clock_mhz;
    s.clock_event_reasons = s.t_s < 1.0 ? 0x1 : reasons;
    s.temperature_celsius = temp;
    s.memory_temperature_celsius = temp - 5;
    s.power_watts = 500;
    s.pcie_link_generation = s.t_s < 1.0 ? 1 : gen;
    s.pcie_link_width = width;
    in.load.samples.push_back(s);
  }
  return in;
}

class HealthChecks : public ::testing::Test {
 protected:
  core::ManualClock clock;
  gpu::FakeBackend fake{clock, 2};
};

TEST_F(HealthChecks, HealthyH200PassesEverythingItCanCheck) {
  const auto rs = check_gpu(input(fake, 0));
  EXPECT_FALSE(any_failed(rs));
  for (const auto& r : rs) {
    EXPECT_TRUE(r.status == Status::kPass || r.status == Status::kSkip) << r.check << ": " << r.evidence;
    EXPECT_EQ(r.finding_id.rfind("health_", 0), 0u) << r.check;
    EXPECT_TRUE(findings::find_entry(r.finding_id) != nullptr) << r.finding_id;
  }
  EXPECT_EQ(find(rs, "retired_pages").status, Status::kSkip);  // H200 remaps rows instead
  EXPECT_EQ(find(rs, "clocks").status, Status::kPass);
  EXPECT_EQ(find(rs, "nvlink").status, Status::kPass);
}

TEST_F(HealthChecks, ThrottledClocksWarnOnPowerCapAndFailOnThermalSlowdown) {
  auto rs = check_gpu(input(fake, 0, 1700, 5, 16, 0x4));  // sw_power_cap
  EXPECT_EQ(find(rs, "clocks").status, Status::kWarn);
  EXPECT_NE(find(rs, "clocks").evidence.find("sw_power_cap"), std::string::npos);
  rs = check_gpu(input(fake, 0, 1500, 5, 16, 0x4 | 0x40));  // + hw_thermal_slowdown
  EXPECT_EQ(find(rs, "clocks").status, Status::kFail);
  EXPECT_NE(find(rs, "clocks").evidence.find("hw_thermal_slowdown"), std::string::npos);
  // 2 % below max is within the 3 % tolerance.
  rs = check_gpu(input(fake, 0, 1940, 5, 16, 0x4));
  EXPECT_EQ(find(rs, "clocks").status, Status::kPass);
}

TEST_F(HealthChecks, ClocksAreNotJudgedWithoutALoad) {
  GpuInput in = input(fake, 0, 345);
  in.load.ran = false;
  in.load.why_not = "--no-load";
  const auto rs = check_gpu(in);
  EXPECT_EQ(find(rs, "clocks").status, Status::kSkip);
  EXPECT_NE(find(rs, "clocks").evidence.find("--no-load"), std::string::npos);
}

TEST_F(HealthChecks, DowntrainedPcieFailsUnderLoad) {
  auto rs = check_gpu(input(fake, 0, 1980, 3, 16));
  EXPECT_EQ(find(rs, "pcie_link").status, Status::kFail);
  EXPECT_NE(find(rs, "pcie_link").evidence.find("Gen3 x16 of max Gen5 x16"), std::string::npos);
  rs = check_gpu(input(fake, 0, 1980, 5, 8));
  EXPECT_EQ(find(rs, "pcie_link").status, Status::kFail);
}

TEST_F(HealthChecks, IdleGen1LinkIsPowerSavingNotDowntraining) {
  GpuInput in = input(fake, 0, 345, 1, 16);
  in.load.ran = false;
  in.load.warmup_s = 0;
  const auto rs = check_gpu(in);
  EXPECT_EQ(find(rs, "pcie_link").status, Status::kSkip);
}

TEST_F(HealthChecks, EccErrors) {
  auto f = gpu::FakeBackend::default_health_facts();
  f.ecc_volatile_uncorrected = 2;
  f.ecc_volatile_corrected = 17;
  fake.set_health_facts(0, f);
  auto rs = check_gpu(input(fake, 0));
  EXPECT_EQ(find(rs, "ecc").status, Status::kFail);
  EXPECT_NE(find(rs, "ecc").evidence.find("uncorrected 2"), std::string::npos);
  f.ecc_volatile_uncorrected = 0;
  f.ecc_aggregate_uncorrected = 3;
  fake.set_health_facts(0, f);
  rs = check_gpu(input(fake, 0));
  EXPECT_EQ(find(rs, "ecc").status, Status::kWarn);
  f.ecc_aggregate_uncorrected = 0;
  f.ecc_current = false;
  f.ecc_pending = false;
  fake.set_health_facts(0, f);
  EXPECT_EQ(find(check_gpu(input(fake, 0)), "ecc").status, Status::kWarn);
}

TEST_F(HealthChecks, RemappingPendingFailsAndFailureFails) {
  auto f = gpu::FakeBackend::default_health_facts();
  f.remap_pending = true;
  f.remapped_rows_uncorrected = 1;
  fake.set_health_facts(0, f);
  auto r = find(check_gpu(input(fake, 0)), "row_remapping");
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_NE(r.next_step.find("nvidia-smi -r"), std::string::npos);
  f.remap_pending = false;
  fake.set_health_facts(0, f);
  EXPECT_EQ(find(check_gpu(input(fake, 0)), "row_remapping").status, Status::kWarn);
  f.remap_failed = true;
  fake.set_health_facts(0, f);
  r = find(check_gpu(input(fake, 0)), "row_remapping");
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_NE(r.next_step.find("vendor"), std::string::npos);
}

TEST_F(HealthChecks, GpuLostMidCheckYieldsOnlyGpuLost) {
  fake.lose_gpu(1, clock.now());
  const auto rs = check_gpu(input(fake, 1));
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0].check, "gpu_lost");
  EXPECT_EQ(rs[0].status, Status::kFail);
  EXPECT_EQ(rs[0].finding_id, "health_gpu_lost");
  EXPECT_EQ(rs[0].gpu, 1);
  // The other GPU is unaffected.
  EXPECT_FALSE(any_failed(check_gpu(input(fake, 0))));
}

TEST_F(HealthChecks, GpuLostDuringTheLoadAfterFactsWereReadYieldsOnlyGpuLost) {
  // The facts were read while the GPU answered; it falls off the bus 2 s into the load.
  GpuInput in = input(fake, 0);
  ASSERT_TRUE(in.facts.has_value());
  fake.lose_gpu(0, clock.now() + std::chrono::seconds(2));
  for (int i = 0; i < 50 && !in.lost; ++i) {
    clock.advance(std::chrono::milliseconds(100));
    if (auto r = fake.read(0, gpu::MetricGroup::kFast); !r && r.error().kind() == core::ErrorKind::kGpuLost)
      in.lost = r.error();
  }
  ASSERT_TRUE(in.lost.has_value()) << "the fake never lost the GPU";
  const auto rs = check_gpu(in);
  ASSERT_EQ(rs.size(), 1u) << "no pass may be reported for a GPU that stopped answering";
  EXPECT_EQ(rs[0].check, "gpu_lost");
  EXPECT_EQ(rs[0].status, Status::kFail);
  EXPECT_NE(rs[0].evidence.find(in.lost->message()), std::string::npos);
  EXPECT_NE(rs[0].next_step.find("XID 79"), std::string::npos);
}

TEST_F(HealthChecks, MigOnWarnsAndPendingChangeWarns) {
  auto f = gpu::FakeBackend::default_health_facts();
  f.mig_current = true;
  f.mig_pending = true;
  fake.set_health_facts(0, f);
  GpuInput in = input(fake, 0);
  in.info.mig_instances.resize(2);
  auto r = find(check_gpu(in), "mig");
  EXPECT_EQ(r.status, Status::kWarn);
  EXPECT_NE(r.evidence.find("MIG enabled, 2 instance(s)"), std::string::npos) << r.evidence;
  EXPECT_NE(r.evidence.find("not the whole GPU"), std::string::npos) << r.evidence;
  ASSERT_EQ(r.values.size(), 2u);
  EXPECT_EQ(r.values[1].name, "mig_instances");
  EXPECT_EQ(r.values[1].value, 2.0);
  f.mig_current = false;
  fake.set_health_facts(0, f);
  r = find(check_gpu(input(fake, 0)), "mig");
  EXPECT_EQ(r.status, Status::kWarn);
  EXPECT_NE(r.evidence.find("pending"), std::string::npos);
}

TEST_F(HealthChecks, ThresholdsUnsupportedSkipTemperatureInsteadOfGuessing) {
  auto f = gpu::FakeBackend::default_health_facts();
  f.temperature_slowdown_celsius.reset();
  f.temperature_shutdown_celsius.reset();
  f.temperature_gpu_max_celsius.reset();
  f.temperature_memory_max_celsius.reset();
  fake.set_health_facts(0, f);
  const auto r = find(check_gpu(input(fake, 0, 1980, 5, 16, 0, 99)), "temperature");
  EXPECT_EQ(r.status, Status::kSkip);
  EXPECT_NE(r.evidence.find("no temperature thresholds"), std::string::npos);
}

TEST_F(HealthChecks, TemperatureAgainstTheDevicesOwnThresholds) {
  EXPECT_EQ(find(check_gpu(input(fake, 0, 1980, 5, 16, 0, 86)), "temperature").status, Status::kPass);
  EXPECT_EQ(find(check_gpu(input(fake, 0, 1980, 5, 16, 0, 88)), "temperature").status,
            Status::kWarn);  // > max operating 87
  EXPECT_EQ(find(check_gpu(input(fake, 0, 1980, 5, 16, 0, 89)), "temperature").status, Status::kFail);  // slowdown 89
  auto f = gpu::FakeBackend::default_health_facts();
  f.temperature_slowdown_celsius = 70;  // another GPU with lower thresholds: the same 65 C fails nothing,
  f.temperature_gpu_max_celsius = 60;   // but warns past its own max operating temperature
  fake.set_health_facts(0, f);
  EXPECT_EQ(find(check_gpu(input(fake, 0, 1980, 5, 16, 0, 65)), "temperature").status, Status::kWarn);
}

TEST_F(HealthChecks, PowerLimitBelowDefaultWarns) {
  auto f = gpu::FakeBackend::default_health_facts();
  f.power_limit_enforced_watts = 500;
  fake.set_health_facts(0, f);
  const auto r = find(check_gpu(input(fake, 0)), "power");
  EXPECT_EQ(r.status, Status::kWarn);
  EXPECT_NE(r.evidence.find("71 %"), std::string::npos);
}

TEST_F(HealthChecks, NvlinkDownOrErrorsWarnAndNoNvlinkSkips) {
  auto f = gpu::FakeBackend::default_health_facts();
  f.nvlinks[3].active = false;
  fake.set_health_facts(0, f);
  EXPECT_EQ(find(check_gpu(input(fake, 0)), "nvlink").status, Status::kWarn);
  f = gpu::FakeBackend::default_health_facts();
  f.nvlinks[0].crc_flit_errors = 12;
  fake.set_health_facts(0, f);
  EXPECT_NE(find(check_gpu(input(fake, 0)), "nvlink").evidence.find("CRC 12"), std::string::npos);
  f.nvlinks.clear();
  fake.set_health_facts(0, f);
  EXPECT_EQ(find(check_gpu(input(fake, 0)), "nvlink").status, Status::kSkip);
}

TEST_F(HealthChecks, NvlinkVersionIsShownAsNvidiaNamesIt) {
  // NVML answers 6 for Hopper's NVLink 4.0; the check must never print "NVLink 6".
  auto r = find(check_gpu(input(fake, 0)), "nvlink");
  EXPECT_NE(r.evidence.find("18 of 18 links active (NVLink 4.0)"), std::string::npos) << r.evidence;
  EXPECT_EQ(r.evidence.find("NVLink 6"), std::string::npos) << r.evidence;
  const auto v =
      std::find_if(r.values.begin(), r.values.end(), [](const auto& e) { return e.name == "nvlink_version"; });
  ASSERT_NE(v, r.values.end());
  EXPECT_DOUBLE_EQ(v->value, 4.0);
  // A code newer than gpudoc knows is shown raw, not guessed.
  auto f = gpu::FakeBackend::default_health_facts();
  for (auto& l : f.nvlinks) {
    l.version.reset();
    l.version_code = 8;
  }
  fake.set_health_facts(0, f);
  r = find(check_gpu(input(fake, 0)), "nvlink");
  EXPECT_NE(r.evidence.find("(NVLink unknown (NVML code 8))"), std::string::npos) << r.evidence;
  EXPECT_TRUE(std::none_of(r.values.begin(), r.values.end(), [](const auto& e) { return e.name == "nvlink_version"; }));
}

TEST_F(HealthChecks, UnsupportedFactsAreSkippedNeverPassed) {
  fake.inject_health_error(0, core::ErrorKind::kNotSupported);
  GpuInput in = input(fake, 0);
  in.facts_error = "not supported";
  const auto rs = check_gpu(in);
  for (const char* c :
       {"persistence_mode", "compute_mode", "mig", "ecc", "row_remapping", "temperature", "power", "nvlink"})
    EXPECT_EQ(find(rs, c).status, Status::kSkip) << c;
}

TEST_F(HealthChecks, PersistenceOffWarnsComputeProhibitedFails) {
  auto f = gpu::FakeBackend::default_health_facts();
  f.persistence_mode = false;
  f.compute_mode = gpu::ComputeMode::kProhibited;
  fake.set_health_facts(0, f);
  const auto rs = check_gpu(input(fake, 0));
  EXPECT_EQ(find(rs, "persistence_mode").status, Status::kWarn);
  EXPECT_EQ(find(rs, "compute_mode").status, Status::kFail);
}

TEST(HealthXid, Xid79NeedsARebootXid13IsTheApplications) {
  EXPECT_EQ(classify_xid(79), XidClass::kReboot);
  EXPECT_EQ(classify_xid(13), XidClass::kApplication);
  EXPECT_EQ(classify_xid(31), XidClass::kApplication);
  EXPECT_EQ(classify_xid(48), XidClass::kResetGpu);
  EXPECT_EQ(classify_xid(95), XidClass::kResetGpu);
  EXPECT_EQ(classify_xid(94), XidClass::kApplication);
  EXPECT_EQ(classify_xid(12345), XidClass::kUnknown);
  EXPECT_TRUE(xid_needs_reset(79));
  EXPECT_TRUE(xid_needs_reset(48));
  EXPECT_FALSE(xid_needs_reset(13));
  EXPECT_FALSE(xid_needs_reset(12345));

  XidInput app;
  app.nvml_events_watched = true;
  app.events.push_back({0, 13, "nvml", {}});
  auto rs = check_xids(app, 2);
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0].status, Status::kWarn);
  EXPECT_EQ(rs[0].gpu, 0);
  EXPECT_NE(rs[0].next_step.find("compute-sanitizer"), std::string::npos);

  XidInput bus = app;
  bus.events.push_back({0, 79, "nvml", {}});
  rs = check_xids(bus, 2);
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0].status, Status::kFail);
  EXPECT_NE(rs[0].next_step.find("reboot"), std::string::npos);
  EXPECT_NE(rs[0].evidence.find("XID 79 x1 (reboot: GPU has fallen off the bus; catalog: RESTART_BM)"),
            std::string::npos)
      << rs[0].evidence;
  EXPECT_NE(rs[0].evidence.find("XID 13 x1 (application"), std::string::npos) << rs[0].evidence;

  // An informational XID alone (the catalog's IGNORE) is info, not a warning and not a pass.
  XidInput info;
  info.nvml_events_watched = true;
  info.events.push_back({0, 63, "nvml", {}});
  rs = check_xids(info, 2);
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0].status, Status::kInfo);
}

// Each class as the catalog's "Resolution Bucket (Immediate Action)" gives it (Ampere and newer).
TEST(HealthXid, ClassesFollowTheCatalogsImmediateAction) {
  EXPECT_EQ(xid_catalog_action(79), "RESTART_BM");
  EXPECT_EQ(xid_catalog_action(13), "RESTART_APP");
  EXPECT_EQ(xid_catalog_action(48), "WORKFLOW_XID_48");
  EXPECT_EQ(xid_catalog_action(12345), "");
  // IGNORE: the GPU stays healthy (43: the app was stopped; 63: a row remap was recorded).
  for (std::uint64_t x : {38, 43, 63, 92, 137}) EXPECT_EQ(classify_xid(x), XidClass::kInformational) << x;
  for (std::uint64_t x : {45, 154}) EXPECT_EQ(classify_xid(x), XidClass::kInformational) << x;
  // RESET_GPU (48 and 74 through their workflows).
  for (std::uint64_t x : {46, 48, 62, 64, 74, 95, 109, 119, 120, 140, 158})
    EXPECT_EQ(classify_xid(x), XidClass::kResetGpu) << x;
  for (std::uint64_t x : {8, 13, 31, 32, 68, 94}) EXPECT_EQ(classify_xid(x), XidClass::kApplication) << x;
  EXPECT_EQ(classify_xid(61), XidClass::kUnknown) << "Unused on Ampere and newer: not guessed";
  for (std::uint64_t x : {8, 13, 31, 32, 38, 43, 45, 46, 48, 62, 63, 64, 68, 74, 79, 92, 94, 95, 109, 119, 120, 154}) {
    EXPECT_FALSE(xid_description(x).empty()) << x;
    EXPECT_FALSE(xid_catalog_action(x).empty()) << x;
  }
}

TEST(HealthXid, Xid154IsClassedByTheActionInItsLogLine) {
  auto event = [](std::string text) { return XidEvent{0, kXidRecoveryActionChanged, "kernel_log", std::move(text)}; };
  EXPECT_EQ(classify_xid_event(event("NVRM: Xid (PCI:0000:18:00): 154, GPU recovery action changed from 0x0 (None) "
                                     "to 0x2 (Node Reboot Required)")),
            XidClass::kReboot);
  EXPECT_EQ(classify_xid_event(event("NVRM: Xid (PCI:0000:18:00): 154, GPU recovery action changed from 0x0 (None) "
                                     "to 0x1 (GPU Reset Required)")),
            XidClass::kResetGpu);
  EXPECT_EQ(classify_xid_event(event("... changed from 0x0 (None) to 0x4 (Drain and Reset)")), XidClass::kResetGpu);
  EXPECT_EQ(classify_xid_event(event("... changed from 0x1 (GPU Reset Required) to 0x0 (None)")),
            XidClass::kInformational);
  EXPECT_EQ(classify_xid_event(event("... changed from 0x0 (None) to 0x3 (Drain P2P)")), XidClass::kUnknown);
  // From NVML events there is no text: the table's class.
  EXPECT_EQ(classify_xid_event(XidEvent{0, 154, "nvml", {}}), XidClass::kInformational);
  EXPECT_EQ(classify_xid_event(XidEvent{0, 79, "kernel_log", "anything"}), XidClass::kReboot);

  XidInput in;
  in.kernel_log_read = true;
  in.events = parse_kernel_log_xids(
      "[ 10.0] NVRM: Xid (PCI:0000:18:00): 48, pid=1, DBE (0x1,0x2)\n"
      "[ 10.1] NVRM: Xid (PCI:0000:18:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot "
      "Required)\n",
      {"00000000:18:00.0"});
  const auto rs = check_xids(in, 1);
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0].status, Status::kFail);
  EXPECT_NE(rs[0].evidence.find("XID 154 x1 (reboot"), std::string::npos) << rs[0].evidence;
  EXPECT_NE(
      rs[0].evidence.find("XID 48 x1 (reset_gpu: double-bit (uncorrectable) ECC error; catalog: WORKFLOW_XID_48)"),
      std::string::npos)
      << rs[0].evidence;
  EXPECT_NE(rs[0].next_step.find("reboot"), std::string::npos);
}

TEST(HealthXid, NoXidPassesOnlyWhenSomethingWasWatched) {
  XidInput none;
  none.kernel_log_why_not = "dmesg not permitted";
  EXPECT_EQ(check_xids(none, 1)[0].status, Status::kSkip);
  none.nvml_events_watched = true;
  EXPECT_EQ(check_xids(none, 1)[0].status, Status::kPass);
}

TEST(HealthXid, KernelLogLinesMapToGpusByBusId) {
  const std::string log =
      "[  12.0] nvidia 0000:18:00.0: enabling device\n"
      "[ 812.5] NVRM: Xid (PCI:0000:2a:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n"
      "[ 900.1] NVRM: Xid (PCI:0000:18:00): 13, pid=1234, name=python3, Graphics SM Warp Exception\n"
      "[ 901.0] NVRM: Xid (PCI:0000:99:00): 31, pid=1, name=x, MMU Fault\n";
  const auto ev = parse_kernel_log_xids(log, {"00000000:18:00.0", "00000000:2A:00.0"});
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[0].xid, 79u);
  EXPECT_EQ(ev[0].gpu, 1);
  EXPECT_EQ(ev[1].xid, 13u);
  EXPECT_EQ(ev[1].gpu, 0);
  EXPECT_FALSE(ev[2].gpu.has_value());
  EXPECT_EQ(ev[0].source, "kernel_log");
}

TEST(HealthVersions, RuntimeNewerThanDriverFails) {
  VersionFacts v;
  v.driver_version = "535.104.05";
  v.cuda_driver_version = "12.2";
  v.libraries.push_back({"cudart", "/usr/local/cuda/lib64/libcudart.so.13.0.48", "13.0.48"});
  auto r = check_versions(v)[0];
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_NE(r.evidence.find("cudart 13.0.48 newer than the driver supports"), std::string::npos);
  v.libraries[0] = {"cudart", "x", "12.4.127"};
  EXPECT_EQ(check_versions(v)[0].status, Status::kWarn);  // minor version compatibility
  v.libraries[0] = {"cudart", "x", "12.1.105"};
  v.torch_version = "2.5.1";
  v.torch_cuda_version = "12.1";
  EXPECT_EQ(check_versions(v)[0].status, Status::kPass);
  v.torch_cuda_version = "13.0";
  EXPECT_EQ(check_versions(v)[0].status, Status::kFail);
  v.cuda_driver_version.clear();
  EXPECT_EQ(check_versions(v)[0].status, Status::kSkip);
}

TEST(HealthJson, ResultsCarryIdStatusEvidenceAndValues) {
  core::ManualClock clock;
  gpu::FakeBackend fake(clock, 1);
  const auto rs = check_gpu(input(fake, 0));
  const auto j = to_json(find(rs, "clocks"));
  EXPECT_EQ(j["finding_id"], "health_clocks");
  EXPECT_EQ(j["status"], "pass");
  EXPECT_EQ(j["gpu"], 0);
  EXPECT_EQ(j["values"][0]["name"], "sm_clock_mhz");
  EXPECT_DOUBLE_EQ(j["values"][0]["value"].get<double>(), 1980.0);
}

}  // namespace
}  // namespace gpudoc::health

namespace gpudoc::health {
namespace {

CheckResult result(const char* check, std::optional<int> gpu, Status status, const char* evidence) {
  CheckResult r;
  r.check = check;
  r.gpu = gpu;
  r.status = status;
  r.evidence = evidence;
  return r;
}

TEST(GateReason, OnlyFailedChecksOnOneLine) {
  std::vector<CheckResult> results = {result("ecc", 0, Status::kFail, "uncorrectable ECC: 3 volatile"),
                                      result("pcie_link", 1, Status::kWarn, "Gen4 x16 of Gen5 x16"),
                                      result("driver", std::nullopt, Status::kFail, "two lines\nof text"),
                                      result("xid", 2, Status::kPass, "")};
  EXPECT_EQ(gate_reason(results), "ecc on GPU 0: uncorrectable ECC: 3 volatile; driver: two lines of text");
  results[0].status = Status::kPass;
  results[2].status = Status::kInfo;
  EXPECT_EQ(gate_reason(results), "");  // warnings and advice do not drain a node
}

}  // namespace
}  // namespace gpudoc::health
