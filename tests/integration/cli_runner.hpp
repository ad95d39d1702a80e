// Runs the built gpudoc binary and captures its exit code and output (stdout and stderr together).
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace gpudoc::testing {

struct CliRun {
  int exit_code = -1;
  std::string output;
};

inline CliRun run_gpudoc(const std::string& args) {
  std::string cmd = std::string(GPUDOC_BINARY_DIR) + "/src/cli/gpudoc " + args + " 2>&1";
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

inline std::string data_file(const std::string& name) { return std::string(GPUDOC_SOURCE_DIR) + "/tests/data/" + name; }

}  // namespace gpudoc::testing
