#include "profile/energy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <set>

namespace gpudoc::profile {
namespace {

std::int64_t offset_of(const ClockPair& p) {
  return static_cast<std::int64_t>(p.cupti_ns) - static_cast<std::int64_t>(p.monotonic_ns);
}

// "DOMAIN:BUS:DEVICE.FUNCTION" as four numbers; false for anything else.
bool parse_bus(std::string_view s, unsigned long long out[4]) {
  std::string text(s);
  std::size_t pos = 0;
  for (int i = 0; i < 4; ++i) {
    const char* begin = text.c_str() + pos;
    char* end = nullptr;
    out[i] = std::strtoull(begin, &end, 16);
    if (end == begin) return false;
    pos = static_cast<std::size_t>(end - text.c_str());
    const char want = i < 2 ? ':' : i == 2 ? '.' : '\0';
    if (want == '\0') return pos == text.size();
    if (pos >= text.size() || text[pos] != want) return false;
    ++pos;
  }
  return false;
}

}  // namespace

std::optional<std::uint64_t> to_cupti_ns(std::span<const ClockPair> pairs, std::uint64_t monotonic_ns) {
  if (pairs.empty()) return std::nullopt;
  const std::span<const ClockPair> sorted = pairs;
  auto after = std::lower_bound(sorted.begin(), sorted.end(), monotonic_ns,
                                [](const ClockPair& p, std::uint64_t t) { return p.monotonic_ns < t; });
  std::int64_t offset = 0;
  if (after == sorted.begin()) {
    offset = offset_of(sorted.front());
  } else if (after == sorted.end()) {
    offset = offset_of(sorted.back());
  } else {
    const ClockPair& a = *(after - 1);
    const ClockPair& b = *after;
    const double share = static_cast<double>(monotonic_ns - a.monotonic_ns) /
                         static_cast<double>(std::max<std::uint64_t>(1, b.monotonic_ns - a.monotonic_ns));
    offset = offset_of(a) + std::llround(static_cast<double>(offset_of(b) - offset_of(a)) * share);
  }
  const std::int64_t t = static_cast<std::int64_t>(monotonic_ns) + offset;
  return t < 0 ? 0 : static_cast<std::uint64_t>(t);
}

bool same_pci_bus(std::string_view a, std::string_view b) {
  unsigned long long x[4], y[4];
  if (!parse_bus(a, x) || !parse_bus(b, y)) return !a.empty() && a == b;
  return std::equal(x, x + 4, y);
}

std::vector<EnergyReading> readings_of_used_gpus(const RecordSet& set, const std::vector<EnergyReading>& readings) {
  std::set<std::uint32_t> devices;
  for (const auto& k : set.kernels) devices.insert(k.device);
  std::vector<std::string> buses;
  for (std::uint32_t d : devices) {
    auto it = std::find_if(set.device_buses.begin(), set.device_buses.end(),
                           [d](const DeviceBus& b) { return b.device == d; });
    if (it == set.device_buses.end()) return readings;
    buses.push_back(it->pci_bus_id);
  }
  std::vector<EnergyReading> kept;
  for (const auto& r : readings)
    if (std::any_of(buses.begin(), buses.end(), [&r](const std::string& b) { return same_pci_bus(b, r.pci_bus_id); }))
      kept.push_back(r);
  return kept;
}

DeviceEnergy device_energy(const RecordSet& set, std::uint32_t device) {
  DeviceEnergy out;
  if (set.energy.empty()) {
    out.notes = set.energy_notes;
    if (out.notes.empty())
      out.notes.push_back("the records hold no energy counter reading (J line): the energy is not known");
    return out;
  }
  std::set<std::string> gpus;
  for (const auto& r : set.energy) gpus.insert(r.pci_bus_id);
  for (const auto& d : set.device_buses)
    if (d.device == device) {
      for (const auto& g : gpus)
        if (same_pci_bus(g, d.pci_bus_id)) out.pci_bus_id = g;
      if (out.pci_bus_id.empty())
        out.notes.push_back(
            fmt::format("CUDA device {} is the GPU at {}, whose energy counter was not read: the "
                        "energy is not known",
                        device, d.pci_bus_id));
      if (out.pci_bus_id.empty()) out.notes.insert(out.notes.end(), set.energy_notes.begin(), set.energy_notes.end());
      break;
    }
  if (out.pci_bus_id.empty() && out.notes.empty()) {
    if (gpus.size() != 1) {
      out.notes.push_back(
          fmt::format("the records do not say which GPU CUDA device {} is (no P line), and {} GPUs' "
                      "energy counters were read: the energy is not known",
                      device, gpus.size()));
      return out;
    }
    out.pci_bus_id = *gpus.begin();
  }
  if (out.pci_bus_id.empty()) return out;
  if (set.clock_pairs.empty()) {
    out.notes.push_back(
        "the records hold no clock pair (T line) to place the energy readings on CUPTI's clock: the "
        "energy is not known");
    out.pci_bus_id.clear();
    return out;
  }
  std::vector<ClockPair> pairs = set.clock_pairs;
  std::stable_sort(pairs.begin(), pairs.end(),
                   [](const ClockPair& a, const ClockPair& b) { return a.monotonic_ns < b.monotonic_ns; });
  for (const auto& r : set.energy)
    if (r.pci_bus_id == out.pci_bus_id) out.counter.push_back({*to_cupti_ns(pairs, r.monotonic_ns), r.millijoules});
  std::stable_sort(out.counter.begin(), out.counter.end(),
                   [](const CounterPoint& a, const CounterPoint& b) { return a.cupti_ns < b.cupti_ns; });
  return out;
}

}  // namespace gpudoc::profile
