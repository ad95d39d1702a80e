// What a person asks of a slice: the limits from the flags' texts, and what the chosen mechanism
// enforces of them, said before the job starts.
#include <fmt/format.h>

#include <filesystem>
#include <string>

#include "core/text.hpp"
#include "slice/slice.hpp"

namespace gpudoc::slice {

core::Result<Limits> limits_from_text(const std::string& mem, const std::string& sm, const std::string& pcie) {
  Limits limits;
  if (mem.empty() && sm.empty() && pcie.empty())
    return core::Error(
        core::ErrorKind::kUsage,
        "give a limit: --mem SIZE (e.g. --mem 40G), --sm PERCENT (e.g. --sm 30) and/or --pcie RATE (e.g. --pcie 12G)");
  if (!mem.empty()) {
    auto bytes = parse_size(mem, "--mem");
    if (!bytes) return bytes.error();
    limits.memory_bytes = *bytes;
  }
  if (!sm.empty()) {
    auto percent = parse_percent(sm, "--sm");
    if (!percent) return percent.error();
    limits.sm_percent = *percent;
  }
  if (!pcie.empty()) {
    auto rate = parse_rate(pcie, "--pcie");
    if (!rate) return rate.error();
    limits.pcie_bytes_per_second = *rate;
  }
  return limits;
}

core::Status check_memory_fits(const Limits& limits, const std::string& mem, std::uint64_t gpu_bytes) {
  if (limits.memory_bytes <= gpu_bytes) return core::ok_status();
  return core::Error(core::ErrorKind::kBadInput,
                     fmt::format("--mem {}: more than the GPU's {} ({} bytes)", mem,
                                 core::human_bytes(static_cast<double>(gpu_bytes)), gpu_bytes));
}

std::string enforcement_notes(const Limits& limits, const Placement& placement) {
  const bool intercepted = placement.mechanism == Mechanism::kInterception;
  std::string notes;
  if (intercepted && limits.sm_percent > 0)
    notes +=
        "gpudoc slice: --sm without MPS: kernel and graph launches pass only in the slice's own part of each "
        "20 ms, kept apart from your other slices' parts, and as long as NVML's per-process figure keeps the "
        "slice under its share; a process outside any slice is not kept apart, and no launch throttling bounds a "
        "neighbour's tail latency: for a share that holds beside any process, start an MPS control daemon "
        "(docs/slice.md)\n";
  if (limits.pcie_bytes_per_second > 0 && intercepted)
    notes +=
        "gpudoc slice: --pcie: host<->device copies are held back when issued, so the rate holds on average "
        "over more than 50 ms, not within one large copy; 2D/3D and peer copies are not counted\n";
  if (limits.pcie_bytes_per_second > 0 && !intercepted)
    notes += "gpudoc slice: warning: --pcie is not enforced under MPS (the interception library is not loaded)\n";
  return notes;
}

core::Result<Plan> plan(const PlanInput& input, const std::string& exe_dir) {
  auto limits = limits_from_text(input.mem, input.sm, input.pcie);
  if (!limits) return limits.error();
  Plan out;
  out.placement = choose_placement();
  if (out.placement.mechanism == Mechanism::kInterception) {
    auto lib = find_library(exe_dir);
    if (!lib) return lib.error();
    out.library = *lib;
  }
  auto gpu_bytes = first_gpu_memory_bytes();
  if (!gpu_bytes) return gpu_bytes.error().with_context("gpudoc slice");
  if (auto fits = check_memory_fits(*limits, input.mem, *gpu_bytes); !fits) return fits.error();
  const std::string name = input.name.empty() && !input.command.empty()
                               ? std::filesystem::path(input.command[0]).filename().string()
                               : input.name;
  out.request = Request{*limits, name, input.command};
  return out;
}

}  // namespace gpudoc::slice
