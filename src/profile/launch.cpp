#include "profile/launch.hpp"

#include <fmt/format.h>
#include <glob.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <thread>

#include "core/process.hpp"
#include "core/temp_dir.hpp"
#include "gpu/nvml/nvml_backend.hpp"
#include "profile/energy.hpp"
#include "profile/energy_sampler.hpp"
#include "profile/record_format.hpp"

namespace gpudoc::profile {
namespace {

namespace fs = std::filesystem;

core::Error env_error(std::string message) { return core::Error(core::ErrorKind::kEnvironment, std::move(message)); }

std::vector<std::string> glob_files(const std::string& pattern) {
  std::vector<std::string> out;
  glob_t g{};
  if (glob(pattern.c_str(), 0, nullptr, &g) == 0)
    for (std::size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  globfree(&g);
  return out;
}

}  // namespace

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

core::Status no_other_injection() {
  if (const char* other = std::getenv("CUDA_INJECTION64_PATH"); other != nullptr && *other != '\0')
    return env_error(
        fmt::format("another CUPTI tool is already set up for this program (CUDA_INJECTION64_PATH={}, "
                    "as Nsight Systems sets it); CUPTI serves one client per process: run gpudoc "
                    "profile outside that tool",
                    other));
  return core::ok_status();
}

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
  for (const char* pattern :
       {"/usr/lib/x86_64-linux-gnu/libcupti.so*", "/usr/local/lib/python3*/dist-packages/nvidia/cu*/lib/libcupti.so*",
        "/usr/local/lib/python3*/dist-packages/nvidia/cuda_cupti/lib/libcupti.so*"})
    for (const auto& f : glob_files(pattern)) found.push_back(f);
  if (found.empty())
    return env_error(
        "CUPTI (libcupti.so) was not found in /usr/local/cuda*/extras/CUPTI/lib64, /usr/local/cuda*/targets/"
        "x86_64-linux/lib nor /usr/lib/x86_64-linux-gnu: install the CUDA toolkit's CUPTI (cuda-cupti-13-0) or set "
        "GPUDOC_CUPTI_LIBRARY");
  return found;
}

core::Result<int> run_injected(const InjectedRun& run, const std::atomic<int>& stop_requests) {
  std::string cupti_list;
  for (const auto& c : run.cupti) cupti_list += (cupti_list.empty() ? "" : ":") + c;
  core::SpawnOptions o = core::workload_spawn_options();
  o.extra_env = {"CUDA_INJECTION64_PATH=" + run.library, std::string(kEnvOutputDir) + "=" + run.output_dir,
                 std::string(kEnvCuptiPath) + "=" + cupti_list, std::string(kEnvSample) + "=" + run.sample_env,
                 // NVTX ranges reach CUPTI only when NVTX loads CUPTI as its tool
                 "NVTX_INJECTION64_PATH=" + run.cupti.front()};
  o.stdout_to_stderr = run.stdout_to_stderr;
  auto child = core::ChildProcess::spawn(run.command, o);
  if (!child) return child.error();
  const auto start = std::chrono::steady_clock::now();
  int sent = 0;
  auto last_signal = start;
  core::GroupStopper stopper;
  while (!child->poll()) {
    if (run.while_running) run.while_running();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const auto now = std::chrono::steady_clock::now();
    if (stop_requests.load() > 0) {
      stopper.step(*child, stop_requests.load() >= 2);
      continue;
    }
    const bool stop = run.duration_s > 0 && now - start >= std::chrono::duration<double>(run.duration_s);
    if (stop && (sent == 0 || now - last_signal >= std::chrono::seconds(10))) {
      // SIGINT first: Python raises KeyboardInterrupt and runs its exit handlers, which flush CUPTI.
      const int sig = sent == 0 ? SIGINT : sent == 1 ? SIGTERM : SIGKILL;
      child->signal_group(sig);
      ++sent;
      last_signal = now;
    }
  }
  if (stopper.started()) stopper.finish(*child, [&stop_requests] { return stop_requests.load() >= 2; });
  return child->exit_code_for_shell();
}

core::Result<RecordSet> pick_records(const std::string& dir, std::size_t& files) {
  std::optional<RecordSet> best;
  std::vector<std::string> warnings;
  files = 0;
  for (const auto& path : glob_files(dir + "/records-*.txt")) {
    ++files;
    auto set = read_records_file(path);
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

std::string records_path(const std::string& dir, std::uint32_t pid) {
  return dir + "/records-" + std::to_string(pid) + ".txt";
}

core::Status append_energy(const std::string& path, const RecordSet& set) {
  auto fail = [&path](const std::string& why) {
    return core::Error(core::ErrorKind::kIo, fmt::format("appending the energy readings to {}: {}", path, why));
  };
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) return fail(ec.message());
  std::FILE* f = std::fopen(path.c_str(), "r+b");
  if (f == nullptr) return fail(std::strerror(errno));
  // The end of the last whole line: a cut-short line after it is dropped (the reader skips it anyway).
  std::uint64_t keep = size;
  std::vector<char> block(4096);
  while (keep > 0) {
    const std::uint64_t from = keep > block.size() ? keep - block.size() : 0;
    const std::size_t n = static_cast<std::size_t>(keep - from);
    if (std::fseek(f, static_cast<long>(from), SEEK_SET) != 0 || std::fread(block.data(), 1, n, f) != n) break;
    std::size_t i = n;
    while (i > 0 && block[i - 1] != '\n') --i;
    if (i > 0) {
      keep = from + i;
      break;
    }
    keep = from;
  }
  const std::string lines = energy_lines(set.energy, set.energy_notes);
  const bool ok = std::fflush(f) == 0 && (keep == size || ::ftruncate(fileno(f), static_cast<off_t>(keep)) == 0) &&
                  std::fseek(f, static_cast<long>(keep), SEEK_SET) == 0 &&
                  std::fwrite(lines.data(), 1, lines.size(), f) == lines.size();
  const int saved = errno;
  if (std::fclose(f) != 0 || !ok) return fail(std::strerror(ok ? errno : saved));
  return core::ok_status();
}

namespace {

// Every GPU's energy counter through NVML, for the run of a profiled program; null (and `notes` say
// why) where NVML cannot be used.
std::unique_ptr<gpu::Backend> energy_backend(std::vector<std::string>& notes) {
  if (const char* spec = std::getenv("GPUDOC_BACKEND");
      spec != nullptr && *spec != '\0' && std::string(spec) != "nvml") {
    notes.push_back(
        fmt::format("GPUDOC_BACKEND={}: gpudoc profile reads the energy counter through NVML only: the "
                    "energy is not known",
                    spec));
    return nullptr;
  }
  auto backend = gpu::open_nvml_backend();
  if (!backend) {
    notes.push_back(fmt::format("NVML could not be used ({}): the energy is not known", backend.error().message()));
    return nullptr;
  }
  return std::move(*backend);
}

}  // namespace

core::Result<Profiled> profile_program(const ProfileRun& run, const std::atomic<int>& stop_requests, bool& stopped) {
  stopped = false;
  if (auto alone = no_other_injection(); !alone) return alone.error();
  auto library = find_injection_library();
  if (!library) return library.error();
  auto cupti = find_cupti();
  if (!cupti) return cupti.error();
  auto dir = core::PrivateDir::create("gpudoc-profile");
  if (!dir) return dir.error();
  std::vector<std::string> energy_notes;
  const std::unique_ptr<gpu::Backend> nvml = energy_backend(energy_notes);
  core::SystemClock clock;
  std::optional<EnergySampler> sampler;
  if (nvml) sampler.emplace(*nvml, clock, kEnergyPeriod);
  if (sampler) sampler->read_now();
  auto code = run_injected({.command = run.command,
                            .library = *library,
                            .cupti = *cupti,
                            .output_dir = dir->path(),
                            .sample_env = run.sample_env,
                            .duration_s = run.duration_s,
                            .stdout_to_stderr = run.stdout_to_stderr,
                            .while_running =
                                [&sampler] {
                                  if (sampler) sampler->poll();
                                }},
                           stop_requests);
  if (sampler) sampler->read_now();
  if (!code) return code.error();
  Profiled out;
  out.exit_code = *code;
  auto set = pick_records(dir->path(), out.processes);
  if (!set) {
    stopped = stop_requests.load() != 0;
    return set.error();
  }
  out.records = std::move(*set);
  if (sampler) {
    out.records.energy = readings_of_used_gpus(out.records, sampler->readings());
    energy_notes.insert(energy_notes.end(), sampler->notes().begin(), sampler->notes().end());
  }
  out.records.energy_notes = std::move(energy_notes);
  if (!run.records_copy.empty()) {
    std::error_code ec;
    std::filesystem::copy_file(records_path(dir->path(), out.records.pid), run.records_copy,
                               std::filesystem::copy_options::overwrite_existing, ec);
    if (ec) return core::Error(core::ErrorKind::kIo, fmt::format("writing {}: {}", run.records_copy, ec.message()));
    if (auto appended = append_energy(run.records_copy, out.records); !appended) return appended.error();
  }
  return out;
}

core::Result<Profiled> read_saved_records(const std::string& input, const std::string& copy) {
  auto set = read_records_file(input);
  if (!set) {
    if (set.error().kind() == core::ErrorKind::kIo)
      return core::Error(core::ErrorKind::kBadInput, set.error().message());
    return set.error();
  }
  if (!copy.empty()) {
    std::error_code ec;
    std::filesystem::copy_file(input, copy, std::filesystem::copy_options::overwrite_existing, ec);
    if (ec) return core::Error(core::ErrorKind::kIo, fmt::format("writing {}: {}", copy, ec.message()));
  }
  return Profiled{std::move(*set), 0, 1};
}

}  // namespace gpudoc::profile
