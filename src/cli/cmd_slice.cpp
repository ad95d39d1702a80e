// gpudoc slice: run a job in a slice of one GPU (memory, compute and copy limits), and
// gpudoc slice list: the slices that run now, their processes and their use against the limits.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "core/text.hpp"
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

core::Error usage(const std::string& message) { return core::Error(core::ErrorKind::kUsage, message); }

std::string exe_dir() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : exe.parent_path().string();
}

int run_slice(SliceFlags& f) {
  if (f.command.empty())
    return report_error(usage("give the command to run after --, e.g. -- python3 train.py"), false);
  auto limits = slice::limits_from_text(f.mem, f.sm, f.pcie);
  if (!limits) return report_error(limits.error(), false);
  const slice::Placement placement = slice::choose_placement();
  std::string library;
  if (placement.mechanism == slice::Mechanism::kInterception) {
    auto lib = slice::find_library(exe_dir());
    if (!lib) return report_error(lib.error(), false);
    library = *lib;
  }
  auto gpu_bytes = slice::first_gpu_memory_bytes();
  if (!gpu_bytes) return report_error(gpu_bytes.error().with_context("gpudoc slice"), false);
  if (limits->memory_bytes > *gpu_bytes)
    return report_error(core::Error(core::ErrorKind::kBadInput,
                                    fmt::format("--mem {}: more than the GPU's {} ({} bytes)", f.mem,
                                                core::human_bytes(static_cast<double>(*gpu_bytes)), *gpu_bytes)),
                        false);
  slice::Request request{*limits, f.name.empty() ? std::filesystem::path(f.command[0]).filename().string() : f.name,
                         f.command};
  if (!f.quiet) {
    std::fprintf(
        stderr, "gpudoc slice: %s: memory %s, SM %s; %s\n", core::terminal_safe(request.name).c_str(),
        limits->memory_bytes > 0 ? core::human_bytes(static_cast<double>(limits->memory_bytes)).c_str() : "no cap",
        limits->sm_percent > 0 ? fmt::format("{} %", limits->sm_percent).c_str() : "no cap", placement.note.c_str());
    std::fputs(slice::enforcement_notes(*limits, placement).c_str(), stderr);
  }
  install_stop_handlers();
  auto code = slice::run(request, placement, library, &stop_requests());
  if (!code) return report_error(code.error(), false);
  return *code;  // the job's own exit status passes through (after stop signal N: 128 + N, the caller)
}

int run_list(const SliceFlags& f) {
  const auto slices = slice::list();
  if (f.list_json)
    print_json(view::slice_list_json(slices));
  else
    std::fputs(view::render_slice_list(slices).c_str(), stdout);
  return 0;
}

}  // namespace

void register_slice(CLI::App& app, Action& action) {
  auto f = std::make_shared<SliceFlags>();
  auto* cmd = app.add_subcommand("slice", "Run a job in a slice of one GPU: memory and compute limits");
  cmd->description(
      "Run a job in a slice of one GPU, so that two jobs (a fine-tuning run and a latency-sensitive\n"
      "inference service) can share the card without one taking all its memory.\n\n"
      "With an MPS control daemon running (CUDA_MPS_PIPE_DIRECTORY, default /tmp/nvidia-mps), the\n"
      "slice sets the MPS client's limits (CUDA_MPS_PINNED_DEVICE_MEM_LIMIT,\n"
      "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE): the driver enforces them. Otherwise gpudoc preloads its\n"
      "interception library into the job: every device allocation (cuMemAlloc, pitched, managed,\n"
      "stream-ordered pools, cuMemCreate, however the program found the function) is charged to\n"
      "the slice, shared by all the job's processes; one that would go over --mem fails with\n"
      "CUDA's out-of-memory error, which PyTorch reports as torch.OutOfMemoryError; and\n"
      "cuMemGetInfo shows the slice, so frameworks size their caches to it. --sm then lets kernel\n"
      "and graph launches pass only in the slice's own part of each 20 ms (apart from your other\n"
      "slices' parts) and holds them back while NVML's per-process figure puts the slice over its\n"
      "share; a process outside any slice is not kept apart. --pcie holds host<->device copies to\n"
      "a rate (best effort). Without MPS kernels of different processes take turns, so no launch\n"
      "throttling bounds a neighbour's tail latency: for a compute share that holds beside any\n"
      "job, or an inference service beside a training job, start an MPS control daemon.\n"
      "At least one of --mem, --sm and --pcie is needed.\n"
      "With MIG instances in CUDA_VISIBLE_DEVICES the job is placed on the first (the MIG layout is\n"
      "never changed).\n"
      "docs/slice.md says what each mechanism can and cannot enforce.");
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
  cmd->footer(
      "Examples:\n"
      "  gpudoc slice --mem 40G -- python3 finetune.py\n"
      "  gpudoc slice --mem 16G --sm 30 --name infer -- python3 serve.py --port 8000\n"
      "  gpudoc slice list\n"
      "The job runs in a process group of its own: Ctrl-C, SIGTERM or SIGHUP stops that whole group\n"
      "(SIGTERM, SIGKILL 5 s later or at a second signal) and removes the slice's folder.\n"
      "Exit codes: the job's own (128+N when signal N ended it); 128+N when gpudoc was stopped by\n"
      "signal N; 2 a malformed or impossible limit; 3 no CUDA driver, no GPU or no interception library.");
  auto* list = cmd->add_subcommand("list", "The slices that run now: processes, use against limits");
  list->add_flag("--json", f->list_json, "one JSON document on stdout");
  list->callback([f, &action] { action = [f] { return run_list(*f); }; });
  cmd->callback([f, list, &action] {
    if (list->parsed()) return;
    action = [f] { return exit_code_after_stop(run_slice(*f)); };
  });
}

}  // namespace gpudoc::cli
