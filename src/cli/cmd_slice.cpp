// gpudoc slice: run a job in a slice of one GPU (memory, compute and copy limits), and
// gpudoc slice list: the slices that run now, their processes and their use against the limits.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "core/host.hpp"
#include "slice/slice.hpp"
#include "view/slice_list.hpp"

namespace gpudoc::cli {
namespace {

struct SliceFlags {
  std::string mem;
  std::string sm;
  std::string pcie;
  std::string name;
  bool quiet = false;
  std::vector<std::string> command;
  bool list_json = false;
};

int run_slice(SliceFlags& f) {
  if (f.command.empty()) return usage_error("give the command to run after --, e.g. -- python3 train.py", false);
  auto plan = slice::plan({f.mem, f.sm, f.pcie, f.name, f.command}, core::executable_dir());
  if (!plan) return report_error(plan.error(), false);
  if (!f.quiet)
    std::fputs(view::render_slice_start(plan->request.name, plan->request.limits, plan->placement).c_str(), stderr);
  install_stop_handlers();
  auto code = slice::run(plan->request, plan->placement, plan->library, &stop_requests());
  if (!code) return report_error(code.error(), false);
  return *code;  // the job's own exit status passes through (after stop signal N: 128 + N, the caller)
}

int run_list(const SliceFlags& f) {
  const auto slices = slice::list();
  return emit(f.list_json, view::slice_list_json(slices), view::render_slice_list(slices), 0);
}

}  // namespace

void register_slice(CLI::App& app, Action& action) {
  auto f = std::make_shared<SliceFlags>();
  auto* cmd = app.add_subcommand("slice", "Run a job in a slice of one GPU: memory and compute limits");
  apply_help(*cmd, "slice");
  cmd->add_option("--mem", f->mem, "device memory for the whole job: 40G, 512MiB, 8GB (K/M/G/T are 1024-based)");
  cmd->add_option(
      "--sm", f->sm,
      "share of the GPU in percent, 1-100 (MPS: of its SMs; otherwise: of its time, by throttling launches)");
  cmd->add_option(
      "--pcie", f->pcie,
      "host<->device copy rate for the whole job: 12G or 12GB/s (without MPS; on average over more than 50 ms)");
  cmd->add_option("--name", f->name, "the slice's name in `gpudoc slice list` (default: the command's name)");
  cmd->add_flag("-q,--quiet", f->quiet, "say nothing before the job starts");
  cmd->add_option("command", f->command, "the job to run in the slice (after --)");
  auto* list = cmd->add_subcommand("list", "The slices that run now: processes, use against limits");
  list->add_flag("--json", f->list_json, "one JSON document on stdout");
  list->callback([f, &action] { action = [f] { return run_list(*f); }; });
  cmd->callback([f, list, &action] {
    if (list->parsed()) return;
    action = [f] { return exit_code_after_stop(run_slice(*f)); };
  });
}

}  // namespace gpudoc::cli
