#include "cli/common.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <stdexcept>

#include "cli/commands.hpp"
#include "core/text.hpp"

namespace gpudoc::cli {

void print_text(std::FILE* to, std::string_view text) {
  std::fputs(core::terminal_safe(text, core::Newlines::kKeep).c_str(), to);
}

int emit(bool json, const nlohmann::json& j, std::string_view text, int code) {
  if (json)
    print_json(j);
  else
    print_text(stdout, text);
  return code;
}

view::HelpText apply_help(CLI::App& cmd, std::string_view name, view::HelpFill fill) {
  const auto text = view::help_file(name);
  if (!text) throw std::logic_error(fmt::format("docs/cli/{}.txt is not in the build", name));
  auto help = view::parse_help(*text, fill);
  if (!help) throw std::logic_error(fmt::format("docs/cli/{}.txt: {}", name, help.error().message()));
  if (!help->description.empty()) cmd.description(help->description);
  if (!help->footer.empty()) cmd.footer(help->footer);
  return std::move(*help);
}

namespace {

// The name a flag's help is found by: the long one of "-o,--output", without a default's
// "{VALUE}"; a positional's own.
std::string long_name(const std::string& names) {
  std::string name = names.substr(0, names.find('{'));
  if (const auto at = name.rfind("--"); at != std::string::npos) name = name.substr(at);
  return name;
}

// A subcommand's files: its own ("baseline.record"; a command of gpudoc's is named by its word
// alone), then its parent's.
std::vector<std::string> below(const std::vector<std::string>& parent, const std::string& word) {
  std::vector<std::string> path{parent.size() == 1 ? word : parent.front() + "." + word};
  path.insert(path.end(), parent.begin(), parent.end());
  return path;
}

}  // namespace

Command::Command(CLI::App* app, std::vector<std::string> path, std::shared_ptr<Files> files, view::HelpFill fill)
    : app_(app), path_(std::move(path)), files_(std::move(files)) {
  files_->by_name.insert_or_assign(path_.front(), apply_help(*app_, path_.front(), fill));
}

Command Command::root(CLI::App& app) { return Command(&app, {"gpudoc"}, std::make_shared<Files>(), {}); }

Command::Command(const Command& parent, const std::string& word, view::HelpFill fill)
    : Command(parent.app_->add_subcommand(word, ""), below(parent.path_, word), parent.files_, fill) {}

Command::Help Command::help(const std::string& names, view::HelpFill fill) const {
  const std::string flag = long_name(names);
  for (const auto& name : path_) {
    const auto* entry = files_->by_name.at(name).option(flag);
    if (entry == nullptr) continue;
    auto text = view::option_text(*entry, fill);
    if (!text) throw std::logic_error(fmt::format("docs/cli/{}.txt: {}", name, text.error().message()));
    files_->taken.insert(name + " " + flag);
    return {std::move(*text), entry->value};
  }
  throw std::logic_error(fmt::format("{} of gpudoc {}: no help in docs/cli/{}.txt or the files above it", flag,
                                     path_.front(), path_.front()));
}

CLI::Option* Command::valued(CLI::Option* option, const Help& help) {
  if (!help.value.empty()) option->type_name(help.value);
  return option;
}

std::vector<std::string> Command::unused_help() const {
  std::vector<std::string> out;
  for (const auto& [name, file] : files_->by_name)
    for (const auto& o : file.options)
      if (files_->taken.count(name + " " + o.name) == 0) out.push_back(fmt::format("docs/cli/{}.txt {}", name, o.name));
  return out;
}

void add_price_flags(Command& cmd, cost::PriceFlags& p) {
  cmd.option("--price-gpu-hour", p.gpu_hour);
  cmd.option("--price-kwh", p.kwh);
  cmd.option("--pue", p.pue);
  cmd.option("--co2-per-kwh", p.co2);
  cmd.option("--currency", p.currency);
  cmd.option("--prices", p.file);
}

void SamplerFlags::add_to(Command& cmd, const Periods& own_defaults) {
  defaults = own_defaults;
  cmd.option("--gpus", gpus)->delimiter(',')->allow_extra_args(false);
  cmd.option("--period", periods, {{"groups", "\n" + gpu::describe_groups(defaults)}})
      ->delimiter(',')
      ->allow_extra_args(false);
  cmd.flag("--no-xid", no_xid);
}

CLI::Option* add_checked(CLI::App& cmd, const std::string& names, std::function<void(double)> set,
                         const core::NumberRange& range, const std::string& help) {
  auto read = [flag = long_name(names), range, set = std::move(set)](const std::string& text) {
    auto value = core::parse_number(flag, text, range);
    if (!value) throw CLI::ValidationError(value.error().message());
    set(*value);
  };
  return cmd.add_option_function<std::string>(names, std::move(read), help + " [" + core::describe(range) + "]")
      ->type_name(range.unit == "seconds"        ? "S"
                  : range.unit == "milliseconds" ? "MS"
                                                 : "N");
}

std::optional<core::Nanos> duration_of(double seconds) {
  if (!(seconds > 0)) return std::nullopt;
  return std::chrono::duration_cast<core::Nanos>(std::chrono::duration<double>(std::min(seconds, kMaxDurationSeconds)));
}

core::Result<telemetry::SamplerConfig> SamplerFlags::to_config() const {
  telemetry::SamplerConfig c;
  c.periods = defaults;
  c.gpus = gpus;
  c.read_events = !no_xid;
  if (auto st = c.set_periods(periods); !st) return st.error();
  return c;
}

core::Result<telemetry::Live> open_live(Context& ctx, bool quiet) {
  auto live = ctx.backend.open_gpus();
  if (!live) return live.error();
  install_stop_handlers();
  if (!quiet) print_banner(*live);
  return live;
}

void print_banner(const telemetry::Live& live, std::string_view who) {
  if (!live.banner.empty()) print_text(stderr, fmt::format("{}: {}\n", who, live.banner));
}

}  // namespace gpudoc::cli
