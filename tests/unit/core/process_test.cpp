// core::ChildProcess: exit codes as a shell reports them, and stdout sent to stderr on request.
#include "core/process.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace gpudoc::core {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Runs `argv` with gpudoc's fds 1 and 2 pointed at two files; returns {stdout, stderr}.
std::pair<std::string, std::string> run_captured(const std::vector<std::string>& argv, bool stdout_to_stderr, int* code) {
  // Unique per process: ctest runs each test in its own process, several at once.
  const std::string stem = ::testing::TempDir() + "/gpudoc_proc_" + std::to_string(getpid());
  std::string out_path = stem + "_out.txt";
  std::string err_path = stem + "_err.txt";
  std::fflush(stdout);
  std::fflush(stderr);
  int saved_out = dup(STDOUT_FILENO), saved_err = dup(STDERR_FILENO);
  FILE* fo = std::fopen(out_path.c_str(), "w");
  FILE* fe = std::fopen(err_path.c_str(), "w");
  dup2(fileno(fo), STDOUT_FILENO);
  dup2(fileno(fe), STDERR_FILENO);
  auto c = ChildProcess::spawn(argv, {}, stdout_to_stderr);
  if (c) c->wait();
  dup2(saved_out, STDOUT_FILENO);
  dup2(saved_err, STDERR_FILENO);
  close(saved_out);
  close(saved_err);
  std::fclose(fo);
  std::fclose(fe);
  *code = c ? c->exit_code_for_shell() : -1;
  return {slurp(out_path), slurp(err_path)};
}

TEST(ChildProcess, OutputUntouchedByDefault) {
  int code = 0;
  auto [out, err] = run_captured({"sh", "-c", "echo to-out; echo to-err >&2; exit 7"}, false, &code);
  EXPECT_EQ(code, 7);
  EXPECT_EQ(out, "to-out\n");
  EXPECT_EQ(err, "to-err\n");
}

TEST(ChildProcess, StdoutToStderrKeepsGpudocsStdoutClean) {
  int code = 0;
  auto [out, err] = run_captured({"sh", "-c", "echo to-out; echo to-err >&2"}, true, &code);
  EXPECT_EQ(code, 0);
  EXPECT_EQ(out, "");
  EXPECT_NE(err.find("to-out"), std::string::npos);
  EXPECT_NE(err.find("to-err"), std::string::npos);
}

TEST(ChildProcess, MissingCommandIsBadInputNamingIt) {
  auto c = ChildProcess::spawn({"gpudoc-no-such-command-xyz"});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().kind(), ErrorKind::kBadInput);
  EXPECT_NE(c.error().message().find("gpudoc-no-such-command-xyz"), std::string::npos);
}

}  // namespace
}  // namespace gpudoc::core
