// gpudoc::baseline run cost — what one workload run of a baseline cost (cost/job.hpp): its trace
// read and diagnosed, the GPUs it used accounted from its start to its exit, the work it reported.
// `baseline record` and `check` add each run's to Collected::cost; the view prices it.
//
//   auto c = baseline::run_cost(trace_path, {0}, run.metrics.work());   // Result<cost::JobCost>
#pragma once

#include <string>
#include <vector>

#include "core/result.hpp"
#include "cost/job.hpp"
#include "telemetry/work.hpp"

namespace gpudoc::baseline {

// `gpus`: the trace positions the workload used (empty: every GPU). Errors: the trace reader's
// (kBadInput, kIo) and diagnose::check_diagnosable's.
[[nodiscard]] core::Result<cost::JobCost> run_cost(const std::string& trace_path, const std::vector<int>& gpus,
                                                   const telemetry::Work& work);

}  // namespace gpudoc::baseline
