// libgpudoc_profile.so loaded as the CUDA driver loads it (dlopen + InitializeInjection), each case
// in a forked child because the library initializes once per process: it returns 1 and goes on
// whatever it meets, writes only where the parent's folder says, and never follows a planted link.
#include <cupti.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
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
  EXPECT_EQ(text.rfind("H\tgpudoc-profile\t3\t", 0), 0u) << text;
  // CUPTI's clock and CLOCK_MONOTONIC read together, for placing the energy readings.
  EXPECT_NE(text.find("\nT\t"), std::string::npos) << text;
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

// Another CUPTI client (torch.profiler, Nsight) subscribed first: the library says so, in the file and
// once on stderr, and the program runs on unprofiled.
TEST(ProfileInjection, AnotherCuptiClientIsNamedAndTheProgramGoesOn) {
  gpudoc::testing::TempDir dir("gpudoc-inject");
  ASSERT_EQ(run_injection(dir.str(),
                          [](pid_t) {
                            setenv("GPUDOC_PROFILE_CUPTI", GPUDOC_FAKE_CUPTI, 1);
                            setenv("GPUDOC_FAKE_CUPTI_HELD", "1", 1);
                          }),
            1);
  std::string found;
  for (const auto& e : std::filesystem::directory_iterator(dir.str())) found = e.path().string();
  const std::string text = slurp(found);
  EXPECT_NE(text.find("\nW\tanother CUPTI client (torch.profiler, Nsight Systems or Nsight Compute) already holds "
                      "CUPTI in this process; profile without it\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("\nK\t"), std::string::npos) << text;
}

// A file that loads but is not CUPTI: the library names every required function it lacks, in the
// list's order, and the program runs on unprofiled.
TEST(ProfileInjection, ALibraryThatIsNotCuptiListsWhatItLacks) {
  gpudoc::testing::TempDir dir("gpudoc-inject");
  ASSERT_EQ(run_injection(dir.str(), [](pid_t) { setenv("GPUDOC_PROFILE_CUPTI", "libm.so.6", 1); }), 1);
  std::string found;
  for (const auto& e : std::filesystem::directory_iterator(dir.str())) found = e.path().string();
  const std::string text = slurp(found);
  EXPECT_NE(text.find("W\tthe CUPTI library found lacks cuptiGetVersion, cuptiGetResultString, cuptiSubscribe, "
                      "cuptiActivityEnable, cuptiActivityRegisterCallbacks, cuptiActivityGetNextRecord, "
                      "cuptiActivityGetNumDroppedRecords, cuptiActivityFlushAll, cuptiGetCallbackName, "
                      "cuptiGetTimestamp, cuptiActivityEnableRuntimeApi, cuptiActivityEnableDriverApi; the program "
                      "runs unprofiled\n"),
            std::string::npos)
      << text;
}

// In a child, once the library has loaded the stand-in CUPTI: the stand-in's function `name`, or exit 251.
template <class Fn>
Fn fake_cupti_function(const char* name) {
  void* cupti = dlopen(GPUDOC_FAKE_CUPTI, RTLD_NOW | RTLD_NOLOAD);
  auto fn = cupti != nullptr ? reinterpret_cast<Fn>(dlsym(cupti, name)) : nullptr;
  if (fn == nullptr) _exit(251);
  return fn;
}

// In a child: the library initialised over the stand-in CUPTI in `dir` (the caller sets any other
// variable first); returns the stand-in's function `name`, or exits 250 / 251.
using Emit = int (*)(int);     // gpudoc_fake_cupti_emit_kernels
using Enabled = int (*)(int);  // gpudoc_fake_cupti_enabled
template <class Fn>
Fn init_over_fake_cupti(const std::string& dir, const char* name) {
  setenv("GPUDOC_PROFILE_DIR", dir.c_str(), 1);
  setenv("GPUDOC_PROFILE_CUPTI", GPUDOC_FAKE_CUPTI, 1);
  void* lib = dlopen(GPUDOC_PROFILE_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  auto* init = lib != nullptr ? reinterpret_cast<int (*)()>(dlsym(lib, "InitializeInjection")) : nullptr;
  if (init == nullptr || init() != 1) _exit(250);
  return fake_cupti_function<Fn>(name);
}

// What the library asks CUPTI for: by default kernels, copies, memsets, graph launches, NVTX markers and
// the API calls that matter, not CUPTI's SYNCHRONIZATION records (the analysis reads syncs from the API
// calls; those records cost a host-bound step about a quarter of its time on an H200);
// GPUDOC_PROFILE_KINDS replaces the list. The child exits with a bit per answer.
int enabled_mask(const std::string& dir, const char* kinds) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (kinds != nullptr) setenv("GPUDOC_PROFILE_KINDS", kinds, 1);
    const Enabled on = init_over_fake_cupti<Enabled>(dir, "gpudoc_fake_cupti_enabled");
    int mask = 0;
    const int kinds_in_order[] = {
        CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
        CUPTI_ACTIVITY_KIND_GRAPH_TRACE,       CUPTI_ACTIVITY_KIND_MARKER, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION};
    for (int i = 0; i < 6; ++i) mask |= on(kinds_in_order[i]) << i;
    mask |= (on(-1) > 0) << 6;  // runtime API calls
    _exit(mask);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(ProfileInjection, RecordsWhatTheAnalysisReadsAndNotCuptisSynchronizationRecords) {
  gpudoc::testing::TempDir dir("gpudoc-inject");
  // kernel, memcpy, memset, graph, marker, runtime API; no SYNCHRONIZATION (bit 5)
  EXPECT_EQ(enabled_mask(dir.str(), nullptr), 0b1011111);
  gpudoc::testing::TempDir only("gpudoc-inject");
  // kernels always; then exactly what the list names
  EXPECT_EQ(enabled_mask(only.str(), "sync,marker"), 0b0110001);
}

// --sample 0.4:0.2 (GPUDOC_PROFILE_SAMPLE=400:200): traced for 400 ms from the start, then everything
// but the NVTX markers is off for 200 ms — kernels, copies, API calls (by their kinds) — with CUPTI's
// buffers flushed (forced, as CUPTI asks before a kind is enabled again), then on again with the API
// calls filtered as at the start (enabling a kind resets its filters); the file says when (O, F, O).
// Each state is checked in the middle of its window, 100 ms or more from either end.
TEST(ProfileInjection, SamplingTurnsTracingOffButKeepsTheMarkersAndSaysWhen) {
  gpudoc::testing::TempDir dir("gpudoc-inject");
  const pid_t pid = fork();
  if (pid == 0) {
    setenv("GPUDOC_PROFILE_SAMPLE", "400:200", 1);
    const Enabled on = init_over_fake_cupti<Enabled>(dir.str(), "gpudoc_fake_cupti_enabled");
    // traced: kernels, and of the API calls only cudaLaunchKernel (the one the stand-in names)
    auto traced = [&] { return on(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == 1 && on(-1) == 1 && on(-2) == 0; };
    if (!traced()) _exit(102);
    usleep(500'000);  // 500 ms: the off window
    if (on(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != 0 || on(CUPTI_ACTIVITY_KIND_MEMCPY) != 0) _exit(103);
    if (on(-1) != 0) _exit(104);                          // no API call recorded
    if (on(-3) != 1) _exit(105);                          // a forced flush after disabling
    if (on(CUPTI_ACTIVITY_KIND_MARKER) != 1) _exit(106);  // steps still timed
    usleep(300'000);                                      // 800 ms: the second window
    if (!traced()) _exit(107);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  std::string found;
  for (const auto& e : std::filesystem::directory_iterator(dir.str())) found = e.path().string();
  const std::string text = slurp(found);
  const auto o = text.find("\nO\t"), f = text.find("\nF\t", o + 1), o2 = text.find("\nO\t", f + 1);
  ASSERT_NE(o, std::string::npos) << text;
  ASSERT_NE(f, std::string::npos) << text;
  ASSERT_NE(o2, std::string::npos) << text;
  EXPECT_EQ(text.find("\nF\t", o2 + 1), std::string::npos);  // not off again yet
}

// Counts the lines of `text` that start with `prefix`.
long long count_lines(const std::string& text, const std::string& prefix) {
  std::istringstream lines(text);
  std::string line;
  long long n = 0;
  while (std::getline(lines, line)) n += line.rfind(prefix, 0) == 0 ? 1 : 0;
  return n;
}

// A program that crashes (abort) keeps every record older than the library's flush period: full
// buffers are written as CUPTI hands them over, a partly filled one after the library's own flush
// (CUPTI's periodic flush returns only full buffers); nothing waits for an exit handler.
TEST(ProfileInjection, ACrashingProgramLeavesTheRecordsWrittenBeforeIt) {
  gpudoc::testing::TempDir dir("gpudoc-inject");
  const pid_t pid = fork();
  if (pid == 0) {
    const Emit emit = init_over_fake_cupti<Emit>(dir.str(), "gpudoc_fake_cupti_emit_kernels");
    if (emit(3000) != 3000) _exit(102);  // one buffer, partly filled: CUPTI would keep it
    usleep(800'000);                     // the library's thread flushes every 500 ms
    signal(SIGABRT, SIG_DFL);
    abort();
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGABRT);
  std::string found;
  for (const auto& e : std::filesystem::directory_iterator(dir.str())) found = e.path().string();
  const std::string text = slurp(found);
  EXPECT_EQ(count_lines(text, "K\t"), 3000);
  EXPECT_EQ(count_lines(text, "E\t"), 0);  // not a clean exit, and the reader will say so
}

// A program that forks: the child (whose CUDA is unusable until it execs) writes nothing into the
// parent's file; the parent's records before and after the fork are all there, and its clean exit.
TEST(ProfileInjection, AForkedChildWritesNothingAndTheParentsRecordsStayWhole) {
  gpudoc::testing::TempDir dir("gpudoc-inject");
  const pid_t pid = fork();
  if (pid == 0) {
    const Emit emit = init_over_fake_cupti<Emit>(dir.str(), "gpudoc_fake_cupti_emit_kernels");
    if (emit(100) != 100) _exit(102);
    const pid_t child = fork();
    if (child == 0) {
      emit(50);  // CUPTI in the child hands records over; the library must not write them
      fake_cupti_function<CUptiResult (*)(uint32_t)>("cuptiActivityFlushAll")(0);
      _exit(0);
    }
    int st = 0;
    waitpid(child, &st, 0);
    if (emit(200) != 200) _exit(103);
    std::exit(0);  // through atexit: the E line
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  std::size_t files = 0;
  std::string found;
  for (const auto& e : std::filesystem::directory_iterator(dir.str())) found = e.path().string(), ++files;
  EXPECT_EQ(files, 1u);
  const std::string text = slurp(found);
  EXPECT_EQ(count_lines(text, "K\t"), 300);
  EXPECT_EQ(count_lines(text, "E\t"), 1);
}

// A program whose records fill the file's bound and which then dies by a signal (as Python does on
// SIGINT: C exit handlers never run): the file still says how many records were left out. Over the
// fake CUPTI, 40 000 kernel records against a 1 MiB bound.
TEST(ProfileInjection, RecordsOverTheFilesBoundAreCountedEvenWhenTheProgramDiesByASignal) {
  gpudoc::testing::TempDir dir("gpudoc-inject");
  constexpr int kKernels = 40'000;
  const pid_t pid = fork();
  if (pid == 0) {
    setenv("GPUDOC_PROFILE_MAX_MIB", "1", 1);
    const Emit emit = init_over_fake_cupti<Emit>(dir.str(), "gpudoc_fake_cupti_emit_kernels");
    int sent = 0;
    for (int i = 0; i < 8; ++i) sent += emit(kKernels / 8);
    if (sent != kKernels) _exit(103);
    usleep(800'000);  // the last, partly filled buffer: handed over by the library's flush
    signal(SIGINT, SIG_DFL);
    raise(SIGINT);
    _exit(104);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit " << WEXITSTATUS(status);
  std::string found;
  for (const auto& e : std::filesystem::directory_iterator(dir.str())) found = e.path().string();
  const std::string text = slurp(found);
  std::istringstream lines(text);
  std::string line;
  long long kernels = 0, over = 0;
  bool end = false;
  while (std::getline(lines, line)) {
    if (line.starts_with("K\t")) ++kernels;
    if (line.starts_with("X\tLIMIT\t")) over += std::stoll(line.substr(8));
    if (line.starts_with("E\t")) end = true;
  }
  EXPECT_FALSE(end);                                  // no exit handler ran
  EXPECT_GT(kernels, 1000);                           // written up to the bound
  EXPECT_LE(text.size(), (1u << 20) + (256u << 10));  // the bound, and what was in flight when it was reached
  EXPECT_GT(over, 0);
  EXPECT_EQ(kernels + over, kKernels);  // every record written or counted
}

}  // namespace
