// The real Python client (python/gpudoc/guard.py, standard library only) against the real server:
// the two ends of docs/guard-protocol.md, written apart, must agree.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <string>
#include <vector>

#include "channel_client.hpp"
#include "core/process.hpp"
#include "guard/channel.hpp"

namespace gpudoc::guard {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;
using testing::count_kind;
using testing::Events;
using testing::first_of;
using testing::Kind;
using testing::pump;
using testing::pump_until;

// The job waits for one advice, acks it, reports, and says bye. Exit codes name what went wrong.
constexpr const char* kAckingJob = R"(
import sys, time
from gpudoc import Guard
g = Guard(name="interop", gpus=[0, "GPU-abc"])
if not g.connected: sys.exit(10)
deadline = time.monotonic() + 20
advice = []
while not advice and time.monotonic() < deadline:
    advice = g.poll()
    time.sleep(0.01)
if not advice: sys.exit(11)
a = advice[0]
if (a.id, a.action, a.factor, a.level) != ("j1-1", "shrink_batch", 0.75, 1): sys.exit(12)
if not g.welcome or g.welcome.get("job") != "j1": sys.exit(13)
if not g.ack(a, batch_size=48, accumulation_steps=6): sys.exit(14)
if not g.report(step=1200, samples_per_s=4312.5): sys.exit(15)
g.close("done")
if g.errors_received or g.garbage_lines or g.dropped_sends:
    print(g.errors_received, g.garbage_lines, g.dropped_sends, file=sys.stderr)
    sys.exit(16)
)";

// The job waits until the guard has said bye; then every method is a no-op.
constexpr const char* kLeftJob = R"(
import sys, time
from gpudoc import Guard
g = Guard(name="left")
if g.lines_sent != 1: sys.exit(20)  # its hello went out (the bye may have come already)
deadline = time.monotonic() + 20
while g.connected and time.monotonic() < deadline:
    time.sleep(0.01)
if g.connected: sys.exit(21)
if g.report(step=1): sys.exit(22)
g.close()
)";

class PythonClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = ChannelServer::open(clock_);
    ASSERT_TRUE(s) << s.error().message();
    server_.emplace(std::move(s).value());
  }

  core::Result<core::ChildProcess> start(const char* script, const std::string& rank = "") {
    // A rank variable of the test's own environment would reach the job: the job's is set or empty.
    return core::ChildProcess::spawn(
        {GPUDOC_PYTHON3, "-c", script},
        {std::string(kSocketEnv) + "=" + server_->path(), "PYTHONPATH=" GPUDOC_SOURCE_DIR "/python",
         "PYTHONDONTWRITEBYTECODE=1", "RANK=" + rank, "OMPI_COMM_WORLD_RANK=", "SLURM_PROCID=", "LOCAL_RANK="});
  }

  // The child's exit code; kills it after 30 s.
  static int finish(core::ChildProcess& child) {
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (!child.poll() && std::chrono::steady_clock::now() < deadline) ::usleep(10000);
    if (!child.exited()) {
      child.signal(SIGKILL);
      child.wait();
    }
    return child.exit_code_for_shell();
  }

  core::SystemClock clock_;
  std::optional<ChannelServer> server_;
};

