// Pieces several subcommands share: a command and its help file (Command), the sampler's and the
// prices' command-line options, the stop signals, and printing JSON. The GPU backend is chosen
// once (telemetry/backend_source.hpp, held by the Context in cli/commands.hpp).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/number_input.hpp"
#include "core/result.hpp"
#include "core/stop_signals.hpp"
#include "cost/prices.hpp"
#include "gpu/backend.hpp"
#include "telemetry/backend_source.hpp"
#include "telemetry/sampler.hpp"
#include "view/help_text.hpp"

namespace gpudoc::cli {

struct Context;

// Prints `j` to stdout with a newline, indented by `indent` (-1: one line, as a JSON Lines
// stream). Strings that are not valid UTF-8 (a file name, a GPU name, a command's output) are
// written with U+FFFD in place of the bad bytes instead of throwing: --json output never dies on
// the data it reports. An nlohmann::ordered_json keeps its keys in insertion order.
template <class Json = nlohmann::json>
void print_json(const Json& j, int indent = 2) {
  std::fputs((j.dump(indent, ' ', false, Json::error_handler_t::replace) + "\n").c_str(), stdout);
}

// Writes gpudoc's plain text (a report without colour, a message, a note, an error) to `to`
// through core::terminal_safe with newlines kept: whatever it quotes from a trace, a process, the
// store or a config (host, GPU, process, baseline and metric names...) reaches the terminal as
// visible escapes, never as control characters or invalid UTF-8. The one way plain text is
// printed; coloured views escape each field themselves (core/text.hpp), JSON goes by print_json.
// A command's own output that gpudoc passes through untouched never comes here.
void print_text(std::FILE* to, std::string_view text);

// A command of gpudoc with its help file, docs/cli/NAME.txt: its description and footer, and each
// flag's help by the flag's long name (view::HelpBook: from the command's file, or for a flag
// several commands share the nearest file up its path). A missing file, or a flag no file
// describes, is a bug of the build: throws std::logic_error naming them (run() reports it as an
// internal error, exit 4; tests/unit/cli/command_help_test.cpp registers every command and finds
// it first).
class Command {
 public:
  // gpudoc itself (docs/cli/gpudoc.txt).
  [[nodiscard]] static Command root(CLI::App& app);
  // Subcommand WORD of `parent`; its file's name is the parent's and WORD joined by a dot.
  Command(const Command& parent, const std::string& word, view::HelpFill fill = {});

  CLI::App* operator->() const { return app_; }
  CLI::App& operator*() const { return *app_; }

  // CLI11's add_option and add_flag with the help and the value's name from the files; `fill`
  // gives the help's @KEY@ parts.
  template <class T>
  CLI::Option* option(const std::string& names, T& target, view::HelpFill fill = {}) {
    const auto h = help(names, fill);
    return valued(app_->add_option(names, target, h.text), h);
  }
  template <class T>
  CLI::Option* flag(const std::string& names, T& target) {
    const auto h = help(names);
    return valued(app_->add_flag(names, target, h.text), h);
  }
  // Every duration, count and limit flag of every command is added here: its value is read by
  // core::parse_number (core/number_input.hpp) while the command line is parsed, so a value that is
  // not a finite number in the flag's range ends gpudoc with exit 2 before anything runs, with the
  // message "FLAG VALUE: why; expected RANGE". The flag's help gets the range appended; the target
  // keeps its default when the flag is not given. docs/limits.md lists every flag's range.
  template <class T>
  CLI::Option* number(const std::string& names, T& target, const core::NumberRange& range) {
    return checked(
        names, [&target](double v) { target = static_cast<T>(v); }, range);
  }

  // The entries of the files read so far that no flag took (view::HelpBook::untaken).
  [[nodiscard]] std::vector<std::string> unused_help() const { return book_->untaken(); }

