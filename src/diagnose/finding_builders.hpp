// gpudoc::diagnose finding builders (internal to the diagnose library) — each pattern's Finding,
// built from the catalog (findings::make_finding) with its message, evidence, confidence, caveats
// and details. Window findings take the features of the span they cover; whole-span findings
// (staircase, memory growth, throttling) read the GPU's series themselves.
//
//   Finding f = detail::sawtooth_finding(gpu, features, /*fast=*/false, signals);
//   if (auto m = detail::memory_growth(gpu, trace.gpus[gpu], &device, t0, t1)) d.findings.push_back(*m);
//
// Pure functions; thread-safe; never throw.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "diagnose/classify.hpp"
#include "diagnose/signals.hpp"
#include "findings/finding.hpp"

namespace gpudoc::diagnose::detail {

// The severity of a finding that loses this share of the GPU's time (sawtooth, pulse,
// staircase): info below th::kWarningLostShare, critical from th::kCriticalLostShare.
[[nodiscard]] findings::Severity severity_for_lost(double lost_share);

// Sawtooth (input starvation): a visible period, or (fast) bursts faster than the sensor resolves.
[[nodiscard]] findings::Finding sawtooth_finding(int g, const Features& f, bool fast, const Signals& s);
// Sawtooth whose busy time is host<->device copies (GPM PCIe traffic): the GPU waits on them.
[[nodiscard]] findings::Finding copies_finding(int g, const Features& f, const Signals& s);
// Plateau: launch-bound (l == kPlateauLaunch) or busy but idle (kPlateauBusyIdle).
[[nodiscard]] findings::Finding plateau_finding(int g, const Features& f, Label l, const Signals& s);
[[nodiscard]] findings::Finding memory_bound_finding(int g, const Features& f);
// "idle" or "healthy" (info).
[[nodiscard]] findings::Finding simple_finding(const char* id, int g, const Features& f);
// g < 0: about the whole input, not one GPU.
[[nodiscard]] findings::Finding insufficient_finding(int g, double t0, double t1, const std::string& why);
// Busy, but nothing in the input shows whether the chip works or waits (no GPM, no power limit, no
// idle power floor): an insufficient_data finding that says what to log.
[[nodiscard]] findings::Finding busy_unproven_finding(int g, const Features& f);
// Busy 70-85 % with the chip at work: a sawtooth below the sensor's resolution at the severity of
// the unused share, which says it may as well be saturated (details.undecided_between healthy and
// sawtooth) and names the command that decides.
[[nodiscard]] findings::Finding mostly_busy_finding(int g, const Features& f, const Signals& s);
// gpus[i]: GPU i over the pulse's span.
[[nodiscard]] findings::Finding pulse_finding(const PulseRoles& r, const std::vector<Activity>& gpus);

// Whole-span findings over [t0, t1]; nullopt when the pattern is not there. dev may be null.
[[nodiscard]] std::optional<findings::Finding> staircase(int g, const telemetry::GpuTrace& gt, double t0, double t1);
[[nodiscard]] std::optional<findings::Finding> memory_growth(int g, const telemetry::GpuTrace& gt,
                                                             const gpu::DeviceInfo* dev, double t0, double t1);
[[nodiscard]] std::optional<findings::Finding> throttled(int g, const telemetry::GpuTrace& gt,
                                                         const gpu::DeviceInfo* dev, double t0, double t1);

}  // namespace gpudoc::diagnose::detail
