// The closing split of one GPU's run (account.hpp): the run cut into cells on which the busy share,
// the power and the set of claims are constant, each cell's time held in two pools (busy, not
// busy) from which the claims take in their order, what is left being useful (busy) or
// unexplained (not busy, or not read). Whole microseconds throughout, so the parts add up exactly.
#include "cost/account.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace gpudoc::cost {
namespace {

__extension__ using Int128 = __int128;  // B * S / A exactly, for times up to kMaxSeconds

struct Cell {
  Micros from = 0;
  Micros to = 0;
  Micros not_busy = 0;  // what is left of the cell's not-busy time (all of it when not read)
  Micros busy = 0;      // what is left of its busy time
  bool read = false;    // a busy reading covers it
  double joules = 0;    // the energy weight: the power's integral over the cell
  [[nodiscard]] Micros length() const { return to - from; }
};

double piece_joules(const PowerPiece& p, Micros a, Micros b) {
  const double span = static_cast<double>(p.to - p.from);
  auto at = [&](Micros x) { return span > 0 ? p.w0 + (p.w1 - p.w0) * static_cast<double>(x - p.from) / span : p.w0; };
  const double w = (at(a) + at(b)) / 2;
  return std::isfinite(w) ? std::max(0.0, w) * seconds(b - a) : 0.0;
}

std::vector<Micros> cuts_of(const GpuRun& run, Micros start, Micros end, Micros until) {
  std::vector<Micros> cuts{start, end, until};
  auto add = [&](Micros x) {
    if (x > start && x < end) cuts.push_back(x);
  };
  for (const auto& b : run.busy) {
    add(b.from);
    add(b.to);
  }
  for (const auto& p : run.power) {
    add(p.from);
    add(p.to);
  }
  for (const auto& c : run.claims) {
    add(c.from);
    add(c.to);
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  return cuts;
}

// The energy weights: the power's integral where it was read; elsewhere before `until` the mean
// power of the read cells (the counter's energy covers that time too); nothing after `until`.
// Without any power reading, or with none above 0, each cell weighs its length.
void fill_energy_weights(std::vector<Cell>& cells, const std::vector<bool>& powered, Micros until) {
  double read_j = 0;
  Micros read_t = 0;
  for (std::size_t i = 0; i < cells.size(); ++i)
    if (powered[i] && cells[i].to <= until) {
      read_j += cells[i].joules;
      read_t += cells[i].length();
    }
  const bool by_time = read_t == 0 || read_j <= 0;
  const double mean_w = by_time ? 0.0 : read_j / seconds(read_t);
  for (std::size_t i = 0; i < cells.size(); ++i) {
    Cell& c = cells[i];
    if (c.to > until)
      c.joules = 0;
    else if (by_time)
      c.joules = seconds(c.length());
    else if (!powered[i])
      c.joules = mean_w * seconds(c.length());
  }
}

std::vector<Cell> make_cells(const GpuRun& run, Micros start, Micros end, Micros until) {
  const std::vector<Micros> cuts = cuts_of(run, start, end, until);
  std::vector<BusyStep> busy = run.busy;
  std::stable_sort(busy.begin(), busy.end(), [](const auto& a, const auto& b) { return a.from < b.from; });
  std::vector<PowerPiece> power = run.power;
  std::stable_sort(power.begin(), power.end(), [](const auto& a, const auto& b) { return a.from < b.from; });
  std::vector<Cell> cells;
  std::vector<bool> powered;
  cells.reserve(cuts.size());
  std::size_t bi = 0, pi = 0;
  for (std::size_t k = 0; k + 1 < cuts.size(); ++k) {
    Cell c{.from = cuts[k], .to = cuts[k + 1]};
    while (bi < busy.size() && busy[bi].to <= c.from) ++bi;
    if (bi < busy.size() && busy[bi].from <= c.from && busy[bi].to >= c.to) {
      const double share = std::isfinite(busy[bi].share) ? std::clamp(busy[bi].share, 0.0, 1.0) : 0.0;
      c.read = true;
      c.busy = std::clamp<Micros>(std::llround(share * static_cast<double>(c.length())), 0, c.length());
    }
    c.not_busy = c.length() - c.busy;
    while (pi < power.size() && power[pi].to <= c.from) ++pi;
    const bool has_power = pi < power.size() && power[pi].from <= c.from && power[pi].to >= c.to;
    if (has_power) c.joules = piece_joules(power[pi], c.from, c.to);
    cells.push_back(c);
    powered.push_back(has_power);
  }
  fill_energy_weights(cells, powered, until);
  return cells;
}

// Takes `budget` (clamped to what the pool holds) from the cells' pool, in proportion to what each
// holds (cumulative rounding: whole microseconds, the total exact, no cell below 0). Adds the time
// taken to `taken` and returns its energy weight.
double take(std::span<Cell> cells, Micros Cell::*pool, Micros budget, Micros& taken) {
  Micros held = 0;
  for (const Cell& c : cells) held += c.*pool;
  budget = std::min(budget, held);
  if (budget <= 0) return 0;
  Micros cumulative = 0, before = 0;
  double weight = 0;
  for (Cell& c : cells) {
    cumulative += c.*pool;
    const auto upto = static_cast<Micros>(static_cast<Int128>(budget) * cumulative / held);
    const Micros q = upto - before;
    before = upto;
    c.*pool -= q;
    if (c.length() > 0) weight += c.joules * static_cast<double>(q) / static_cast<double>(c.length());
  }
  taken += budget;
  return weight;
}

// The order claims are taken in: rank, then the larger share of its window, then as given.
std::vector<std::size_t> claim_order(const std::vector<Claim>& claims) {
  std::vector<std::size_t> order(claims.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  auto density = [&](const Claim& c) {
    if (c.not_busy_only) return 1.0;
    const Micros w = c.to - c.from;
    return w > 0 ? std::clamp(static_cast<double>(c.lost) / static_cast<double>(w), 0.0, 1.0) : 0.0;
  };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (claims[a].rank != claims[b].rank) return claims[a].rank < claims[b].rank;
    return density(claims[a]) > density(claims[b]);
  });
  return order;
}

}  // namespace

