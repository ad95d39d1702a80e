// Runs the built gpudoc binary (or any shell command line) and captures its exit code and output.
//   run_gpudoc(args)              stdout and stderr together, for text reports and messages
//   run_gpudoc_stdout(args, pre)  stdout only (stderr discarded), for JSON documents; `pre` is put
//                                 before the command line ("cd / &&", "GPUDOC_X=1")
//   run_shell(cmd)                a whole shell command line, its stdout
// and, for tests that start gpudoc themselves and signal it:
//   wait_exit(pid, limit_s)       its exit code as a shell reports it (a hang guard kills it)
//   slurp(path), wait_for_line(path)  a file's text; its first line once it is written
#pragma once

#include <dlfcn.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

namespace gpudoc::testing {

struct CliRun {
  int exit_code = -1;
  std::string output;
};

inline CliRun run_shell(const std::string& cmd) {
  CliRun r;
  std::FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// The gpudoc under test: the build's, or GPUDOC_TEST_GPUDOC when the tests run from a folder of
// binaries built elsewhere (tools/gpu_tests.sh --bin sets it, and GPUDOC_TEST_SOURCE_DIR below).
inline std::string gpudoc_binary() {
  const char* set = std::getenv("GPUDOC_TEST_GPUDOC");
  return set != nullptr && *set != '\0' ? std::string(set) : std::string(GPUDOC_BINARY_DIR) + "/src/cli/gpudoc";
}

inline CliRun run_gpudoc(const std::string& args) { return run_shell(gpudoc_binary() + " " + args + " 2>&1"); }

inline CliRun run_gpudoc_stdout(const std::string& args, const std::string& prefix = "") {
  return run_shell(prefix + " " + gpudoc_binary() + " " + args + " 2>/dev/null");
}

// Whether this machine has NVML (tests of the no-GPU paths skip where it does). The handle is left
// open on purpose: gpudoc never unloads a vendor library (see core/dynamic_library.hpp).
// The exit code as a shell reports it (128 + N for a signal), or -1 after `limit_s`: a hang guard,
// the process is then killed. The commands tested end within a few seconds.
inline int wait_exit(pid_t pid, double limit_s = 120) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit_s);
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// A file's whole text; empty when it cannot be read.
inline std::string slurp(const std::string& path) {
  std::ifstream f(path);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// The first line of a file a workload writes, waiting for it (empty after 20 s: a hang guard, the
// file normally comes within a second).
inline std::string wait_for_line(const std::string& path) {
  for (int i = 0; i < 2000; ++i) {
    std::ifstream f(path);
    std::string line;
    if (std::getline(f, line) && !line.empty()) return line;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return {};
}

inline bool nvml_present() { return dlopen("libnvidia-ml.so.1", RTLD_LAZY | RTLD_LOCAL) != nullptr; }

inline std::string data_file(const std::string& name) {
  const char* set = std::getenv("GPUDOC_TEST_SOURCE_DIR");
  return (set != nullptr && *set != '\0' ? std::string(set) : std::string(GPUDOC_SOURCE_DIR)) + "/tests/data/" + name;
}

}  // namespace gpudoc::testing
