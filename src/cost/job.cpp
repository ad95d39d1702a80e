// A job's cost from a trace and its diagnosis, or from a profile (job.hpp); priced in summary.cpp.
#include "cost/job.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include <fmt/format.h>

namespace gpudoc::cost {
namespace {

using gpu::Metric;

constexpr std::size_t kNoFinding = std::numeric_limits<std::size_t>::max();
// The longest a reading stands for (as the diagnosis' grid): beyond, the time is not read.
constexpr double kMinGapS = 0.6, kMaxGapS = 600;
// NVML's power reading on Ampere (but GA100) and newer: the mean over the last second.
constexpr double kPowerWindowS = 1.0;

double median_spacing(const telemetry::Series& s) {
  std::vector<double> d;
  for (std::size_t k = 1; k < s.size(); ++k)
    if (s.t[k] > s.t[k - 1]) d.push_back(s.t[k] - s.t[k - 1]);
  if (d.empty()) return 0;
  std::nth_element(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(d.size() / 2), d.end());
  return d[d.size() / 2];
}

double max_gap(const telemetry::Series& s) { return std::clamp(3 * median_spacing(s), kMinGapS, kMaxGapS); }

// Whether the GPU's power reading is a one-second mean: compute capability 8.6 and newer (GA100,
// 8.0, and older read instantaneous power). Unknown: not moved, and said.
std::optional<bool> averaged_power(const gpu::DeviceInfo* dev) {
  if (dev == nullptr || !dev->compute_capability_major) return std::nullopt;
  const int major = *dev->compute_capability_major, minor = dev->compute_capability_minor.value_or(0);
  return major > 8 || (major == 8 && minor >= 6);
}

std::optional<Micros> lost_at(const telemetry::Trace& t, int gpu) {
  std::optional<Micros> lost;
  for (const auto& e : t.events) {
    if (!e.gpu || *e.gpu != gpu) continue;
    if (e.kind == "gpu_lost") lost = lost ? lost : std::optional<Micros>(micros(e.t));
    if (e.kind == "gpu_recovered") lost.reset();
  }
  return lost;
}

std::optional<double> evidence(const findings::Finding& f, std::string_view name) {
  for (const auto& e : f.evidence)
    if (e.name == name && std::isfinite(e.value)) return e.value;
  return std::nullopt;
}

// The claim finding `f` makes on GPU `g`, if any (job.hpp: which findings claim what).
std::optional<Claim> claim_for(const findings::Finding& f, std::size_t index, int g) {
  Claim c{.source = index,
          .cause = f.id,
          .rank = -static_cast<int>(f.severity),
          .from = micros(f.window.start_s),
          .to = micros(f.window.end_s)};
  if (f.details.is_object() && f.details.contains("waiting") && f.details["waiting"].is_array()) {
    for (const auto& w : f.details["waiting"])
      if (w.is_object() && w.value("gpu", -1) == g && w.contains("waiting_s") && w["waiting_s"].is_number()) {
        c.lost = micros(w["waiting_s"].get<double>());
        return c;
      }
    return std::nullopt;  // a straggler loses nothing: the others wait for it
  }
  if (std::find(f.gpus.begin(), f.gpus.end(), g) == f.gpus.end()) return std::nullopt;
  if (const auto lost = evidence(f, "gpu_time_lost_s")) {
    c.lost = micros(*lost / static_cast<double>(f.gpus.size()));
    return c;
  }
  if (f.id == "idle") {
    c.not_busy_only = true;
    return c;
  }
  return std::nullopt;
}

void add_span_claims(const diagnose::Diagnosis& d, int g, Micros start, Micros end, std::vector<Claim>& claims) {
  for (const auto& s : d.gpus) {
    if (s.gpu != g || !(s.analysed_to_s > s.analysed_from_s)) continue;
    const Micros from = micros(s.analysed_from_s), to = micros(s.analysed_to_s);
    if (from > start)
      claims.push_back({.source = kNoFinding,
                        .cause = "startup",
                        .rank = kStartupRank,
                        .from = start,
                        .to = from,
                        .not_busy_only = true});
    if (to < end)
      claims.push_back({.source = kNoFinding,
                        .cause = "teardown",
                        .rank = kStartupRank,
                        .from = to,
                        .to = end,
                        .not_busy_only = true});
  }
}

GpuCost gpu_cost(const telemetry::Trace& t, const diagnose::Diagnosis& d, int g, Micros start, Micros end,
                 std::vector<std::string>& notes) {
  const telemetry::GpuTrace& gt = t.gpus[static_cast<std::size_t>(g)];
  const gpu::DeviceInfo* dev =
      static_cast<std::size_t>(g) < t.header.gpus.size() ? &t.header.gpus[static_cast<std::size_t>(g)] : nullptr;
  GpuCost gc;
  gc.gpu = g;
  gc.name = dev != nullptr ? dev->name : std::string();
  GpuRun run{.gpu = g, .start = start, .end = end};
  for (Metric m : {Metric::kGpuUtilizationPercent, Metric::kGpmSmActivityPercent}) {
    const telemetry::Series& s = gt.metric(m);
    if (s.empty()) continue;
    run.busy = busy_steps(s.t, s.v, max_gap(s));
    gc.busy_from = std::string(gpu::info(m).name);
    break;
  }
  if (gc.busy_from.empty()) notes.push_back(fmt::format("GPU {}: no utilization read: none of its time is useful", g));
  const telemetry::Series& pw = gt.metric(Metric::kPowerWatts);
  const auto averaged = averaged_power(dev);
  if (!averaged && !pw.empty())
    notes.push_back(
        fmt::format("GPU {}: its compute capability is not known: power readings taken as instantaneous", g));
  gc.power_shift_s = averaged.value_or(false) ? kPowerWindowS / 2 : 0.0;
  run.power = power_curve(pw.t, pw.v,
                          {.shift_s = gc.power_shift_s,
                           .max_gap_s = max_gap(pw),
                           .edge_hold_s = gc.power_shift_s + median_spacing(pw) / 2});
  EnergyInput in{.start = start, .end = end, .power = run.power, .lost_at = lost_at(t, g)};
  const telemetry::Series& counter = gt.metric(Metric::kEnergyJoules);
  for (std::size_t k = 0; k < counter.size(); ++k)
    in.counter.push_back({micros(counter.t[k]), std::llround(counter.v[k] * 1000)});
  gc.energy = run_energy(in);
  run.energy = gc.energy.total;
  run.energy_until = gc.energy.until;
  for (std::size_t i = 0; i < d.findings.size(); ++i)
    if (auto c = claim_for(d.findings[i], i, g)) run.claims.push_back(std::move(*c));
  add_span_claims(d, g, start, end, run.claims);
  gc.account = account(run);
  return gc;
}

void add_findings(const diagnose::Diagnosis& d, JobCost& job) {
  std::map<std::size_t, FindingCost> by_index;
  std::map<std::size_t, bool> unknown_energy;
  for (const GpuCost& gc : job.gpus)
    for (const ClaimShare& c : gc.account.claims) {
      if (c.source >= d.findings.size()) continue;
      const findings::Finding& f = d.findings[c.source];
      FindingCost& fc = by_index[c.source];
      fc.index = c.source;
      fc.id = f.id;
      fc.severity = findings::to_string(f.severity);
      fc.gpus.push_back(gc.gpu);
      fc.window_start_s = f.window.start_s;
      fc.window_end_s = f.window.end_s;
      fc.stated += c.stated;
      fc.lost.time += c.got.time;
      fc.lost.energy += c.got.energy;
      if (!gc.account.energy) unknown_energy[c.source] = true;
    }
  for (auto& [i, fc] : by_index) {
    fc.energy_known = unknown_energy.count(i) == 0;
    job.findings.push_back(std::move(fc));
  }
}

// The energy of a profile's analysed steps from its device's counter (profile::DeviceEnergy, on
// CUPTI's clock), time measured from the first step's start; split over `parts` (useful, each idle
// cause, unexplained: apportion's) in proportion to their time: the profile does not place each
// part in time, and the counter is read every 100 ms, longer than most steps.
void profile_energy(const profile::Profile& p, const std::vector<std::int64_t>& parts, GpuCost& gc) {
  if (p.steps.empty()) return;
  if (p.energy.counter.empty()) {
    gc.energy.notes = p.energy.notes;
    if (gc.energy.notes.empty()) gc.energy.notes.emplace_back("no energy counter reading: the energy is not known");
    return;
  }
  const std::uint64_t origin = p.steps.front().start_ns;
  auto at = [origin](std::uint64_t ns) {
    return (static_cast<std::int64_t>(ns - origin) + (ns >= origin ? 500 : -500)) / 1000;
  };
  EnergyInput in{.start = 0, .end = at(p.steps.back().end_ns)};
  for (const auto& c : p.energy.counter) in.counter.push_back({at(c.cupti_ns), c.millijoules});
  std::vector<Span> stretches;
  for (const auto& s : p.steps) stretches.push_back({at(s.start_ns), at(s.end_ns)});
  gc.energy = energy_over(in, stretches);
  gc.energy.notes.insert(gc.energy.notes.begin(), p.energy.notes.begin(), p.energy.notes.end());
  const Micros first = in.counter.front().t, last = in.counter.back().t;
  if (first > 0 || last < in.end)
    gc.energy.notes.push_back(fmt::format(
        "the energy counter was read from {:.3f} s to {:.3f} s of the analysed steps (0 to {:.3f} s), not over all of "
        "them: the time outside is estimated at the mean power of the rest",
        seconds(first), seconds(last), seconds(in.end)));
  // The counter is read every 100 ms: over a span of few readings the energy is the readings'
  // pairs shared by time, and says little about the steps themselves.
  if (in.counter.size() >= 2 && in.end < 10 * ((last - first) / static_cast<Micros>(in.counter.size() - 1)))
    gc.energy.notes.push_back(fmt::format(
        "the analysed steps last {:.3f} s, under ten of the counter's readings ({} over {:.1f} s): their energy is "
        "the counter's difference shared by time, not measured step by step",
        seconds(in.end), in.counter.size(), seconds(last - first)));
  if (!gc.energy.total) return;
  std::vector<double> weights;
  for (std::int64_t t : parts) weights.push_back(static_cast<double>(t));
  const std::vector<std::int64_t> mj = apportion(*gc.energy.total, weights);
  gc.account.energy = gc.energy.total;
  gc.account.useful.energy = mj.front();
  gc.account.unexplained.energy = mj.back();
  for (std::size_t i = 0; i < gc.account.claims.size(); ++i) gc.account.claims[i].got.energy = mj[i + 1];
}

}  // namespace

void JobCost::add_run(JobCost other) {
  const int base = runs;
  for (GpuCost& g : other.gpus) {
    g.run += base;
    gpus.push_back(std::move(g));
  }
  for (FindingCost& f : other.findings) {
    f.run += base;
    findings.push_back(std::move(f));
  }
  work.add(other.work);
  for (auto& n : other.notes) notes.push_back(fmt::format("run {}: {}", base + 1, n));
  runs += other.runs;
}

RunSpan run_span(const telemetry::Trace& t) {
  std::optional<double> start, end;
  std::optional<std::int64_t> pid;
  auto pid_of = [](const telemetry::Event& e) -> std::optional<std::int64_t> {
    if (!e.fields.contains("pid") || !e.fields["pid"].is_number_integer()) return std::nullopt;
    return e.fields["pid"].get<std::int64_t>();
  };
  for (const auto& e : t.events) {
    if (e.kind == "process_start" && !start && pid_of(e)) {
      start = e.t;
      pid = pid_of(e);
    } else if (e.kind == "process_exit" && pid && !end && pid_of(e) == pid) {
      end = e.t;
    }
  }
  if (start && end && *end >= *start) return {*start, *end, "the command's start to its exit"};
  if (start) return {*start, std::max(*start, t.duration_s), "the command's start to the recording's end"};
  return {0, std::max(0.0, t.duration_s), "the whole recording"};
}

JobCost cost_of_trace(const telemetry::Trace& t, const diagnose::Diagnosis& d, const TraceCostOptions& o) {
  const RunSpan span = run_span(t);
  JobCost job;
  job.source = d.source;
  job.host = t.header.host;
  job.start_s = o.start_s.value_or(span.start_s);
  job.end_s = std::max(job.start_s, o.end_s.value_or(span.end_s));
  job.span = o.start_s || o.end_s ? "the run as given" : span.how;
  std::vector<int> gpus = o.gpus;
  if (gpus.empty())
    for (std::size_t g = 0; g < t.gpus.size(); ++g) gpus.push_back(static_cast<int>(g));
  for (int g : gpus) {
    if (g < 0 || static_cast<std::size_t>(g) >= t.gpus.size()) continue;
    job.gpus.push_back(gpu_cost(t, d, g, micros(job.start_s), micros(job.end_s), job.notes));
    for (const auto& n : job.gpus.back().energy.notes) job.notes.push_back(fmt::format("GPU {} energy: {}", g, n));
  }
  add_findings(d, job);
  telemetry::WorkCounter work;
  bool refused = false;
  for (const auto& e : t.events)
    if (e.kind == "step") {
      // "refused": values the recorder did not count when it gathered the job's lines (WorkLines)
      const bool noted = e.fields.contains("refused") && e.fields["refused"].is_number() && e.fields["refused"] > 0;
      refused = !work.add(e.fields).empty() || noted || refused;
    }
  if (refused) job.notes.push_back("a step event's step, samples or tokens was not a number >= 0: not counted");
  job.work = work.work();
  return job;
}

JobCost cost_of_profile(const profile::Profile& p, std::string_view host) {
  JobCost job;
  job.source = "profile";
  job.host = std::string(host);
  job.start_s = 0;
  job.end_s = static_cast<double>(p.span_ns) / 1e9;
  job.span = "the profile's analysed steps";
  GpuCost gc;
  gc.gpu = static_cast<int>(p.device);
  gc.busy_from = "CUPTI activity (kernels, copies, memsets)";
  std::vector<double> weights{static_cast<double>(p.busy_ns)};
  std::uint64_t accounted = p.busy_ns;
  for (std::uint64_t idle : p.idle_ns) {
    weights.push_back(static_cast<double>(idle));
    accounted += idle;
  }
  weights.push_back(static_cast<double>(p.span_ns > accounted ? p.span_ns - accounted : 0));
  const Micros span_us = static_cast<Micros>((p.span_ns + 500) / 1000);
  const std::vector<std::int64_t> parts = apportion(span_us, weights);
  gc.account.gpu = gc.gpu;
  gc.account.gpu_time = span_us;
  gc.account.useful.time = parts.front();
  gc.account.unexplained.time = parts.back();
  for (std::size_t i = 0; i < profile::kIdleCauseCount; ++i) {
    ClaimShare c{.source = kNoFinding, .cause = profile::to_string(static_cast<profile::IdleCause>(i))};
    c.stated = c.got.time = parts[i + 1];
    gc.account.claims.push_back(std::move(c));
  }
  profile_energy(p, parts, gc);
  for (const auto& n : gc.energy.notes) job.notes.push_back(fmt::format("energy: {}", n));
  job.gpus.push_back(std::move(gc));
  if (!p.steps.empty()) job.work.steps = static_cast<double>(p.steps.size());
  return job;
}

}  // namespace gpudoc::cost
