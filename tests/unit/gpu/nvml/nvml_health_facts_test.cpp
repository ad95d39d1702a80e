// The NVML backend's health_facts() against a scripted NVML (FakeNvml): each fact read from its
// own call and converted, NOT_SUPPORTED and missing symbols leave a fact absent (never 0 or false),
// a GPU lost mid-read is a kGpuLost error, and NVML's NVLink version code becomes NVIDIA's version.
// tests/unit/health checks what the health checks make of these facts.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "core/clock.hpp"
#include "fake_nvml.hpp"
#include "gpu/backend.hpp"
#include "gpu/nvml/nvml_api.hpp"
#include "gpu/nvml/nvml_backend.hpp"

namespace gpudoc::gpu {
namespace {

using namespace nvml;  // NOLINT(google-build-using-namespace)
using nvml::testing::FakeNvml;
using ::testing::HasSubstr;

// Every NVML function health_facts() calls, by name.
const std::vector<std::string>& health_functions() {
  static const std::vector<std::string> kNames = {
      "nvmlDeviceGetPersistenceMode",
      "nvmlDeviceGetComputeMode",
      "nvmlDeviceGetMigMode",
      "nvmlDeviceGetEccMode",
      "nvmlDeviceGetTotalEccErrors",
      "nvmlDeviceGetRemappedRows",
      "nvmlDeviceGetRetiredPages",
      "nvmlDeviceGetRetiredPagesPendingStatus",
      "nvmlDeviceGetPowerManagementLimit",
      "nvmlDeviceGetEnforcedPowerLimit",
      "nvmlDeviceGetPowerManagementDefaultLimit",
      "nvmlDeviceGetTemperatureThreshold",
      "nvmlDeviceGetMaxPcieLinkGeneration",
      "nvmlDeviceGetMaxPcieLinkWidth",
      "nvmlDeviceGetPcieReplayCounter",
      "nvmlDeviceGetNvLinkState",
      "nvmlDeviceGetNvLinkVersion",
      "nvmlDeviceGetNvLinkErrorCounter",
  };
  return kNames;
}

// An H200 as NVML describes it, with a distinct value in every field so that a fact read from the
// wrong call (or with the wrong argument) shows: 12 links (an NVLink device with fewer than
// NVML_NVLINK_MAX_LINKS), link 3 down, per-link error counters 1000*link + counter.
void script_h200(FakeNvml& fake) {
  fake.nvmlDeviceGetPersistenceMode = [](nvmlDevice_t, nvmlEnableState_t* m) {
    *m = NVML_FEATURE_ENABLED;
    return NVML_SUCCESS;
  };
  fake.nvmlDeviceGetComputeMode = [](nvmlDevice_t, nvmlComputeMode_t* m) {
    *m = NVML_COMPUTEMODE_EXCLUSIVE_PROCESS;
    return NVML_SUCCESS;
  };
  fake.nvmlDeviceGetMigMode = [](nvmlDevice_t, unsigned int* current, unsigned int* pending) {
    *current = NVML_DEVICE_MIG_DISABLE;
    *pending = NVML_DEVICE_MIG_ENABLE;
    return NVML_SUCCESS;
  };
  fake.nvmlDeviceGetEccMode = [](nvmlDevice_t, nvmlEnableState_t* current, nvmlEnableState_t* pending) {
    *current = NVML_FEATURE_ENABLED;
    *pending = NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
  };
  fake.nvmlDeviceGetTotalEccErrors = [](nvmlDevice_t, nvmlMemoryErrorType_t type, nvmlEccCounterType_t counter,
                                        unsigned long long* n) {
    // corrected/volatile 11, uncorrected/volatile 12, corrected/aggregate 21, uncorrected/aggregate 22
    *n = (counter == NVML_VOLATILE_ECC ? 10ULL : 20ULL) + (type == NVML_MEMORY_ERROR_TYPE_CORRECTED ? 1ULL : 2ULL);
    return NVML_SUCCESS;
  };
  fake.nvmlDeviceGetRemappedRows = [](nvmlDevice_t, unsigned int* corr, unsigned int* unc, unsigned int* pending,
                                      unsigned int* failed) {
    *corr = 3;
    *unc = 1;
    *pending = 1;
    *failed = 0;
    return NVML_SUCCESS;
  };
  fake.nvmlDeviceGetRetiredPages = [](nvmlDevice_t, nvmlPageRetirementCause_t cause, unsigned int* count,
                                      unsigned long long* addresses) {
    // Asked for the count only; drivers answer INSUFFICIENT_SIZE with the count set when pages exist.
    if (addresses != nullptr || *count != 0) return NVML_ERROR_INVALID_ARGUMENT;
    *count = cause == NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS ? 4 : 0;
    return *count > 0 ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS;
  };
  fake.nvmlDeviceGetRetiredPagesPendingStatus = [](nvmlDevice_t, nvmlEnableState_t* p) {
    *p = NVML_FEATURE_ENABLED;
    return NVML_SUCCESS;
  };
  fake.nvmlDeviceGetPowerManagementLimit = [](nvmlDevice_t, unsigned int* mw) {
    *mw = 650'000;
    return NVML_SUCCESS;
  };
  fake.nvmlDeviceGetEnforcedPowerLimit = [](nvmlDevice_t, unsigned int* mw) {
    *mw = 600'500;
    return NVML_SUCCESS;
  };
  fake.nvmlDeviceGetPowerManagementDefaultLimit = [](nvmlDevice_t, unsigned int* mw) {
    *mw = 700'000;
    return NVML_SUCCESS;
  };
  fake.nvmlDeviceGetTemperatureThreshold = [](nvmlDevice_t, nvmlTemperatureThresholds_t type, unsigned int* c) {
    switch (type) {
      case NVML_TEMPERATURE_THRESHOLD_SHUTDOWN: *c = 95; break;
      case NVML_TEMPERATURE_THRESHOLD_SLOWDOWN: *c = 92; break;
      case NVML_TEMPERATURE_THRESHOLD_MEM_MAX: *c = 105; break;
      case NVML_TEMPERATURE_THRESHOLD_GPU_MAX: *c = 87; break;
    }
    return NVML_SUCCESS;
  };
  fake.nvmlDeviceGetMaxPcieLinkGeneration = [](nvmlDevice_t, unsigned int* g) {
    *g = 5;
    return NVML_SUCCESS;
  };
  fake.nvmlDeviceGetMaxPcieLinkWidth = [](nvmlDevice_t, unsigned int* w) {
    *w = 16;
    return NVML_SUCCESS;
  };
  fake.nvmlDeviceGetPcieReplayCounter = [](nvmlDevice_t, unsigned int* n) {
    *n = 5;
    return NVML_SUCCESS;
  };
  fake.nvmlDeviceGetNvLinkState = [](nvmlDevice_t, unsigned int link, nvmlEnableState_t* active) {
    if (link >= 12) return NVML_ERROR_INVALID_ARGUMENT;  // this device has 12 links
    *active = link == 3 ? NVML_FEATURE_DISABLED : NVML_FEATURE_ENABLED;
    return NVML_SUCCESS;
  };
  fake.nvmlDeviceGetNvLinkVersion = [](nvmlDevice_t, unsigned int, unsigned int* v) {
    *v = NVML_NVLINK_VERSION_4_0;  // 6, what an H200 answers
    return NVML_SUCCESS;
  };
  fake.nvmlDeviceGetNvLinkErrorCounter = [](nvmlDevice_t, unsigned int link, nvmlNvLinkErrorCounter_t counter,
                                            unsigned long long* n) {
    *n = 1000ULL * link + static_cast<unsigned long long>(counter);
    return NVML_SUCCESS;
  };
}

class nvml_health_facts : public ::testing::Test {  // NOLINT(readability-identifier-naming): ctest -R nvml
 protected:
  std::unique_ptr<Backend> open(FakeNvml& fake) {
    auto r = open_nvml_backend({.library_path = {}, .clock = &clock_, .api = &fake.table()});
    EXPECT_TRUE(r.ok()) << r.error().message();
    return r.ok() ? std::move(r).value() : nullptr;
  }
  core::ManualClock clock_;
};

TEST_F(nvml_health_facts, EveryFactIsReadFromItsOwnCallAndConverted) {
  FakeNvml fake;
  script_h200(fake);
  auto b = open(fake);
  auto r = b->health_facts(0);
  ASSERT_TRUE(r.ok()) << r.error().message();
  const HealthFacts& f = *r;
  EXPECT_EQ(f.persistence_mode, true);
  EXPECT_EQ(f.compute_mode, ComputeMode::kExclusiveProcess);
  EXPECT_EQ(f.mig_current, false);
  EXPECT_EQ(f.mig_pending, true);
  EXPECT_EQ(f.ecc_current, true);
  EXPECT_EQ(f.ecc_pending, false);
  EXPECT_EQ(f.ecc_volatile_corrected, 11u);
  EXPECT_EQ(f.ecc_volatile_uncorrected, 12u);
  EXPECT_EQ(f.ecc_aggregate_corrected, 21u);
  EXPECT_EQ(f.ecc_aggregate_uncorrected, 22u);
  EXPECT_EQ(f.remapped_rows_corrected, 3u);
  EXPECT_EQ(f.remapped_rows_uncorrected, 1u);
  EXPECT_EQ(f.remap_pending, true);
  EXPECT_EQ(f.remap_failed, false);
  EXPECT_EQ(f.retired_pages_single_bit, 4u);  // INSUFFICIENT_SIZE with the count set is an answer
  EXPECT_EQ(f.retired_pages_double_bit, 0u);  // a real 0: NVML answered it
  EXPECT_EQ(f.retired_pages_pending, true);
  // Milliwatts to watts.
  EXPECT_DOUBLE_EQ(f.power_limit_watts.value_or(-1), 650.0);
  EXPECT_DOUBLE_EQ(f.power_limit_enforced_watts.value_or(-1), 600.5);
  EXPECT_DOUBLE_EQ(f.power_limit_default_watts.value_or(-1), 700.0);
  // Each threshold from its own threshold type.
  EXPECT_EQ(f.temperature_shutdown_celsius, 95.0);
  EXPECT_EQ(f.temperature_slowdown_celsius, 92.0);
  EXPECT_EQ(f.temperature_memory_max_celsius, 105.0);
  EXPECT_EQ(f.temperature_gpu_max_celsius, 87.0);
  EXPECT_EQ(f.pcie_link_generation_max, 5);
  EXPECT_EQ(f.pcie_link_width_max, 16);
  EXPECT_EQ(f.pcie_replay_errors, 5u);

  // Only the links the device has; links past them are not facts.
  ASSERT_EQ(f.nvlinks.size(), 12u);
  EXPECT_EQ(fake.calls("nvmlDeviceGetNvLinkState"), static_cast<int>(NVML_NVLINK_MAX_LINKS));
  for (std::size_t i = 0; i < f.nvlinks.size(); ++i) {
    const NvlinkFacts& l = f.nvlinks[i];
    const auto base = 1000ULL * i;
    EXPECT_EQ(l.link, static_cast<int>(i));
    EXPECT_EQ(l.active, i != 3) << "link " << i;
    EXPECT_EQ(l.version, "4.0") << "NVML's code 6 is NVLink 4.0, not \"NVLink 6\"";
    EXPECT_EQ(l.version_code, 6u);
    EXPECT_EQ(l.replay_errors, base + NVML_NVLINK_ERROR_DL_REPLAY);
    EXPECT_EQ(l.recovery_errors, base + NVML_NVLINK_ERROR_DL_RECOVERY);
    EXPECT_EQ(l.crc_flit_errors, base + NVML_NVLINK_ERROR_DL_CRC_FLIT);
    EXPECT_EQ(l.crc_data_errors, base + NVML_NVLINK_ERROR_DL_CRC_DATA);
  }
  // Read fresh on every call (counters move), unlike device_info.
  ASSERT_TRUE(b->health_facts(0).ok());
  EXPECT_EQ(fake.calls("nvmlDeviceGetRemappedRows"), 2);
}

TEST_F(nvml_health_facts, NotSupportedFactsAreAbsentNeverZero) {
  FakeNvml fake;  // every unscripted function answers NOT_SUPPORTED
  auto b = open(fake);
  auto r = b->health_facts(0);
  ASSERT_TRUE(r.ok()) << "a GPU that supports none of the facts is not an error: " << r.error().message();
  const HealthFacts& f = *r;
  EXPECT_FALSE(f.persistence_mode);
  EXPECT_FALSE(f.compute_mode);
  EXPECT_FALSE(f.mig_current);
  EXPECT_FALSE(f.mig_pending);
  EXPECT_FALSE(f.ecc_current);
  EXPECT_FALSE(f.ecc_pending);
  EXPECT_FALSE(f.ecc_volatile_corrected);
  EXPECT_FALSE(f.ecc_volatile_uncorrected);
  EXPECT_FALSE(f.ecc_aggregate_corrected);
  EXPECT_FALSE(f.ecc_aggregate_uncorrected);
  EXPECT_FALSE(f.remapped_rows_corrected);
  EXPECT_FALSE(f.remapped_rows_uncorrected);
  EXPECT_FALSE(f.remap_pending);
  EXPECT_FALSE(f.remap_failed);
  EXPECT_FALSE(f.retired_pages_single_bit);
  EXPECT_FALSE(f.retired_pages_double_bit);
  EXPECT_FALSE(f.retired_pages_pending);
  EXPECT_FALSE(f.power_limit_watts);
  EXPECT_FALSE(f.power_limit_enforced_watts);
  EXPECT_FALSE(f.power_limit_default_watts);
  EXPECT_FALSE(f.temperature_slowdown_celsius);
  EXPECT_FALSE(f.temperature_shutdown_celsius);
  EXPECT_FALSE(f.temperature_gpu_max_celsius);
  EXPECT_FALSE(f.temperature_memory_max_celsius);
  EXPECT_FALSE(f.pcie_link_generation_max);
  EXPECT_FALSE(f.pcie_link_width_max);
  EXPECT_TRUE(f.nvlinks.empty()) << "no NVLink: no links, not 18 inactive ones";
  EXPECT_EQ(fake.calls("nvmlDeviceGetNvLinkVersion"), 0);
  EXPECT_EQ(fake.calls("nvmlDeviceGetNvLinkErrorCounter"), 0);
}

TEST_F(nvml_health_facts, OneUnsupportedFactLeavesTheOthers) {
  FakeNvml fake;
  script_h200(fake);
  // Aggregate ECC counters, the shutdown threshold and one link's CRC counter are unsupported; a
  // permission error on the power limit is not a lost GPU either.
  fake.nvmlDeviceGetTotalEccErrors = [](nvmlDevice_t, nvmlMemoryErrorType_t, nvmlEccCounterType_t counter,
                                        unsigned long long* n) {
    if (counter == NVML_AGGREGATE_ECC) return NVML_ERROR_NOT_SUPPORTED;
    *n = 0;
    return NVML_SUCCESS;
  };
  fake.nvmlDeviceGetTemperatureThreshold = [](nvmlDevice_t, nvmlTemperatureThresholds_t type, unsigned int* c) {
    if (type == NVML_TEMPERATURE_THRESHOLD_SHUTDOWN) return NVML_ERROR_NOT_SUPPORTED;
    *c = 90;
    return NVML_SUCCESS;
  };
  fake.nvmlDeviceGetNvLinkErrorCounter = [](nvmlDevice_t, unsigned int link, nvmlNvLinkErrorCounter_t counter,
                                            unsigned long long* n) {
    if (link == 2 && counter == NVML_NVLINK_ERROR_DL_CRC_DATA) return NVML_ERROR_NOT_SUPPORTED;
    *n = 0;
    return NVML_SUCCESS;
  };
  fake.nvmlDeviceGetPowerManagementLimit = [](nvmlDevice_t, unsigned int*) { return NVML_ERROR_NO_PERMISSION; };
  auto b = open(fake);
  auto r = b->health_facts(0);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->ecc_volatile_uncorrected, 0u);
  EXPECT_FALSE(r->ecc_aggregate_uncorrected);
  EXPECT_FALSE(r->ecc_aggregate_corrected);
  EXPECT_FALSE(r->temperature_shutdown_celsius);
  EXPECT_EQ(r->temperature_slowdown_celsius, 90.0);
  EXPECT_FALSE(r->power_limit_watts);
  EXPECT_DOUBLE_EQ(r->power_limit_enforced_watts.value_or(-1), 600.5);
  ASSERT_EQ(r->nvlinks.size(), 12u);
  EXPECT_FALSE(r->nvlinks[2].crc_data_errors);
  EXPECT_EQ(r->nvlinks[2].crc_flit_errors, 0u);
  EXPECT_EQ(r->nvlinks[1].crc_data_errors, 0u);
}

TEST_F(nvml_health_facts, MissingSymbolsMeanAbsentFactsNotACrash) {
  FakeNvml fake;
  script_h200(fake);
  for (const auto& name : health_functions()) fake.missing.insert(name);
  auto b = open(fake);
  auto r = b->health_facts(0);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_FALSE(r->persistence_mode);
  EXPECT_FALSE(r->ecc_volatile_uncorrected);
  EXPECT_FALSE(r->remap_pending);
  EXPECT_FALSE(r->temperature_slowdown_celsius);
  EXPECT_FALSE(r->power_limit_enforced_watts);
  EXPECT_FALSE(r->pcie_link_generation_max);
  EXPECT_TRUE(r->nvlinks.empty());
  for (const auto& name : health_functions()) EXPECT_EQ(fake.calls(name), 0) << name;
}

TEST_F(nvml_health_facts, OneMissingSymbolLeavesOnlyItsFactAbsent) {
  FakeNvml fake;
  script_h200(fake);
  fake.missing = {"nvmlDeviceGetNvLinkVersion", "nvmlDeviceGetRemappedRows"};  // an older driver
  auto b = open(fake);
  auto r = b->health_facts(0);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_FALSE(r->remap_pending);
  EXPECT_FALSE(r->remapped_rows_uncorrected);
  EXPECT_EQ(r->ecc_volatile_uncorrected, 12u);
  ASSERT_EQ(r->nvlinks.size(), 12u);
  EXPECT_FALSE(r->nvlinks[0].version);
  EXPECT_FALSE(r->nvlinks[0].version_code);
  EXPECT_EQ(r->nvlinks[0].active, true);
  EXPECT_EQ(r->nvlinks[0].crc_flit_errors, 2u);
}

TEST_F(nvml_health_facts, GpuLostMidReadIsAGpuLostError) {
  FakeNvml fake;
  script_h200(fake);
  auto b = open(fake);
  ASSERT_TRUE(b->health_facts(0).ok());
  // Persistence, compute, MIG, ECC mode and the four ECC counters answer; then the GPU is gone.
  fake.lose_gpu_after(8);
  auto r = b->health_facts(0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind(), core::ErrorKind::kGpuLost);
  EXPECT_THAT(r.error().message(), HasSubstr("GPU 0"));
  EXPECT_THAT(r.error().message(), HasSubstr("remapped rows")) << "the first call that found it lost";
  EXPECT_THAT(r.error().message(), HasSubstr("GPU is lost"));
}

TEST_F(nvml_health_facts, GpuLostInTheNvlinkLoopStopsAskingLinks) {
  FakeNvml fake;
  script_h200(fake);
  auto b = open(fake);
  int asked = 0;
  fake.nvmlDeviceGetNvLinkState = [&asked](nvmlDevice_t, unsigned int link, nvmlEnableState_t* active) {
    ++asked;
    if (link == 2) return NVML_ERROR_GPU_IS_LOST;
    *active = NVML_FEATURE_ENABLED;
    return NVML_SUCCESS;
  };
  auto r = b->health_facts(0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind(), core::ErrorKind::kGpuLost);
  EXPECT_THAT(r.error().message(), HasSubstr("NVLink state"));
  EXPECT_EQ(asked, 3) << "links after the lost answer are not asked";
}

TEST_F(nvml_health_facts, ResetRequiredIsAlsoLost) {
  FakeNvml fake;
  script_h200(fake);
  fake.nvmlDeviceGetEccMode = [](nvmlDevice_t, nvmlEnableState_t*, nvmlEnableState_t*) {
    return NVML_ERROR_RESET_REQUIRED;
  };
  auto b = open(fake);
  auto r = b->health_facts(0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind(), core::ErrorKind::kGpuLost);
  EXPECT_THAT(r.error().message(), HasSubstr("ECC mode"));
}

TEST_F(nvml_health_facts, IndexOutOfRangeIsBadInput) {
  FakeNvml fake(1);
  auto b = open(fake);
  EXPECT_EQ(b->health_facts(1).error().kind(), core::ErrorKind::kBadInput);
  EXPECT_EQ(b->health_facts(-1).error().kind(), core::ErrorKind::kBadInput);
}

TEST_F(nvml_health_facts, UnknownNvlinkVersionCodeKeepsTheRawCode) {
  FakeNvml fake;
  script_h200(fake);
  fake.nvmlDeviceGetNvLinkVersion = [](nvmlDevice_t, unsigned int link, unsigned int* v) {
    *v = link == 0 ? 99U : static_cast<unsigned int>(NVML_NVLINK_VERSION_INVALID);
    return NVML_SUCCESS;
  };
  auto b = open(fake);
  auto r = b->health_facts(0);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->nvlinks[0].version);
  EXPECT_EQ(r->nvlinks[0].version_code, 99u);
  EXPECT_FALSE(r->nvlinks[1].version);
  EXPECT_EQ(r->nvlinks[1].version_code, 0u);
}

