#include "cli/diagnose_output.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "core/clock.hpp"
#include "core/file.hpp"
#include "core/temp_dir.hpp"
#include "core/text.hpp"
#include "telemetry/input.hpp"
#include "telemetry/recorder.hpp"
#include "view/diagnose_html.hpp"
#include "view/diagnose_render.hpp"
#include "view/web_assets.hpp"

namespace gpudoc::cli {
namespace {

findings::Severity threshold_of(const OutputFlags& f) {
  return findings::parse_severity(f.min_severity).value_or(findings::Severity::kWarning);
}

diagnose::Options options_of(const OutputFlags& f) {
  diagnose::Options o;
  o.window_s = f.window_s;
  return o;
}

}  // namespace

core::Status check_output_flags(const OutputFlags& f) {
  if (!findings::parse_severity(f.min_severity))
    return core::Error(core::ErrorKind::kUsage,
                       fmt::format("--min-severity {}: expected info, warning or critical", f.min_severity));
  if (!f.html.empty() && !view::web_assets())
    return core::Error(core::ErrorKind::kEnvironment, fmt::format("--html {}: {}", f.html, view::kWebAssetsMissing));
  return core::ok_status();
}

core::Result<Diagnosed> diagnose_file(const std::string& path, const OutputFlags& f, const std::string& source_name) {
  // Only what the diagnosis and its views read: a day of 8 GPUs stays under 1 GB (855 MB).
  auto trace = telemetry::read_telemetry_file(path, diagnose::read_options());
  if (!trace) return trace.error();
  if (auto ok = diagnose::check_diagnosable(*trace, path); !ok) return ok.error();
  Diagnosed d{std::move(*trace), {}};
  d.diagnosis = diagnose::diagnose(d.trace, options_of(f));
  d.diagnosis.source = source_name.empty() ? path : source_name;
  return d;
}

core::Result<LiveResult> record_and_diagnose(const telemetry::Live& live, const LiveRun& run, const OutputFlags& f,
                                             bool quiet) {
  // Utilization is drained every second (not every 10 s as in a long recording) so that a short
  // look ends with its last seconds in the trace.
  auto defaults = telemetry::SamplerConfig::default_periods();
  defaults[gpu::index(gpu::MetricGroup::kUtilization)] = std::chrono::milliseconds(1000);
  auto config = run.sampler.to_config(defaults);
  if (!config) return config.error();
  const int count = live.gpu_count;

  // Without -o the trace goes into a private folder of its own (mode 0700, a name nobody can
  // guess): another user cannot plant a file at its name.
  std::optional<core::PrivateDir> dir;
  if (run.output.empty()) {
    auto d = core::PrivateDir::create("gpudoc-diagnose");
    if (!d) return d.error();
    dir = std::move(*d);
    if (run.keep_trace) dir->keep();
  }
  const std::string path = dir ? dir->file("live.jsonl") : run.output;
  telemetry::RecordOptions opt;
  opt.output_path = path;
  opt.command = run.command;
  opt.command_stdout_to_stderr = run.command_stdout_to_stderr;
  opt.sampler = *config;
  opt.wake_interval = live.wall_time(opt.wake_interval);
  if (run.duration_s > 0)
    opt.duration = std::chrono::duration_cast<core::Nanos>(std::chrono::duration<double>(run.duration_s));
  const bool progress = !quiet && run.command.empty() && isatty(STDERR_FILENO) != 0;
  if (progress)
    opt.on_progress = [&](double elapsed, std::uint64_t) {
      std::fprintf(stderr, "\rgpudoc: looking at %d GPU%s: %.0f / %.0f s  (Ctrl-C stops early)", count,
                   count == 1 ? "" : "s", elapsed, run.duration_s);
    };
  install_stop_handlers();
  if (!quiet) {
    if (!live.banner.empty()) print_text(stderr, fmt::format("gpudoc: {}\n", live.banner));
    if (run.command.empty())
      std::fprintf(stderr, "gpudoc: sampling %d GPU%s for %.0f s, then diagnosing\n", count, count == 1 ? "" : "s",
                   run.duration_s);
    else
      print_text(stderr, fmt::format("gpudoc: recording {} GPU{} while `{}` runs, then diagnosing\n", count,
                                     count == 1 ? "" : "s", fmt::join(run.command, " ")));
  }
  auto r = telemetry::record(*live.backend, *live.clock, opt, stop_requests());
  if (progress) std::fputs("\n", stderr);
  if (!r) return r.error();
  auto d = diagnose_file(path, f, run.command.empty() ? "live" : fmt::format("live: {}", fmt::join(run.command, " ")));
  if (!d) return d.error().with_context("reading back the recorded trace");
  d->diagnosis.input_format = live.real() ? "live" : telemetry::to_string(live.spec->kind);
  LiveResult out{std::move(*d), r->command_exit_code, dir && !run.keep_trace ? "" : path, r->end_reason};
  return out;
}

int print_diagnoses(const std::vector<Diagnosed>& items, const OutputFlags& f, const PrintContext& ctx) {
  const auto threshold = threshold_of(f);
  std::size_t at_or_above = 0;
  std::optional<findings::Severity> worst;
  for (const auto& it : items)
    for (const auto& fd : it.diagnosis.findings) {
      if (fd.severity >= threshold) ++at_or_above;
      if (!worst || fd.severity > *worst) worst = fd.severity;
    }
  const int code = at_or_above > 0 ? core::kExitFinding : core::kExitOk;

  if (!f.html.empty()) {
    std::vector<view::HtmlReport> reports;
    for (const auto& it : items) reports.push_back({&it.trace, &it.diagnosis});
    std::string title = items.size() == 1 ? std::filesystem::path(items[0].diagnosis.source).filename().string()
                                          : fmt::format("{} traces", items.size());
    auto page = view::render_diagnose_html(reports, {.title = title, .banner = ctx.banner});
    if (!page) return report_error(page.error().with_context(fmt::format("--html {}", f.html)), f.json);
    if (auto s = core::write_file(f.html, *page); !s) return report_error(s.error(), f.json);
    print_text(stderr,
               fmt::format("gpudoc: wrote {} ({} kB; opens offline in any browser)\n", f.html, page->size() / 1024));
  }

  if (f.json) {
    nlohmann::json j;
    if (items.size() == 1) {
      j = diagnose::to_json(items[0].diagnosis);
    } else {
      // Several traces: each diagnosis under "traces", and every finding also in the top-level
      // "findings" with the trace it came from, so `.findings[]` works for one trace or many.
      nlohmann::json traces = nlohmann::json::array(), all = nlohmann::json::array();
      for (const auto& it : items) {
        traces.push_back(diagnose::to_json(it.diagnosis));
        for (const auto& fd : it.diagnosis.findings) {
          auto fj = findings::to_json(fd);
          fj["trace"] = it.diagnosis.source;
          all.push_back(fj);
        }
      }
      j = {{"traces", traces}, {"findings", all}};
    }
    j["threshold"] = findings::to_string(threshold);
    j["max_severity"] = worst ? nlohmann::json(findings::to_string(*worst)) : nlohmann::json(nullptr);
    j["exit_code"] = code;
    for (auto it = ctx.extra.begin(); it != ctx.extra.end(); ++it) j[it.key()] = it.value();
    print_json(j);
    return code;
  }

  const bool color = isatty(STDOUT_FILENO) != 0 && std::getenv("NO_COLOR") == nullptr;
  std::string text;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) text += "\n" + std::string(80, '-') + "\n\n";
    text +=
        view::render_diagnosis(items[i].trace, items[i].diagnosis, {.color = color, .width = 80, .banner = ctx.banner});
  }
  text += "\n";
  const char* where = ctx.replay ? " in the replayed traces" : "";
  if (at_or_above > 0)
    text += fmt::format("{} finding{} at or above {}{}{}.\n", at_or_above, at_or_above == 1 ? "" : "s",
                        findings::to_string(threshold), where, ctx.replay ? "" : " (exit 1)");
  else
    text += fmt::format("No finding at or above {}{}.\n", findings::to_string(threshold), where);
  if (!ctx.closing.empty()) text += core::terminal_safe(ctx.closing, core::Newlines::kKeep) + "\n";
  // The report escapes every field it takes from a trace (view/diagnose_render.hpp); without colour
  // the whole text goes through the same escape once more (it changes nothing already escaped).
  if (color)
    std::fputs(text.c_str(), stdout);
  else
    print_text(stdout, text);
  return code;
}

}  // namespace gpudoc::cli
