// The guard's session end to end without a GPU: the fake backend's scripted temperatures, the real
// job channel, and real jobs (tests/support/guard_jobs/*.py with python/gpudoc's client).
#include "guard/session.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.hpp"
#include "core/process.hpp"
#include "gpu/fake/fake_backend.hpp"
#include "support/temp_dir.hpp"

namespace gpudoc::guard {
namespace {

using nlohmann::json;

const std::string kJobs = std::string(GPUDOC_SOURCE_DIR) + "/tests/support/guard_jobs/";

// The fake H200's limits: max operating 87, slowdown 89, shutdown 95 °C. The default policy:
// level 1 at a forecast >= 85 (clears < 81), level 2 >= 88 (clears < 83), level 3 >= 92.
using Profile = std::vector<std::pair<double, double>>;  // (from second, die temperature)

double temperature_at(const Profile& p, double t) {
  double v = p.front().second;
  for (const auto& [from, temp] : p)
    if (t >= from) v = temp;
  return v;
}

struct Outcome {
  core::Result<SessionResult> result = core::Error(core::ErrorKind::kInternal, "not run");
  std::vector<json> events;
  [[nodiscard]] std::vector<json> of(const std::string& type) const {
    std::vector<json> out;
    for (const json& e : events)
      if (e["type"] == type) out.push_back(e);
    return out;
  }
};

class GuardSession : public ::testing::Test {
 protected:
  void SetUp() override { ::setenv("PYTHONPATH", (std::string(GPUDOC_SOURCE_DIR) + "/python").c_str(), 1); }

  // The profile's times count from the moment the job joined (its hello), so that a loaded machine
  // that starts Python slowly still sees every step of it; before, the first temperature holds.
  void script(const Profile& profile) {
    fake_.set_value_fn([this, profile](int, gpu::Metric m, double t) {
      switch (m) {
        case gpu::Metric::kGpuTemperatureCelsius: {
          if (!ready_file_.empty() && joined_at_.load() < 0 && std::filesystem::exists(ready_file_)) joined_at_ = t;
          const double joined = joined_at_.load();
          return joined < 0 ? profile.front().second : temperature_at(profile, t - joined);
        }
        case gpu::Metric::kMemoryTemperatureCelsius: return 60.0;
        case gpu::Metric::kPowerWatts: return 650.0;
        case gpu::Metric::kMemoryUsedBytes: return 20.0 * (1 << 30);
        default: return 50.0;
      }
    });
  }

  Outcome run(SessionOptions o, const std::function<void(ChannelServer&)>& beside = {}) {
    Outcome r;
    auto channel = ChannelServer::open(clock_);
    EXPECT_TRUE(channel) << channel.error().message();
    if (!channel) return r;
    std::thread other;
    if (beside) other = std::thread([&] { beside(*channel); });
    std::atomic<int> stops{0};
    r.result = run_session(fake_, clock_, *channel, o, stops, [&](const json& e) {
      if (e["type"] == "job_joined" && (e.value("connected", false) || (!origin_on_hello_ && ready_file_.empty())) &&
          joined_at_.load() < 0) {
        joined_at_ = std::chrono::duration<double>(clock_.now() - created_).count();
        if (on_join_) on_join_();
      }
      r.events.push_back(e);
    });
    if (other.joinable()) other.join();
    return r;
  }

  static SessionOptions options(std::vector<std::string> command) {
    SessionOptions o;
    o.policy = default_policy();
    o.command = std::move(command);
    o.real_gpus = false;
    return o;
  }

