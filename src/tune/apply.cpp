#include "tune/apply.hpp"

#include <unistd.h>

#include "tune/launch.hpp"

namespace gpudoc::tune {

core::Result<int> run_tuned(const Request& request, const Report& report, const Env& env) {
  const std::string shim = env.dir->file("gpudoc_tune.py");  // written by run()
  const Launch l = launch_with(request.command, report.kept, shim);
  baseline::WorkloadOptions o;
  o.extra_env = l.env;
  o.cpu_affinity = l.cpus;
  o.echo_fd = STDOUT_FILENO;
  o.stop = env.stop;
  auto run = baseline::run_workload(l.argv, o);
  if (!run) return run.error().with_context("running the tuned job");
  return run->exit_code;
}

std::vector<std::string> tuned_command(const Report& report) { return launcher_argv(report.command, report.kept); }

core::Result<baseline::Recorded> record_tuned(store::Database& store, const std::string& name, const Report& report,
                                              const baseline::GateEnv& env, int repeat) {
  auto spec = baseline::record_spec({.command = tuned_command(report), .repeat = repeat});
  if (!spec) return spec.error();
  auto rec = baseline::record(store, name, *spec, env);
  if (!rec) return rec.error().with_context("recording the tuned job as baseline " + name);
  return rec;
}

}  // namespace gpudoc::tune
