// gpudoc::core::read_file / write_file — a whole file into memory, for the parsers; a whole
// file out, for the pages and reports gpudoc writes.
//
//   auto text = core::read_file("run.jsonl");             // Result<std::string>; kIo names the path
//   if (auto st = core::write_file("page.html", page); !st) ...   // kIo names the path and why
#pragma once

#include <string>
#include <string_view>

#include "core/result.hpp"

namespace gpudoc::core {

// Reads the whole file, also one that grows while it is read (a trace being recorded).
// Errors: kIo "reading PATH: <reason>".
[[nodiscard]] Result<std::string> read_file(const std::string& path);

// Creates or truncates `path` and writes `content`. Errors: kIo "writing PATH: <reason>".
[[nodiscard]] Status write_file(const std::string& path, std::string_view content);

}  // namespace gpudoc::core
