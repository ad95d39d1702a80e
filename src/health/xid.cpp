// XID classification and kernel-log parsing.
//
// Classes follow the "Resolution Bucket (Immediate Action)" column of NVIDIA's XID catalog for
// Ampere and newer (docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html): RESTART_APP ->
// application, RESET_GPU -> reset_gpu, RESTART_BM ("restart bare metal") -> reboot, IGNORE ->
// informational. Where the catalog names a workflow instead of a bucket, the class is the one the
// workflow ends in for a lone XID (48: RESET_GPU; 74: the trigger text says a GPU reset or a
// reboot clears it; 45: IGNORE, follow the other XID it comes with; 154: the action written in
// its own log line). Codes the catalog marks "Unused" on Ampere and newer (61, ...) are left out,
// as is any number not listed: "unknown" (warn, look it up).
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>

#include "health/health.hpp"

namespace gpudoc::health {
namespace {

struct XidEntry {
  std::uint64_t xid;
  XidClass cls;
  std::string_view catalog_action;  // the catalog's immediate action, verbatim
  std::string_view description;
};

constexpr XidEntry kXids[] = {
    {8, XidClass::kApplication, "RESTART_APP", "GPU stopped processing (idle timeout)"},
    {13, XidClass::kApplication, "RESTART_APP", "graphics engine exception (often an out-of-range access in a kernel)"},
    {31, XidClass::kApplication, "RESTART_APP", "GPU memory page fault (an illegal address in the application)"},
    {32, XidClass::kApplication, "RESTART_APP",
     "invalid or corrupted push buffer stream (the catalog names PCIe link quality as the usual cause)"},
    {38, XidClass::kInformational, "IGNORE", "driver firmware error (FECS watchdog timeout)"},
    {43, XidClass::kInformational, "IGNORE",
     "GPU stopped processing: an application hit a fault and was stopped; the GPU stays healthy"},
    {45, XidClass::kInformational, "WORKFLOW_XID_45",
     "preemptive cleanup after an earlier error or an aborted application (Ctrl-C, kill, GPU reset)"},
    {46, XidClass::kResetGpu, "RESET_GPU", "GPU stopped processing (GPU timeout)"},
    {48, XidClass::kResetGpu, "WORKFLOW_XID_48", "double-bit (uncorrectable) ECC error"},
    {62, XidClass::kResetGpu, "RESET_GPU", "internal micro-controller halt"},
    {63, XidClass::kInformational, "IGNORE", "GPU memory row-remapping (or page-retirement) event"},
    {64, XidClass::kResetGpu, "RESET_GPU", "GPU memory row-remapping (or page-retirement) failure"},
    {68, XidClass::kApplication, "RESTART_APP", "video decoder (NVDEC0) exception"},
    {74, XidClass::kResetGpu, "WORKFLOW_NVLINK_ERR", "NVLink error (a GPU reset or reboot clears it)"},
    {79, XidClass::kReboot, "RESTART_BM", "GPU has fallen off the bus"},
    {92, XidClass::kInformational, "IGNORE", "high single-bit ECC error rate"},
    {94, XidClass::kApplication, "RESTART_APP",
     "contained memory error (the affected application was stopped; others continue; reset when convenient)"},
    {95, XidClass::kResetGpu, "RESET_GPU", "uncontained memory error (every application on the GPU affected)"},
    {109, XidClass::kResetGpu, "RESET_GPU", "context switch timeout"},
    {110, XidClass::kResetGpu, "RESET_GPU", "security fault error"},
    {119, XidClass::kResetGpu, "RESET_GPU", "GSP RPC timeout"},
    {120, XidClass::kResetGpu, "RESET_GPU", "GSP error"},
    {136, XidClass::kResetGpu, "RESET_GPU", "NVLink link training failed"},
    {137, XidClass::kInformational, "IGNORE",
     "NVLink privilege error (an illegal peer-to-peer access, usually the application's)"},
    {140, XidClass::kResetGpu, "RESET_GPU", "uncorrectable ECC error that escaped page offlining / row remapping"},
    {143, XidClass::kResetGpu, "RESET_GPU", "GPU initialization error"},
    {154, XidClass::kInformational, "XID_154", "GPU recovery action changed (the action is in the log line)"},
    {156, XidClass::kResetGpu, "RESET_GPU", "resource retirement event"},
    {157, XidClass::kInformational, "IGNORE", "resource retirement failure (no spare resources left)"},
    {158, XidClass::kResetGpu, "RESET_GPU", "GPU fatal timeout"},
};

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

bool xid_needs_reset(std::uint64_t xid) noexcept {
  const XidClass c = classify_xid(xid);
  return c == XidClass::kResetGpu || c == XidClass::kReboot;
}

std::string_view xid_description(std::uint64_t xid) noexcept {
  const XidEntry* e = find(xid);
  return e != nullptr ? e->description : std::string_view{};
}

std::string_view xid_catalog_action(std::uint64_t xid) noexcept {
  const XidEntry* e = find(xid);
  return e != nullptr ? e->catalog_action : std::string_view{};
}

XidClass classify_xid_event(const XidEvent& e) {
  if (e.xid != kXidRecoveryActionChanged || e.text.empty()) return classify_xid(e.xid);
  // "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)": the new action,
  // after the last " to ", is one of None, GPU Reset Required, Node Reboot Required, Drain P2P,
  // Drain and Reset (the catalog's list; newer drivers add Bus Reset and System Reboot).
  const std::string text = lower(e.text);
  const std::size_t to = text.rfind(" to ");
  if (to == std::string::npos) return XidClass::kInformational;
  const std::string_view action = std::string_view(text).substr(to + 4);
  if (action.find("reboot") != std::string_view::npos) return XidClass::kReboot;
  if (action.find("reset") != std::string_view::npos) return XidClass::kResetGpu;
  if (action.find("none") != std::string_view::npos) return XidClass::kInformational;
  return XidClass::kUnknown;  // Drain P2P, or an action newer than this table
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
      if (b.size() > 4 && b.find(':') == 8) b = b.substr(4);  // 8-digit domain -> 4
      if (const auto dot = b.rfind('.'); dot != std::string::npos) b = b.substr(0, dot);
      if (b == want) ev.gpu = static_cast<int>(i);
    }
    out.push_back(std::move(ev));
  }
  return out;
}

