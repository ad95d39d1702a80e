#include "serve/exposition.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "sample_snapshot.hpp"

namespace gpudoc::serve {
namespace {

using testing::set;
using testing::small_snapshot;

// Compares with tests/unit/serve/golden/NAME; GPUDOC_UPDATE_GOLDEN=1 rewrites it instead (after a
// deliberate change: review the diff).
void expect_golden(const std::string& name, const std::string& got) {
  const std::string path = std::string(GPUDOC_SOURCE_DIR) + "/tests/unit/serve/golden/" + name;
  if (const char* update = std::getenv("GPUDOC_UPDATE_GOLDEN"); update != nullptr && std::string(update) == "1") {
    std::ofstream(path) << got;
    return;
  }
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(got, ss.str()) << "golden " << path;
}

// The sample lines (not comments) as name{labels}, without the value.
std::multiset<std::string> series_of(const std::string& text) {
  std::multiset<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#') out.insert(line.substr(0, line.rfind(' ')));
  return out;
}

std::string line_starting(const std::string& text, const std::string& start) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(start, 0) == 0) return line;
  return {};
}

TEST(Exposition, BuildInfoNamesTheCommitBuiltWhenKnown) {
  Snapshot s = small_snapshot();
  s.revision = "784e17a8dc17";
  EXPECT_NE(render(s, {}).find("gpudoc_build_info{version=\"0.9.0\",revision=\"784e17a8dc17\"} 1\n"),
            std::string::npos);
  s.revision.clear();
  EXPECT_NE(render(s, {}).find("gpudoc_build_info{version=\"0.9.0\"} 1\n"), std::string::npos);
}

TEST(Exposition, SmallSnapshotPrometheusGolden) { expect_golden("small.prom", render(small_snapshot(), {})); }

TEST(Exposition, SmallSnapshotOpenMetricsWithDcgmGolden) {
  expect_golden("small_dcgm.om", render(small_snapshot(), {.format = Format::kOpenMetrics, .dcgm_compatible = true}));
}

TEST(Exposition, OpenMetricsHasUnitsCounterFamiliesAndEof) {
  const std::string om = render(small_snapshot(), {.format = Format::kOpenMetrics});
  EXPECT_TRUE(om.ends_with("\n# EOF\n"));
  EXPECT_NE(om.find("# TYPE gpudoc_energy_joules counter\n# UNIT gpudoc_energy_joules joules\n"), std::string::npos);
  EXPECT_NE(om.find("\ngpudoc_energy_joules_total{"), std::string::npos);
  EXPECT_NE(om.find("# UNIT gpudoc_power_watts watts\n"), std::string::npos);
  EXPECT_NE(om.find("# TYPE gpudoc_scrapes counter\n"), std::string::npos);
  EXPECT_EQ(om.find("# UNIT gpudoc_clock_event_reasons_mask"), std::string::npos);  // no unit in its name
  // The Prometheus format names the counter family with _total, has no UNIT and no EOF.
  const std::string prom = render(small_snapshot(), {});
  EXPECT_NE(prom.find("# TYPE gpudoc_energy_joules_total counter\n"), std::string::npos);
  EXPECT_EQ(prom.find("# UNIT"), std::string::npos);
  EXPECT_EQ(prom.find("# EOF"), std::string::npos);
  // Same series in both formats.
  EXPECT_EQ(series_of(om), series_of(prom));
}

