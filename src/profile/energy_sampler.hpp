// gpudoc::profile energy sampler — `gpudoc profile` reads the NVML total-energy counter of the GPUs
// while the profiled program runs: every GPU once before it starts and once after it exits, and
// while it runs one GPU each `period`, in turn. A read costs milliseconds of CPU
// (docs/results/cost.md, "Reading the energy counter"): taking the GPUs in turn keeps that cost the
// same however many GPUs the host has, and every GPU is read because which one the program used is
// known only from its records, after it exits (launch.cpp keeps that GPU's readings). Each reading
// is stamped on the clock's monotonic time (SystemClock: CLOCK_MONOTONIC, the clock the injection
// library pairs with CUPTI's) at the middle of the call. The records file keeps them (J lines,
// profile/record_format.hpp); profile/energy.hpp places them on CUPTI's clock.
//
//   auto backend = gpu::open_nvml_backend();
//   core::SystemClock clock;
//   profile::EnergySampler sampler(**backend, clock, std::chrono::milliseconds(100));
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
#include <optional>
#include <string>
#include <vector>

#include "core/clock.hpp"
#include "gpu/backend.hpp"
#include "profile/records.hpp"

namespace gpudoc::profile {

class EnergySampler {
 public:
  // Takes every GPU of `backend` (its PCI bus id from device_info). `clock` stamps the readings and
  // times the period. `backend` and `clock` must outlive it.
  EnergySampler(gpu::Backend& backend, core::Clock& clock, std::chrono::nanoseconds period);
  void poll();      // reads the next GPU when `period` has passed since the last read (the first poll reads)
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
  core::Nanos period_{};
  core::Clock& clock_;
  std::vector<Gpu> gpus_{};
  std::vector<EnergyReading> readings_{};
  std::vector<std::string> notes_{};
  std::optional<core::MonoTime> last_{};
  std::size_t next_ = 0;  // the GPU poll() reads next

  void read(Gpu& g);
};

}  // namespace gpudoc::profile
