// XID classification and kernel-log parsing.
//
// Classes follow the "Resolution Bucket (Immediate Action)" column of NVIDIA's XID catalog
// (docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html, Ampere and newer) and NVIDIA's GPU
// memory error management guide (docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt): RESTART_APP ->
// application, RESET_GPU -> reset_gpu, RESTART_BM -> reboot, IGNORE -> informational. Only the
// XIDs a datacenter GPU commonly logs are listed; any other number is "unknown" (warn, look it up).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <map>

#include "health/health.hpp"

namespace gpudoc::health {
namespace {

struct XidEntry {
  std::uint64_t xid;
  XidClass cls;
  std::string_view description;
};

constexpr std::array<XidEntry, 22> kXids = {{
    {8, XidClass::kApplication, "GPU stopped processing (idle timeout)"},
    {13, XidClass::kApplication, "graphics engine exception (often an out-of-range access in a kernel)"},
    {31, XidClass::kApplication, "GPU memory page fault (an illegal address in the application)"},
    {32, XidClass::kApplication, "invalid or corrupted push buffer stream"},
    {38, XidClass::kResetGpu, "driver firmware error"},
    {43, XidClass::kApplication, "GPU stopped processing (the channel of a faulting application was reset)"},
    {45, XidClass::kInformational, "preemptive cleanup after an earlier error"},
    {48, XidClass::kResetGpu, "double-bit (uncorrectable) ECC error"},
    {61, XidClass::kResetGpu, "internal micro-controller breakpoint/warning"},
    {62, XidClass::kResetGpu, "internal micro-controller halt"},
    {63, XidClass::kResetGpu, "ECC page retirement or row-remapping event recorded (applies after a GPU reset)"},
    {64, XidClass::kResetGpu, "ECC page retirement or row-remapping failure"},
    {68, XidClass::kApplication, "video processor exception"},
    {74, XidClass::kResetGpu, "NVLink error"},
    {79, XidClass::kReboot, "GPU has fallen off the bus"},
    {92, XidClass::kInformational, "high single-bit ECC error rate"},
    {94, XidClass::kApplication, "contained ECC error (the affected application was stopped; others continue)"},
    {95, XidClass::kResetGpu, "uncontained ECC error (every application on the GPU affected)"},
    {109, XidClass::kApplication, "context switch timeout"},
    {119, XidClass::kResetGpu, "GSP RPC timeout"},
    {120, XidClass::kResetGpu, "GSP error"},
    {154, XidClass::kInformational, "GPU recovery action changed (read the action in the log line)"},
}};

const XidEntry* find(std::uint64_t xid) {
  for (const auto& e : kXids)
    if (e.xid == xid) return &e;
  return nullptr;
}

Status status_of(XidClass c) {
  switch (c) {
    case XidClass::kReboot:
    case XidClass::kResetGpu: return Status::kFail;
    case XidClass::kApplication:
    case XidClass::kUnknown: return Status::kWarn;
    case XidClass::kInformational: return Status::kInfo;
  }
  return Status::kWarn;
}

int rank(XidClass c) {
  switch (c) {
    case XidClass::kReboot: return 5;
    case XidClass::kResetGpu: return 4;
    case XidClass::kUnknown: return 3;
    case XidClass::kApplication: return 2;
    case XidClass::kInformational: return 1;
  }
  return 0;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace

const char* to_string(XidClass c) noexcept {
  switch (c) {
    case XidClass::kApplication: return "application";
    case XidClass::kResetGpu: return "reset_gpu";
    case XidClass::kReboot: return "reboot";
    case XidClass::kInformational: return "informational";
    case XidClass::kUnknown: return "unknown";
  }
  return "unknown";
}

XidClass classify_xid(std::uint64_t xid) noexcept {
  const XidEntry* e = find(xid);
  return e != nullptr ? e->cls : XidClass::kUnknown;
}

std::string_view xid_description(std::uint64_t xid) noexcept {
  const XidEntry* e = find(xid);
  return e != nullptr ? e->description : std::string_view{};
}

std::vector<XidEvent> parse_kernel_log_xids(std::string_view log, const std::vector<std::string>& bus_ids) {
  // "NVRM: Xid (PCI:0000:18:00): 79, pid=..."; the bus part is domain:bus:device, without function.
  std::vector<XidEvent> out;
  std::size_t pos = 0;
  while (pos < log.size()) {
    std::size_t end = log.find('\n', pos);
    if (end == std::string_view::npos) end = log.size();
    const std::string_view line = log.substr(pos, end - pos);
    pos = end + 1;
    const std::size_t x = line.find("NVRM: Xid (");
    if (x == std::string_view::npos) continue;
    const std::size_t close = line.find("):", x);
    if (close == std::string_view::npos) continue;
    std::string_view addr = line.substr(x + 11, close - (x + 11));
    if (addr.substr(0, 4) == "PCI:") addr.remove_prefix(4);
    std::string_view rest = line.substr(close + 2);
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    std::uint64_t code = 0;
    if (std::from_chars(rest.data(), rest.data() + rest.size(), code).ec != std::errc()) continue;
    XidEvent ev;
    ev.xid = code;
    ev.source = "kernel_log";
    ev.text = std::string(line);
    // NVML: "00000000:18:00.0" (8-digit domain); the log: "0000:18:00".
    const std::string want = lower(std::string(addr));
    for (std::size_t i = 0; i < bus_ids.size(); ++i) {
      std::string b = lower(bus_ids[i]);
      if (b.size() > 4 && b.find(':') == 8) b = b.substr(4);   // 8-digit domain -> 4
      if (const auto dot = b.rfind('.'); dot != std::string::npos) b = b.substr(0, dot);
      if (b == want) ev.gpu = static_cast<int>(i);
    }
    out.push_back(std::move(ev));
  }
  return out;
}

std::vector<CheckResult> check_xids(const XidInput& in, int gpu_count) {
  std::map<int, std::vector<const XidEvent*>> by_gpu;   // -1: no GPU matched
  for (const XidEvent& e : in.events) by_gpu[e.gpu.value_or(-1)].push_back(&e);
  std::vector<std::string> sources;
  if (in.nvml_events_watched) sources.push_back("NVML events while gpudoc ran");
  sources.push_back(in.kernel_log_read ? std::string("the kernel log since boot")
                                       : fmt::format("kernel log unreadable ({})", in.kernel_log_why_not));
  const std::string seen_in = fmt::format("{}", fmt::join(sources, "; "));
  std::vector<CheckResult> out;
  if (by_gpu.empty()) {
    CheckResult r;
    r.check = "xid";
    r.status = (in.nvml_events_watched || in.kernel_log_read) ? Status::kPass : Status::kSkip;
    r.finding_id = "health_xid";
    r.evidence = fmt::format("no XID errors ({})", seen_in);
    r.values.push_back({"xid_count", 0, "count", seen_in});
    out.push_back(std::move(r));
    return out;
  }
  for (const auto& [gpu, events] : by_gpu) {
    XidClass worst_class = XidClass::kInformational;
    std::map<std::uint64_t, int> counts;
    for (const XidEvent* e : events) {
      ++counts[e->xid];
      const XidClass c = classify_xid(e->xid);
      if (rank(c) > rank(worst_class)) worst_class = c;
    }
    std::vector<std::string> parts;
    for (const auto& [xid, n] : counts) {
      const auto desc = xid_description(xid);
      parts.push_back(fmt::format("XID {} x{} ({}: {})", xid, n, to_string(classify_xid(xid)),
                                  desc.empty() ? "not in gpudoc's table; see NVIDIA's XID catalog" : desc));
    }
    CheckResult r;
    r.check = "xid";
    if (gpu >= 0 && gpu < gpu_count) r.gpu = gpu;
    r.status = status_of(worst_class);
    r.finding_id = "health_xid";
    r.evidence = fmt::format("{} [{}]", fmt::join(parts, "; "), seen_in);
    switch (worst_class) {
      case XidClass::kReboot:
        r.next_step = "Drain the node and reboot it (a GPU that fell off the bus is not reachable for a reset); "
                      "report a recurrence to the vendor with `sudo nvidia-bug-report.sh`";
        break;
      case XidClass::kResetGpu:
        r.next_step = "Drain the GPU and reset it (`nvidia-smi -r -i <gpu>` once idle, or reboot); check ECC and "
                      "row remapping; report a recurrence with `sudo nvidia-bug-report.sh`";
        break;
      case XidClass::kApplication:
        r.next_step = "The GPU is fine; the application faulted: rerun it with `CUDA_LAUNCH_BLOCKING=1` or under "
                      "`compute-sanitizer` to find the kernel";
        break;
      case XidClass::kUnknown:
        r.next_step = "Look the XID up in NVIDIA's catalog (docs.nvidia.com/deploy/xid-errors) for its action";
        break;
      case XidClass::kInformational: r.next_step = "No action; watch for recurrences with `gpudoc report`"; break;
    }
    r.values.push_back({"xid_count", static_cast<double>(events.size()), "count", seen_in});
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace gpudoc::health
