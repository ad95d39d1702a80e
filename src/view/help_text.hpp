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
// diagnose's catalog of findings), so generated parts stay in the code that knows them. The CLI sets
// them on its commands (cli::apply_help); parsing them is pure and lives here.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.hpp"

namespace gpudoc::view {

struct HelpText {
  std::string description;
  std::string footer;
};

using HelpFill = std::initializer_list<std::pair<std::string_view, std::string>>;

// Splits one help file into its sections and fills in the @KEY@ placeholders. Errors (kInternal:
// the files are part of the build): text before the first section line, a section given twice,
// an unknown section name, a placeholder left without a value.
[[nodiscard]] core::Result<HelpText> parse_help(std::string_view text, HelpFill fill = {});

// The help file of command NAME (docs/cli/NAME.txt), as compiled in; nullopt when the build has
// none. Static storage.
[[nodiscard]] std::optional<std::string_view> help_file(std::string_view name);
// The names of every help file compiled in ("baseline.record"), sorted.
[[nodiscard]] std::vector<std::string> help_names();

}  // namespace gpudoc::view
