// Each command's long help — what it does, examples, exit codes — is text, kept in
// docs/cli/NAME.txt (NAME: the command's path joined by dots, "baseline.record"; "gpudoc" for
// gpudoc itself) and compiled into the binary at build time. A file has up to two sections, each
// opened by a line of its own:
//
//   [description]
//   What the command does, shown above its options.
//   [footer]
//   Examples and exit codes, shown below them.
//
// `@KEY@` in a section is replaced by what the command fills in (bench's list of benchmarks,
// diagnose's catalog of findings), so generated parts stay in the code that knows them.
#pragma once

#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "core/result.hpp"
#include "view/embedded_files.hpp"

namespace CLI {
class App;
}

namespace gpudoc::cli {

struct HelpText {
  std::string description;
  std::string footer;
};

using HelpFill = std::initializer_list<std::pair<std::string_view, std::string>>;

// Splits one help file into its sections and fills in the @KEY@ placeholders. Errors (kInternal:
// the files are part of the build): text before the first section line, a section given twice,
// an unknown section name, a placeholder left without a value.
[[nodiscard]] core::Result<HelpText> parse_help(std::string_view text, HelpFill fill = {});

// Sets `cmd`'s description and footer from docs/cli/NAME.txt. A missing or malformed file is a
// bug of the build: throws std::logic_error naming the file (run() reports it as an internal
// error, exit 4).
void apply_help(CLI::App& cmd, std::string_view name, HelpFill fill = {});

namespace detail {
using view::detail::EmbeddedFile;
// Every file of docs/cli/ listed in src/cli/CMakeLists.txt ("baseline.record.txt"). Static storage.
[[nodiscard]] std::span<const EmbeddedFile> help_files();
}  // namespace detail

}  // namespace gpudoc::cli