TEST(Exposition, ContentTypeAndNegotiation) {
  EXPECT_EQ(content_type(Format::kPrometheus), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(content_type(Format::kOpenMetrics), "application/openmetrics-text; version=1.0.0; charset=utf-8");
  EXPECT_EQ(negotiate(""), Format::kPrometheus);
  EXPECT_EQ(negotiate("text/plain;version=0.0.4;q=0.5,*/*;q=0.1"), Format::kPrometheus);
  EXPECT_EQ(negotiate("application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"),
            Format::kOpenMetrics);
}

TEST(Exposition, HostileProcessNamesAreEscaped) {
  Snapshot s = small_snapshot();
  auto& procs = s.gpus[0].processes;
  procs.clear();
  procs.push_back(testing::process(1, "a\"b\\c\nd", 1));
  procs.push_back(testing::process(2, "x\"} 1\ngpudoc_fake 2", 2));
  procs.push_back(testing::process(3, std::string("bad\xff\xfeutf8"), 3));
  procs.push_back(testing::process(1, "duplicate pid", 4));  // the first counts
  const std::string out = render(s, {});
  EXPECT_NE(out.find(R"(process_name="a\"b\\c\nd"} 1)"), std::string::npos) << out;
  EXPECT_NE(out.find(R"(process_name="x\"} 1\ngpudoc_fake 2"} 2)"), std::string::npos) << out;
  EXPECT_NE(out.find("process_name=\"bad\xEF\xBF\xBD\xEF\xBF\xBDutf8\"} 3"), std::string::npos) << out;
  EXPECT_EQ(out.find("duplicate pid"), std::string::npos);
  EXPECT_EQ(out.find("\ngpudoc_fake"), std::string::npos);  // no injected line
  EXPECT_EQ(escape_label_value("\\\"\n"), "\\\\\\\"\\n");
}

TEST(Exposition, NoDuplicateSeriesAndStableOrder) {
  Snapshot s = small_snapshot();
  s.gpus.push_back(s.gpus[0]);  // the same GPU twice: exposed once
  GpuSnapshot g1 = s.gpus[0];
  g1.index = 1;
  g1.uuid = "GPU-5678";
  s.gpus.push_back(g1);
  s.findings.push_back(s.findings[0]);  // the same finding twice
  const std::string out = render(s, {.dcgm_compatible = true});
  const auto series = series_of(out);
  EXPECT_EQ(std::set<std::string>(series.begin(), series.end()).size(), series.size());
  EXPECT_EQ(out, render(s, {.dcgm_compatible = true}));
  // GPU 1 follows GPU 0 within a family.
  EXPECT_LT(out.find("gpudoc_power_watts{gpu=\"0\""), out.find("gpudoc_power_watts{gpu=\"1\""));
  // Each family's metadata comes once, before its samples.
  EXPECT_EQ(out.find("# TYPE gpudoc_power_watts gauge"), out.rfind("# TYPE gpudoc_power_watts gauge"));
}

TEST(Exposition, AbsentValuesAreAbsentNotZero) {
  Snapshot s = small_snapshot();
  s.gpus[0].latest = {};
  const std::string out = render(s, {.dcgm_compatible = true});
  EXPECT_EQ(out.find("gpudoc_power_watts"), std::string::npos);
  EXPECT_EQ(out.find("gpudoc_clock_event_reason{"), std::string::npos);
  // No DCGM-named series but the last XID's (not a sampled value: XID 79 came).
  std::set<std::string> dcgm;
  for (const auto& series : series_of(out))
    if (series.starts_with("DCGM_")) dcgm.insert(series.substr(0, series.find('{')));
  EXPECT_EQ(dcgm, std::set<std::string>{"DCGM_FI_DEV_XID_ERRORS"});
  EXPECT_NE(out.find("gpudoc_process_memory_used_bytes{"), std::string::npos);
}

TEST(Exposition, NonFiniteValuesAsPrometheusWritesThem) {
  Snapshot s = small_snapshot();
  set(s.gpus[0], gpu::Metric::kPowerWatts, std::numeric_limits<double>::quiet_NaN());
  set(s.gpus[0], gpu::Metric::kSmClockMhz, std::numeric_limits<double>::infinity());
  const std::string out = render(s, {});
  EXPECT_TRUE(line_starting(out, "gpudoc_power_watts{").ends_with(" NaN"));
  EXPECT_TRUE(line_starting(out, "gpudoc_sm_clock_mhz{").ends_with(" +Inf"));
}

TEST(Exposition, ClockEventReasonsOnePerBit) {
  Snapshot s = small_snapshot();
  set(s.gpus[0], gpu::Metric::kClockEventReasonsMask, static_cast<double>(0x4 | 0x40 | (1ull << 40)));
  const std::string out = render(s, {});
  auto value = [&](const std::string& reason) {
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);)
      if (line.find("reason=\"" + reason + "\"}") != std::string::npos) return line.substr(line.rfind(' ') + 1);
    return std::string("absent");
  };
  EXPECT_EQ(value("sw_power_cap"), "1");
  EXPECT_EQ(value("hw_thermal_slowdown"), "1");
  EXPECT_EQ(value("gpu_idle"), "0");
  EXPECT_EQ(value("other"), "1");
}

