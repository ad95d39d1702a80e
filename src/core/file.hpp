// gpudoc::core::read_file — a whole file into memory, for the parsers.
//
//   auto text = core::read_file("run.jsonl");   // Result<std::string>; kIo names the path
#pragma once

#include <string>

#include "core/result.hpp"

namespace gpudoc::core {

// Reads the whole file, also one that grows while it is read (a trace being recorded).
// Errors: kIo "reading PATH: <reason>".
[[nodiscard]] Result<std::string> read_file(const std::string& path);

}  // namespace gpudoc::core
