#include "cli/common.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <functional>
#include <stdexcept>

#include "cli/commands.hpp"
#include "core/file.hpp"
#include "core/text.hpp"
#include "view/web_assets.hpp"

namespace gpudoc::cli {

void print_text(std::FILE* to, std::string_view text) {
  std::fputs(core::terminal_safe(text, core::Newlines::kKeep).c_str(), to);
}

core::Status html_flag_status(std::string_view path, bool assets_built_in) {
  if (path.empty() || assets_built_in) return core::ok_status();
  return core::Error(core::ErrorKind::kEnvironment, fmt::format("--html {}: {}", path, view::kWebAssetsMissing));
}

core::Status check_html_flag(const std::string& path) { return html_flag_status(path, view::web_assets().has_value()); }

core::Status check_html_flag(const std::optional<std::string>& path) {
  return path ? check_html_flag(*path) : core::ok_status();
}

core::Status write_page(const std::string& path, const core::Result<std::string>& page) {
  if (!page) return page.error();
  return core::write_file(path, *page);
}

namespace {

// A command's description and footer from its file. Throws std::logic_error: the file is a bug of
// the build.
void describe(CLI::App& cmd, const core::Result<view::HelpText>& help) {
  if (!help) throw std::logic_error(help.error().message());
  if (!help->description.empty()) cmd.description(help->description);
  if (!help->footer.empty()) cmd.footer(help->footer);
}

// The name a flag's help is found by: the long one of "-o,--output", without a default's
// "{VALUE}"; a positional's own.
std::string long_name(const std::string& names) {
  std::string name = names.substr(0, names.find('{'));
  if (const auto at = name.rfind("--"); at != std::string::npos) name = name.substr(at);
  return name;
}

}  // namespace

Command::Command(CLI::App* app, std::string name, std::shared_ptr<view::HelpBook> book, view::HelpFill fill)
    : app_(app), name_(std::move(name)), book_(std::move(book)) {
  describe(*app_, book_->open(name_, fill));
}

Command Command::root(CLI::App& app) { return Command(&app, "gpudoc", std::make_shared<view::HelpBook>(), {}); }

Command::Command(const Command& parent, const std::string& word, view::HelpFill fill)
    : Command(parent.app_->add_subcommand(word, ""), parent.name_ == "gpudoc" ? word : parent.name_ + "." + word,
              parent.book_, fill) {}

view::HelpOption Command::help(const std::string& names, view::HelpFill fill) const {
  auto help = book_->option(name_, long_name(names), fill);
  if (!help) throw std::logic_error(help.error().message());
  return std::move(*help);
}

CLI::Option* Command::valued(CLI::Option* option, const view::HelpOption& help) {
  if (!help.value.empty()) option->type_name(help.value);
  return option;
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

CLI::Option* Command::checked(const std::string& names, std::function<void(double)> set,
                              const core::NumberRange& range) {
  const auto h = help(names);
  auto read = [flag = long_name(names), range, set = std::move(set)](const std::string& text) {
    auto value = core::parse_number(flag, text, range);
    if (!value) throw CLI::ValidationError(value.error().message());
    set(*value);
  };
  auto* option =
      app_->add_option_function<std::string>(names, std::move(read), h.text + " [" + core::describe(range) + "]");
  option->type_name(range.unit == "seconds" ? "S" : range.unit == "milliseconds" ? "MS" : "N");
  return valued(option, h);
}

core::Result<telemetry::SamplerConfig> SamplerFlags::to_config() const {
  return telemetry::SamplerConfig::with_periods(defaults, periods, gpus, !no_xid);
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
