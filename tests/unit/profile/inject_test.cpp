// libgpudoc_profile.so loaded as the CUDA driver loads it (dlopen + InitializeInjection), each case
// in a forked child because the library initializes once per process: it returns 1 and goes on
// whatever it meets, writes only where the parent's folder says, and never follows a planted link.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "support/temp_dir.hpp"

namespace {

// Runs InitializeInjection in a child with GPUDOC_PROFILE_DIR=dir (unset when empty), after
// `before(pid)`; returns the child's exit code: InitializeInjection's return value, or 100+ on failure.
template <class Before>
int run_injection(const std::string& dir, Before before) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (dir.empty())
      unsetenv("GPUDOC_PROFILE_DIR");
    else
      setenv("GPUDOC_PROFILE_DIR", dir.c_str(), 1);
    before(getpid());
    void* lib = dlopen(GPUDOC_PROFILE_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) _exit(100);
    auto* init = reinterpret_cast<int (*)()>(dlsym(lib, "InitializeInjection"));
    if (init == nullptr) _exit(101);
    const int r = init();
    std::exit(r);  // through atexit, as a program would
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 200 + WTERMSIG(status);
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(ProfileInjection, WithoutItsFolderItDoesNothingAndReturnsSuccess) {
  EXPECT_EQ(run_injection("", [](pid_t) {}), 1);
}

TEST(ProfileInjection, WritesAHeaderAndGoesOnWhateverCuptiSays) {
  gpudoc::testing::TempDir dir("gpudoc-inject");
  pid_t child = 0;
  ASSERT_EQ(run_injection(dir.str(), [&](pid_t p) { child = p; }), 1);
  // The child's pid is not known here; the folder holds exactly one records file.
  std::string found;
  for (const auto& e : std::filesystem::directory_iterator(dir.str())) found = e.path().string();
  ASSERT_FALSE(found.empty());
  const std::string text = slurp(found);
  EXPECT_EQ(text.rfind("H\tgpudoc-profile\t1\t", 0), 0u) << text;
  struct stat st {};
  ASSERT_EQ(stat(found.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  if (access("/dev/nvidia0", F_OK) != 0) {
    // No GPU here: CUPTI refuses, the library says so in a W line and the program goes on.
    EXPECT_NE(text.find("\nW\t"), std::string::npos) << text;
  }
}

TEST(ProfileInjection, NeverFollowsALinkPlantedAtItsFileName) {
  gpudoc::testing::TempDir dir("gpudoc-inject");
  const std::string target = dir.str() + "/target";
  { std::ofstream(target) << "precious\n"; }
  ASSERT_EQ(run_injection(dir.str(),
                          [&](pid_t p) {
                            const std::string link = dir.str() + "/records-" + std::to_string(p) + ".txt";
                            if (symlink(target.c_str(), link.c_str()) != 0) _exit(102);
                          }),
            1);
  EXPECT_EQ(slurp(target), "precious\n");
}

}  // namespace
