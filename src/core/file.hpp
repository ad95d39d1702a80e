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

// Writes `content` to `path` whole or not at all: into a new temporary file beside it, flushed to
// disk, then renamed over `path`, so a full disk or a crash never leaves a truncated or empty page
// where the old one was. A path that exists and is not a regular file (/dev/stdout, a FIFO, a
// symlink) is written through directly, as the user named it. New files get mode 0666 & ~umask.
// Errors: kIo "writing PATH: <reason>"; on failure `path` is left as it was.
[[nodiscard]] Status write_file(const std::string& path, std::string_view content);

}  // namespace gpudoc::core
