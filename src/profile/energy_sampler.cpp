#include "profile/energy_sampler.hpp"

#include <fmt/format.h>
#include <time.h>

#include <cmath>
#include <utility>

namespace gpudoc::profile {

std::uint64_t monotonic_now_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<std::uint64_t>(t.tv_sec) * 1'000'000'000ULL + static_cast<std::uint64_t>(t.tv_nsec);
}

EnergySampler::EnergySampler(gpu::Backend& backend, std::chrono::nanoseconds period, std::function<std::uint64_t()> now)
    : backend_(backend),
      period_ns_(static_cast<std::uint64_t>(std::max<std::int64_t>(0, period.count()))),
      now_(std::move(now)) {
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
  if (read_once_ && now_() - last_ns_ < period_ns_) return;
  read_now();
}

void EnergySampler::read_now() {
  read_once_ = true;
  last_ns_ = now_();
  for (Gpu& g : gpus_) {
    if (!g.readable) continue;
    const std::uint64_t before = now_();
    auto r = backend_.read(g.index, gpu::MetricGroup::kEnergy);
    const std::uint64_t after = now_();
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
      continue;
    }
    for (const auto& m : r->metrics)
      if (m.metric == gpu::Metric::kEnergyJoules && std::isfinite(m.value) && m.value >= 0)
        readings_.push_back({.monotonic_ns = before + (after - before) / 2,
                             .pci_bus_id = g.pci_bus_id,
                             .millijoules = std::llround(m.value * 1000)});
  }
}

}  // namespace gpudoc::profile
