// What each real trace of tests/data must be diagnosed as, shared by the fixture test and the
// confusion-table generator (tests/perf/diagnose_confusion.cpp). `allowed` lists other findings
// that may appear at warning or above without being wrong (e.g. the straggler of a pulse, which
// sleeps on the host, is also a sawtooth); anything else at warning or above is a wrong finding.
// Info findings (idle, healthy, a power-capped `throttled`) are never counted as wrong.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace gpudoc::testing {

struct Expectation {
  std::string trace;                 // file name in tests/data without .jsonl
  std::string expected;              // the finding id that must be present
  std::vector<std::string> allowed;  // other ids allowed at warning or above
  std::string csv_expected;          // in the nvidia-smi CSV form; "" = not visible in CSV
  bool heldout = false;              // never used to tune thresholds
};

// GoogleTest prints a parameter by its trace name.
inline void PrintTo(const Expectation& e, std::ostream* os) { *os << e.trace; }

inline const std::vector<Expectation>& expectations() {
  static const std::vector<Expectation> kAll = {
      {"idle", "idle", {}, "idle", false},
      {"gemm_saturated", "healthy", {}, "healthy", false},
      {"sawtooth_p2000_d50", "sawtooth", {}, "sawtooth", false},
      {"sawtooth_p1000_d50", "sawtooth", {}, "sawtooth", false},
      {"sawtooth_p500_d50", "sawtooth", {}, "sawtooth", false},
      {"sawtooth_p1000_d20", "sawtooth", {}, "sawtooth", false},
      {"sawtooth_p100_d50", "sawtooth", {}, "sawtooth", false},
      {"sawtooth_p50_d50", "sawtooth", {}, "sawtooth", false},
      {"tiny_kernels", "plateau", {}, "plateau", false},
      {"memory_bound", "memory_bound", {}, "memory_bound", false},
      {"memory_growth", "memory_growth", {}, "memory_growth", false},
      // Per-process data only: the CSV form shows a busy GPU and nothing of the two processes.
      {"contention_turns", "staircase", {}, "", false},
      {"contention_concurrent", "staircase", {}, "", false},
      // Without GPM the waiting GPU is told from the straggler by its much lower power.
      {"allreduce_straggler_slow1", "pulse", {}, "pulse", false},
      {"allreduce_straggler_slow0", "pulse", {}, "pulse", false},
      // The straggler sleeps on the host: its own GPU shows a (fast) sawtooth, which is true.
      // In CSV both GPUs draw the same power, so the waiting GPU cannot be told from a busy one.
      {"allreduce_straggler_sleep1", "pulse", {"sawtooth"}, "", false},
      {"allreduce_balanced", "healthy", {}, "healthy", false},
      {"heldout_sawtooth_p3000_d30", "sawtooth", {}, "sawtooth", true},
      {"heldout_sawtooth_p700_d70", "sawtooth", {}, "sawtooth", true},
      {"heldout_sawtooth_p150_d40", "sawtooth", {}, "sawtooth", true},
      {"heldout_memory_growth_2g", "memory_growth", {}, "memory_growth", true},
      // Second held-out set (recorded 2026-11-29 21:30-23:05 UTC, after tuning was finished).
      {"heldout_idle_1g", "idle", {}, "idle", true},
      {"heldout_gemm_fp16", "healthy", {}, "healthy", true},
      {"heldout_sawtooth_p1500_d60", "sawtooth", {}, "sawtooth", true},
      {"heldout_sawtooth_p80_d30", "sawtooth", {}, "sawtooth", true},
      {"heldout_tiny_kernels_4k", "plateau", {}, "plateau", true},
      {"heldout_memory_bound_copy", "memory_bound", {}, "memory_bound", true},
      {"heldout_contention_turns_p3", "staircase", {}, "", true},
  };
  return kAll;
}

}  // namespace gpudoc::testing
