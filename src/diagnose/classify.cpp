// The classification rules: from the features of one GPU over one span to a label, and from the
// features of every GPU over one span to the roles of a pulse. docs/methodology.md ("Diagnosis").
#include "diagnose/classify.hpp"

#include <set>

namespace gpudoc::diagnose::detail {

const char* id_of(Label l) {
  switch (l) {
    case Label::kInsufficient: return "insufficient_data";
    case Label::kIdle: return "idle";
    case Label::kHealthy: return "healthy";
    case Label::kSawtooth:
    case Label::kSawtoothFast: return "sawtooth";
    case Label::kPlateauLaunch:
    case Label::kPlateauBusyIdle: return "plateau";
    case Label::kMemoryBound: return "memory_bound";
  }
  return "insufficient_data";
}

Label classify(const Features& f, const Signals& s) {
  const bool util_ok = f.util.n >= th::kMinSignalCells;
  if (!util_ok && !has_gpm(f)) return Label::kInsufficient;
  const double u = busy_level(f);
  const bool gpm = has_gpm(f);
  if (u < th::kIdleUtilPercent && (!gpm || f.sm.mean < th::kIdleUtilPercent)) return Label::kIdle;

  const Levels& wl = f.use_util ? f.util : f.sm;
  if (f.acf && wl.p95 - wl.p05 >= th::kSawtoothAmplitudePercent && wl.p05 <= th::kSawtoothTroughMaxPercent)
    return Label::kSawtooth;

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
    return Label::kHealthy;
  }
  // A steady middle level without a visible period.
  if (gpm) return f.sm.mean >= th::kBurstSmRatio * u ? Label::kSawtoothFast : Label::kPlateauLaunch;
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

PulseRoles pulse_roles(const std::vector<Activity>& fs) {
  PulseRoles r;
  const std::size_t n = fs.size();
  if (n < 2) return r;
  auto out = [&](std::size_t i) { return fs[i].label == Label::kInsufficient || fs[i].label == Label::kIdle; };
  std::vector<bool> waits(n, false);
  for (std::size_t i = 0; i < n; ++i) {
    const Activity& f = fs[i];
    if (out(i)) continue;
    if (has_gpm(f)) {
      waits[i] = f.label == Label::kPlateauBusyIdle;
    } else if (busy_level(f) >= th::kBusyUtilPercent && f.power_n > 0) {
      for (std::size_t j = 0; j < n; ++j)
        if (j != i && fs[j].power_n > 0 && busy_level(fs[j]) >= th::kBusyUtilPercent &&
            f.power_mean <= th::kWaitPowerRatio * fs[j].power_mean)
          waits[i] = true;
    }
  }
  std::set<int> strag;
  for (std::size_t i = 0; i < n; ++i) {
    if (!waits[i]) continue;
    for (std::size_t j = 0; j < n; ++j) {
      if (j == i || waits[j] || out(j)) continue;
      const bool more_sm =
          has_gpm(fs[i]) && has_gpm(fs[j]) && fs[j].sm_mean >= fs[i].sm_mean + th::kStragglerSmMarginPercent;
      const bool less_util = busy_level(fs[j]) <= busy_level(fs[i]) - th::kStragglerUtilMarginPercent;
      const bool more_power = !has_gpm(fs[i]) && fs[j].power_n > 0 && fs[i].power_n > 0 &&
                              fs[i].power_mean <= th::kWaitPowerRatio * fs[j].power_mean;
      if (more_sm || less_util || more_power) strag.insert(static_cast<int>(j));
    }
  }
  if (strag.empty()) return r;
  for (std::size_t i = 0; i < n; ++i)
    if (waits[i]) r.waiting.push_back(static_cast<int>(i));
  r.stragglers.assign(strag.begin(), strag.end());
  return r;
}

}  // namespace gpudoc::diagnose::detail
