#include "profile/energy_sampler.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace gpudoc::profile {
namespace {

std::uint64_t nanoseconds_of(core::MonoTime t) {
  return static_cast<std::uint64_t>(std::max<std::int64_t>(0, t.time_since_epoch().count()));
}

}  // namespace

EnergySampler::EnergySampler(gpu::Backend& backend, core::Clock& clock, std::chrono::nanoseconds period)
    : backend_(backend),
      period_(std::max(core::Nanos(0), std::chrono::duration_cast<core::Nanos>(period))),
      clock_(clock) {
  auto count = backend_.device_count();
  if (!count) {
    notes_.push_back(
        fmt::format("the GPUs could not be counted ({}): the energy is not known", count.error().message()));
    return;
  }
  for (int g = 0; g < *count; ++g) {
    auto info = backend_.device_info(g);
    if (!info || info->pci_bus_id.empty()) {
      notes_.push_back(fmt::format("GPU {}: its PCI bus id could not be read: its energy counter is not read", g));
      continue;
    }
    gpus_.push_back({.index = g, .pci_bus_id = info->pci_bus_id});
  }
  if (*count == 0) notes_.emplace_back("NVML sees no GPU: the energy is not known");
}

void EnergySampler::poll() {
  if (last_ && clock_.now() - *last_ < period_) return;
  last_ = clock_.now();
  for (std::size_t tried = 0; tried < gpus_.size(); ++tried) {
    Gpu& g = gpus_[next_++ % gpus_.size()];
    if (!g.readable) continue;
    read(g);
    return;
  }
}

void EnergySampler::read_now() {
  last_ = clock_.now();
  for (Gpu& g : gpus_)
    if (g.readable) read(g);
}

void EnergySampler::read(Gpu& g) {
  const std::uint64_t before = nanoseconds_of(clock_.now());
  auto r = backend_.read(g.index, gpu::MetricGroup::kEnergy);
  const std::uint64_t after = nanoseconds_of(clock_.now());
  if (!r) {
    if (r.error().kind() == core::ErrorKind::kNotSupported) {
      g.readable = false;
      notes_.push_back(fmt::format("GPU {} ({}) has no energy counter NVML can read ({})", g.index, g.pci_bus_id,
                                   r.error().message()));
    } else if (!g.failed) {
      g.failed = true;
      notes_.push_back(fmt::format("GPU {} ({}): a read of its energy counter failed ({}); such reads are left out",
                                   g.index, g.pci_bus_id, r.error().message()));
    }
    return;
  }
  for (const auto& m : r->metrics)
    if (m.metric == gpu::Metric::kEnergyJoules && std::isfinite(m.value) && m.value >= 0)
      readings_.push_back({.monotonic_ns = before + (after - before) / 2,
                           .pci_bus_id = g.pci_bus_id,
                           .millijoules = std::llround(m.value * 1000)});
}

}  // namespace gpudoc::profile