// nvml.h's nvmlNvlinkVersion_t: NVML answers an enumeration, not the version (H200: 6 = NVLink 4.0).
TEST(nvml_nvlink_version, CodesMapToNvidiasVersionNames) {
  EXPECT_EQ(nvlink_version_name(NVML_NVLINK_VERSION_INVALID), std::nullopt);
  EXPECT_EQ(nvlink_version_name(1), "1.0");  // Pascal
  EXPECT_EQ(nvlink_version_name(2), "2.0");  // Volta
  EXPECT_EQ(nvlink_version_name(3), "2.2");
  EXPECT_EQ(nvlink_version_name(4), "3.0");  // Ampere
  EXPECT_EQ(nvlink_version_name(5), "3.1");
  EXPECT_EQ(nvlink_version_name(6), "4.0");  // Hopper (H100, H200)
  EXPECT_EQ(nvlink_version_name(7), "5.0");  // Blackwell
  EXPECT_EQ(nvlink_version_name(8), std::nullopt) << "newer than gpudoc's list: absent, never a guess";
}

// The errors group: the same counters as samples, read on the group's own (slow) period; each
// NVLink counter summed over the device's 12 links (1000 * link + counter each).
TEST_F(nvml_health_facts, ErrorsGroupReadsTheCounters) {
  FakeNvml fake;
  script_h200(fake);
  auto b = open(fake);
  auto caps = b->capabilities(0);
  ASSERT_TRUE(caps.ok());
  EXPECT_EQ((*caps & metrics_in(MetricGroup::kErrors)), metrics_in(MetricGroup::kErrors));
  clock_.advance(std::chrono::seconds(30));
  auto r = b->read(0, MetricGroup::kErrors);
  ASSERT_TRUE(r.ok()) << r.error().message();
  std::map<Metric, double> v;
  for (const auto& sample : r->metrics) {
    v[sample.metric] = sample.value;
    EXPECT_EQ(sample.time_unix_ns, clock_.unix_now_ns());
  }
  EXPECT_EQ(v.size(), metrics_in(MetricGroup::kErrors).count());
  EXPECT_EQ(v[Metric::kEccCorrectedVolatileErrors], 11);
  EXPECT_EQ(v[Metric::kEccUncorrectedVolatileErrors], 12);
  EXPECT_EQ(v[Metric::kEccCorrectedAggregateErrors], 21);
  EXPECT_EQ(v[Metric::kEccUncorrectedAggregateErrors], 22);
  EXPECT_EQ(v[Metric::kRemappedRowsCorrectable], 3);
  EXPECT_EQ(v[Metric::kRemappedRowsUncorrectable], 1);
  EXPECT_EQ(v[Metric::kRowRemapPending], 1);
  EXPECT_EQ(v[Metric::kRowRemapFailure], 0);
  EXPECT_EQ(v[Metric::kPcieReplayErrors], 5);
  EXPECT_EQ(v[Metric::kNvlinkReplayErrors], 66000 + 12 * NVML_NVLINK_ERROR_DL_REPLAY);
  EXPECT_EQ(v[Metric::kNvlinkRecoveryErrors], 66000 + 12 * NVML_NVLINK_ERROR_DL_RECOVERY);
  EXPECT_EQ(v[Metric::kNvlinkCrcFlitErrors], 66000 + 12 * NVML_NVLINK_ERROR_DL_CRC_FLIT);
  EXPECT_EQ(v[Metric::kNvlinkCrcDataErrors], 66000 + 12 * NVML_NVLINK_ERROR_DL_CRC_DATA);
}

