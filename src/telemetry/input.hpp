// gpudoc::telemetry::read_telemetry_file — any telemetry file gpudoc understands, detected by its
// first line: a gpudoc trace (JSON Lines, docs/trace-format.md) or an nvidia-smi CSV log.
//
//   auto t = telemetry::read_telemetry_file("nvidia-smi.csv");   // Result<Trace>
#pragma once

#include <string>
#include <string_view>

#include "core/result.hpp"
#include "telemetry/trace.hpp"

namespace gpudoc::telemetry {

enum class InputFormat { kGpudocTrace, kNvidiaSmiCsv, kUnknown };

[[nodiscard]] InputFormat detect_format(std::string_view content);
// Errors: kIo (cannot read), kBadInput (neither format, or the format's own errors with file:line).
[[nodiscard]] core::Result<Trace> read_telemetry_file(const std::string& path);

}  // namespace gpudoc::telemetry
