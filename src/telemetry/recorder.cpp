#include "telemetry/recorder.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <csignal>
#include <set>

#include "core/host.hpp"
#include "core/line_tap.hpp"
#include "core/log.hpp"
#include "core/process.hpp"
#include "core/version.hpp"
#include "telemetry/trace_builder.hpp"
#include "telemetry/work.hpp"

namespace gpudoc::telemetry {

namespace {

double seconds_since(std::int64_t start_unix_ns, std::int64_t unix_ns) {
  return static_cast<double>(unix_ns - start_unix_ns) * 1e-9;
}

}  // namespace

core::Result<TraceHeader> make_header(gpu::Backend& backend, core::Clock& clock, const SamplerConfig& config,
                                      const std::vector<std::string>& command) {
  TraceHeader h;
  h.gpudoc_version = core::kVersion;
  h.host = core::host_name();
  h.start_unix_ns = clock.unix_now_ns();
  auto sys = backend.system_info();
  if (!sys) return sys.error().with_context("reading driver versions");
  h.system = *sys;
  h.command = command;
  auto count = backend.device_count();
  if (!count) return count.error().with_context("counting GPUs");
  std::vector<int> gpus = config.gpus;
  if (gpus.empty())
    for (int i = 0; i < *count; ++i) gpus.push_back(i);
  gpu::MetricSet any;
  for (int g : gpus) {
    auto info = backend.device_info(g);
    if (!info) return info.error().with_context(fmt::format("reading GPU {}", g));
    h.gpus.push_back(*info);
    auto caps = backend.capabilities(g);
    if (caps) any |= *caps;
  }
  for (gpu::Metric m : gpu::all_metrics()) {
    const auto& mi = gpu::info(m);
    auto period = config.periods[gpu::index(mi.group)];
    if (!any.test(gpu::index(m)) || period.count() <= 0) continue;
    h.metrics.push_back({std::string(mi.name), std::string(mi.unit), std::string(gpu::info(mi.group).name),
                         static_cast<std::int64_t>(period.count())});
  }
  return h;
}

namespace {

// What one recording holds between the sampler and its outputs (the file, the trace in memory, or
// both): the first failed write ends it.
struct Recording {
  TraceWriter* writer = nullptr;
  TraceBuilder* builder = nullptr;
  std::int64_t start_ns = 0;
  core::Status write_status;
  std::set<int> lost;  // GPUs lost and not recovered

  void consume(std::vector<SamplerRecord>&& records) {
    for (auto& r : records) {
      if (!write_status) return;
      if (r.kind == SamplerRecord::Kind::kEvent) {
        if (r.event_kind == "gpu_lost") lost.insert(r.gpu);
        if (r.event_kind == "gpu_recovered") lost.erase(r.gpu);
      }
      if (builder != nullptr) builder->add(r);
      if (writer != nullptr) write_status = write_record(r);
    }
  }
  core::Status write_record(const SamplerRecord& r) {
    switch (r.kind) {
      case SamplerRecord::Kind::kSamples: return writer->write_samples(r.gpu, r.samples);
      case SamplerRecord::Kind::kProcesses: return writer->write_processes(r.gpu, r.processes);
      case SamplerRecord::Kind::kEvent: break;
    }
    return writer->write_event(Event{seconds_since(start_ns, r.time_unix_ns), r.event_kind, r.gpu, r.event_fields});
  }
  void write(const Event& e) {
    if (!write_status) return;
    if (builder != nullptr) builder->add_event(e);
    if (writer != nullptr) write_status = writer->write_event(e);
  }
  [[nodiscard]] std::uint64_t sample_lines() const {
    return writer != nullptr ? writer->sample_lines() : builder->sample_lines();
  }
};

// Why the recording stops now, or "" to go on. Without a command one stop request stops; with one,
// the recording goes on while the stop policy ends the command's group, until the command exited.
std::string stop_reason(const RecordOptions& options, gpu::Backend& backend, std::optional<core::ChildProcess>& child,
                        const Recording& rec, std::size_t gpu_count, core::Nanos elapsed, int stops) {
  if (!rec.write_status) return "write_failed";
  const bool exited = child && child->poll();
  if (stops >= 1) return child && !exited ? std::string() : std::string("interrupted");
  if (exited) return "command_exited";
  if (options.duration && elapsed >= *options.duration) return "duration";
  if (!rec.lost.empty() && rec.lost.size() == gpu_count && !child) return "all_gpus_lost";
  // A replayed recording that has played to its end gives nothing more (with a command, the
  // command decides how long the recording is).
  if (backend.finished() && !child) return "replay_ended";
  return {};
}

// The command's end in the trace: its exit, or that it still runs (the duration ended the recording).
void record_child_end(core::ChildProcess& child, double t, Recording& rec, RecordResult& result) {
  if (child.exited()) {
    result.command_exit_code = child.exit_code_for_shell();
    nlohmann::json f = {{"pid", child.pid()}};
    if (auto c = child.exit_code()) f["exit_code"] = *c;
    if (auto s = child.term_signal()) f["signal"] = *s;
    rec.write(Event{t, "process_exit", std::nullopt, f});
  } else {
    rec.write(
        Event{t, "annotation", std::nullopt, {{"text", "recording stopped while the command was still running"}}});
  }
}

// The outputs a recording asked for: the file (or stdout), the trace in memory, or both.
struct Outputs {
  std::optional<TraceWriter> writer;
  std::optional<TraceBuilder> builder;