TEST(Exposition, DcgmNamesLabelsAndUnits) {
  Snapshot s = small_snapshot();
  set(s.gpus[0], gpu::Metric::kGpuTemperatureCelsius, 61);
  set(s.gpus[0], gpu::Metric::kSmClockMhz, 1980);
  set(s.gpus[0], gpu::Metric::kGpmSmActivityPercent, 57);
  set(s.gpus[0], gpu::Metric::kMemoryUsedBytes, 80.0 * 1024 * 1024 * 1024 + 1048575);  // 81920 MiB + 1 byte short
  set(s.gpus[0], gpu::Metric::kEnergyJoules, 1234.5678);
  const std::string out = render(s, {.dcgm_compatible = true});
  const std::string labels =
      R"({gpu="0",UUID="GPU-1234",pci_bus_id="00000000:18:00.0",device="nvidia0",modelName="NVIDIA H200",Hostname="node7",)"
      R"(DCGM_FI_DRIVER_VERSION="580.159.03",container_id="5b6ec8ad5e1c",pod_uid="0c4f2a8e-9d5b-4c61-8f0e-2b7d1a3c5e9f",)"
      R"(hpc_job="4213"})";
  EXPECT_EQ(line_starting(out, "DCGM_FI_DEV_GPU_TEMP{"), "DCGM_FI_DEV_GPU_TEMP" + labels + " 61");
  EXPECT_EQ(line_starting(out, "DCGM_FI_DEV_POWER_USAGE{"), "DCGM_FI_DEV_POWER_USAGE" + labels + " 412.5");
  EXPECT_EQ(line_starting(out, "DCGM_FI_DEV_SM_CLOCK{"), "DCGM_FI_DEV_SM_CLOCK" + labels + " 1980");
  EXPECT_EQ(line_starting(out, "DCGM_FI_DEV_GPU_UTIL{"), "DCGM_FI_DEV_GPU_UTIL" + labels + " 97");
  EXPECT_EQ(line_starting(out, "DCGM_FI_DEV_FB_USED{"), "DCGM_FI_DEV_FB_USED" + labels + " 81920");       // MiB
  EXPECT_EQ(line_starting(out, "DCGM_FI_PROF_SM_ACTIVE{"), "DCGM_FI_PROF_SM_ACTIVE" + labels + " 0.57");  // ratio
  EXPECT_EQ(line_starting(out, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{"),
            "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION" + labels + " 1234568");  // mJ
  EXPECT_NE(out.find("# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n"), std::string::npos);
  // gpudoc's own names are still there, and no DCGM name without the flag.
  EXPECT_NE(out.find("\ngpudoc_power_watts{"), std::string::npos);
  EXPECT_EQ(render(s, {}).find("DCGM_"), std::string::npos);
  // No Hostname label when there is no host name.
  s.hostname.clear();
  EXPECT_EQ(render(s, {.dcgm_compatible = true}).find("Hostname"), std::string::npos);
}

TEST(Exposition, JobLabelsOnProcessesAndOnAGpuOneJobHolds) {
  Snapshot s = small_snapshot();
  const std::string pod = "0c4f2a8e-9d5b-4c61-8f0e-2b7d1a3c5e9f";
  const std::string native = render(s, {});
  EXPECT_EQ(line_starting(native, "gpudoc_process_memory_used_bytes{"),
            R"(gpudoc_process_memory_used_bytes{gpu="0",uuid="GPU-1234",pid="4242",process_name="python3",)"
            R"(container_id="5b6ec8ad5e1c",pod_uid=")" +
                pod + R"(",slurm_job_id="4213"} 1024)");
  EXPECT_EQ(line_starting(native, "gpudoc_gpu_job_info{"),
            R"(gpudoc_gpu_job_info{gpu="0",uuid="GPU-1234",container_id="5b6ec8ad5e1c",pod_uid=")" + pod +
                R"(",slurm_job_id="4213"} 1)");
  EXPECT_EQ(line_starting(native, "gpudoc_gpu_info{"),
            R"(gpudoc_gpu_info{gpu="0",uuid="GPU-1234",name="NVIDIA H200",pci_bus_id="00000000:18:00.0",)"
            R"(driver_version="580.159.03"} 1)");
  // The GPU's own series keep their labels: a job starting or ending does not start new series.
  EXPECT_EQ(line_starting(native, "gpudoc_power_watts{").find("pod_uid"), std::string::npos);

  // A second process of the same pod in another container: the pod and the job stay, the container goes.
  ProcessSnapshot other = s.gpus[0].processes[0];
  other.pid = 4243;
  other.container_id = "77aa";
  s.gpus[0].processes.push_back(other);
  const std::string dcgm = render(s, {.dcgm_compatible = true});
  const std::string power = line_starting(dcgm, "DCGM_FI_DEV_POWER_USAGE{");
  EXPECT_NE(power.find(R"(,pod_uid=")" + pod + R"(",hpc_job="4213"})"), std::string::npos) << power;
  EXPECT_EQ(power.find("container_id"), std::string::npos) << power;
  EXPECT_NE(line_starting(dcgm, "gpudoc_gpu_job_info{").find(R"({gpu="0",uuid="GPU-1234",pod_uid=")"),
            std::string::npos);

  // A process of no job on the GPU (or two jobs): the GPU belongs to none; an idle GPU neither.
  ProcessSnapshot host = testing::process(9, "nvidia-smi", 1);
  s.gpus[0].processes.push_back(host);
  const std::string shared = render(s, {.dcgm_compatible = true});
  EXPECT_EQ(line_starting(shared, "DCGM_FI_DEV_POWER_USAGE{").find("pod_uid"), std::string::npos);
  EXPECT_EQ(shared.find("gpudoc_gpu_job_info"), std::string::npos);
  s.gpus[0].processes.clear();
  EXPECT_EQ(render(s, {.dcgm_compatible = true}).find("hpc_job"), std::string::npos);
}

