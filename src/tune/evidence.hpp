// gpudoc::tune evidence — what the changes are picked from (changes.hpp's Evidence): the diagnosis
// of the plain run's trace, the machine (GPU count and NVLink from the backend; CPUs, NUMA nodes,
// governor, transparent huge pages and sysctls through health's HostReader, read only), the
// variables of gpudoc's environment the changes set, and whether the command is a Python program.
#pragma once

#include <string>
#include <vector>

#include "tune/changes.hpp"
#include "tune/trial.hpp"
#include "tune/tune.hpp"

namespace gpudoc::tune {

// The variables the changes may set: the job sees gpudoc's values of them.
[[nodiscard]] const std::vector<std::string>& watched_variables();

// Fills `diagnosis` (the plain run's trace, when there is one) and returns the evidence.
[[nodiscard]] Evidence gather_evidence(const Env& env, const std::vector<std::string>& command, const Trial& plain,
                                       const std::string& trace_path, DiagnosisSummary& diagnosis);

}  // namespace gpudoc::tune
