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

void register_slice(Command& gpudoc, Action& action) {
  auto f = std::make_shared<SliceFlags>();
  Command cmd(gpudoc, "slice");
  cmd.option("--mem", f->mem);
  cmd.option("--sm", f->sm);
  cmd.option("--pcie", f->pcie);
  cmd.option("--name", f->name);
  cmd.flag("-q,--quiet", f->quiet);
  cmd.option("command", f->command);
  Command list(cmd, "list");
  list.flag("--json", f->list_json);
  list->callback([f, &action] { action = [f] { return run_list(*f); }; });
  cmd->callback([f, list = &*list, &action] {
    if (list->parsed()) return;
    action = [f] { return exit_code_after_stop(run_slice(*f)); };
  });
}

}  // namespace gpudoc::cli
