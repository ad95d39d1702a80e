#include "cost/energy.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include <fmt/format.h>

namespace gpudoc::cost {
namespace {

// The energy of the counter pairs inside [start, until): each pair (values not going back) in
// proportion to the power drawn inside the run, or by time where the power is not known over it.
// A pair whose value went back (the driver reloaded) is left to the power readings; its index goes
// to `went_back`.
double counter_energy(const EnergyInput& in, Micros start, Micros until, std::vector<Span>& covered, EnergyTotal& out,
                      std::vector<std::size_t>& went_back) {
  double mj = 0;
  for (std::size_t k = 0; k + 1 < in.counter.size(); ++k) {
    const CounterReading& a = in.counter[k];
    const CounterReading& b = in.counter[k + 1];
    if (b.t <= a.t) continue;
    if (b.value < a.value) {
      if (std::min(b.t, until) > std::max(a.t, start)) went_back.push_back(k);
      continue;
    }
    const Micros lo = std::max(a.t, start), hi = std::min(b.t, until);
    if (hi <= lo) continue;
    double share = 1;
    if (lo != a.t || hi != b.t) {
      const PowerIntegral pair = integrate(in.power, a.t, b.t);
      share = pair.known == b.t - a.t && pair.joules > 0
                  ? integrate(in.power, lo, hi).joules / pair.joules
                  : static_cast<double>(hi - lo) / static_cast<double>(b.t - a.t);
    }
    mj += static_cast<double>(b.value - a.value) * std::clamp(share, 0.0, 1.0);
    covered.push_back({lo, hi});
    out.by_counter += hi - lo;
  }
  return mj;
}

std::vector<Span> gaps_between(std::vector<Span> covered, Micros start, Micros until) {
  std::sort(covered.begin(), covered.end(), [](const Span& a, const Span& b) { return a.from < b.from; });
  std::vector<Span> gaps;
  Micros at = start;
  for (const Span& c : covered) {
    if (c.from > at) gaps.push_back({at, c.from});
    at = std::max(at, c.to);
  }
  if (until > at) gaps.push_back({at, until});
  return gaps;
}

// Estimated time worth naming: a second, or a hundredth of the run (the last reading before a
// command's exit leaves a few tens of milliseconds that are estimated in every run).
bool worth_saying(Micros estimated, Micros run) { return estimated >= std::max(micros(1.0), run / 100); }

std::string method_of(const EnergyTotal& e, Micros run) {
  std::string m = e.by_counter > 0 ? (e.by_power > 0 ? "counter+power" : "counter") : "power";
  if (worth_saying(e.estimated, run)) m += "+estimate";
  return m;
}

// The energy over `stretches` (sorted, not overlapping, inside the run): the counter pairs, the
// power readings where they are not, the mean power of those where neither is.
EnergyTotal stretches_energy(const EnergyInput& in, std::span<const Span> stretches, EnergyTotal out) {
  double counter_mj = 0, power_mj = 0;
  Micros unknown = 0, length = 0;
  std::vector<std::size_t> went_back;
  for (const Span& s : stretches) {
    if (s.to <= s.from) continue;
    length += s.to - s.from;
    std::vector<Span> covered;
    counter_mj += counter_energy(in, s.from, s.to, covered, out, went_back);
    for (const Span& g : gaps_between(std::move(covered), s.from, s.to)) {
      const PowerIntegral p = integrate(in.power, g.from, g.to);
      power_mj += p.joules * 1000;
      out.by_power += p.known;
      unknown += (g.to - g.from) - p.known;
    }
  }
  std::sort(went_back.begin(), went_back.end());
  went_back.erase(std::unique(went_back.begin(), went_back.end()), went_back.end());
  for (std::size_t k : went_back)
    out.notes.push_back(fmt::format(
        "the energy counter went back at {:.1f} s (from {} to {} mJ: the driver reloaded and it restarted); that "
        "stretch comes from the power readings",
        seconds(in.counter[k + 1].t), in.counter[k].value, in.counter[k + 1].value));
  if (in.counter.size() < 2 && length > 0)
    out.notes.push_back(in.counter.empty()
                            ? "no energy counter readings: the energy is the integral of the power readings"
                            : "the energy counter was read once: the energy is the integral of the "
                              "power readings");
  double estimate_mj = 0;
  const Micros known = out.by_counter + out.by_power;
  if (unknown > 0) {
    if (known == 0) {
      out.notes.push_back("no energy counter or power reading in the run: its energy is not known");
      return out;
    }
    estimate_mj = (counter_mj + power_mj) / static_cast<double>(known) * static_cast<double>(unknown);
    out.estimated = unknown;
    if (worth_saying(unknown, length))
      out.notes.push_back(fmt::format(
          "{:.1f} s of the run had neither a counter nor a power reading: estimated at the mean power of the rest",
          seconds(unknown)));
  }
  out.counter_part = std::llround(counter_mj);
  out.total = std::llround(counter_mj + power_mj + estimate_mj);
  out.method = length > 0 ? method_of(out, length) : "none";
  return out;
}

}  // namespace

EnergyTotal run_energy(const EnergyInput& in) {
  EnergyTotal out;
  const Micros start = in.start, end = std::max(in.end, in.start);
  const Micros until = in.lost_at ? std::clamp(*in.lost_at, start, end) : end;
  out.until = until;
  if (until < end)
    out.notes.push_back(fmt::format(
        "it stopped answering at {:.1f} s: its energy over the last {:.1f} s of the run is not measured (its GPU time "
        "is: it was paid for)",
        seconds(until), seconds(end - until)));
  const PowerIntegral whole = integrate(in.power, start, until);
  out.power_joules = whole.joules;
  out.power_known = whole.known;
  const Span run{start, until};
  return stretches_energy(in, std::span<const Span>(&run, 1), std::move(out));
}

EnergyTotal energy_over(const EnergyInput& in, std::span<const Span> stretches) {
  std::vector<Span> clipped;
  for (const Span& s : stretches) {
    const Span c{std::max(s.from, in.start), std::min(s.to, std::max(in.end, in.start))};
    if (c.to > c.from) clipped.push_back(c);
  }
  std::sort(clipped.begin(), clipped.end(), [](const Span& a, const Span& b) { return a.from < b.from; });
  std::vector<Span> sorted;  // sorted and merged where they overlap or touch
  for (const Span& c : clipped) {
    if (!sorted.empty() && c.from <= sorted.back().to)
      sorted.back().to = std::max(sorted.back().to, c.to);
    else
      sorted.push_back(c);
  }
  EnergyTotal out;
  out.until = std::max(in.end, in.start);
  for (const Span& s : sorted) {
    const PowerIntegral p = integrate(in.power, s.from, s.to);
    out.power_joules += p.joules;
    out.power_known += p.known;
  }
  return stretches_energy(in, sorted, std::move(out));
}

std::vector<PowerPiece> power_curve(std::span<const double> t_s, std::span<const double> watts, const CurveOptions& o) {
  std::vector<std::pair<Micros, double>> pts;
  for (std::size_t i = 0; i < t_s.size() && i < watts.size(); ++i)
    if (std::isfinite(t_s[i]) && std::isfinite(watts[i]) && watts[i] >= 0)
      pts.emplace_back(micros(t_s[i] - o.shift_s), watts[i]);
  const Micros gap = micros(std::max(0.0, o.max_gap_s));
  const Micros hold = micros(std::max(0.0, o.edge_hold_s));
  std::vector<PowerPiece> out;
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const auto [t, w] = pts[i];
    const bool left = i > 0 && t - pts[i - 1].first <= gap;
    const bool right = i + 1 < pts.size() && pts[i + 1].first - t <= gap;
    // A hold never reaches past half the way to the next reading (pieces must not overlap).
    const Micros before = i > 0 ? std::min(hold, (t - pts[i - 1].first) / 2) : hold;
    const Micros after = i + 1 < pts.size() ? std::min(hold, (pts[i + 1].first - t) / 2) : hold;
    if (!left && before > 0) out.push_back({t - before, t, w, w});
    if (right) {
      if (pts[i + 1].first > t) out.push_back({t, pts[i + 1].first, w, pts[i + 1].second});
    } else if (after > 0) {
      out.push_back({t, t + after, w, w});
    }
  }
  return out;
}