 private:
  Command(CLI::App* app, std::string name, std::shared_ptr<view::HelpBook> book, view::HelpFill fill);
  [[nodiscard]] view::HelpOption help(const std::string& names, view::HelpFill fill = {}) const;
  static CLI::Option* valued(CLI::Option* option, const view::HelpOption& help);
  CLI::Option* checked(const std::string& names, std::function<void(double)> set, const core::NumberRange& range);

  CLI::App* app_;
  std::string name_;                      // "baseline.record"
  std::shared_ptr<view::HelpBook> book_;  // the whole command tree's
};

// The Cost block's prices (docs/cost.md): --price-gpu-hour, --price-kwh, --pue, --co2-per-kwh,
// --currency, --prices FILE, as text; cost::load_prices checks them (over the environment and the
// prices file) when the command runs, so a bad value is exit 2 naming it and where it came from.
void add_price_flags(Command& cmd, cost::PriceFlags& prices);

// Sampler flags shared by record, watch, doctor, diagnose, guard and serve: --gpus, --period
// GROUP=MS, --no-xid. Each takes one word (comma-separated lists), so a positional after it (watch
// --gpus 0 run.jsonl) stays one.
struct SamplerFlags {
  using Periods = std::array<std::chrono::milliseconds, gpu::kMetricGroupCount>;
  std::vector<int> gpus;
  std::vector<std::string> periods;  // "fast=100"
  bool no_xid = false;
  Periods defaults = telemetry::SamplerConfig::default_periods();
  // `defaults`: the command's own periods, which --help lists and to_config starts from.
  void add_to(Command& cmd, const Periods& own_defaults = telemetry::SamplerConfig::default_periods());
  // The flags applied over `defaults`. Errors: kUsage for an unknown group, a malformed value, or
  // a period below the sensor's minimum (the message says why the minimum exists).
  [[nodiscard]] core::Result<telemetry::SamplerConfig> to_config() const;
};

// --json: `j` on stdout (print_json, an ordered_json's keys in their order); else `text`
// (print_text). Returns `code`. For a command whose result is one document or one text, both cheap
// to make.
template <class Json = nlohmann::json>
int emit(bool json, const Json& j, std::string_view text, int code = 0) {
  if (json)
    print_json(j);
  else
    print_text(stdout, text);
  return code;
}

// --html PATH, checked before a command does any work: a build without the plot library
// (view::web_assets()) cannot write a page, and finding that out after minutes of tuning,
// benchmarking or profiling would lose them. An Error of kind kEnvironment (exit 3) naming PATH
// and what to install when `assets_built_in` is false and a page is asked for; ok otherwise.
[[nodiscard]] core::Status html_flag_status(std::string_view path, bool assets_built_in);
// html_flag_status with this build's assets; an empty PATH or nullopt: no page asked for.
[[nodiscard]] core::Status check_html_flag(const std::string& path);
[[nodiscard]] core::Status check_html_flag(const std::optional<std::string>& path);

// --html FILE: the page a view rendered, written to `path`. Errors: the renderer's, or
// core::write_file's (kIo naming the path and why).
[[nodiscard]] core::Status write_page(const std::string& path, const core::Result<std::string>& page);

// The stop policy of every command (core/stop_signals.hpp), by its short names.
using core::exit_code_after_stop;
using core::install_stop_handlers;
using core::stop_requests;
using core::stop_signal;

// How a command that reads live GPUs starts: opens the run's GPUs (the Context's backend, at least
// one GPU), installs the stop handlers, and says whose GPUs these are when they are not this
// machine's (print_banner) unless `quiet`. Errors: open_gpus()'s.
[[nodiscard]] core::Result<telemetry::Live> open_live(Context& ctx, bool quiet);
// "WHO: BANNER" on stderr for a replay or fake GPUs (telemetry::Live::banner); nothing for real ones.
void print_banner(const telemetry::Live& live, std::string_view who = "gpudoc");

}  // namespace gpudoc::cli
