// gpudoc profile: run a CUDA program under the CUPTI injection library (libgpudoc_profile.so, by
// CUDA_INJECTION64_PATH) and say, step by step, where its GPU time goes and whether CUDA Graphs
// would help. The program is not modified; its records land in a private folder made here.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <glob.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "core/process.hpp"
#include "core/temp_dir.hpp"
#include "profile/analysis.hpp"
#include "profile/chrome_trace.hpp"
#include "profile/record_format.hpp"
#include "profile/records.hpp"
#include "view/profile_report.hpp"

namespace gpudoc::cli {
namespace {

namespace fs = std::filesystem;

struct ProfileFlags {
  std::string trace_output;  // -o: Chrome/Perfetto trace
  std::string html;
  std::string records_copy;  // --records: keep the raw records
  std::string input;         // --input: analyse saved records, run nothing
  double duration_s = 0;
  std::size_t steps = 0;
  bool json = false;
  std::string sample;      // --sample ON:OFF seconds
  std::string sample_env;  // the same as GPUDOC_PROFILE_SAMPLE wants it: "ON_MS:OFF_MS"
  std::vector<std::string> command;
};

// "2:18" or "0.5:9.5" (seconds traced : seconds not) -> "2000:18000"; empty on anything else.
std::string sample_to_env(const std::string& text) {
  const std::size_t colon = text.find(':');
  if (colon == std::string::npos) return {};
  auto millis = [](const std::string& v) -> long long {
    if (v.empty() || v.size() > 12) return -1;
    char* end = nullptr;
    const double seconds = std::strtod(v.c_str(), &end);
    if (end != v.c_str() + v.size() || !(seconds >= 0.001) || seconds > 86400) return -1;
    return std::llround(seconds * 1000);
  };
  const long long on = millis(text.substr(0, colon)), off = millis(text.substr(colon + 1));
  if (on < 1 || off < 1) return {};
  return fmt::format("{}:{}", on, off);  // at most 86 400 000 each: what SampleWindows::parse takes
}

core::Error env_error(std::string message) { return core::Error(core::ErrorKind::kEnvironment, std::move(message)); }

// libgpudoc_profile.so: $GPUDOC_PROFILE_LIBRARY, else beside the gpudoc executable, else in
// ../lib/gpudoc (an installed gpudoc).
core::Result<std::string> find_injection_library() {
  if (const char* env = std::getenv("GPUDOC_PROFILE_LIBRARY"); env != nullptr && *env != '\0') {
    if (access(env, R_OK) == 0) return std::string(env);
    return env_error(fmt::format("GPUDOC_PROFILE_LIBRARY={} cannot be read", env));
  }
  std::error_code ec;
  const fs::path dir = fs::read_symlink("/proc/self/exe", ec).parent_path();
  const std::vector<fs::path> candidates = {dir / "libgpudoc_profile.so", dir / "../lib/gpudoc/libgpudoc_profile.so",
                                            dir / "../lib/x86_64-linux-gnu/gpudoc/libgpudoc_profile.so"};
  for (const auto& c : candidates)
    if (access(c.c_str(), R_OK) == 0) return fs::absolute(c).lexically_normal().string();
  return env_error(fmt::format(
      "the injection library libgpudoc_profile.so is not beside gpudoc ({}) nor in {}/../lib/gpudoc: this gpudoc was "
      "built without CUPTI's headers (cupti.h); rebuild with the CUDA toolkit, or set GPUDOC_PROFILE_LIBRARY",
      dir.string(), dir.string()));
}

std::vector<std::string> glob_files(const std::string& pattern) {
  std::vector<std::string> out;
  glob_t g{};
  if (glob(pattern.c_str(), 0, nullptr, &g) == 0)
    for (std::size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  globfree(&g);
  return out;
}

// Every libcupti the job might use, best first: $GPUDOC_CUPTI_LIBRARY, the CUDA toolkit's, the
// distribution's, and the one a pip-installed PyTorch brings.
core::Result<std::vector<std::string>> find_cupti() {
  if (const char* env = std::getenv("GPUDOC_CUPTI_LIBRARY"); env != nullptr && *env != '\0') {
    if (access(env, R_OK) == 0) return std::vector<std::string>{env};
    return env_error(fmt::format("GPUDOC_CUPTI_LIBRARY={} cannot be read", env));
  }
  std::vector<std::string> roots;
  if (const char* home = std::getenv("CUDA_HOME"); home != nullptr && *home != '\0') roots.emplace_back(home);
  roots.emplace_back("/usr/local/cuda");
  for (const auto& d : glob_files("/usr/local/cuda-*")) roots.push_back(d);
  std::vector<std::string> found;
  for (const auto& r : roots)
    for (const char* sub :
         {"/extras/CUPTI/lib64/libcupti.so*", "/targets/x86_64-linux/lib/libcupti.so*", "/lib64/libcupti.so*"})
      for (const auto& f : glob_files(r + sub)) found.push_back(f);
  for (const auto& f : glob_files("/usr/lib/x86_64-linux-gnu/libcupti.so*")) found.push_back(f);
  for (const auto& f : glob_files("/usr/local/lib/python3*/dist-packages/nvidia/cu*/lib/libcupti.so*"))
    found.push_back(f);
  for (const auto& f : glob_files("/usr/local/lib/python3*/dist-packages/nvidia/cuda_cupti/lib/libcupti.so*"))
    found.push_back(f);
  if (found.empty())
    return env_error(
        "CUPTI (libcupti.so) was not found in /usr/local/cuda*/extras/CUPTI/lib64, /usr/local/cuda*/targets/"
        "x86_64-linux/lib nor /usr/lib/x86_64-linux-gnu: install the CUDA toolkit's CUPTI (cuda-cupti-13-0) or set "
        "GPUDOC_CUPTI_LIBRARY");
  return found;
}

// Runs the command with the injection library, in a process group of its own; stops it after
// `duration` (SIGINT, then SIGTERM, then SIGKILL, 10 s apart, to its process group), or by the
// stop policy on a stop signal (core::GroupStopper). Returns its exit code as a shell reports it.
core::Result<int> run_command(const ProfileFlags& f, const std::string& library, const std::vector<std::string>& cupti,
                              const std::string& dir) {
  std::string cupti_list;
  for (const auto& c : cupti) cupti_list += (cupti_list.empty() ? "" : ":") + c;
  core::SpawnOptions o = core::workload_spawn_options();
  o.extra_env = {"CUDA_INJECTION64_PATH=" + library, std::string(profile::kEnvOutputDir) + "=" + dir,
                 std::string(profile::kEnvCuptiPath) + "=" + cupti_list,
                 std::string(profile::kEnvSample) + "=" + f.sample_env,
                 // NVTX ranges reach CUPTI only when NVTX loads CUPTI as its tool
                 "NVTX_INJECTION64_PATH=" + cupti.front()};
  o.stdout_to_stderr = f.json;
  install_stop_handlers();  // before the spawn: from then on a stop signal stops the program's group
  auto child = core::ChildProcess::spawn(f.command, o);
  if (!child) return child.error();
  const auto start = std::chrono::steady_clock::now();
  int sent = 0;
  auto last_signal = start;
  core::GroupStopper stopper;
  while (!child->poll()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const auto now = std::chrono::steady_clock::now();
    if (stop_requests().load() > 0) {
      stopper.step(*child, stop_requests().load() >= 2);
      continue;
    }
    const bool stop = f.duration_s > 0 && now - start >= std::chrono::duration<double>(f.duration_s);
    if (stop && (sent == 0 || now - last_signal >= std::chrono::seconds(10))) {
      // SIGINT first: Python raises KeyboardInterrupt and runs its exit handlers, which flush CUPTI.
      const int sig = sent == 0 ? SIGINT : sent == 1 ? SIGTERM : SIGKILL;
      child->signal_group(sig);
      ++sent;
      last_signal = now;
    }
  }
  if (stopper.started()) stopper.finish(*child, [] { return stop_requests().load() >= 2; });
  return child->exit_code_for_shell();
}

// The records file of the process that ran the most kernels (a launcher's children each write one).
core::Result<profile::RecordSet> pick_records(const std::string& dir, std::size_t& files) {
  std::optional<profile::RecordSet> best;
  std::vector<std::string> warnings;
  files = 0;
  for (const auto& path : glob_files(dir + "/records-*.txt")) {
    ++files;
    auto set = profile::read_records_file(path);
    if (!set) return set.error();
    for (const auto& w : set->warnings) warnings.push_back(w);
    if (!best || set->kernels.size() > best->kernels.size()) best = std::move(*set);
  }
  if (files == 0)
    return env_error(
        "the program created no CUDA context, so the injection library never ran: it uses no GPU, or there is no GPU "
        "or driver here (nvidia-smi tells)");
  if (best->kernels.empty() && !warnings.empty())
    return env_error("profiling failed in the program: " + warnings.front());
  return std::move(*best);
}

core::Status write_outputs(const ProfileFlags& f, const profile::RecordSet& set, const profile::Profile& p) {
  if (!f.trace_output.empty()) {
    std::ofstream out(f.trace_output);
    if (!out || !profile::write_chrome_trace(set, out))
      return core::Error(core::ErrorKind::kIo, fmt::format("writing the trace {}", f.trace_output));
  }
  if (!f.html.empty()) {
    auto page = view::profile_html(p, f.command);
    if (!page) return page.error();
    std::ofstream out(f.html);
    out << *page;
    if (!out) return core::Error(core::ErrorKind::kIo, fmt::format("writing {}", f.html));
  }
  return core::ok_status();
}

int run_profile(ProfileFlags& f) {
  if (f.command.empty() == f.input.empty())
    return report_error(core::Error(core::ErrorKind::kUsage,
                                    "give a command to profile after -- (gpudoc profile -- python3 train.py), or "
                                    "--input RECORDS to analyse saved records, not both"),
                        f.json);
  if (!f.sample.empty() && (f.sample_env = sample_to_env(f.sample)).empty())
    return report_error(
        core::Error(core::ErrorKind::kUsage, fmt::format("--sample {}: give seconds traced and seconds not, as ON:OFF "
                                                         "(2:18 traces 2 s of every 20 s), each at least 0.001",
                                                         f.sample)),
        f.json);
  int exit_code = 0;
  core::Result<profile::RecordSet> set = core::Error(core::ErrorKind::kInternal, "no records");
  std::size_t files = 1;
  std::optional<core::PrivateDir> dir;
  if (!f.input.empty()) {
    set = profile::read_records_file(f.input);
    if (!set && set.error().kind() == core::ErrorKind::kIo)
      set = core::Error(core::ErrorKind::kBadInput, set.error().message());
  } else {
    // The driver loads one injection library: a tool already set up for this program (Nsight
    // Systems sets CUDA_INJECTION64_PATH) would be silently displaced, and lose its data.
    if (const char* other = std::getenv("CUDA_INJECTION64_PATH"); other != nullptr && *other != '\0')
      return report_error(
          env_error(fmt::format("another CUPTI tool is already set up for this program (CUDA_INJECTION64_PATH={}, "
                                "as Nsight Systems sets it); CUPTI serves one client per process: run gpudoc "
                                "profile outside that tool",
                                other)),
          f.json);
    auto library = find_injection_library();
    if (!library) return report_error(library.error(), f.json);
    auto cupti = find_cupti();
    if (!cupti) return report_error(cupti.error(), f.json);
    auto made = core::PrivateDir::create("gpudoc-profile");
    if (!made) return report_error(made.error(), f.json);
    dir.emplace(std::move(*made));
    auto code = run_command(f, *library, *cupti, dir->path());
    if (!code) return report_error(code.error(), f.json);
    exit_code = *code;
    set = pick_records(dir->path(), files);
    if (!set && stop_signal().signal.load() != 0) {  // the caller exits 128 + N
      std::fprintf(stderr, "gpudoc: profile: stopped by %s before the program wrote its records: nothing to analyse\n",
                   core::signal_name(stop_signal().signal.load()).c_str());
      return exit_code;
    }
  }
  if (!set) return report_error(set.error(), f.json);
  if (!f.records_copy.empty()) {
    std::error_code ec;
    fs::copy_file(dir ? glob_files(dir->path() + "/records-" + std::to_string(set->pid) + ".txt").at(0) : f.input,
                  f.records_copy, fs::copy_options::overwrite_existing, ec);
    if (ec)
      return report_error(
          core::Error(core::ErrorKind::kIo, fmt::format("writing {}: {}", f.records_copy, ec.message())), f.json);
  }
  profile::AnalysisOptions opt;
  opt.max_steps = f.steps;
  const profile::Profile p = profile::analyse(*set, opt);
  if (auto st = write_outputs(f, *set, p); !st) return report_error(st.error(), f.json);
  if (f.json) {
    auto j = view::profile_json(p, f.command.empty() ? std::vector<std::string>{f.input} : f.command);
    j["processes_profiled"] = files;
    j["exit_code"] = exit_code;
    print_json(j);
  } else {
    // Kernel names and the command come from the profiled program: shown terminal-safe.
    print_text(stdout, view::profile_text(p, f.command.empty() ? std::vector<std::string>{f.input} : f.command));
    if (files > 1) std::printf("(%zu processes were profiled; this is the one that ran the most kernels)\n", files);
  }
  return exit_code;
}

}  // namespace

void register_profile(CLI::App& app, Action& action) {
  auto f = std::make_shared<ProfileFlags>();
  auto* cmd = app.add_subcommand("profile", "Why the GPU waits, kernel by kernel, and whether CUDA Graphs will help");
  cmd->description(
      "Run a CUDA program, unmodified, under CUPTI (gpudoc's injection library, loaded by the CUDA driver\n"
      "through CUDA_INJECTION64_PATH) and report, per step: the GPU's busy time; each idle gap and its\n"
      "cause (launch-bound, synchronization, pageable copies, allocation, host work with no CUDA call);\n"
      "the kernels and copies; and whether capturing the step in a CUDA Graph would pay, with the step\n"
      "time to expect — or what to fix first.\n\n"
      "Steps are NVTX ranges (torch.cuda.nvtx.range(\"step\") or any range named *step*/*iter*), else\n"
      "what the host repeats between its synchronizations (.item(), synchronize, blocking copies),\n"
      "else the repeating kernel sequence. The first step is left out as warm-up. docs/profile.md explains\n"
      "the attribution rules, the prediction's formula and the record format.\n\n"
      "CUPTI serves one client per process: a profiler the program starts itself (torch.profiler)\n"
      "gets no CUDA activity while gpudoc profiles it; under a tool that set CUDA_INJECTION64_PATH\n"
      "(Nsight Systems) gpudoc profile refuses to start, exit 3.");
  cmd->add_option("-o,--output", f->trace_output, "write a Chrome/Perfetto trace (open in ui.perfetto.dev)");
  cmd->add_option("--html", f->html, "write a self-contained HTML page");
  add_number(*cmd, "-d,--duration", f->duration_s, kDurationRange,
             "stop the program after this many seconds (SIGINT, then SIGTERM)");
  cmd->add_option("--sample", f->sample,
                  "ON:OFF seconds: trace kernels, copies and API calls ON seconds, then not for OFF, over and "
                  "over (2:18 traces a tenth of the run); NVTX steps are timed throughout, so the report says "
                  "what tracing cost the program's steps");
  add_number(*cmd, "--steps", f->steps, {.min = 1, .max = 1e9, .whole = true},
             "analyse at most this many steps (after the warm-up step; default: all)");
  cmd->add_flag("--json", f->json, "print the analysis as JSON on stdout (the program's stdout goes to stderr)");
  cmd->add_option("--records", f->records_copy, "keep the raw records (docs/profile.md) in this file");
  cmd->add_option("--input", f->input, "analyse records saved with --records; run nothing");
  cmd->add_option("command", f->command, "the program to profile (after --)");
  cmd->footer(
      "Examples:\n"
      "  gpudoc profile -- python3 train.py --epochs 1\n"
      "  gpudoc profile --duration 60 -o train.trace.json --html train.html -- python3 train.py\n"
      "  gpudoc profile --json --steps 50 -- ./my_cuda_app\n"
      "  gpudoc profile --input records.txt\n"
      "The program runs in a process group of its own: Ctrl-C, SIGTERM or SIGHUP stops that whole group\n"
      "(SIGTERM, SIGKILL 5 s later or at a second signal); what it recorded until then is analysed.\n"
      "Exit codes: the program's own (0 when it succeeded); 2 bad flags or records; 3 no GPU, no CUDA\n"
      "context, CUPTI missing or held by another profiler; 128+N stopped by signal N (130: Ctrl-C).");
  cmd->callback([f, &action] { action = [f] { return exit_code_after_stop(run_profile(*f)); }; });
}

}  // namespace gpudoc::cli