Micros micros(double s) {
  if (!std::isfinite(s)) return s > 0 ? micros(kMaxSeconds) : (s < 0 ? micros(-kMaxSeconds) : 0);
  return std::llround(std::clamp(s, -kMaxSeconds, kMaxSeconds) * kMicrosPerSecond);
}

std::vector<std::int64_t> apportion(std::int64_t total, std::span<const double> weights) {
  std::vector<std::int64_t> out(weights.size(), 0);
  if (weights.empty()) return out;
  total = std::max<std::int64_t>(0, total);
  auto weight = [&](std::size_t i) { return std::isfinite(weights[i]) && weights[i] > 0 ? weights[i] : 0.0; };
  double sum = 0;
  for (std::size_t i = 0; i < weights.size(); ++i) sum += weight(i);
  const bool equal = !(sum > 0) || !std::isfinite(sum);
  if (equal) sum = static_cast<double>(weights.size());
  double cumulative = 0;
  std::int64_t before = 0;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    cumulative += equal ? 1.0 : weight(i);
    std::int64_t upto =
        i + 1 == weights.size()
            ? total
            : static_cast<std::int64_t>(std::floor(static_cast<double>(total) * (cumulative / sum) + 0.5));
    upto = std::clamp(upto, before, total);
    out[i] = upto - before;
    before = upto;
  }
  return out;
}

PowerIntegral integrate(std::span<const PowerPiece> power, Micros from, Micros to) {
  PowerIntegral out;
  if (to <= from) return out;
  auto it = std::upper_bound(power.begin(), power.end(), from, [](Micros x, const PowerPiece& p) { return x < p.to; });
  for (; it != power.end() && it->from < to; ++it) {
    const Micros a = std::max(from, it->from), b = std::min(to, it->to);
    if (b <= a) continue;
    out.joules += piece_joules(*it, a, b);
    out.known += b - a;
  }
  return out;
}

GpuAccount account(const GpuRun& run) {
  GpuAccount out;
  out.gpu = run.gpu;
  const Micros start = run.start, end = std::max(run.end, run.start);
  const Micros until = std::clamp(run.energy_until.value_or(end), start, end);
  out.gpu_time = end - start;
  if (run.energy) out.energy = std::max<Millijoules>(0, *run.energy);
  std::vector<Cell> cells = make_cells(run, start, end, until);
  std::vector<double> weights(run.claims.size() + 2, 0.0);  // useful, each claim, unexplained
  out.claims.resize(run.claims.size());
  for (std::size_t i : claim_order(run.claims)) {
    const Claim& c = run.claims[i];
    ClaimShare& share = out.claims[i];
    share.source = c.source;
    share.cause = c.cause;
    const Micros from = std::max(c.from, start), to = std::min(c.to, end);
    if (to <= from) continue;
    auto first = std::lower_bound(cells.begin(), cells.end(), from, [](const Cell& x, Micros t) { return x.from < t; });
    auto last = std::lower_bound(first, cells.end(), to, [](const Cell& x, Micros t) { return x.from < t; });
    std::span<Cell> window(first, last);
    share.stated = c.not_busy_only ? to - from : std::clamp<Micros>(c.lost, 0, to - from);
    Micros taken = 0;
    if (c.not_busy_only) {
      weights[i + 1] += take(window, &Cell::not_busy, to - from, taken);
    } else {
      weights[i + 1] += take(window, &Cell::not_busy, share.stated, taken);
      weights[i + 1] += take(window, &Cell::busy, share.stated - taken, taken);
    }
    share.got.time = taken;
  }
  for (const Cell& c : cells) {
    const double per_us = c.length() > 0 ? c.joules / static_cast<double>(c.length()) : 0.0;
    out.useful.time += c.busy;
    out.unexplained.time += c.not_busy;
    if (!c.read) out.unknown += c.not_busy;
    weights.front() += per_us * static_cast<double>(c.busy);
    weights.back() += per_us * static_cast<double>(c.not_busy);
  }
  if (out.energy) {
    const std::vector<std::int64_t> parts = apportion(*out.energy, weights);
    out.useful.energy = parts.front();
    out.unexplained.energy = parts.back();
    for (std::size_t i = 0; i < out.claims.size(); ++i) out.claims[i].got.energy = parts[i + 1];
  }
  return out;
}

}  // namespace gpudoc::cost
