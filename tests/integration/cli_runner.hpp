// Runs the built gpudoc binary (or any shell command line) and captures its exit code and output.
//   run_gpudoc(args)              stdout and stderr together, for text reports and messages
//   run_gpudoc_stdout(args, pre)  stdout only (stderr discarded), for JSON documents; `pre` is put
//                                 before the command line ("cd / &&", "GPUDOC_X=1")
//   run_shell(cmd)                a whole shell command line, its stdout
#pragma once

#include <dlfcn.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>

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

inline std::string gpudoc_binary() { return std::string(GPUDOC_BINARY_DIR) + "/src/cli/gpudoc"; }

inline CliRun run_gpudoc(const std::string& args) { return run_shell(gpudoc_binary() + " " + args + " 2>&1"); }

inline CliRun run_gpudoc_stdout(const std::string& args, const std::string& prefix = "") {
  return run_shell(prefix + " " + gpudoc_binary() + " " + args + " 2>/dev/null");
}

// Whether this machine has NVML (tests of the no-GPU paths skip where it does). The handle is left
// open on purpose: gpudoc never unloads a vendor library (see core/dynamic_library.hpp).
inline bool nvml_present() { return dlopen("libnvidia-ml.so.1", RTLD_LAZY | RTLD_LOCAL) != nullptr; }

inline std::string data_file(const std::string& name) { return std::string(GPUDOC_SOURCE_DIR) + "/tests/data/" + name; }

}  // namespace gpudoc::testing
