// gpudoc::tune apply — what `gpudoc tune` does with a finished report besides printing it: runs the
// job once, whole, with the kept changes (--apply), and records the tuned job as a baseline
// (--baseline NAME) so that `gpudoc baseline check NAME` guards the gain in CI.
//
//   auto code = tune::run_tuned(request, report, env);          // Result<int>: the job's exit status
//   auto rec = tune::record_tuned(store, "train", report, gate_env, {});   // Result<baseline::Recorded>
#pragma once

#include <string>
#include <vector>

#include "baseline/gate.hpp"
#include "core/result.hpp"
#include "tune/tune.hpp"

namespace gpudoc::tune {

// Runs the job once with the report's kept changes (the shim from `env.dir`'s copy), its output
// passed through to gpudoc's stdout and stderr, stopped by the stop policy. Returns its exit
// status as a shell reports it. Errors: kBadInput (it cannot be started), kIo.
[[nodiscard]] core::Result<int> run_tuned(const Request& request, const Report& report, const Env& env);

// The command a baseline of the tuned job runs: `env NAME=VALUE ... [taskset -c LIST] CMD` with the
// shim as `python3 -m gpudoc.tune` (the installed package).
[[nodiscard]] std::vector<std::string> tuned_command(const Report& report);

// Records the tuned job (tuned_command, run `repeat` times: 0 is the gate's default) as baseline
// `name`'s golden run in `store` (opened for writing). Errors: baseline::record's (a job that fails
// there, e.g. without the gpudoc Python package for the shim, is kBadInput).
[[nodiscard]] core::Result<baseline::Recorded> record_tuned(store::Database& store, const std::string& name,
                                                            const Report& report, const baseline::GateEnv& env,
                                                            int repeat = 0);

}  // namespace gpudoc::tune