std::vector<CheckResult> check_xids(const XidInput& in, int gpu_count) {
  std::map<int, std::vector<const XidEvent*>> by_gpu;  // -1: no GPU matched
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
    // Per XID number: how often, and the worst class its events had (154 varies by its text).
    std::map<std::uint64_t, std::pair<int, XidClass>> counts;
    for (const XidEvent* e : events) {
      const XidClass c = classify_xid_event(*e);
      auto it = counts.try_emplace(e->xid, 0, c).first;
      ++it->second.first;
      if (rank(c) > rank(it->second.second)) it->second.second = c;
      if (rank(c) > rank(worst_class)) worst_class = c;
    }
    std::vector<std::string> parts;
    for (const auto& [xid, count_class] : counts) {
      const auto desc = xid_description(xid);
      const auto action = xid_catalog_action(xid);
      parts.push_back(fmt::format("XID {} x{} ({}: {}{})", xid, count_class.first, to_string(count_class.second),
                                  desc.empty() ? "not in gpudoc's table; see NVIDIA's XID catalog" : desc,
                                  action.empty() ? "" : fmt::format("; catalog: {}", action)));
    }
    CheckResult r;
    r.check = "xid";
    if (gpu >= 0 && gpu < gpu_count) r.gpu = gpu;
    r.status = status_of(worst_class);
    r.finding_id = "health_xid";
    r.evidence = fmt::format("{} [{}]", fmt::join(parts, "; "), seen_in);
    // The catalog's steps for health_xid, in its order: reboot, reset, application, unknown, none.
    const std::size_t step = worst_class == XidClass::kReboot        ? 0
                             : worst_class == XidClass::kResetGpu    ? 1
                             : worst_class == XidClass::kApplication ? 2
                             : worst_class == XidClass::kUnknown     ? 3
                                                                     : 4;
    r.next_step = findings::next_step(r.finding_id, step);
    r.values.push_back({"xid_count", static_cast<double>(events.size()), "count", seen_in});
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace gpudoc::health
