// The per-GPU, version and host checks. Pure: inputs in, CheckResults out.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <set>

#include "core/numeric.hpp"
#include "health/health.hpp"

namespace gpudoc::health {
namespace {

CheckResult make(std::string check, std::optional<int> gpu, Status status, std::string id, std::string evidence,
                 std::string next = {}) {
  CheckResult r;
  r.check = std::move(check);
  r.gpu = gpu;
  r.status = status;
  r.finding_id = std::move(id);
  r.evidence = std::move(evidence);
  r.next_step = std::move(next);
  return r;
}

void add(CheckResult& r, std::string name, double value, std::string unit, std::string how = {}) {
  r.values.push_back(findings::Evidence{std::move(name), value, std::move(unit), std::move(how)});
}

// The load samples that count: after warm-up when a load ran, all of them otherwise.
std::vector<const LoadSample*> settled(const LoadTelemetry& load) {
  std::vector<const LoadSample*> out;
  for (const LoadSample& s : load.samples)
    if (!load.ran || s.t_s >= load.warmup_s) out.push_back(&s);
  return out;
}

std::string fmt_opt_u(const std::optional<std::uint64_t>& v) { return v ? std::to_string(*v) : "n/a"; }

CheckResult check_persistence(int g, const gpu::HealthFacts& f) {
  constexpr const char* kId = "health_persistence_mode";
  if (!f.persistence_mode) return make("persistence_mode", g, Status::kSkip, kId, "not reported by the driver");
  if (*f.persistence_mode) return make("persistence_mode", g, Status::kPass, kId, "enabled");
  return make("persistence_mode", g, Status::kWarn, kId,
              "disabled: the driver is torn down whenever no process holds the GPU, so each job start pays the "
              "initialisation (seconds) again",
              findings::next_step(kId, 0));
}

CheckResult check_compute_mode(int g, const gpu::HealthFacts& f) {
  constexpr const char* kId = "health_compute_mode";
  if (!f.compute_mode) return make("compute_mode", g, Status::kSkip, kId, "not reported by the driver");
  const std::string mode = gpu::to_string(*f.compute_mode);
  switch (*f.compute_mode) {
    case gpu::ComputeMode::kDefault:
      return make("compute_mode", g, Status::kPass, kId, "default (several processes may share)");
    case gpu::ComputeMode::kExclusiveProcess:
      return make("compute_mode", g, Status::kInfo, kId,
                  "exclusive_process: one process at a time; a second job on this GPU fails to create a context",
                  findings::next_step(kId, 0));
    case gpu::ComputeMode::kProhibited:
      return make("compute_mode", g, Status::kFail, kId, "prohibited: no process can use this GPU",
                  findings::next_step(kId, 1));
    case gpu::ComputeMode::kExclusiveThread: break;
  }
  return make("compute_mode", g, Status::kWarn, kId, mode, findings::next_step(kId, 2));
}

CheckResult check_mig(int g, const gpu::DeviceInfo& info, const gpu::HealthFacts& f) {
  constexpr const char* kId = "health_mig";
  if (!f.mig_current) return make("mig", g, Status::kSkip, kId, "MIG not supported on this GPU");
  std::string ev = fmt::format("MIG {}", *f.mig_current ? "enabled" : "disabled");
  if (*f.mig_current) ev += fmt::format(", {} instance(s)", info.mig_instances.size());
  CheckResult r;
  if (f.mig_pending && *f.mig_pending != *f.mig_current) {
    r = make("mig", g, Status::kWarn, kId,
             ev + fmt::format("; a change to MIG {} is pending until the GPU is reset", *f.mig_pending ? "on" : "off"),
             findings::next_step(kId, 1));
  } else if (*f.mig_current) {
    r = make("mig", g, Status::kWarn, kId,
             ev + ": a job sees one instance (a slice of the SMs and memory), not the whole GPU",
             findings::next_step(kId, 0));
  } else {
    r = make("mig", g, Status::kPass, kId, ev);
  }
  add(r, "mig_enabled", *f.mig_current ? 1 : 0, "bool");
  add(r, "mig_instances", static_cast<double>(info.mig_instances.size()), "count");
  return r;
}

CheckResult check_ecc(int g, const gpu::HealthFacts& f) {
  constexpr const char* kId = "health_ecc";
  if (!f.ecc_current && !f.ecc_volatile_uncorrected && !f.ecc_aggregate_uncorrected)
    return make("ecc", g, Status::kSkip, kId, "ECC not supported on this GPU");
  const std::string counts = fmt::format("volatile corrected {} uncorrected {}, aggregate corrected {} uncorrected {}",
                                         fmt_opt_u(f.ecc_volatile_corrected), fmt_opt_u(f.ecc_volatile_uncorrected),
                                         fmt_opt_u(f.ecc_aggregate_corrected), fmt_opt_u(f.ecc_aggregate_uncorrected));
  const std::string mode = f.ecc_current ? (*f.ecc_current ? "ECC on" : "ECC off") : "ECC mode n/a";
  CheckResult r;
  if (f.ecc_volatile_uncorrected.value_or(0) > 0) {
    r = make("ecc", g, Status::kFail, kId,
             fmt::format("{}; {}: uncorrectable memory errors since the driver loaded", mode, counts),
             findings::next_step(kId, 0));
  } else if (f.ecc_current && !*f.ecc_current) {
    r = make("ecc", g, Status::kWarn, kId, fmt::format("{}: memory errors go undetected; {}", mode, counts),
             findings::next_step(kId, 1));
  } else if (f.ecc_pending && f.ecc_current && *f.ecc_pending != *f.ecc_current) {
    r = make("ecc", g, Status::kWarn, kId,
             fmt::format("{}, a change is pending until the next reboot; {}", mode, counts),
             findings::next_step(kId, 2));
  } else if (f.ecc_aggregate_uncorrected.value_or(0) > 0) {
    r = make("ecc", g, Status::kWarn, kId,
             fmt::format("{}; {}: uncorrectable errors in this board's history", mode, counts),
             findings::next_step(kId, 3));
  } else {
    r = make("ecc", g, Status::kPass, kId, fmt::format("{}; {}", mode, counts));
  }
  const auto put = [&](const char* name, const std::optional<std::uint64_t>& v) {
    if (v) add(r, name, static_cast<double>(*v), "count");
  };
  put("ecc_volatile_corrected", f.ecc_volatile_corrected);
  put("ecc_volatile_uncorrected", f.ecc_volatile_uncorrected);
  put("ecc_aggregate_corrected", f.ecc_aggregate_corrected);
  put("ecc_aggregate_uncorrected", f.ecc_aggregate_uncorrected);
  return r;
}

CheckResult check_remap(int g, const gpu::HealthFacts& f) {
  constexpr const char* kId = "health_row_remapping";
  if (!f.remap_pending && !f.remap_failed && !f.remapped_rows_uncorrected)
    return make("row_remapping", g, Status::kSkip, kId, "not supported (GPUs before Ampere retire pages instead)");
  const std::string ev =
      fmt::format("remapped rows: {} after correctable, {} after uncorrectable errors; pending {}, failed {}",
                  f.remapped_rows_corrected.value_or(0), f.remapped_rows_uncorrected.value_or(0),
                  f.remap_pending.value_or(false) ? "yes" : "no", f.remap_failed.value_or(false) ? "yes" : "no");
  CheckResult r;
  if (f.remap_failed.value_or(false)) {
    r = make("row_remapping", g, Status::kFail, kId, ev + ": the memory could not be repaired",
             findings::next_step(kId, 0));
  } else if (f.remap_pending.value_or(false)) {
    r = make("row_remapping", g, Status::kFail, kId, ev + ": a remap waits for a GPU reset",
             findings::next_step(kId, 1));
  } else if (f.remapped_rows_uncorrected.value_or(0) > 0) {
    r = make("row_remapping", g, Status::kWarn, kId, ev, findings::next_step(kId, 2));
  } else {
    r = make("row_remapping", g, Status::kPass, kId, ev);
  }
  add(r, "remapped_rows_corrected", f.remapped_rows_corrected.value_or(0), "count");
  add(r, "remapped_rows_uncorrected", f.remapped_rows_uncorrected.value_or(0), "count");
  add(r, "remap_pending", f.remap_pending.value_or(false) ? 1 : 0, "bool");
  add(r, "remap_failed", f.remap_failed.value_or(false) ? 1 : 0, "bool");
  return r;
}

CheckResult check_retired(int g, const gpu::HealthFacts& f) {
  constexpr const char* kId = "health_retired_pages";
  if (!f.retired_pages_single_bit && !f.retired_pages_double_bit && !f.retired_pages_pending)
    return make("retired_pages", g, Status::kSkip, kId, "not supported (Ampere and newer remap rows instead)");
  const std::string ev = fmt::format("retired pages: {} (multiple single-bit), {} (double-bit); pending {}",
                                     f.retired_pages_single_bit.value_or(0), f.retired_pages_double_bit.value_or(0),
                                     f.retired_pages_pending.value_or(false) ? "yes" : "no");
  CheckResult r;
  if (f.retired_pages_pending.value_or(false)) {
    r = make("retired_pages", g, Status::kFail, kId, ev + ": takes effect at the next driver load",
             findings::next_step(kId, 0));
  } else if (f.retired_pages_double_bit.value_or(0) > 0) {
    r = make("retired_pages", g, Status::kWarn, kId, ev, findings::next_step(kId, 1));
  } else {
    r = make("retired_pages", g, Status::kPass, kId, ev);
  }
  add(r, "retired_pages", f.retired_pages_single_bit.value_or(0) + f.retired_pages_double_bit.value_or(0), "count");
  return r;
}

CheckResult check_temperature(int g, const gpu::HealthFacts& f, const LoadTelemetry& load) {
  constexpr const char* kId = "health_temperature";
  if (!f.temperature_slowdown_celsius && !f.temperature_shutdown_celsius && !f.temperature_gpu_max_celsius)
    return make(
        "temperature", g, Status::kSkip, kId,
        "the driver reports no temperature thresholds for this GPU: not judged (gpudoc never uses fixed degrees)");
  std::optional<double> hot;
  std::optional<double> hot_mem;
  for (const LoadSample* s : settled(load)) {
    if (s->temperature_celsius) hot = std::max(hot.value_or(*s->temperature_celsius), *s->temperature_celsius);
    if (s->memory_temperature_celsius)
      hot_mem = std::max(hot_mem.value_or(*s->memory_temperature_celsius), *s->memory_temperature_celsius);
  }
  if (!hot) return make("temperature", g, Status::kSkip, kId, "no temperature reading");
  const auto opt = [](const std::optional<double>& v) { return v ? fmt::format("{:.0f} C", *v) : std::string("n/a"); };
  std::string ev = fmt::format("hottest {:.0f} C {}; thresholds: max operating {}, slowdown {}, shutdown {}", *hot,
                               load.ran ? "under load" : "at idle", opt(f.temperature_gpu_max_celsius),
                               opt(f.temperature_slowdown_celsius), opt(f.temperature_shutdown_celsius));
  if (hot_mem) ev += fmt::format("; memory {:.0f} C of max {}", *hot_mem, opt(f.temperature_memory_max_celsius));
  const std::string cooling = findings::next_step(kId, 0);
  CheckResult r;
  if ((f.temperature_slowdown_celsius && *hot >= *f.temperature_slowdown_celsius) ||
      (f.temperature_shutdown_celsius && *hot >= *f.temperature_shutdown_celsius) ||
      (hot_mem && f.temperature_memory_max_celsius && *hot_mem >= *f.temperature_memory_max_celsius)) {
    r = make("temperature", g, Status::kFail, kId, ev + ": at or past a slowdown threshold", cooling);
  } else if (f.temperature_gpu_max_celsius && *hot >= *f.temperature_gpu_max_celsius) {
    r = make("temperature", g, Status::kWarn, kId, ev + ": past the maximum operating temperature", cooling);
  } else {
    r = make("temperature", g, Status::kPass, kId, ev);
  }
  add(r, "temperature_celsius", *hot, "C", load.ran ? "max under load" : "max at idle");
  if (hot_mem) add(r, "memory_temperature_celsius", *hot_mem, "C");
  if (f.temperature_slowdown_celsius) add(r, "temperature_slowdown_celsius", *f.temperature_slowdown_celsius, "C");
  return r;
}

CheckResult check_power(int g, const gpu::HealthFacts& f, const LoadTelemetry& load) {
  constexpr const char* kId = "health_power";
  const std::optional<double> limit = f.power_limit_enforced_watts ? f.power_limit_enforced_watts : f.power_limit_watts;
  if (!limit) return make("power", g, Status::kSkip, kId, "the driver reports no power limit for this GPU");
  std::optional<double> peak;
  for (const LoadSample* s : settled(load))
    if (s->power_watts) peak = std::max(peak.value_or(*s->power_watts), *s->power_watts);
  std::string ev = fmt::format("limit {:.0f} W", *limit);
  if (f.power_limit_default_watts) ev += fmt::format(" (default {:.0f} W)", *f.power_limit_default_watts);
  if (peak) ev += fmt::format("; peak draw {:.0f} W {}", *peak, load.ran ? "under load" : "at idle");
  CheckResult r;
  if (f.power_limit_default_watts && *limit < *f.power_limit_default_watts - 0.5) {
    r = make("power", g, Status::kWarn, kId,
             ev + fmt::format(": the limit is {:.0f} % of the default, so clocks drop earlier under load",
                              100.0 * *limit / *f.power_limit_default_watts),
             findings::next_step(kId, 0));
  } else {
    r = make("power", g, Status::kPass, kId, ev);
  }
  add(r, "power_limit_watts", *limit, "W");
  if (peak) add(r, "power_watts", *peak, "W", load.ran ? "peak under load" : "peak at idle");
  return r;
}

CheckResult check_clocks(int g, const gpu::DeviceInfo& info, const LoadTelemetry& load) {
  constexpr const char* kId = "health_clocks";
  if (!load.ran)
    return make(
        "clocks", g, Status::kSkip, kId,
        fmt::format("no load ran ({}): idle clocks say nothing", load.why_not.empty() ? "skipped" : load.why_not),
        load.why_not == "--no-load" ? "" : findings::next_step(kId, 2));
  if (!info.sm_clock_max_mhz) return make("clocks", g, Status::kSkip, kId, "the driver reports no maximum SM clock");
  std::vector<double> clocks;
  std::uint64_t reasons = 0;
  for (const LoadSample* s : settled(load)) {
    if (s->sm_clock_mhz) clocks.push_back(*s->sm_clock_mhz);
    if (s->clock_event_reasons) reasons |= *s->clock_event_reasons;
  }
  if (clocks.empty()) return make("clocks", g, Status::kSkip, kId, "no SM clock reading during the load");
  const double med = core::median(clocks);
  const double max = *info.sm_clock_max_mhz;
  const double ratio = med / max;
  // The slowdown reasons seen; gpu_idle/app settings are not the load's business.
  std::uint64_t slow = 0;
  for (const auto& r : gpu::clock_event_reasons())
    if (r.is_slowdown && (reasons & r.bit) != 0) slow |= r.bit;
  std::string ev =
      fmt::format("median SM clock {:.0f} MHz of max {:.0f} MHz ({:.1f} %) over {} samples under load; reasons: {}",
                  med, max, 100.0 * ratio, clocks.size(), gpu::clock_event_reason_names(slow));
  constexpr std::uint64_t kPowerCap = 0x4;
  CheckResult r;
  if (ratio >= 1.0 - kClockTolerance) {
    r = make("clocks", g, Status::kPass, kId, ev);
  } else if ((slow & ~kPowerCap) != 0) {
    r = make("clocks", g, Status::kFail, kId, ev + ": held down by thermal or hardware slowdown",
             findings::next_step(kId, 0));
  } else {
    r = make("clocks", g, Status::kWarn, kId,
             ev + (slow != 0 ? ": held at the power limit" : ": below maximum with no reason reported"),
             findings::next_step(kId, 1));
  }
  add(r, "sm_clock_mhz", med, "MHz", "median under load");
  add(r, "sm_clock_max_mhz", max, "MHz");
  add(r, "clock_event_reasons_mask", static_cast<double>(reasons), "bitmask");
  return r;
}

CheckResult check_pcie(int g, const gpu::HealthFacts& f, const gpu::DeviceInfo& info, const LoadTelemetry& load) {
  constexpr const char* kId = "health_pcie_link";
  const std::optional<int> max_gen =
      f.pcie_link_generation_max ? f.pcie_link_generation_max : info.pcie_link_generation_max;
  const std::optional<int> max_width = f.pcie_link_width_max ? f.pcie_link_width_max : info.pcie_link_width_max;
  if (!max_gen && !max_width)
    return make("pcie_link", g, Status::kSkip, kId, "the driver reports no maximum PCIe link");
  std::optional<int> gen;
  std::optional<int> width;
  for (const LoadSample* s : settled(load)) {
    if (s->pcie_link_generation) gen = std::max(gen.value_or(0), *s->pcie_link_generation);
    if (s->pcie_link_width) width = std::max(width.value_or(0), *s->pcie_link_width);
  }
  if (!gen && !width) return make("pcie_link", g, Status::kSkip, kId, "no current PCIe link reading");
  const auto o = [](const std::optional<int>& v) { return v ? std::to_string(*v) : std::string("?"); };
  const std::string ev = fmt::format("Gen{} x{} of max Gen{} x{} {}", o(gen), o(width), o(max_gen), o(max_width),
                                     load.ran ? "under load" : "at idle");
  const bool low_gen = gen && max_gen && *gen < *max_gen;
  const bool low_width = width && max_width && *width < *max_width;
  CheckResult r;
  if (!low_gen && !low_width) {
    r = make("pcie_link", g, Status::kPass, kId, ev);
  } else if (!load.ran && low_gen && !low_width) {
    r = make("pcie_link", g, Status::kSkip, kId, ev + ": an idle GPU lowers its link speed to save power; not judged",
             findings::next_step(kId, 1));
  } else {
    r = make("pcie_link", g, Status::kFail, kId,
             ev + ": the link trained below its maximum (host transfers are slower in proportion)",
             findings::next_step(kId, 0));
  }
  if (gen) add(r, "pcie_link_generation", *gen, "gen");
  if (width) add(r, "pcie_link_width", *width, "lanes");
  return r;
}

CheckResult check_nvlink(int g, const gpu::HealthFacts& f) {
  constexpr const char* kId = "health_nvlink";
  if (f.nvlinks.empty()) return make("nvlink", g, Status::kSkip, kId, "no NVLink on this GPU");
  int active = 0;
  std::uint64_t crc = 0;
  std::uint64_t replay = 0;
  std::uint64_t recovery = 0;
  std::set<std::string> versions;  // "4.0", or the backend's raw code when it names no version
  std::optional<double> version_number;
  std::vector<int> down;
  for (const gpu::NvlinkFacts& l : f.nvlinks) {
    if (l.active.value_or(false)) {
      ++active;
    } else {
      down.push_back(l.link);
    }
    if (l.version) {
      versions.insert(*l.version);
      double v = 0;
      if (std::from_chars(l.version->data(), l.version->data() + l.version->size(), v).ec == std::errc())
        version_number = std::max(version_number.value_or(v), v);
    } else if (l.version_code) {
      versions.insert(fmt::format("unknown (NVML code {})", *l.version_code));
    }
    crc += l.crc_flit_errors.value_or(0) + l.crc_data_errors.value_or(0);
    replay += l.replay_errors.value_or(0);
    recovery += l.recovery_errors.value_or(0);
  }
  std::string ev = fmt::format(
      "{} of {} links active (NVLink {}); errors since driver load: CRC {}, replay {}, recovery {}", active,
      f.nvlinks.size(), versions.empty() ? "?" : fmt::format("{}", fmt::join(versions, "/")), crc, replay, recovery);
  CheckResult r;
  if (!down.empty()) {
    r = make("nvlink", g, Status::kWarn, kId, ev + fmt::format("; down: {}", fmt::join(down, ",")),
             findings::next_step(kId, 0));
  } else if (crc + replay + recovery > 0) {
    r = make("nvlink", g, Status::kWarn, kId, ev, findings::next_step(kId, 1));
  } else {
    r = make("nvlink", g, Status::kPass, kId, ev);
  }
  add(r, "nvlink_active_links", active, "count");
  if (version_number) add(r, "nvlink_version", *version_number, "version");
  add(r, "nvlink_crc_errors", static_cast<double>(crc), "count");
  add(r, "nvlink_replay_errors", static_cast<double>(replay), "count");
  add(r, "nvlink_recovery_errors", static_cast<double>(recovery), "count");
  return r;
}

}  // namespace

const char* to_string(Status s) noexcept {
  switch (s) {
    case Status::kSkip: return "skip";
    case Status::kPass: return "pass";
    case Status::kInfo: return "info";
    case Status::kWarn: return "warn";
    case Status::kFail: return "fail";
  }
  return "?";
}

bool any_failed(const std::vector<CheckResult>& results) { return worst(results) == Status::kFail; }

std::string gate_reason(const std::vector<CheckResult>& results) {
  std::string out;
  for (const auto& r : results) {
    if (r.status != Status::kFail) continue;
    if (!out.empty()) out += "; ";
    out += r.check;
    if (r.gpu) out += " on GPU " + std::to_string(*r.gpu);
    if (!r.evidence.empty()) out += ": " + r.evidence;
  }
  for (char& c : out)
    if (c == '\n' || c == '\r') c = ' ';
  return out;
}

Status worst(const std::vector<CheckResult>& results) {
  Status w = Status::kSkip;
  for (const auto& r : results) w = std::max(w, r.status);
  return w;
}

nlohmann::json to_json(const CheckResult& r) {
  nlohmann::json j = {{"check", r.check},
                      {"status", to_string(r.status)},
                      {"finding_id", r.finding_id},
                      {"evidence", r.evidence},
                      {"next_step", r.next_step}};
  j["gpu"] = r.gpu ? nlohmann::json(*r.gpu) : nlohmann::json(nullptr);
  nlohmann::json values = nlohmann::json::array();
  for (const auto& e : r.values)
    values.push_back({{"name", e.name}, {"value", e.value}, {"unit", e.unit}, {"how", e.how}});
  j["values"] = std::move(values);
  return j;
}

std::vector<CheckResult> check_gpu(const GpuInput& in) {
  const int g = in.gpu;
  if (in.lost) {
    CheckResult r = make("gpu_lost", g, Status::kFail, "health_gpu_lost",
                         fmt::format("the GPU stopped answering during the check: {}", in.lost->message()),
                         findings::next_step("health_gpu_lost", 0));
    return {r};
  }
  const gpu::HealthFacts none;
  const gpu::HealthFacts& f = in.facts ? *in.facts : none;
  std::vector<CheckResult> out;
  out.push_back(check_persistence(g, f));
  out.push_back(check_compute_mode(g, f));
  out.push_back(check_mig(g, in.info, f));
  out.push_back(check_ecc(g, f));
  out.push_back(check_remap(g, f));
  out.push_back(check_retired(g, f));
  out.push_back(check_temperature(g, f, in.load));
  out.push_back(check_power(g, f, in.load));
  out.push_back(check_clocks(g, in.info, in.load));
  out.push_back(check_pcie(g, f, in.info, in.load));
  out.push_back(check_nvlink(g, f));
  if (!in.facts && !in.facts_error.empty())
    for (auto& r : out)
      if (r.status == Status::kSkip) r.evidence += fmt::format(" ({})", in.facts_error);
  return out;
}

// ---- versions --------------------------------------------------------------------------------------

namespace {

struct MajorMinor {
  int major = 0;
  int minor = 0;
};

std::optional<MajorMinor> parse_major_minor(std::string_view s) {
  MajorMinor v;
  const char* b = s.data();
  const char* e = s.data() + s.size();
  auto r = std::from_chars(b, e, v.major);
  if (r.ec != std::errc()) return std::nullopt;
  if (r.ptr != e && *r.ptr == '.') std::from_chars(r.ptr + 1, e, v.minor);
  return v;
}

}  // namespace

std::vector<CheckResult> check_versions(const VersionFacts& v) {
  constexpr const char* kId = "health_versions";
  std::vector<std::string> parts;
  parts.push_back(fmt::format("driver {}", v.driver_version.empty() ? "?" : v.driver_version));
  parts.push_back(fmt::format("supports CUDA {}", v.cuda_driver_version.empty() ? "?" : v.cuda_driver_version));
  for (const auto& l : v.libraries) parts.push_back(fmt::format("{} {}", l.name, l.version.empty() ? "?" : l.version));
  if (v.torch_version)
    parts.push_back(fmt::format("torch {} (CUDA {}, cuDNN {})", *v.torch_version, v.torch_cuda_version.value_or("none"),
                                v.torch_cudnn_version.value_or("none")));
  else if (!v.torch_why_not.empty())
    parts.push_back(fmt::format("torch: {}", v.torch_why_not));
  const std::string base = fmt::format("{}", fmt::join(parts, ", "));

  const auto driver = parse_major_minor(v.cuda_driver_version);
  if (!driver) {
    return {make("versions", std::nullopt, Status::kSkip, kId,
                 base + "; the driver's CUDA version is unknown, so compatibility is not judged")};
  }
  // Runtimes that carry a CUDA version: cudart's own, cuBLAS's major (it follows CUDA's), torch's.
  std::vector<std::pair<std::string, MajorMinor>> runtimes;
  for (const auto& l : v.libraries) {
    if (l.version.empty()) continue;
    if (auto mm = parse_major_minor(l.version)) {
      if (l.name == "cudart") runtimes.emplace_back(fmt::format("cudart {}", l.version), *mm);
      if (l.name == "cublas") runtimes.emplace_back(fmt::format("cuBLAS {}", l.version), MajorMinor{mm->major, 0});
    }
  }
  if (v.torch_cuda_version)
    if (auto mm = parse_major_minor(*v.torch_cuda_version))
      runtimes.emplace_back(fmt::format("torch's CUDA {}", *v.torch_cuda_version), *mm);
  std::vector<std::string> too_new_major;
  std::vector<std::string> too_new_minor;
  for (const auto& [what, mm] : runtimes) {
    if (mm.major > driver->major)
      too_new_major.push_back(what);
    else if (mm.major == driver->major && mm.minor > driver->minor)
      too_new_minor.push_back(what);
  }
  CheckResult r;
  if (!too_new_major.empty()) {
    r = make("versions", std::nullopt, Status::kFail, kId,
             base + fmt::format("; {} newer than the driver supports (CUDA {}): programs using it fail with "
                                "cudaErrorInsufficientDriver",
                                fmt::join(too_new_major, ", "), v.cuda_driver_version),
             findings::next_step(kId, 0, {{"cuda", v.cuda_driver_version}}));
  } else if (!too_new_minor.empty()) {
    r = make("versions", std::nullopt, Status::kWarn, kId,
             base + fmt::format("; {} is a newer minor than the driver's CUDA {}: runs through minor version "
                                "compatibility, but PTX built for it cannot be JIT-compiled by this driver",
                                fmt::join(too_new_minor, ", "), v.cuda_driver_version),
             findings::next_step(kId, 1));
  } else {
    r = make("versions", std::nullopt, Status::kPass, kId, base);
  }
  add(r, "cuda_driver_version", driver->major + driver->minor / 10.0, "version");
  return {r};
}

// ---- host ------------------------------------------------------------------------------------------

const std::vector<SysctlAdvice>& sysctl_advice() {
  static const std::vector<SysctlAdvice> kAdvice = {
      {"vm.swappiness", "/proc/sys/vm/swappiness",
       "how eagerly the kernel swaps out process memory; data-loader workers and pinned buffers stall when swapped "
       "(training nodes often use 1-10)"},
      {"kernel.sched_migration_cost_ns", "/proc/sys/kernel/sched_migration_cost_ns",
       "how long a task counts as cache-hot before the scheduler migrates it; larger values keep data-loader threads "
       "on their CPU (on newer kernels in /sys/kernel/debug/sched/migration_cost_ns)"},
      {"net.core.somaxconn", "/proc/sys/net/core/somaxconn",
       "the listen backlog; rendezvous/TCP stores of many-rank jobs (torchrun, NCCL bootstrap) can drop "
       "connections when it is small"},
  };
  return kAdvice;
}

std::vector<int> parse_cpulist(std::string_view s) {
  std::vector<int> out;
  std::size_t pos = 0;
  while (pos < s.size()) {
    std::size_t end = s.find(',', pos);
    if (end == std::string_view::npos) end = s.size();
    std::string_view part = s.substr(pos, end - pos);
    while (!part.empty() && (part.back() == '\n' || part.back() == ' ')) part.remove_suffix(1);
    int a = 0;
    int b = 0;
    const auto dash = part.find('-');
    if (dash == std::string_view::npos) {
      if (std::from_chars(part.data(), part.data() + part.size(), a).ec == std::errc() && !part.empty())
        out.push_back(a);
    } else if (std::from_chars(part.data(), part.data() + dash, a).ec == std::errc() &&
               std::from_chars(part.data() + dash + 1, part.data() + part.size(), b).ec == std::errc() && a <= b &&
               b - a < 65536) {
      for (int i = a; i <= b; ++i) out.push_back(i);
    }
    pos = end + 1;
  }
  return out;
}

std::vector<CheckResult> check_host(const HostFacts& h) {
  std::vector<CheckResult> out;
  // CPU governor.
  if (h.governors.empty()) {
    out.push_back(make("cpu_governor", std::nullopt, Status::kSkip, "health_cpu_governor",
                       "no cpufreq governor exposed (a VM, or frequency managed by the firmware)"));
  } else {
    int total = 0;
    int perf = 0;
    std::vector<std::string> parts;
    for (const auto& [name, n] : h.governors) {
      total += n;
      if (name == "performance") perf += n;
      parts.push_back(fmt::format("{} CPUs {}", n, name));
    }
    const std::string ev = fmt::format("{}", fmt::join(parts, ", "));
    if (perf == total) {
      out.push_back(make("cpu_governor", std::nullopt, Status::kPass, "health_cpu_governor", ev));
    } else {
      out.push_back(make("cpu_governor", std::nullopt, Status::kWarn, "health_cpu_governor",
                         ev + ": CPUs ramp their clock up only after load arrives, which slows the host side "
                              "(data loading, kernel launches)",
                         findings::next_step("health_cpu_governor", 0)));
    }
  }
  // NUMA.
  for (const GpuNuma& g : h.gpus) {
    if (!g.numa_node) {
      out.push_back(
          make("numa", g.gpu, Status::kSkip, "health_numa", fmt::format("NUMA node of {} unreadable", g.pci_bus_id)));
      continue;
    }
    if (*g.numa_node < 0) {
      out.push_back(
          make("numa", g.gpu, Status::kPass, "health_numa", "the platform reports one memory domain (no NUMA node)"));
      continue;
    }
    if (h.allowed_cpus.empty() || g.node_cpus.empty()) {
      out.push_back(make("numa", g.gpu, Status::kSkip, "health_numa",
                         fmt::format("NUMA node {}; CPU lists unreadable", *g.numa_node)));
      continue;
    }
    const std::set<int> node(g.node_cpus.begin(), g.node_cpus.end());
    int local = 0;
    for (int c : h.allowed_cpus) local += node.count(c) ? 1 : 0;
    const int allowed = static_cast<int>(h.allowed_cpus.size());
    const std::string ev = fmt::format("GPU on NUMA node {}; this process may run on {} CPUs, {} of them on that node",
                                       *g.numa_node, allowed, local);
    const std::string pin = findings::next_step("health_numa", 0, {{"node", std::to_string(*g.numa_node)}});
    CheckResult r;
    if (local == 0) {
      r = make("numa", g.gpu, Status::kWarn, "health_numa",
               ev + ": every host-to-GPU copy and launch crosses the CPU interconnect", pin);
    } else if (local < allowed) {
      r = make("numa", g.gpu, Status::kInfo, "health_numa", ev + ": threads may land on a remote node", pin);
    } else {
      r = make("numa", g.gpu, Status::kPass, "health_numa", ev);
    }
    add(r, "numa_node", *g.numa_node, "node");
    out.push_back(std::move(r));
  }
  // sysctls: shown, never judged.
  for (const SysctlAdvice& a : sysctl_advice()) {
    auto it = h.sysctls.find(std::string(a.name));
    if (it == h.sysctls.end()) {
      out.push_back(make("sysctl", std::nullopt, Status::kSkip, "health_sysctl", fmt::format("{} unreadable", a.name)));
      continue;
    }
    CheckResult r = make("sysctl", std::nullopt, Status::kInfo, "health_sysctl",
                         fmt::format("{} = {}: {}", a.name, it->second, a.affects),
                         findings::next_step("health_sysctl", 0, {{"name", std::string(a.name)}}));
    double value = 0;
    const std::string& sv = it->second;
    if (std::from_chars(sv.data(), sv.data() + sv.size(), value).ec == std::errc())
      add(r, std::string(a.name), value, "");
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace gpudoc::health