TEST(Exposition, HostileJobLabelsAreEscaped) {
  Snapshot s = small_snapshot();
  auto& p = s.gpus[0].processes[0];
  p.container_id = "c\"} 1\nDCGM_FAKE 2";
  p.pod_uid = "pod\\\"x";
  p.slurm_job_id = std::string("j\xff\n");
  s.driver_version = "580\"\n";
  for (const auto& options :
       {RenderOptions{}, RenderOptions{.format = Format::kOpenMetrics, .dcgm_compatible = true}}) {
    const std::string out = render(s, options);
    EXPECT_EQ(out.find("\nDCGM_FAKE"), std::string::npos) << out;
    EXPECT_NE(out.find(R"(container_id="c\"} 1\nDCGM_FAKE 2")"), std::string::npos) << out;
    EXPECT_NE(out.find(R"(pod_uid="pod\\\"x")"), std::string::npos) << out;
    EXPECT_NE(out.find("=\"j\xEF\xBF\xBD\\n\""), std::string::npos) << out;
    EXPECT_NE(out.find(R"(driver_version="580\"\n")"), std::string::npos) << out;
    // Every line is a comment or a sample: name{labels} value.
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);) {
      if (line.starts_with("#")) continue;
      EXPECT_TRUE(line.find('{') == std::string::npos || line.rfind("} ") != std::string::npos) << line;
    }
  }
}

TEST(Exposition, FindingSeverityIsAValueNotALabel) {
  Snapshot s = small_snapshot();
  s.findings.push_back({.id = "straggler", .severity = findings::Severity::kCritical, .gpu = 0, .gpu_time_lost_s = {}});
  s.findings.push_back({.id = "healthy", .severity = findings::Severity::kInfo, .gpu = 0, .gpu_time_lost_s = {}});
  const std::string out = render(s, {});
  EXPECT_EQ(line_starting(out, "gpudoc_finding{id=\"sawtooth\""), R"(gpudoc_finding{id="sawtooth",gpu="0"} 1)");
  EXPECT_EQ(line_starting(out, "gpudoc_finding_severity{id=\"healthy\""),
            R"(gpudoc_finding_severity{id="healthy",gpu="0"} 1)");
  EXPECT_EQ(line_starting(out, "gpudoc_finding_severity{id=\"sawtooth\""),
            R"(gpudoc_finding_severity{id="sawtooth",gpu="0"} 2)");
  EXPECT_EQ(line_starting(out, "gpudoc_finding_severity{id=\"straggler\""),
            R"(gpudoc_finding_severity{id="straggler",gpu="0"} 3)");
  EXPECT_EQ(line_starting(out, "gpudoc_finding_gpu_time_lost_seconds{"),
            R"(gpudoc_finding_gpu_time_lost_seconds{id="sawtooth",gpu="0"} 8.5)");
  EXPECT_EQ(out.find("severity=\""), std::string::npos);
  // The same finding turning critical keeps every series it had: only a value changes.
  Snapshot later = small_snapshot();
  later.findings[0].severity = findings::Severity::kCritical;
  EXPECT_EQ(series_of(render(small_snapshot(), {})), series_of(render(later, {})));
  EXPECT_NE(render(small_snapshot(), {}), render(later, {}));
}

TEST(Exposition, FleetHealthCountersInBothNamings) {
  Snapshot s = small_snapshot();
  set(s.gpus[0], gpu::Metric::kMemoryFreeBytes,
      60.0 * 1024 * 1024 * 1024 + 1048575);  // 61440 MiB and a byte short of one more
  set(s.gpus[0], gpu::Metric::kGpmGraphicsActivityPercent, 87.5);
  set(s.gpus[0], gpu::Metric::kEccCorrectedVolatileErrors, 11);
  set(s.gpus[0], gpu::Metric::kEccUncorrectedVolatileErrors, 12);
  set(s.gpus[0], gpu::Metric::kEccCorrectedAggregateErrors, 21);
  set(s.gpus[0], gpu::Metric::kEccUncorrectedAggregateErrors, 22);
  set(s.gpus[0], gpu::Metric::kRemappedRowsCorrectable, 3);
  set(s.gpus[0], gpu::Metric::kRemappedRowsUncorrectable, 1);
  set(s.gpus[0], gpu::Metric::kRowRemapPending, 1);
  set(s.gpus[0], gpu::Metric::kRowRemapFailure, 0);
  set(s.gpus[0], gpu::Metric::kPcieReplayErrors, 5);
  set(s.gpus[0], gpu::Metric::kNvlinkCrcFlitErrors, 40);
  set(s.gpus[0], gpu::Metric::kNvlinkCrcDataErrors, 41);
  set(s.gpus[0], gpu::Metric::kNvlinkReplayErrors, 42);
  set(s.gpus[0], gpu::Metric::kNvlinkRecoveryErrors, 43);
  const std::string gpu = R"({gpu="0",uuid="GPU-1234",name="NVIDIA H200",pci_bus_id="00000000:18:00.0"})";
  const std::string native = render(s, {});
  const std::vector<std::pair<std::string, std::string>> gpudoc = {
      {"gpudoc_memory_free_bytes", "64425558015"},
      {"gpudoc_gpm_graphics_activity_percent", "87.5"},
      {"gpudoc_ecc_corrected_volatile_errors_total", "11"},
      {"gpudoc_ecc_uncorrected_volatile_errors_total", "12"},
      {"gpudoc_ecc_corrected_aggregate_errors_total", "21"},
      {"gpudoc_ecc_uncorrected_aggregate_errors_total", "22"},
      {"gpudoc_correctable_remapped_rows_total", "3"},
      {"gpudoc_uncorrectable_remapped_rows_total", "1"},
      {"gpudoc_row_remap_pending", "1"},
      {"gpudoc_row_remap_failure", "0"},
      {"gpudoc_pcie_replay_errors_total", "5"},
      {"gpudoc_nvlink_crc_flit_errors_total", "40"},
      {"gpudoc_nvlink_crc_data_errors_total", "41"},
      {"gpudoc_nvlink_replay_errors_total", "42"},
      {"gpudoc_nvlink_recovery_errors_total", "43"},
  };
  for (const auto& [name, value] : gpudoc) EXPECT_EQ(line_starting(native, name + "{"), name + gpu + " " + value);
  EXPECT_NE(native.find("# TYPE gpudoc_ecc_uncorrected_volatile_errors_total counter\n"), std::string::npos);
  EXPECT_NE(native.find("# TYPE gpudoc_row_remap_failure gauge\n"), std::string::npos);
  // Every GPU has its XID total from the start: 0 until the first XID.
  EXPECT_EQ(line_starting(native, "gpudoc_gpu_xid_errors_total{"), R"(gpudoc_gpu_xid_errors_total{gpu="0"} 2)");
  s.xids.clear();
  EXPECT_EQ(line_starting(render(s, {}), "gpudoc_gpu_xid_errors_total{"), R"(gpudoc_gpu_xid_errors_total{gpu="0"} 0)");

  // dcgm-exporter's names, types and units (etc/default-counters.csv).
  s.xids = {{.gpu = 0, .xid = 79, .count = 1, .last_unix_ns = 2000},
            {.gpu = 0, .xid = 13, .count = 5, .last_unix_ns = 1000}};
  const std::string dcgm = render(s, {.dcgm_compatible = true});
  const std::vector<std::tuple<std::string, std::string, std::string>> want = {
      {"DCGM_FI_DEV_FB_FREE", "gauge", "61440"},
      {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "0.875"},
      {"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter", "11"},
      {"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "12"},
      {"DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", "counter", "21"},
      {"DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", "counter", "22"},
      {"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter", "3"},
      {"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter", "1"},
      {"DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "0"},
      {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "5"},
      {"DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "counter", "40"},
      {"DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", "counter", "41"},
      {"DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "counter", "42"},
      {"DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "counter", "43"},
      {"DCGM_FI_DEV_XID_ERRORS", "gauge", "79"},  // the newest XID's number
  };
  for (const auto& [name, type, value] : want) {
    const std::string line = line_starting(dcgm, name + "{");
    EXPECT_TRUE(line.starts_with(name + R"({gpu="0",UUID="GPU-1234",)")) << name << ": " << line;
    EXPECT_TRUE(line.ends_with(" " + value)) << line;
    EXPECT_NE(dcgm.find("# TYPE " + name + " " + type + "\n"), std::string::npos) << name;
  }
  s.xids.clear();
  EXPECT_TRUE(line_starting(render(s, {.dcgm_compatible = true}), "DCGM_FI_DEV_XID_ERRORS{").ends_with(" 0"));
}

TEST(Exposition, FindingSeriesFromADiagnosis) {
  auto f = findings::make_finding("sawtooth", findings::Severity::kWarning);
  f.gpus = {0, 1};
  f.evidence.push_back({"gpu_time_lost_s", 10.0, "s", "test"});
  auto g = findings::make_finding("sawtooth", findings::Severity::kCritical);
  g.gpus = {1};
  g.evidence.push_back({"gpu_time_lost_s", 2.0, "s", "test"});
  const auto series = finding_series({f, g}, {4, 6});  // positions 0, 1 are GPUs 4 and 6
  ASSERT_EQ(series.size(), 2u);
  EXPECT_EQ(series[0].gpu, 4);
  EXPECT_EQ(series[0].severity, findings::Severity::kWarning);
  EXPECT_DOUBLE_EQ(*series[0].gpu_time_lost_s, 5.0);
  EXPECT_EQ(series[1].gpu, 6);
  EXPECT_EQ(series[1].severity, findings::Severity::kCritical);
  EXPECT_DOUBLE_EQ(*series[1].gpu_time_lost_s, 7.0);
}

}  // namespace
}  // namespace gpudoc::serve