// A driver without these symbols: the errors group is not supported (the sampler stops asking),
// never a failure, and the other groups read as before.
TEST_F(nvml_health_facts, ErrorsGroupWithoutTheSymbolsIsNotSupported) {
  {  // one FakeNvml at a time
    FakeNvml fake;
    script_h200(fake);
    fake.nvmlDeviceGetPowerUsage = [](nvmlDevice_t, unsigned int* mw) {
      *mw = 81310;
      return NVML_SUCCESS;
    };
    for (const auto& name : health_functions()) fake.missing.insert(name);
    auto b = open(fake);
    auto caps = b->capabilities(0);
    ASSERT_TRUE(caps.ok()) << caps.error().message();
    EXPECT_TRUE((*caps & metrics_in(MetricGroup::kErrors)).none());
    auto r = b->read(0, MetricGroup::kErrors);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().kind(), core::ErrorKind::kNotSupported);
    EXPECT_TRUE(b->read(0, MetricGroup::kFast).ok());
  }
  // Only the PCIe replay counter missing (an older driver): the rest are there.
  FakeNvml older;
  script_h200(older);
  older.missing = {"nvmlDeviceGetPcieReplayCounter"};
  auto b2 = open(older);
  auto r2 = b2->read(0, MetricGroup::kErrors);
  ASSERT_TRUE(r2.ok()) << r2.error().message();
  EXPECT_EQ(r2->metrics.size(), metrics_in(MetricGroup::kErrors).count() - 1);
  for (const auto& sample : r2->metrics) EXPECT_NE(sample.metric, Metric::kPcieReplayErrors);
}

}  // namespace
}  // namespace gpudoc::gpu
