// core/host: the host name every record carries is the kernel's, never empty.
#include "core/host.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

namespace gpudoc::core {
namespace {

TEST(HostName, IsTheKernelsName) {
  char buf[256] = {};
  ASSERT_EQ(gethostname(buf, sizeof buf - 1), 0);
  const std::string expected = buf[0] == '\0' ? "unknown" : buf;
  EXPECT_EQ(host_name(), expected);
  EXPECT_FALSE(host_name().empty());
}

// What /proc shows for the calling thread (the name top -H and ps -L print).
std::string own_thread_name() {
  std::ifstream f("/proc/self/task/" + std::to_string(::gettid()) + "/comm");
  std::string name;
  std::getline(f, name);
  return name;
}

TEST(NameThisThread, ShowsInProcAndIsCutTo15Bytes) {
  std::string short_name, long_name;
  std::thread([&] {
    name_this_thread("gpudoc-gpu3");
    short_name = own_thread_name();
    name_this_thread("a-name-longer-than-fifteen-bytes");
    long_name = own_thread_name();
  }).join();
  EXPECT_EQ(short_name, "gpudoc-gpu3");
  EXPECT_EQ(long_name, "a-name-longer-t");  // the kernel's limit, cut rather than refused
}

// The test program itself lies in the folder executable_dir names.
TEST(ExecutableDir, HoldsTheRunningProgram) {
  const std::string dir = executable_dir();
  ASSERT_FALSE(dir.empty());
  EXPECT_TRUE(std::filesystem::path(dir).is_absolute()) << dir;
  EXPECT_TRUE(std::filesystem::is_regular_file(std::filesystem::path(dir) / program_invocation_short_name)) << dir;
}

}  // namespace
}  // namespace gpudoc::core
