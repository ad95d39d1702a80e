#include "baseline/run_cost.hpp"

#include "diagnose/diagnose.hpp"
#include "telemetry/trace.hpp"

namespace gpudoc::baseline {

core::Result<cost::JobCost> run_cost(const std::string& trace_path, const std::vector<int>& gpus,
                                     const telemetry::Work& work) {
  auto trace = telemetry::read_trace_file(trace_path, diagnose::read_options());
  if (!trace) return trace.error();
  if (auto ok = diagnose::check_diagnosable(*trace, trace_path); !ok) return ok.error();
  const diagnose::Diagnosis d = diagnose::diagnose(*trace, diagnose::Options{});
  cost::JobCost job = cost::cost_of_trace(*trace, d, {.gpus = gpus});
  job.work.add(work);
  return job;
}

}  // namespace gpudoc::baseline
