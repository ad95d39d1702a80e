#include "diagnose/session.hpp"

#include <fmt/format.h>

#include <fmt/ranges.h>
#include <unistd.h>

#include <utility>

#include "core/temp_dir.hpp"
#include "core/text.hpp"
#include "telemetry/input.hpp"
#include "telemetry/recorder.hpp"

namespace gpudoc::diagnose {
namespace {

// Where a live run's trace goes: nowhere (it is built in memory), the file of `output`, or with
// keep_trace a file in a private folder of its own (mode 0700, a name nobody can guess: another
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

void say(std::FILE* to, const std::string& text) {
  std::fputs(core::terminal_safe(text, core::Newlines::kKeep).c_str(), to);
}

// The first lines of a narrated run; returns the progress callback (empty: no progress line).
std::function<void(double, std::uint64_t)> narrate_start(const telemetry::Live& live, const LiveRun& run) {
  const int n = live.gpu_count;
  const char* s = n == 1 ? "" : "s";
  if (!live.banner.empty()) say(run.narrate, fmt::format("gpudoc: {}\n", live.banner));
  if (!run.command.empty()) {
    say(run.narrate, fmt::format("gpudoc: recording {} GPU{} while `{}` runs, then diagnosing\n", n, s,
                                 fmt::join(run.command, " ")));
    return {};
  }
  say(run.narrate, fmt::format("gpudoc: sampling {} GPU{} for {:.0f} s, then diagnosing\n", n, s, run.duration_s));
  if (isatty(fileno(run.narrate)) == 0) return {};
  return [to = run.narrate, n, s, total = run.duration_s](double elapsed, std::uint64_t) {
    std::fprintf(to, "\rgpudoc: looking at %d GPU%s: %.0f / %.0f s  (Ctrl-C stops early)", n, s, elapsed, total);
  };
}

}  // namespace

core::Result<Diagnosed> diagnose_trace(telemetry::Trace&& trace, const std::string& name, const Options& options,
                                       const std::string& source_name) {
  if (auto ok = check_diagnosable(trace, name); !ok) return ok.error();
  Diagnosed d{std::move(trace), {}};
  d.diagnosis = diagnose(d.trace, options);
  d.diagnosis.source = source_name.empty() ? name : source_name;
  return d;
}

core::Result<Diagnosed> diagnose_file(const std::string& path, const Options& options, const std::string& source_name) {
  // Only what the diagnosis and its views read: a day of 8 GPUs stays under 1 GB (855 MB).
  auto trace = telemetry::read_telemetry_file(path, read_options());
  if (!trace) return trace.error();
  return diagnose_trace(std::move(*trace), path, options, source_name);
}

core::Result<std::vector<Diagnosed>> diagnose_files(const std::vector<std::string>& paths, const Options& options,
                                                    const std::filesystem::path& dir) {
  std::vector<Diagnosed> items;
  for (const auto& path : paths) {
    auto d = dir.empty() ? diagnose_file(path, options) : diagnose_file((dir / path).string(), options, path);
    if (!d) return d.error();
    items.push_back(std::move(*d));
  }
  return items;
}

std::array<std::chrono::milliseconds, gpu::kMetricGroupCount> live_periods() {
  auto periods = telemetry::SamplerConfig::default_periods();
  periods[gpu::index(gpu::MetricGroup::kUtilization)] = std::chrono::milliseconds(1000);
  return periods;
}

core::Result<LiveResult> record_and_diagnose(const telemetry::Live& live, const LiveRun& run, const Options& options,
                                             std::atomic<int>& stop_requests) {
  auto file = trace_file_of(run);
  if (!file) return file.error();
  telemetry::RecordOptions opt;
  opt.output_path = file->path;
  // The diagnosis reads the trace built in memory: the one reading the file back would give.
  opt.in_memory = read_options();
  opt.command = run.command;
  opt.command_stdout_to_stderr = run.command_stdout_to_stderr;
  opt.sampler = run.sampler;
  opt.wake_interval = live.wall_time(opt.wake_interval);
  if (run.duration_s > 0)
    opt.duration = std::chrono::duration_cast<core::Nanos>(std::chrono::duration<double>(run.duration_s));
  if (run.narrate != nullptr) opt.on_progress = narrate_start(live, run);
  auto r = telemetry::record(*live.backend, *live.clock, opt, stop_requests);
  if (opt.on_progress) std::fputs("\n", run.narrate);
  if (!r) return r.error();
  const std::string source = run.command.empty() ? "live" : fmt::format("live: {}", fmt::join(run.command, " "));
  auto d = diagnose_trace(std::move(*r->trace), file->path.empty() ? source : file->path, options, source);
  if (!d) return d.error().with_context("diagnosing the recorded trace");
  d->diagnosis.input_format = live.real() ? "live" : telemetry::to_string(live.spec->kind);
  return LiveResult{std::move(*d), r->command_exit_code, file->path, r->end_reason};
}

}  // namespace gpudoc::diagnose