std::vector<BusyStep> busy_steps(std::span<const double> t_s, std::span<const double> percent, double max_gap_s) {
  const std::size_t n = std::min(t_s.size(), percent.size());
  std::vector<double> spacing;
  for (std::size_t k = 1; k < n; ++k)
    if (t_s[k] > t_s[k - 1]) spacing.push_back(t_s[k] - t_s[k - 1]);
  double median = max_gap_s;
  if (!spacing.empty()) {
    std::nth_element(spacing.begin(), spacing.begin() + static_cast<std::ptrdiff_t>(spacing.size() / 2), spacing.end());
    median = spacing[spacing.size() / 2];
  }
  std::vector<BusyStep> out;
  for (std::size_t k = 0; k < n; ++k) {
    if (!std::isfinite(t_s[k]) || !std::isfinite(percent[k])) continue;
    const double p = std::min(k > 0 ? t_s[k] - t_s[k - 1] : median, max_gap_s);
    if (!(p > 0)) continue;
    const Micros to = micros(t_s[k]);
    const Micros from = std::max(micros(t_s[k] - p), out.empty() ? to - micros(p) : out.back().to);
    if (to > from) out.push_back({from, to, std::clamp(percent[k] / 100.0, 0.0, 1.0)});
  }
  return out;
}

}  // namespace gpudoc::cost