  // A recording that failed before it ran still ends its file with an end line.
  void abandon(const TraceSummary& summary) {
    if (writer) (void)writer->close(summary);
  }
};

core::Result<Outputs> open_outputs(const RecordOptions& options, const TraceHeader& header) {
  Outputs out;
  if (!options.output_path.empty()) {
    auto w = options.output_path == "-" ? TraceWriter::wrap(stdout, header)
                                        : TraceWriter::create(options.output_path, header);
    if (!w) return w.error();
    out.writer = std::move(*w);
  }
  if (options.in_memory) out.builder.emplace(header, *options.in_memory);
  if (!out.writer && !out.builder)
    return core::Error(core::ErrorKind::kInternal, "record: neither a file nor a trace in memory was asked for");
  return out;
}

// The recorded command's stdout: read through a pipe (every byte passed on to gpudoc's stdout, or
// its stderr), its ::gpudoc work lines gathered into `step` events, at most one a second.
struct CommandOutput {
  WorkLines work;
  core::LineTap tap;
  core::MonoTime last_step{};

  explicit CommandOutput(bool to_stderr)
      : tap(to_stderr ? STDERR_FILENO : STDOUT_FILENO,
            {.line = [this](std::string_view line, std::size_t) { work.add_line(line); }, .oversized = {}}) {}
  void write_steps(Recording& rec, double t) {
    if (auto fields = work.take()) rec.write(Event{t, "step", std::nullopt, std::move(*fields)});
  }
  void every_second(Recording& rec, core::MonoTime now, double t) {
    if (now - last_step < std::chrono::seconds(1)) return;
    last_step = now;
    write_steps(rec, t);
  }
};

}  // namespace

core::Result<RecordResult> record(gpu::Backend& backend, core::Clock& clock, const RecordOptions& options,
                                  const std::atomic<int>& stop_requests) {
  auto header = make_header(backend, clock, options.sampler, options.command);
  if (!header) return header.error();
  const std::int64_t start_ns = header->start_unix_ns;

  auto outputs = open_outputs(options, *header);
  if (!outputs) return outputs.error();

  Sampler sampler(backend, clock, options.sampler);
  if (auto s = sampler.start(); !s) {
    outputs->abandon({0, 0, 0, "sampler_failed"});
    return s.error();
  }
  if (options.on_started) options.on_started();

  RecordResult result;
  result.gpu_count = header->gpus.size();
  std::optional<core::ChildProcess> child;
  std::optional<CommandOutput> output;
  core::GroupStopper stopper;  // the stop policy for the command (core/process.hpp)
  Recording rec{outputs->writer ? &*outputs->writer : nullptr,
                outputs->builder ? &*outputs->builder : nullptr,
                start_ns,
                core::ok_status(),
                {}};
  auto now_t = [&] { return seconds_since(start_ns, clock.unix_now_ns()); };

  if (!options.command.empty()) {
    core::SpawnOptions spawn = core::workload_spawn_options();  // its own process group: stopped as a whole
    output.emplace(options.command_stdout_to_stderr);
    auto opened = output->tap.open();
    spawn.stdout_fd = output->tap.write_end();
    auto c =
        opened ? core::ChildProcess::spawn(options.command, spawn) : core::Result<core::ChildProcess>(opened.error());
    output->tap.close_write_end();  // the command holds the only write end: its exit ends the pipe
    if (!c) {
      sampler.stop();
      outputs->abandon({now_t(), rec.sample_lines(), 0, "command_failed"});
      return c.error();
    }
    child = std::move(*c);
    output->tap.signal_resizes_to(child->pid());
    rec.write(Event{now_t(), "process_start", std::nullopt, {{"pid", child->pid()}, {"command", options.command}}});
  }

  const core::MonoTime t0 = clock.now();
  core::MonoTime last_flush = t0, last_progress = t0;
  std::string reason;
  // When the command's exit was first seen: its process_exit time (stopping the sampler after it can
  // take a second: a driver's event wait), which bounds the job's run (the Cost block).
  std::optional<double> exit_t;
  while (reason.empty()) {
    // Half a second between wake-ups by default: the child's exit and Ctrl-C are noticed within
    // it. Every wake-up of an idle process costs tens of microseconds of CPU (scheduler, futex,
    // timers): at the sampler's budget (0.5 % of a core per GPU) they are counted.
    rec.consume(sampler.drain(options.wake_interval));
    const core::MonoTime now = clock.now();
    if (rec.write_status && rec.writer != nullptr && now - last_flush >= options.flush_interval) {
      rec.write_status = rec.writer->flush();
      last_flush = now;
    }
    if (options.on_progress && now - last_progress >= std::chrono::seconds(1)) {
      options.on_progress(core::to_seconds(now - t0), rec.sample_lines());
      last_progress = now;
    }
    if (output) output->every_second(rec, now, now_t());
    if (child && stop_requests.load() >= 1) stopper.step(*child, stop_requests.load() >= 2);
    reason = stop_reason(options, backend, child, rec, result.gpu_count, now - t0, stop_requests.load());
    if (child && !exit_t && child->exited()) exit_t = now_t();
  }
  // Stopped by a request: what is left of the command's group goes before the trace is closed.
  if (child && stopper.started()) stopper.finish(*child, [&] { return stop_requests.load() >= 2; });
  if (child && !exit_t && child->poll()) exit_t = now_t();

  sampler.stop();
  rec.consume(sampler.drain(core::Nanos(0)));
  if (output) {  // the command's last lines, then its exit
    output->tap.finish();
    output->write_steps(rec, exit_t.value_or(now_t()));
  }
  if (child) record_child_end(*child, exit_t.value_or(now_t()), rec, result);
  auto stats = sampler.stats();
  result.duration_s = core::to_seconds(clock.now() - t0);
  result.sample_lines = rec.sample_lines();
  result.dropped_records = stats.dropped_records;
  result.end_reason = reason;
  result.gpus = stats.gpus;
  const TraceSummary summary{now_t(), result.sample_lines, result.dropped_records, reason};
  auto closed = outputs->writer ? outputs->writer->close(summary) : core::ok_status();
  if (!rec.write_status) return rec.write_status.error().with_context(fmt::format("writing {}", options.output_path));
  if (!closed) return closed.error().with_context(fmt::format("closing {}", options.output_path));
  if (outputs->builder) result.trace = outputs->builder->finish(summary);
  return result;
}

}  // namespace gpudoc::telemetry