TEST_F(PythonClientTest, HelloAdviceAckReportBye) {
  auto child = start(kAckingJob);
  ASSERT_TRUE(child) << child.error().message();
  Events events = pump_until(*server_, Kind::kHello, 1, 20s);
  const ChannelEvent* hello = first_of(events, Kind::kHello);
  ASSERT_NE(hello, nullptr) << "exit " << finish(*child);
  ASSERT_TRUE(hello->hello);
  EXPECT_EQ(hello->hello->pid, child->pid());
  EXPECT_EQ(hello->hello->claimed_pid, child->pid());
  EXPECT_TRUE(hello->error.empty()) << hello->error;
  EXPECT_EQ(hello->hello->name, "interop");
  EXPECT_EQ(hello->hello->gpus, (std::vector<std::string>{"0", "GPU-abc"}));
  EXPECT_EQ(hello->hello->capabilities.size(), 5u);
  EXPECT_TRUE(hello->hello->signals.empty());
  EXPECT_EQ(hello->hello->client.rfind("gpudoc-python ", 0), 0u) << hello->hello->client;
  const int conn = hello->conn;
  ASSERT_TRUE(server_->send(
      conn, {{"type", "welcome"}, {"guard_pid", ::getpid()}, {"job", "j1"}, {"gpus", {"GPU-abc"}}, {"horizon_s", 5}}));
  ASSERT_TRUE(server_->send(conn, {{"type", "advice"},
                                   {"id", "j1-1"},
                                   {"level", 1},
                                   {"action", "shrink_batch"},
                                   {"factor", 0.75},
                                   {"gpu", "GPU-abc"},
                                   {"reason", {{"metric", "gpu_temperature_celsius"}, {"now", 83.0}}},
                                   {"message", "GPU 0 is forecast at 88.4 °C in 5 s"}}));
  events = pump_until(*server_, Kind::kClosed, 1, 20s);
  const int code = finish(*child);
  EXPECT_EQ(code, 0);
  const ChannelEvent* ack = first_of(events, Kind::kAck);
  ASSERT_NE(ack, nullptr);
  EXPECT_EQ(ack->message["id"], "j1-1");
  EXPECT_EQ(ack->message["status"], "done");
  EXPECT_EQ(ack->message["batch_size"], 48);
  const ChannelEvent* report = first_of(events, Kind::kReport);
  ASSERT_NE(report, nullptr);
  EXPECT_EQ(report->message["figures"]["step"], 1200);
  const ChannelEvent* bye = first_of(events, Kind::kBye);
  ASSERT_NE(bye, nullptr);
  EXPECT_EQ(bye->message["reason"], "done");
  EXPECT_EQ(bye->message["dropped"], 0);
  EXPECT_EQ(count_kind(events, Kind::kClosed), 1u);
  EXPECT_EQ(count_kind(events, Kind::kProtocolError), 0u) << first_of(events, Kind::kProtocolError)->error;
  EXPECT_EQ(server_->stats().bad_lines, 0u);
  EXPECT_EQ(server_->stats().dropped_out, 0u);
}

TEST_F(PythonClientTest, TheJobsRankFromItsEnvironmentReachesTheGuard) {
  // RANK=3, as torchrun sets it: in the hello (JobHello::rank) and in the report's figures.
  auto child = start(kAckingJob, "3");
  ASSERT_TRUE(child) << child.error().message();
  Events events = pump_until(*server_, Kind::kHello, 1, 20s);
  const ChannelEvent* hello = first_of(events, Kind::kHello);
  ASSERT_NE(hello, nullptr) << "exit " << finish(*child);
  ASSERT_TRUE(hello->hello);
  EXPECT_EQ(hello->hello->rank, 3);
  const int conn = hello->conn;
  ASSERT_TRUE(server_->send(
      conn, {{"type", "welcome"}, {"guard_pid", ::getpid()}, {"job", "j1"}, {"gpus", {"GPU-abc"}}, {"horizon_s", 5}}));
  ASSERT_TRUE(server_->send(
      conn, {{"type", "advice"}, {"id", "j1-1"}, {"level", 1}, {"action", "shrink_batch"}, {"factor", 0.75}}));
  events = pump_until(*server_, Kind::kClosed, 1, 20s);
  EXPECT_EQ(finish(*child), 0);
  const ChannelEvent* report = first_of(events, Kind::kReport);
  ASSERT_NE(report, nullptr);
  EXPECT_EQ(report->message["figures"]["rank"], 3);
}

TEST_F(PythonClientTest, TheGuardsByeTurnsTheClientIntoANoOp) {
  auto child = start(kLeftJob);
  ASSERT_TRUE(child) << child.error().message();
  const Events events = pump_until(*server_, Kind::kHello, 1, 20s);
  const ChannelEvent* hello = first_of(events, Kind::kHello);
  ASSERT_NE(hello, nullptr) << "exit " << finish(*child);
  server_->close(hello->conn, "guard_stopping");
  EXPECT_EQ(finish(*child), 0);
  const Events after = pump(
      *server_, [](const Events& e) { return count_kind(e, Kind::kClosed) > 0; }, 2s);
  EXPECT_EQ(count_kind(after, Kind::kClosed), 1u);
  EXPECT_EQ(count_kind(after, Kind::kProtocolError), 0u);
}

}  // namespace
}  // namespace gpudoc::guard
