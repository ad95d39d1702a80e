// Each command's long help — what it does, examples, exit codes, what each flag means — is text,
// kept in docs/cli/NAME.txt (NAME: the command's path joined by dots, "baseline.record"; "gpudoc"
// for gpudoc itself) and compiled into the binary at build time; `--help`, the man pages and the
// bash completion are all read from it. A file has up to three sections, each opened by a line of
// its own:
//
//   [description]
//   What the command does, shown above its options.
//   [options]
//   --output FILE    the trace file to write
//   --duration       stop after this many seconds; left out: until the command ends
//                    or Ctrl-C
//   command          the command to run (after --)
//   [footer]
//   Examples and exit codes, shown below them.
//
// An option's entry opens at a line's first column with the flag's long name (or a positional's
// name), then the name --help shows for its value when not its type's ("FILE"), then two spaces
// or more and its help, which goes on over the indented lines below it (joined by one space). A
// flag several commands share is described once, in the nearest file up their paths
// (baseline.txt for every baseline subcommand's --store; gpudoc.txt for --gpus).
//
// `@KEY@` in a section is replaced by what the command fills in (bench's list of benchmarks,
// diagnose's catalog of findings, --period's metric groups), so generated parts stay in the code
// that knows them. The CLI sets them on its commands (cli::Command); parsing them is pure and
// lives here.
#pragma once

#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.hpp"

namespace gpudoc::view {

// One entry of a file's [options]: `name` the flag's long name ("--output") or a positional's
// ("command"); `value` what --help shows for its value ("FILE"; empty: its type's name); `text`
// the help, its placeholders not filled yet (option_text).
struct HelpOption {
  std::string name;
  std::string value;
  std::string text;
};

struct HelpText {
  std::string description;
  std::string footer;
  std::vector<HelpOption> options;
  // The entry for flag `name`, or null.
  [[nodiscard]] const HelpOption* option(std::string_view name) const;
};

using HelpFill = std::initializer_list<std::pair<std::string_view, std::string>>;

// Splits one help file into its sections and fills in the description's and footer's @KEY@
// placeholders (an option's are filled when it is added: option_text). Errors (kInternal: the
// files are part of the build): text before the first section line, a section given twice, an
// unknown section name, a placeholder left without a value; in [options], an indented line before
// the first entry, an entry with more than a name and a value before its help, one without help,
// a name given twice.
[[nodiscard]] core::Result<HelpText> parse_help(std::string_view text, HelpFill fill = {});

// An option's help with its placeholders filled and no space left before a line break (a
// placeholder's value may start a new line). Errors: kInternal, a placeholder left without a value.
[[nodiscard]] core::Result<std::string> option_text(const HelpOption& option, HelpFill fill = {});

// The help files of one command tree, read as its commands are added: each file once, a flag's
// entry from its command's file or the nearest one up the command's path that describes it
// (baseline.record, baseline, gpudoc), and which entries were taken. Not thread-safe.
//
//   HelpBook book;
//   auto record = book.open("baseline.record");          // Result<HelpText>: description, footer
//   auto store = book.option("baseline.record", "--store");  // baseline.txt's entry
class HelpBook {
 public:
  // Command NAME's file ("baseline.record"; "gpudoc" for gpudoc itself), its description and footer
  // filled by `fill` (parse_help). Errors (kInternal): the build has no such file, or parse_help's,
  // each naming the file.
  [[nodiscard]] core::Result<HelpText> open(const std::string& name, HelpFill fill = {});
  // Flag FLAG ("--store"; a positional's name) of command NAME, opened before: its entry with the
  // text filled by `fill` (option_text), from the nearest file up NAME's path that describes it.
  // Errors (kInternal): no file there describes it, or option_text's, naming the flag and the file.
  [[nodiscard]] core::Result<HelpOption> option(const std::string& name, const std::string& flag, HelpFill fill = {});
  // The entries of the files opened that option() never returned, "docs/cli/NAME.txt --flag" each.
  [[nodiscard]] std::vector<std::string> untaken() const;

 private:
  std::map<std::string, HelpText> files_;
  std::set<std::string> taken_;  // "NAME --flag"
};

// The help file of command NAME (docs/cli/NAME.txt), as compiled in; nullopt when the build has
// none. Static storage.
[[nodiscard]] std::optional<std::string_view> help_file(std::string_view name);
// The names of every help file compiled in ("baseline.record"), sorted.
[[nodiscard]] std::vector<std::string> help_names();

}  // namespace gpudoc::view
