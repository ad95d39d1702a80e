// gpudoc::profile energy — the profiled device's NVML energy counter on CUPTI's clock: from the
// readings `gpudoc profile` took while the program ran (J lines, CLOCK_MONOTONIC), the injection
// library's clock pairs (T lines) and its devices' PCI bus ids (P lines); docs/profile.md, "Energy".
//
//   profile::DeviceEnergy e = profile::device_energy(set, profile.device);
//   for (const auto& c : e.counter) ...   // c.cupti_ns (CUPTI's clock), c.millijoules
//   e.notes                               // why there are none, or what is doubtful
//
// CUPTI stamps its records with its own clock (CLOCK_REALTIME on Linux unless the program registered
// another with cuptiActivityRegisterTimestampCallback); gpudoc profile stamps its readings with
// CLOCK_MONOTONIC, which the parent and the program share. A monotonic time is placed on CUPTI's
// clock by the offset (CUPTI less monotonic) of the clock pairs around it, linear between two pairs
// (a clock slewed by NTP drifts a few microseconds a second), the nearest pair's outside them.
//
// Pure: no I/O. Thread-safe (no state).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "profile/records.hpp"

namespace gpudoc::profile {

struct CounterPoint {
  std::uint64_t cupti_ns = 0;
  std::int64_t millijoules = 0;
};

struct DeviceEnergy {
  std::string pci_bus_id{};             // the GPU whose counter this is; empty: none
  std::vector<CounterPoint> counter{};  // sorted by time
  std::vector<std::string> notes{};
};

// `monotonic_ns` on CUPTI's clock by `pairs` (sorted by monotonic_ns); nullopt without a pair.
[[nodiscard]] std::optional<std::uint64_t> to_cupti_ns(std::span<const ClockPair> pairs, std::uint64_t monotonic_ns);

// Whether two PCI bus ids name one device: NVML writes "00000000:18:00.0", CUDA "0000:18:00.0"
// (domain, bus, device and function compared as hexadecimal numbers).
[[nodiscard]] bool same_pci_bus(std::string_view a, std::string_view b);

// The readings of `readings` from the GPUs `set`'s kernels ran on (their P lines name them); all of
// them when a kernel's device has no P line. What gpudoc profile keeps: a host's other GPUs would
// only fill the records file.
[[nodiscard]] std::vector<EnergyReading> readings_of_used_gpus(const RecordSet& set,
                                                               const std::vector<EnergyReading>& readings);

// The counter of CUDA device `device` of `set` (its P line names its GPU; without one, the only GPU
// read), placed on CUPTI's clock. No readings, no clock pair, or no way to tell the device's GPU:
// empty counter, and the notes say why.
[[nodiscard]] DeviceEnergy device_energy(const RecordSet& set, std::uint32_t device);

}  // namespace gpudoc::profile