  core::SystemClock clock_;
  core::MonoTime created_ = clock_.now();  // the fake's time 0 (it is made right after)
  gpu::FakeBackend fake_{clock_, 1};
  std::atomic<double> joined_at_{-1};  // the job's hello, in the fake's seconds; -1: not yet
  std::function<void()> on_join_;      // called once, when the job joins
  bool origin_on_hello_ = true;        // false: a job that never connects joins when it is spawned
  std::string ready_file_;             // set: such a job joins when this file appears (its handlers are in)
};

TEST_F(GuardSession, LevelsOneTwoThreeReachTheJobAndPauseAndResumeNoncriticalWork) {
  script({{0, 70}, {1.5, 86}, {3.0, 88.5}, {4.5, 75}, {6.0, 93}});
  // A co-located "non-critical" process: a unique word in its command line names it.
  const std::string tag = "gpudoc_test_noncritical_" + std::to_string(::getpid());
  auto noncritical = core::ChildProcess::spawn({"python3", "-c", "import time; time.sleep(60)", tag});
  ASSERT_TRUE(noncritical);
  SessionOptions o = options({"python3", kJobs + "listening_job.py", "--max-s", "30"});
  auto policy = parse_policy("noncritical = re:.*" + tag + ".*\n", "test.policy");
  ASSERT_TRUE(policy) << policy.error().message();
  o.policy = *policy;
  Outcome r = run(o);
  noncritical->signal(SIGKILL);
  noncritical->wait();
  ASSERT_TRUE(r.result) << r.result.error().message();
  EXPECT_EQ(r.result->end_reason, "command_exited");
  EXPECT_EQ(r.result->exit_code, 0) << "the job exits 0 only when told to stop";
  EXPECT_EQ(r.result->max_level, 3);

  std::vector<int> levels;
  for (const json& d : r.of("decision")) levels.push_back(d["level"].get<int>());
  EXPECT_EQ(levels, (std::vector<int>{1, 2, 0, 3}));

  std::vector<std::string> advised;
  for (const json& a : r.of("advice")) advised.push_back(a["action"].get<std::string>());
  EXPECT_EQ(advised, (std::vector<std::string>{"shrink_batch", "checkpoint_now", "pause_noncritical",
                                               "resume_noncritical", "checkpoint_now", "stop"}));
  EXPECT_DOUBLE_EQ(r.of("advice").at(0)["factor"].get<double>(), 0.75);

  const auto acks = r.of("ack");
  ASSERT_EQ(acks.size(), advised.size());
  EXPECT_EQ(acks[0]["details"]["batch_size"], 48);
  for (const json& a : acks) {
    EXPECT_EQ(a["status"], "done");
    // The H200 figure (<= 300 ms) is measured on the machine (tools/check_guard_e2e.py); here the
    // latency is only recorded, and bounded as a hang guard: normally well under 1 s; 10x+ margin.
    EXPECT_GE(a["latency_ms"].get<double>(), 0) << a.dump();
    EXPECT_LT(a["latency_ms"].get<double>(), 10000) << a.dump();  // hang guard (above)
  }

  std::vector<std::string> sent;
  for (const json& s : r.of("signal"))
    if (s["pid"] == noncritical->pid()) sent.push_back(s["signal"].get<std::string>() + (s["ok"] ? "" : " failed"));
  EXPECT_EQ(sent, (std::vector<std::string>{"SIGSTOP", "SIGCONT"}));
}

TEST_F(GuardSession, AJobThatDiesEndsTheGuardWithItsExitCode) {
  script({{0, 70}});
  Outcome r = run(options({"python3", kJobs + "listening_job.py", "--exit-after", "1"}));
  ASSERT_TRUE(r.result);
  EXPECT_EQ(r.result->exit_code, 3);
  ASSERT_EQ(r.of("job_left").size(), 1u);
  EXPECT_EQ(r.of("end").at(0)["reason"], "command_exited");
}

TEST_F(GuardSession, TheLogNamesAConnectedJobsRank) {
  script({{0, 70}});
  ::setenv("RANK", "5", 1);  // as torchrun sets it for the job; the client puts it in its hello
  Outcome r = run(options({"python3", kJobs + "listening_job.py", "--exit-after", "1"}));
  ::unsetenv("RANK");
  ASSERT_TRUE(r.result);
  const auto joined = r.of("job_joined");
  const auto connected = std::find_if(joined.begin(), joined.end(), [](const json& e) { return e["connected"]; });
  ASSERT_NE(connected, joined.end());
  EXPECT_EQ(connected->value("rank", -1), 5) << connected->dump();
}

TEST_F(GuardSession, AJobThatDoesNotListenGetsOnlyTheSignalsItOptedInTo) {
  // Level 3 (checkpoint_now, stop) once the job has had time to install its SIGTERM handler.
  origin_on_hello_ = false;  // it never says hello: the script starts once its SIGTERM handler is in
  gpudoc::testing::TempDir dir("gpudoc-guard-signal-job");
  ready_file_ = dir.file("ready");
  script({{0, 70}, {1.5, 93}});
  SessionOptions o = options({"python3", kJobs + "signal_job.py", "20", ready_file_});
  o.signal_opt_in = {Action::kStop};  // SIGUSR1 would kill this job: it opted in to stop alone
  Outcome r = run(o);
  ASSERT_TRUE(r.result);
  EXPECT_EQ(r.result->exit_code, 0) << "SIGTERM makes the job exit 0";
  const auto signals = r.of("signal");
  ASSERT_EQ(signals.size(), 1u);
  EXPECT_EQ(signals[0]["signal"], "SIGTERM");
  EXPECT_EQ(signals[0]["ok"], true);
  bool checkpoint_not_sent = false;
  for (const json& n : r.of("not_sent")) checkpoint_not_sent |= n["action"] == "checkpoint_now";
  EXPECT_TRUE(checkpoint_not_sent);
}

TEST_F(GuardSession, ALostGpuIsFatalAndOnlySuggestsAReset) {
  script({{0, 70}});
  on_join_ = [this] { fake_.lose_gpu(0, clock_.now() + std::chrono::milliseconds(1500)); };
  Outcome r = run(options({"python3", kJobs + "listening_job.py", "--max-s", "20"}));
  ASSERT_TRUE(r.result);
  EXPECT_EQ(r.result->exit_code, 0);
  const auto decisions = r.of("decision");
  ASSERT_FALSE(decisions.empty());
  EXPECT_EQ(decisions.back()["level"], 3);
  EXPECT_EQ(decisions.back()["fatal"], true);
  EXPECT_NE(decisions.back()["suggestion"].get<std::string>().find("never resets"), std::string::npos);
}

TEST_F(GuardSession, DryRunDecidesButSendsNothing) {
  script({{0, 93}});
  SessionOptions o = options({"python3", kJobs + "listening_job.py", "--max-s", "2"});
  o.dry_run = true;
  Outcome r = run(o);
  ASSERT_TRUE(r.result);
  EXPECT_EQ(r.result->exit_code, 4) << "never told to stop";
  ASSERT_FALSE(r.of("decision").empty());
  EXPECT_EQ(r.of("decision")[0]["dry_run"], true);
  EXPECT_TRUE(r.of("advice").empty());
  EXPECT_TRUE(r.of("signal").empty());
}

TEST_F(GuardSession, GarbageFromAnotherClientNeverStopsTheGuard) {
  script({{0, 70}, {2.0, 93}});
  auto garbage = [](ChannelServer& channel) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", channel.path().c_str());
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
      const std::string junk = "not json\n{\"v\":1}\n[1,2]\n\xff\xfe\n{\"v\":9,\"type\":\"hello\"}\n";
      for (int i = 0; i < 20; ++i) (void)!::write(fd, junk.data(), junk.size());
    }
    ::close(fd);
  };
  Outcome r = run(options({"python3", kJobs + "listening_job.py", "--max-s", "20"}), garbage);
  ASSERT_TRUE(r.result);
  EXPECT_EQ(r.result->exit_code, 0) << "the real job still got its stop";
  EXPECT_FALSE(r.of("protocol_error").empty());
}

