// gpudoc::profile energy sampler — `gpudoc profile` reads the NVML total-energy counter of every GPU
// while the profiled program runs: once before it starts, every `period` while it runs, once after
// it exits; each reading stamped with CLOCK_MONOTONIC (the mean of one read before the call and one
// after: NVML's call takes about 4 ms of CPU). The records file keeps them (J lines,
// profile/record_format.hpp); profile/energy.hpp places them on CUPTI's clock.
//
//   auto backend = gpu::open_nvml_backend();
//   profile::EnergySampler sampler(**backend, std::chrono::milliseconds(100));
//   sampler.read_now();                 // before the program starts
//   while (running) sampler.poll();     // reads when the period has passed
//   sampler.read_now();                 // after it exits
//   set.energy = sampler.readings();  set.energy_notes = sampler.notes();
//
// A GPU whose counter NVML does not offer (kNotSupported) is read no more, and said; another
// failed read is left out (said once). Thread-safety: none (one thread polls).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gpu/backend.hpp"
#include "profile/records.hpp"

namespace gpudoc::profile {

// CLOCK_MONOTONIC, nanoseconds.
[[nodiscard]] std::uint64_t monotonic_now_ns();

class EnergySampler {
 public:
  // Takes every GPU of `backend` (its PCI bus id from device_info). `now` stamps the readings and
  // times the period (monotonic_now_ns by default; tests give their own). `backend` must outlive it.
  EnergySampler(gpu::Backend& backend, std::chrono::nanoseconds period,
                std::function<std::uint64_t()> now = monotonic_now_ns);
  void poll();      // reads every GPU when `period` has passed since the last read (the first poll reads)
  void read_now();  // reads every GPU now
  [[nodiscard]] const std::vector<EnergyReading>& readings() const { return readings_; }
  [[nodiscard]] const std::vector<std::string>& notes() const { return notes_; }

 private:
  struct Gpu {
    int index = 0;
    std::string pci_bus_id{};
    bool readable = true;
    bool failed = false;  // a read failed (said once)
  };
  gpu::Backend& backend_;
  std::uint64_t period_ns_ = 0;
  std::function<std::uint64_t()> now_;
  std::vector<Gpu> gpus_{};
  std::vector<EnergyReading> readings_{};
  std::vector<std::string> notes_{};
  std::uint64_t last_ns_ = 0;
  bool read_once_ = false;
};

}  // namespace gpudoc::profile
