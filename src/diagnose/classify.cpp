// The classification rules: from the features of one GPU over one span to a label, and from the
// features of every GPU over one span to the roles of a pulse. docs/methodology.md ("Diagnosis").
#include "diagnose/classify.hpp"

#include <algorithm>
#include <cmath>

namespace gpudoc::diagnose::detail {

const char* id_of(Label l) {
  switch (l) {
    case Label::kInsufficient: return "insufficient_data";
    case Label::kIdle: return "idle";
    case Label::kHealthy: return "healthy";
    case Label::kSawtooth:
    case Label::kSawtoothFast:
    case Label::kSawtoothCopies:
    case Label::kMostlyBusy: return "sawtooth";
    case Label::kPlateauLaunch:
    case Label::kPlateauBusyIdle: return "plateau";
    case Label::kMemoryBound: return "memory_bound";
    case Label::kBusyUnproven: return "insufficient_data";
  }
  return "insufficient_data";
}

namespace {

// The board draws most of its power limit: it delivers what its power allows.
bool power_bound(const Features& f, const Signals& s) {
  if (f.power_cap.n > 0 && f.power_cap.mean >= th::kPowerCapBoundShare) return true;
  return s.power_limit_w > 0 && f.power.n > 0 && f.power.mean >= th::kPowerBoundRatio * s.power_limit_w;
}

// The chip does real work in what runs: SM activity a good share of util (GPM), else power well
// above the idle floor.
bool chip_at_work(const Features& f, const Signals& s, double u) {
  if (has_gpm(f)) return f.sm.mean >= th::kBusyIdleSmRatio * u;
  return f.power.n > 0 && s.has_power_floor && f.power.mean >= th::kWorkPowerFactor * s.power_floor_w;
}

}  // namespace

Saturation saturation_without_gpm(const Features& f, const Signals& s) {
  if (f.power.n == 0) return Saturation::kUnknown;
  if (power_bound(f, s)) return Saturation::kWorks;
  if (s.power_limit_w > 0)
    return f.power.mean >= th::kWaitPowerLimitRatio * s.power_limit_w ? Saturation::kWorks : Saturation::kWaits;
  if (!s.power_floor_idle) return Saturation::kUnknown;
  return f.power.mean >= th::kSaturatedFloorFactor * s.power_floor_w ? Saturation::kWorks : Saturation::kWaits;
}

Label classify(const Features& f, const Signals& s) {
  const bool util_ok = f.util.n >= th::kMinSignalCells;
  if (!util_ok && !has_gpm(f)) return Label::kInsufficient;
  const double u = busy_level(f);
  const bool gpm = has_gpm(f);
  if (u < th::kIdleUtilPercent && (!gpm || f.sm.mean < th::kIdleUtilPercent)) return Label::kIdle;

  const Levels& wl = f.use_util ? f.util : f.sm;
  if (f.acf && wl.p95 - wl.p05 >= th::kSawtoothAmplitudePercent && wl.p05 <= th::kSawtoothTroughMaxPercent) {
    // Peaks that never saturate with a period the sensor resolves: bursts that do not fill the GPU
    // (small batches), read from the curve. With a period near the sample period: bursts shorter
    // than the sensor's sample, averaged down.
    const bool resolved = f.period_s >= th::kResolvedPeriodSamples * s.util_period_s;
    return wl.p95 < th::kSaturatedPercent && !resolved ? Label::kSawtoothFast : Label::kSawtooth;
  }

  if (u >= th::kBusyUtilPercent) {
    if (gpm && f.tensor.n > 0 && f.dram.n > 0) {
      if (f.dram.mean >= th::kMemoryBoundDramPercent && f.tensor.mean < th::kMemoryBoundTensorMaxPercent)
        return Label::kMemoryBound;
      if (f.sm.mean < th::kBusyIdleSmRatio * u && f.dram.mean < th::kBusyIdleDramPercent)
        return Label::kPlateauBusyIdle;
      return Label::kHealthy;
    }
    if (gpm && f.sm.mean < th::kBusyIdleSmRatio * u) return Label::kPlateauBusyIdle;
    if (f.mutil.n >= th::kMinSignalCells && f.mutil.mean >= th::kMemoryBoundMemUtilPercent) return Label::kMemoryBound;
    if (gpm) return Label::kHealthy;
    // Utilization alone counts a kernel that spins in a wait as busy: power tells them apart.
    switch (saturation_without_gpm(f, s)) {
      case Saturation::kWorks: return Label::kHealthy;
      case Saturation::kWaits: return Label::kPlateauBusyIdle;
      case Saturation::kUnknown: return Label::kBusyUnproven;
    }
  }
  // A steady middle level without a visible period. At the power limit with the chip at work:
  // power-bound, healthy.
  if (u >= th::kPowerBoundMinUtilPercent && power_bound(f, s) && (!gpm || f.sm.mean >= th::kBusyIdleSmRatio * u))
    return Label::kHealthy;
  // Busy most of the time with the chip at work: saturated (work the utilization counts short,
  // a decode engine) or losing the rest in gaps shorter than the sensor (launches, a sync each
  // step). The same telemetry has meant both on real jobs: never called healthy, said undecided.
  if (u >= 100 * (1 - th::kWarningLostShare) && chip_at_work(f, s, u)) return Label::kMostlyBusy;
  if (gpm) {
    // The host's copies, not its launches: PCIe moves far more per unit of busy time than any
    // loop that only computes.
    if (f.has_pcie && u > 0 && f.pcie_bytes_per_s / (u / 100) >= th::kCopyBoundPcieBytesPerBusyS)
      return Label::kSawtoothCopies;
    return f.sm.mean >= th::kBurstSmRatio * u ? Label::kSawtoothFast : Label::kPlateauLaunch;
  }
  if (u < th::kNoGpmStarvedUtilPercent) return Label::kSawtoothFast;
  if (f.power.n > 0 && s.has_power_floor)
    return f.power.mean >= th::kWorkPowerFactor * s.power_floor_w ? Label::kSawtoothFast : Label::kPlateauLaunch;
  return Label::kSawtoothFast;  // undecidable without GPM or power: never call it steady (low confidence)
}

Activity activity_of(const Features& f, Label l) {
  Activity a;
  a.label = l;
  a.t0 = f.t0;
  a.t1 = f.t1;
  a.util_n = f.util.n;
  a.sm_n = f.sm.n;
  a.power_n = f.power.n;
  a.util_mean = f.util.mean;
  a.sm_mean = f.sm.mean;
  a.power_mean = f.power.mean;
  a.has_nvlink = f.has_nvlink;
  a.nvlink_tx_mean = f.nvlink_tx_mean;
  return a;
}

double busy_level(const Activity& a) { return a.util_n >= th::kMinSignalCells ? a.util_mean : a.sm_mean; }

bool has_gpm(const Activity& a) { return a.sm_n >= th::kMinSignalCells; }

std::size_t cells_per_bin() {
  return static_cast<std::size_t>(std::max(1.0, std::round(th::kPulseBinS / th::kGridStepS)));
}

std::vector<Bin> bins_of(const Signals& s) {
  const std::size_t per = cells_per_bin();
  // Sums per bin, kept sparse: (k, sum, cells) per signal, merged below.
  struct Acc {
    std::size_t k;
    double sum;
    std::size_t n;
  };
  auto sums = [&](const StepGrid& g) {
    std::vector<Acc> out;
    for (const auto& st : g.steps) {
      std::size_t c = st.first;
      const std::size_t end = std::size_t{st.first} + st.count;
      while (c < end) {
        const std::size_t k = c / per;
        const std::size_t upto = std::min(end, (k + 1) * per);
        if (out.empty() || out.back().k != k) out.push_back({k, 0.0, 0});
        out.back().sum += st.v * static_cast<double>(upto - c);
        out.back().n += upto - c;
        c = upto;
      }
    }
    return out;
  };
  const std::vector<Acc> u = sums(s.util), m = sums(s.sm), p = sums(s.power);
  std::vector<Bin> out;
  std::size_t i = 0, j = 0, l = 0;
  constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  while (i < u.size() || j < m.size() || l < p.size()) {
    const std::size_t k =
        std::min({i < u.size() ? u[i].k : kNone, j < m.size() ? m[j].k : kNone, l < p.size() ? p[l].k : kNone});
    Bin b;
    b.k = k;
    if (i < u.size() && u[i].k == k) {
      b.util = u[i].sum / static_cast<double>(u[i].n);
      ++i;
    }
    if (j < m.size() && m[j].k == k) {
      b.sm = m[j].sum / static_cast<double>(m[j].n);
      ++j;
    }
    if (l < p.size() && p[l].k == k) {
      b.power = p[l].sum / static_cast<double>(p[l].n);
      ++l;
    }
    out.push_back(b);
  }
  return out;
}

namespace {

bool waits_in(const Bin& b, double limit_w) {
  if (!(b.util >= th::kWaitUtilPercent)) return false;
  if (std::isfinite(b.sm)) return b.sm < th::kBusyIdleSmRatio * b.util;
  return std::isfinite(b.power) && limit_w > 0 && b.power <= th::kWaitPowerLimitRatio * limit_w;
}

// Peer j, in the bin where GPU i waits: far less busy (its host is late), or working far more.
bool straggles_in(const Bin& j, const Bin& i) {
  if (!std::isfinite(j.util)) return false;
  if (j.util <= i.util - th::kStragglerUtilMarginPercent) return true;
  if (std::isfinite(j.sm) && std::isfinite(i.sm)) return j.sm >= i.sm + th::kStragglerSmMarginPercent;
  return !std::isfinite(i.sm) && std::isfinite(j.power) && std::isfinite(i.power) &&
         i.power <= th::kWaitPowerRatio * j.power;
}

}  // namespace

PulseRoles pulse_roles(const std::vector<std::span<const Bin>>& sparse, const std::vector<double>& limits) {
  PulseRoles r;
  const std::size_t n = sparse.size();
  if (n < 2) return r;
  // Align the GPUs' bins: one row per bin that any GPU has data in (memory follows the data).
  std::vector<std::size_t> ks;
  for (const auto& g : sparse)
    for (const Bin& b : g) ks.push_back(b.k);
  std::sort(ks.begin(), ks.end());
  ks.erase(std::unique(ks.begin(), ks.end()), ks.end());
  const std::size_t len = ks.size();
  std::vector<std::vector<Bin>> gpus(n, std::vector<Bin>(len));
  for (std::size_t g = 0; g < n; ++g)
    for (const Bin& b : sparse[g])
      gpus[g][static_cast<std::size_t>(std::lower_bound(ks.begin(), ks.end(), b.k) - ks.begin())] = b;
  auto limit = [&](std::size_t i) { return i < limits.size() ? limits[i] : 0.0; };
  std::vector<std::vector<bool>> waits(n, std::vector<bool>(len, false));
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t b = 0; b < len; ++b) {
      waits[i][b] = waits_in(gpus[i][b], limit(i));
      // Without GPM or a known limit: a fraction of a busy peer's power at the same time.
      const Bin& x = gpus[i][b];
      if (waits[i][b] || std::isfinite(x.sm) || !(x.util >= th::kWaitUtilPercent) || !std::isfinite(x.power)) continue;
      for (std::size_t j = 0; j < n && !waits[i][b]; ++j)
        waits[i][b] = j != i && gpus[j][b].util >= th::kWaitUtilPercent && std::isfinite(gpus[j][b].power) &&
                      x.power <= th::kWaitPowerRatio * gpus[j][b].power;
    }
  std::vector<bool> is_waiting(n, false), is_straggler(n, false);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      if (i == j) continue;
      std::size_t hits = 0, shared = 0;
      for (std::size_t b = 0; b < len; ++b) {
        if (!std::isfinite(gpus[i][b].util) || !std::isfinite(gpus[j][b].util)) continue;
        ++shared;
        if (waits[i][b] && !waits[j][b] && straggles_in(gpus[j][b], gpus[i][b])) ++hits;
      }
      if (hits >= th::kPulseMinBins && static_cast<double>(hits) >= th::kPulseMinShare * static_cast<double>(shared)) {
        is_waiting[i] = true;
        is_straggler[j] = true;
      }
    }
  for (std::size_t j = 0; j < n; ++j)
    if (is_straggler[j] && !is_waiting[j]) r.stragglers.push_back(static_cast<int>(j));
  if (r.stragglers.empty()) return r;
  for (std::size_t i = 0; i < n; ++i) {
    if (!is_waiting[i]) continue;
    std::size_t with_data = 0, waiting = 0;
    for (std::size_t b = 0; b < len; ++b) {
      if (!std::isfinite(gpus[i][b].util)) continue;
      ++with_data;
      if (!waits[i][b]) continue;
      for (int j : r.stragglers)
        if (!waits[static_cast<std::size_t>(j)][b] && straggles_in(gpus[static_cast<std::size_t>(j)][b], gpus[i][b])) {
          ++waiting;
          break;
        }
    }
    r.waiting.push_back(static_cast<int>(i));
    r.waiting_share.push_back(share_of(static_cast<double>(waiting), static_cast<double>(with_data)));
  }
  return r;
}

}  // namespace gpudoc::diagnose::detail
