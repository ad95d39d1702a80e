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

void apply_help(CLI::App& cmd, std::string_view name, view::HelpFill fill) {
  const auto text = view::help_file(name);
  if (!text) throw std::logic_error(fmt::format("docs/cli/{}.txt is not in the build", name));
  auto help = view::parse_help(*text, fill);
  if (!help) throw std::logic_error(fmt::format("docs/cli/{}.txt: {}", name, help.error().message()));
  if (!help->description.empty()) cmd.description(help->description);
  if (!help->footer.empty()) cmd.footer(help->footer);
}

void add_price_flags(CLI::App& cmd, cost::PriceFlags& p) {
  cmd.add_option("--price-gpu-hour", p.gpu_hour, "money per GPU-hour: a cloud rate, or the GPU's cost amortised")
      ->type_name("X");
  cmd.add_option("--price-kwh", p.kwh, "money per kWh at the meter")->type_name("X");
  cmd.add_option("--pue", p.pue, "the facility's power usage effectiveness (>= 1)")->type_name("X");
  cmd.add_option("--co2-per-kwh", p.co2, "grams of CO2 per kWh at the meter")->type_name("G");
  cmd.add_option("--currency", p.currency, "the prices' currency: USD, EUR, ...")->type_name("CODE");
  cmd.add_option("--prices", p.file, "the prices file (docs/cost.md)")->type_name("FILE");
}

void SamplerFlags::add_to(CLI::App& cmd, std::string_view defaults_note) {
  cmd.add_option("--gpus", gpus, "GPU indices to sample (default: all), e.g. --gpus 0,2")
      ->delimiter(',')
      ->allow_extra_args(false);
  cmd.add_option("--period", periods,
                 "GROUP=MS: read a metric group every MS milliseconds (0 turns it off). Groups and defaults:\n" +
                     gpu::describe_groups() + (defaults_note.empty() ? "" : "\n" + std::string(defaults_note)))
      ->delimiter(',')
      ->allow_extra_args(false);
  cmd.add_flag("--no-xid", no_xid, "do not listen for XID error events");
}

namespace {

// The long name of "-d,--duration": what the messages call the flag.
std::string long_name(const std::string& names) {
  const std::size_t at = names.rfind("--");
  return at == std::string::npos ? names : names.substr(at);
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

}  // namespace

CLI::Option* add_number(CLI::App& cmd, const std::string& names, double& target, const core::NumberRange& range,
                        const std::string& help) {
  return add_checked(
      cmd, names, [&target](double v) { target = v; }, range, help);
}

CLI::Option* add_number(CLI::App& cmd, const std::string& names, int& target, const core::NumberRange& range,
                        const std::string& help) {
  return add_checked(
      cmd, names, [&target](double v) { target = static_cast<int>(v); }, range, help);
}

CLI::Option* add_number(CLI::App& cmd, const std::string& names, std::size_t& target, const core::NumberRange& range,
                        const std::string& help) {
  return add_checked(
      cmd, names, [&target](double v) { target = static_cast<std::size_t>(v); }, range, help);
}

std::optional<core::Nanos> duration_of(double seconds) {
  if (!(seconds > 0)) return std::nullopt;
  return std::chrono::duration_cast<core::Nanos>(std::chrono::duration<double>(std::min(seconds, kMaxDurationSeconds)));
}

core::Result<telemetry::SamplerConfig> SamplerFlags::to_config(
    const std::array<std::chrono::milliseconds, gpu::kMetricGroupCount>& defaults) const {
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
