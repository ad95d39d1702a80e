// gpudoc::core::read_file / LineReader / write_file — every file gpudoc reads, read under a bound
// of its kind (InputLimits): whole into memory, for the small parsers (a policy, a config, a saved
// run), or as a stream of bounded lines (traces, CUPTI records); and a whole file out, for the pages
// and reports gpudoc writes. /dev/zero or a FIFO whose writer never stops ends at the bound, in
// memory no larger, with an error that names the file and the limit (docs/limits.md).
//
//   constexpr core::InputLimits kPolicy{.max_bytes = 4 << 20, .what = "a guard policy"};
//   auto text = core::read_file("policy.json", kPolicy);  // Result<std::string>
//   auto lines = core::LineReader::open("records.txt", kRecords);
//   while (true) { auto line = lines->next(); if (!line) return line.error(); if (!*line) break; ... **line ... }
//   if (auto st = core::write_file("page.html", page); !st) ...   // kIo names the path and why
#pragma once

#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.hpp"

namespace gpudoc::core {

// The bound on one kind of input. Every reader of this header enforces max_bytes; the line reader
// also max_line_bytes and max_lines (blank lines count). `what` names the kind in messages.
struct InputLimits {
  std::uint64_t max_bytes = 64ULL << 20;
  std::size_t max_line_bytes = 1 << 20;
  std::uint64_t max_lines = std::numeric_limits<std::uint64_t>::max();
  std::string_view what = "a file gpudoc reads whole";
};

// 4 MiB as "4 MiB", 1 << 40 as "1 TiB", anything else in bytes: a limit as messages show it.
[[nodiscard]] std::string describe_limit(std::uint64_t bytes);

// Reads the whole file, also one that grows while it is read (a trace being recorded), but never
// more than limits.max_bytes: a regular file larger than that is refused before it is read, any
// other input (a device, a FIFO) once that much has come.
// Errors: kIo "reading PATH: <reason>"; kBadInput "PATH: larger than the limit of 4 MiB for a guard
// policy".
[[nodiscard]] Result<std::string> read_file(const std::string& path, const InputLimits& limits = {});

// A file (or text held in memory) as lines, read in blocks: memory is one block plus the longest
// line, whatever the file's size. A line longer than max_line_bytes, more than max_lines lines, or
// more than max_bytes in all is an error that names the file and line, so /dev/zero or a runaway
// file ends at once instead of being read forever. Not thread-safe.
class LineReader {
 public:
  // Errors: kIo "reading PATH: <reason>" (missing, unreadable, a directory).
  [[nodiscard]] static Result<LineReader> open(const std::string& path, const InputLimits& limits);
  // Lines of `text` (not copied: it must outlive the reader); `name` names it in messages.
  [[nodiscard]] static LineReader of_text(std::string_view text, std::string name, const InputLimits& limits);
  LineReader(LineReader&&) noexcept;
  LineReader& operator=(LineReader&&) noexcept;
  ~LineReader();

  // The next line without its '\n', valid until the next call; nullopt at the end of the input.
  // Errors: kBadInput "NAME line N: the line is longer than the limit of 1048576 bytes", "NAME line
  // N: larger than the limit of 1 GiB for WHAT", "NAME line N: more than M lines, the limit for
  // WHAT"; kIo "reading NAME: <reason>".
  [[nodiscard]] Result<std::optional<std::string_view>> next();
  // Makes the next call to next() return the line it returned last once more (a format detector
  // looks at line 1 before the parser reads it).
  void unread();
  // Whether the last line returned ended with '\n' (false for a last line cut off).
  [[nodiscard]] bool terminated() const;
  // 1-based number of the last line returned (0 before the first).
  [[nodiscard]] std::size_t line_no() const;
  [[nodiscard]] const std::string& name() const;

 private:
  struct Impl;
  explicit LineReader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Writes `content` to `path` whole or not at all: into a new temporary file beside it, flushed to
// disk, then renamed over `path`, so a full disk or a crash never leaves a truncated or empty page
// where the old one was. A path that exists and is not a regular file (/dev/stdout, a FIFO, a
// symlink) is written through directly, as the user named it. New files get mode 0666 & ~umask.
// Errors: kIo "writing PATH: <reason>"; on failure `path` is left as it was.
[[nodiscard]] Status write_file(const std::string& path, std::string_view content);

// Flushes `stream` and says whether everything written to it arrived: output that did not (a full
// disk, a reader that went away: EPIPE once SIGPIPE is survived, core/stop_signals.hpp) leaves a
// command's result incomplete, whatever the command returned. `name` names the stream ("stdout").
// Errors: kIo "writing to NAME failed (REASON): the output is incomplete" (no "(REASON)" when
// errno gives none).
[[nodiscard]] Status flush_stream(std::FILE* stream, std::string_view name);

}  // namespace gpudoc::core