// A connection to the guard's socket (-1 when it cannot be made).
int connect_to(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

std::size_t open_files() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

TEST_F(GuardSession, JobsThatComeAndGoLeaveNoFileBehind) {
  // 300 jobs say hello, get their welcome and leave (half with a bye, half by closing): each had a
  // pidfd opened for it; the guard's open files are the same after 300 as after 20.
  script({{0, 70}});
  origin_on_hello_ = false;
  gpudoc::testing::TempDir dir("gpudoc-guard-cycles");
  const std::string done_file = dir.file("done");  // the job ends once it exists (or after 120 s)
  std::size_t after_20 = 0, after_300 = 0;
  int welcomed = 0;
  auto cycles = [&](ChannelServer& channel) {
    const std::string hello =
        json{{"v", 1}, {"type", "hello"}, {"pid", ::getpid()}, {"name", "worker"}, {"capabilities", {"stop"}}}.dump() +
        "\n";
    const std::string bye = json{{"v", 1}, {"type", "bye"}, {"reason", "done"}}.dump() + "\n";
    for (int i = 1; i <= 300; ++i) {
      const int fd = connect_to(channel.path());
      if (fd < 0) continue;
      timeval tv{.tv_sec = 10, .tv_usec = 0};  // hang guard
      (void)::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      (void)!::write(fd, hello.data(), hello.size());
      char buf[4096];
      const bool welcome = ::recv(fd, buf, sizeof buf, 0) > 0;
      if (i % 2 == 0) (void)!::write(fd, bye.data(), bye.size());
      ::close(fd);
      if (!welcome) break;
      ++welcomed;
      if (i == 20 || i == 300) {
        std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the guard sees the last ones leave
        (i == 20 ? after_20 : after_300) = open_files();
      }
    }
    std::ofstream(done_file) << "done\n";
  };
  SessionOptions o = options({"python3", "-c",
                              "import os, sys, time\nt = time.time()\n"
                              "while not os.path.exists(sys.argv[1]) and time.time() - t < 120: time.sleep(0.05)\n",
                              done_file});
  o.loop_period = std::chrono::milliseconds(10);  // a welcome each loop: 300 in a few seconds
  Outcome r = run(o, cycles);
  ASSERT_TRUE(r.result) << r.result.error().message();
  EXPECT_EQ(welcomed, 300);
  EXPECT_EQ(r.of("job_left").size(), 300u);
  ASSERT_GT(after_20, 0u);
  EXPECT_LE(after_300, after_20 + 2) << "open files grew from " << after_20 << " to " << after_300;
}

TEST_F(GuardSession, AFloodOfGarbageIsLoggedAtMostTwentyTimesAMinute) {
  script({{0, 70}});
  origin_on_hello_ = false;
  auto flood = [](ChannelServer& channel) {
    for (int i = 0; i < 100; ++i) {
      const int fd = connect_to(channel.path());
      if (fd < 0) continue;
      (void)!::write(fd, "garbage\n", 8);
      ::close(fd);
    }
  };
  Outcome r = run(options({"python3", "-c", "import time; time.sleep(3)"}), flood);
  ASSERT_TRUE(r.result) << r.result.error().message();
  EXPECT_EQ(r.of("protocol_error").size(), 20u);
  const auto suppressed = r.of("protocol_errors_suppressed");
  ASSERT_EQ(suppressed.size(), 1u);
  EXPECT_EQ(suppressed[0]["count"], 80);
}

TEST(GuardSessionSetup, ReadsOnlyWhatItDecidesOnAndSaysHowItEnded) {
  const auto periods = sampler_periods();
  for (auto g : {gpu::MetricGroup::kUtilization, gpu::MetricGroup::kGpm, gpu::MetricGroup::kEnergy})
    EXPECT_EQ(periods[gpu::index(g)].count(), 0) << gpu::index(g);
  EXPECT_GT(periods[gpu::index(gpu::MetricGroup::kFast)].count(), 0);
  SessionResult r;
  r.end_reason = "command_exited";
  r.exit_code = 3;
  r.decisions = 2;
  r.max_level = 1;
  const auto j = to_json(r);
  EXPECT_EQ(j["end_reason"], "command_exited");
  EXPECT_EQ(j["exit_code"], 3);
  EXPECT_EQ(j["decisions"], 2);
  EXPECT_EQ(j["max_level"], 1);
  r.exit_code.reset();
  EXPECT_TRUE(to_json(r)["exit_code"].is_null());
}

}  // namespace
}  // namespace gpudoc::guard
