#include "telemetry/input.hpp"

#include <fmt/format.h>

#include "core/file.hpp"
#include "telemetry/import_nvidia_smi.hpp"

namespace gpudoc::telemetry {

InputFormat detect_format(std::string_view content) {
  std::string_view first = content.substr(0, content.find('\n'));
  if (first.substr(0, 3) == "\xEF\xBB\xBF") first.remove_prefix(3);  // a BOM from some editors
  std::size_t i = first.find_first_not_of(" \t\r");
  if (i != std::string_view::npos && first[i] == '{') return InputFormat::kGpudocTrace;
  if (looks_like_nvidia_smi_csv(first)) return InputFormat::kNvidiaSmiCsv;
  return InputFormat::kUnknown;
}

core::Result<Trace> read_telemetry_file(const std::string& path) {
  auto content = core::read_file(path);
  if (!content) return content.error();
  switch (detect_format(*content)) {
    case InputFormat::kGpudocTrace: return parse_trace(*content, path);
    case InputFormat::kNvidiaSmiCsv: return parse_nvidia_smi_csv(*content, path);
    case InputFormat::kUnknown: break;
  }
  return core::Error(core::ErrorKind::kBadInput,
                     fmt::format("{} line 1: neither a gpudoc trace (a JSON header line) nor an nvidia-smi CSV log "
                                 "(a header such as \"timestamp, index, utilization.gpu [%], ...\")",
                                 path));
}

}  // namespace gpudoc::telemetry
