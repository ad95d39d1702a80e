// gpudoc::telemetry bundled traces — where the real H200 traces that ship with gpudoc are: in the
// source tree's tests/data, or installed under share/gpudoc/traces (tests/data/README.md lists and
// describes them). `gpudoc doctor` replays some of them on a machine without a GPU.
//
//   auto dir = telemetry::find_bundled_traces("gemm_saturated.jsonl");   // Result<std::filesystem::path>
//   if (!dir) return dir.error();            // kEnvironment: every folder looked in, and GPUDOC_DATA_DIR
//   auto trace = telemetry::read_telemetry_file((*dir / "gemm_saturated.jsonl").string());
//
// Thread-safe (reads the environment and /proc/self/exe).
#pragma once

#include <array>
#include <filesystem>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace gpudoc::telemetry {

// What `gpudoc doctor` replays without a GPU: one trace per main pattern (tests/data/README.md says
// how each was recorded).
inline constexpr std::array<const char*, 4> kShowcaseTraces = {
    "gemm_saturated.jsonl",             // healthy
    "sawtooth_p1000_d50.jsonl",         // input starvation
    "tiny_kernels.jsonl",               // launch-bound plateau
    "allreduce_straggler_slow1.jsonl",  // two GPUs, one straggler
};

// Where the bundled traces may be, first found wins: $GPUDOC_DATA_DIR; an install (bin/gpudoc ->
// share/gpudoc/traces, the path from the binary's folder compiled in, so a moved prefix still
// works); a build tree (build/src/cli/gpudoc -> tests/data); the source tree this binary was built
// from. The install comes before the build tree: a prefix inside a checkout must use its own copy.
[[nodiscard]] std::vector<std::filesystem::path> bundled_trace_dirs();

// The first of bundled_trace_dirs() that holds `probe_file`, made canonical. Errors: kEnvironment
// naming every folder looked in and saying to set GPUDOC_DATA_DIR.
[[nodiscard]] core::Result<std::filesystem::path> find_bundled_traces(std::string_view probe_file);

}  // namespace gpudoc::telemetry
