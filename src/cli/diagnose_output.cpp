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

namespace {

core::Result<Diagnosed> diagnose_trace(telemetry::Trace&& trace, const std::string& name, const OutputFlags& f,
                                       const std::string& source_name) {
  if (auto ok = diagnose::check_diagnosable(trace, name); !ok) return ok.error();
  Diagnosed d{std::move(trace), {}};
  d.diagnosis = diagnose::diagnose(d.trace, options_of(f));
  d.diagnosis.source = source_name.empty() ? name : source_name;
  return d;
}

// Where a live run's trace goes: nowhere (it is built in memory), the file of -o, or with
// --keep-trace a file in a private folder of its own (mode 0700, a name nobody can guess: another
// user cannot plant a file at its name).
struct TraceFile {
  std::optional<core::PrivateDir> dir;
  std::string path;  // empty: no file
};

core::Result<TraceFile> trace_file_of(const LiveRun& run) {
  TraceFile out;
  if (!run.output.empty()) {
    out.path = run.output;
  } else if (run.keep_trace) {
    auto d = core::PrivateDir::create("gpudoc-diagnose");
    if (!d) return d.error();
    out.dir = std::move(*d);
    out.dir->keep();
    out.path = out.dir->file("live.jsonl");
  }
  return out;
}

}  // namespace

core::Result<Diagnosed> diagnose_file(const std::string& path, const OutputFlags& f, const std::string& source_name) {
  // Only what the diagnosis and its views read: a day of 8 GPUs stays under 1 GB (855 MB).
  auto trace = telemetry::read_telemetry_file(path, diagnose::read_options());
  if (!trace) return trace.error();
  return diagnose_trace(std::move(*trace), path, f, source_name);
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

  auto file = trace_file_of(run);
  if (!file) return file.error();
  telemetry::RecordOptions opt;
  opt.output_path = file->path;
  // The diagnosis reads the trace built in memory: the one reading the file back would give.
  opt.in_memory = diagnose::read_options();
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
  const std::string source = run.command.empty() ? "live" : fmt::format("live: {}", fmt::join(run.command, " "));
  auto d = diagnose_trace(std::move(*r->trace), file->path.empty() ? source : file->path, f, source);
  if (!d) return d.error().with_context("diagnosing the recorded trace");
  d->diagnosis.input_format = live.real() ? "live" : telemetry::to_string(live.spec->kind);
  LiveResult out{std::move(*d), r->command_exit_code, file->path, r->end_reason};
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
