#include "guard/channel.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "channel_client.hpp"
#include "guard/pidfd.hpp"
#include "support/temp_dir.hpp"

namespace gpudoc::guard {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;
using testing::code_of;
using testing::count_kind;
using testing::Events;
using testing::first_of;
using testing::Kind;
using testing::pump;
using testing::pump_until;
using testing::RawClient;

std::string hello_line(int pid) {
  return json{{"v", 1},
              {"type", "hello"},
              {"pid", pid},
              {"name", "train.py"},
              {"gpus", {0, "GPU-5c7c9a2e", -1, true, 2.5}},
              {"capabilities", {"shrink_batch", "stop", 7}},
              {"signals", {"stop"}},
              {"client", "test"}}
      .dump();
}

std::string report_line(int who, std::size_t padding = 0) {
  return json{{"v", 1}, {"type", "report"}, {"figures", {{"who", who}, {"pad", std::string(padding, 'x')}}}}.dump();
}

class ChannelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = ChannelServer::open(clock_);
    ASSERT_TRUE(s) << s.error().message();
    server_.emplace(std::move(s).value());
  }

  // A client that has said hello (its conn id in `conn`).
  std::unique_ptr<RawClient> hello_client(int* conn = nullptr) {
    auto c = std::make_unique<RawClient>(server_->path());
    c->write_line(hello_line(::getpid()), *server_);
    const Events events = pump_until(*server_, Kind::kHello);
    const ChannelEvent* hello = first_of(events, Kind::kHello);
    EXPECT_NE(hello, nullptr);
    if (hello != nullptr && conn != nullptr) *conn = hello->conn;
    return c;
  }

  // Sends `line` and returns the error the server answers with (the line after it, parsed).
  json answer_to(RawClient& client, const std::string& line) {
    client.write_line(line, *server_);
    const auto answer = client.read_line(*server_);
    if (!answer) return nullptr;
    return json::parse(*answer);
  }

  core::ManualClock clock_;
  std::optional<ChannelServer> server_;
};

TEST_F(ChannelTest, HelloFromAnotherProcessCarriesItsKernelPid) {
  clock_.advance(7s);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    try {
      RawClient c(server_->path());
      const std::string line = hello_line(::getpid()) + "\n";
      if (::send(c.fd(), line.data(), line.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(line.size())) ::_exit(2);
      char byte;
      while (::recv(c.fd(), &byte, 1, 0) > 0) {
      }
    } catch (...) {
      ::_exit(1);
    }
    ::_exit(0);
  }
  const Events events = pump_until(*server_, Kind::kHello);
  const ChannelEvent* connected = first_of(events, Kind::kConnected);
  const ChannelEvent* hello = first_of(events, Kind::kHello);
  ASSERT_NE(connected, nullptr);
  ASSERT_NE(hello, nullptr);
  EXPECT_EQ(connected->peer_pid, child);
  EXPECT_EQ(connected->peer_uid, static_cast<int>(::geteuid()));
  EXPECT_EQ(hello->conn, connected->conn);
  EXPECT_EQ(hello->peer_pid, child);
  ASSERT_TRUE(hello->hello);
  EXPECT_EQ(hello->hello->pid, child);
  EXPECT_EQ(hello->hello->claimed_pid, child);
  EXPECT_TRUE(hello->error.empty()) << hello->error;
  EXPECT_EQ(hello->hello->name, "train.py");
  EXPECT_EQ(hello->hello->gpus, (std::vector<std::string>{"0", "GPU-5c7c9a2e"}));  // -1, true, 2.5 skipped
  EXPECT_EQ(hello->hello->capabilities, (std::vector<std::string>{"shrink_batch", "stop"}));
  EXPECT_EQ(hello->hello->signals, (std::vector<std::string>{"stop"}));
  EXPECT_EQ(hello->hello->client, "test");
  EXPECT_EQ(hello->received, core::MonoTime(7s));
  EXPECT_EQ(hello->message.value("name", ""), "train.py");
  server_->close(hello->conn, "guard_stopping");  // the child reads to the end and exits
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_EQ(server_->stats().bad_lines, 0u);
}

TEST_F(ChannelTest, AHelloWithAnotherPidIsAnsweredAndItsPidNotTrusted) {
  RawClient client(server_->path());
  client.write_line(hello_line(::getpid() + 1000), *server_);
  const auto answer = client.read_line(*server_);
  ASSERT_TRUE(answer);
  const json error = json::parse(*answer);
  EXPECT_EQ(error["type"], "error");
  EXPECT_EQ(error["code"], "pid_mismatch");
  EXPECT_EQ(error["v"], 1);
  const Events events = client.take_seen();
  const ChannelEvent* hello = first_of(events, Kind::kHello);
  ASSERT_NE(hello, nullptr);
  ASSERT_TRUE(hello->hello);
  EXPECT_EQ(hello->hello->pid, ::getpid());  // the kernel's, not the claimed one
  EXPECT_EQ(hello->hello->claimed_pid, ::getpid() + 1000);
  EXPECT_EQ(code_of(*hello), "pid_mismatch");
  EXPECT_NE(hello->error.find(std::to_string(::getpid() + 1000)), std::string::npos) << hello->error;
}

TEST_F(ChannelTest, AHellosRankIsTakenWhenItIsAnIntegerFromZeroToIntMax) {
  const std::vector<std::pair<json, std::optional<int>>> cases = {{3, 3},
                                                                  {0, 0},
                                                                  {2147483647, 2147483647},
                                                                  {-1, std::nullopt},
                                                                  {2147483648LL, std::nullopt},
                                                                  {"3", std::nullopt},
                                                                  {2.5, std::nullopt},
                                                                  {true, std::nullopt},
                                                                  {nullptr, std::nullopt}};
  for (const auto& [rank, want] : cases) {
    RawClient client(server_->path());
    json hello = json::parse(hello_line(::getpid()));
    hello["rank"] = rank;
    client.write_line(hello.dump(), *server_);
    const Events events = pump_until(*server_, Kind::kHello);
    const ChannelEvent* e = first_of(events, Kind::kHello);
    ASSERT_NE(e, nullptr) << rank.dump();
    ASSERT_TRUE(e->hello);
    EXPECT_EQ(e->hello->rank, want) << rank.dump();
    EXPECT_EQ(describe(*e).find(", rank ") != std::string::npos, want.has_value()) << describe(*e);
  }
  RawClient without(server_->path());  // a single process says none
  without.write_line(hello_line(::getpid()), *server_);
  const Events events = pump_until(*server_, Kind::kHello);
  ASSERT_NE(first_of(events, Kind::kHello), nullptr);
  EXPECT_FALSE(first_of(events, Kind::kHello)->hello->rank);
  EXPECT_EQ(server_->stats().bad_lines, 0u);  // a rank of the wrong type is ignored, not refused
}

TEST_F(ChannelTest, FolderIsPrivateSocketOwnerOnlyAndNamesUnpredictable) {
  const mode_t old_mask = ::umask(0);  // the most permissive umask: the modes must not follow it
  auto other = ChannelServer::open(clock_);
  ::umask(old_mask);
  ASSERT_TRUE(other) << other.error().message();
  const std::filesystem::path socket(other->path());
  EXPECT_EQ(socket.filename(), "guard.sock");
  struct stat folder_stat {};
  struct stat socket_stat {};
  ASSERT_EQ(::lstat(socket.parent_path().c_str(), &folder_stat), 0);
  ASSERT_EQ(::lstat(socket.c_str(), &socket_stat), 0);
  EXPECT_TRUE(S_ISDIR(folder_stat.st_mode));
  EXPECT_EQ(folder_stat.st_mode & 07777, 0700u);
  EXPECT_TRUE(S_ISSOCK(socket_stat.st_mode));
  EXPECT_EQ(socket_stat.st_mode & 07777, 0600u);
  EXPECT_EQ(socket_stat.st_uid, ::geteuid());
  // mkdtemp: two servers, two folders with random tails, nothing at a guessable name.
  const std::string a = std::filesystem::path(server_->path()).parent_path().filename();
  const std::string b = socket.parent_path().filename();
  EXPECT_NE(a, b);
  EXPECT_EQ(a.rfind("gpudoc-guard-", 0), 0u) << a;
  EXPECT_EQ(a.size(), std::string("gpudoc-guard-").size() + 6);
}

TEST_F(ChannelTest, TheFolderGoesInXdgRuntimeDirWhenItIsOurs) {
  gpudoc::testing::TempDir runtime("gpudoc-xdg");
  const char* before = std::getenv("XDG_RUNTIME_DIR");
  const std::string saved = before != nullptr ? before : "";
  ::setenv("XDG_RUNTIME_DIR", runtime.str().c_str(), 1);
  auto other = ChannelServer::open(clock_);
  if (before != nullptr) {
    ::setenv("XDG_RUNTIME_DIR", saved.c_str(), 1);
  } else {
    ::unsetenv("XDG_RUNTIME_DIR");
  }
  ASSERT_TRUE(other) << other.error().message();
  EXPECT_EQ(std::filesystem::path(other->path()).parent_path().parent_path(), runtime.path());
}

TEST_F(ChannelTest, EachRefusedLineIsAnsweredWithItsCode) {
  struct Case {
    std::string line;
    std::string code;
    std::string ref;  // "" : no ref expected
  };
  RawClient client(server_->path());
  // Before the hello.
  const std::vector<Case> before_hello = {
      {R"({"v":1,"type":"report","figures":{}})", "no_hello", "report"},
      {R"({"v":1,"type":"hello","name":"x"})", "missing_field", "hello"},
      {R"({"v":1,"type":"hello","pid":-4})", "missing_field", "hello"},
  };
  const std::vector<Case> after_hello = {
      {"this is not json", "bad_json", ""},
      {"{\"v\":1,\"type\":\"report\",\"figures\":{\"a\":\"\xff\xfe\"}}", "bad_json", ""},
      {R"({"v":1,"type":"report")", "bad_json", ""},
      {std::string(40, '[') + std::string(40, ']'), "bad_json", ""},
      {"[1,2]", "not_an_object", ""},
      {"42", "not_an_object", ""},
      {R"({"type":"report","figures":{}})", "missing_field", "report"},
      {R"({"v":"1","type":"report","figures":{}})", "missing_field", "report"},
      {R"({"v":1.0,"type":"report","figures":{}})", "missing_field", "report"},
      {R"({"v":2,"type":"report","figures":{}})", "unsupported_version", "report"},
      {R"({"v":0,"type":"report","figures":{}})", "unsupported_version", "report"},
      {R"({"v":1})", "missing_field", ""},
      {R"({"v":1,"type":7})", "missing_field", ""},
      {R"({"v":1,"type":"dance"})", "unknown_type", "dance"},
      {R"({"v":1,"type":"advice","id":"x","action":"stop"})", "unknown_type", "advice"},
      {R"({"v":1,"type":"hello","pid":1})", "second_hello", "hello"},
      {R"({"v":1,"type":"report"})", "missing_field", "report"},
      {R"({"v":1,"type":"report","figures":[1]})", "missing_field", "report"},
      {R"({"v":1,"type":"ack","id":"a-1"})", "missing_field", "a-1"},
      {R"({"v":1,"type":"ack","status":"done"})", "missing_field", "ack"},
      {R"({"v":1,"type":"ack","id":"never-sent","status":"done"})", "unknown_advice", "never-sent"},
  };
  auto check = [&](const Case& c) {
    const json answer = answer_to(client, c.line);
    ASSERT_TRUE(answer.is_object()) << c.line;
    EXPECT_EQ(answer.value("type", ""), "error") << c.line;
    EXPECT_EQ(answer.value("v", 0), 1) << c.line;
    EXPECT_EQ(answer.value("code", ""), c.code) << c.line << " -> " << answer.dump();
    EXPECT_FALSE(answer.value("message", "").empty()) << c.line;
    EXPECT_EQ(answer.value("ref", ""), c.ref) << c.line << " -> " << answer.dump();
    const Events events = client.take_seen();
    const ChannelEvent* refused = first_of(events, Kind::kProtocolError);
    ASSERT_NE(refused, nullptr) << c.line;
    EXPECT_EQ(code_of(*refused), c.code) << refused->error;
  };
  for (const auto& c : before_hello) check(c);
  client.write_line(hello_line(::getpid()), *server_);
  ASSERT_EQ(count_kind(pump_until(*server_, Kind::kHello), Kind::kHello), 1u);
  for (const auto& c : after_hello) check(c);
  EXPECT_EQ(server_->stats().bad_lines, before_hello.size() + after_hello.size());
  // None of them ended the connection: a valid line still goes through.
  client.write_line(report_line(1), *server_);
  const Events events = pump_until(*server_, Kind::kReport);
  ASSERT_NE(first_of(events, Kind::kReport), nullptr);
  EXPECT_EQ(first_of(events, Kind::kReport)->message["figures"]["who"], 1);
}

TEST_F(ChannelTest, AnErrorIsNeverAnsweredWithAnError) {
  RawClient client(server_->path());
  client.write_line(R"({"v":1,"type":"error","code":"unknown_type","ref":"advice"})", *server_);
  client.write_line(R"({"v":9,"type":"error","code":"x"})", *server_);
  client.write_line(R"({"type":"error"})", *server_);
  client.write_line(R"({"v":1,"type":"ping"})", *server_);  // answered: proves the ones before were not
  const auto first = client.read_line(*server_);
  ASSERT_TRUE(first);
  const json answer = json::parse(*first);
  EXPECT_EQ(answer["code"], "unknown_type");
  EXPECT_EQ(answer["ref"], "ping");
  const Events events = client.take_seen();
  const ChannelEvent* peer_error = first_of(events, Kind::kPeerError);
  ASSERT_NE(peer_error, nullptr);
  EXPECT_EQ(peer_error->message["ref"], "advice");
  EXPECT_EQ(count_kind(events, Kind::kProtocolError), 3u);  // v 9, no v, ping
  EXPECT_FALSE(client.read_line(*server_, 100ms)) << client.unread();
}

TEST_F(ChannelTest, PeerTextIsEscapedInErrors) {
  auto client = hello_client();
  const json answer = answer_to(*client, R"({"v":1,"type":"\u001b]0;owned\u0007\u202e"})");
  const std::string message = answer.value("message", "");
  EXPECT_EQ(message.find('\x1b'), std::string::npos) << message;
  EXPECT_NE(message.find("\\x1b"), std::string::npos) << message;
  EXPECT_NE(message.find("\\u{202e}"), std::string::npos) << message;
  const Events events = client->take_seen();
  const ChannelEvent* refused = first_of(events, Kind::kProtocolError);
  ASSERT_NE(refused, nullptr);
  EXPECT_EQ(refused->error.find('\x07'), std::string::npos);
  EXPECT_NE(refused->error.find("\\x07"), std::string::npos) << refused->error;
  // A long type is cut in the ref, on a character boundary.
  const json long_answer = answer_to(*client, json{{"v", 1}, {"type", std::string(500, 'z')}}.dump());
  EXPECT_LE(long_answer.value("ref", "").size(), 64u);
}

TEST_F(ChannelTest, DescribeGivesOneEscapedLinePerEvent) {
  int conn = 0;
  auto client = hello_client(&conn);
  client->write_line(R"({"v":1,"type":"error","code":"x\u001b[2J","message":"evil\u009b\u2028"})", *server_);
  client->write_line(R"({"v":1,"type":"report","figures":{"name":"\u202etxt.exe"}})", *server_);
  client->write_line(R"({"v":1,"type":"bye","reason":"done\n"})", *server_);
  client->close();
  const Events events = pump_until(*server_, Kind::kClosed);
  std::vector<std::string> lines;
  for (const auto& e : events) lines.push_back(describe(e));
  ASSERT_EQ(lines.size(), 4u);  // error, report, bye, closed
  const std::string prefix = fmt::format("job connection {} (pid {}): ", conn, ::getpid());
  for (const auto& line : lines) {
    EXPECT_EQ(line.rfind(prefix, 0), 0u) << line;
    EXPECT_EQ(line.find('\x1b'), std::string::npos) << line;
    EXPECT_EQ(line.find('\n'), std::string::npos) << line;
    EXPECT_EQ(line.find("\xe2\x80\xae"), std::string::npos) << line;  // U+202E itself
    EXPECT_EQ(line.find("\xc2\x9b"), std::string::npos) << line;      // U+009B (CSI) itself
  }
  EXPECT_NE(lines[0].find("x\\x1b[2J"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("\\u{202e}txt.exe"), std::string::npos) << lines[1];
  EXPECT_EQ(lines[2], prefix + "bye (done\\x0a)");
  EXPECT_EQ(lines[3], prefix + "closed: the peer closed the connection");
}

TEST_F(ChannelTest, ALineOver64KiBIsSkippedAndTheNextOneRead) {
  auto client = hello_client();
  const std::size_t base = report_line(1).size();
  // 65 536 bytes with its newline: the largest line taken.
  const std::string largest = report_line(1, kMaxLineBytes - 1 - base);
  ASSERT_EQ(largest.size() + 1, kMaxLineBytes);
  // One byte more: skipped.
  const std::string too_long = report_line(2, kMaxLineBytes - base);
  ASSERT_EQ(too_long.size() + 1, kMaxLineBytes + 1);
  Events events;
  client->write_line(largest, *server_, &events);
  client->write_line(too_long, *server_, &events);
  client->write_line(report_line(3), *server_, &events);
  for (auto& e : pump(*server_, [&](const Events& more) {
         return count_kind(events, Kind::kReport) + count_kind(more, Kind::kReport) >= 2;
       }))
    events.push_back(std::move(e));
  std::vector<int> reports;
  for (const auto& e : events)
    if (e.kind == Kind::kReport) reports.push_back(e.message["figures"]["who"].get<int>());
  EXPECT_EQ(reports, (std::vector<int>{1, 3}));
  ASSERT_EQ(count_kind(events, Kind::kProtocolError), 1u);
  EXPECT_EQ(code_of(*first_of(events, Kind::kProtocolError)), "line_too_long");
  const auto answer = client->read_line(*server_);
  ASSERT_TRUE(answer);
  EXPECT_EQ(json::parse(*answer)["code"], "line_too_long");
  EXPECT_EQ(server_->stats().lines_in, 4u);  // hello and three reports
  EXPECT_EQ(server_->stats().bad_lines, 1u);
}

TEST_F(ChannelTest, AnEndlessLineIsSkippedInBoundedMemory) {
  auto client = hello_client();
  // 4 MiB without a newline, then one: one refusal, and the line after it is read.
  const std::string chunk(1 << 20, 'y');
  Events events;
  for (int i = 0; i < 4; ++i) client->write(chunk, *server_, &events);
  client->write("\n" + report_line(5) + "\n", *server_, &events);
  for (auto& e : pump(*server_, [&](const Events& more) {
         return count_kind(events, Kind::kReport) + count_kind(more, Kind::kReport) >= 1;
       }))
    events.push_back(std::move(e));
  EXPECT_EQ(count_kind(events, Kind::kProtocolError), 1u);
  ASSERT_EQ(count_kind(events, Kind::kReport), 1u);
  EXPECT_EQ(first_of(events, Kind::kReport)->message["figures"]["who"], 5);
}

TEST_F(ChannelTest, APartialLineWaitsForItsEnd) {
  auto client = hello_client();
  const std::string line = report_line(4) + "\n";
  const std::size_t third = line.size() / 3;
  client->write(line.substr(0, third), *server_);
  EXPECT_EQ(count_kind(pump(
                           *server_, [](const Events&) { return false; }, 100ms),
                       Kind::kReport),
            0u);
  client->write(line.substr(third, third), *server_);
  EXPECT_EQ(count_kind(pump(
                           *server_, [](const Events&) { return false; }, 100ms),
                       Kind::kReport),
            0u);
  client->write(line.substr(2 * third), *server_);
  const Events events = pump_until(*server_, Kind::kReport);
  ASSERT_EQ(count_kind(events, Kind::kReport), 1u);
  EXPECT_EQ(first_of(events, Kind::kReport)->message["figures"]["who"], 4);
  EXPECT_EQ(server_->stats().bad_lines, 0u);
}

TEST_F(ChannelTest, SeveralClientsAtOnceAreKeptApart) {
  constexpr int kClients = 6;
  std::vector<std::unique_ptr<RawClient>> clients;
  for (int i = 0; i < kClients; ++i) clients.push_back(std::make_unique<RawClient>(server_->path()));
  // Interleaved: all hellos, then each client's report, last client first.
  for (auto& c : clients) c->write_line(hello_line(::getpid()), *server_);
  for (int i = kClients - 1; i >= 0; --i) clients[i]->write_line(report_line(i), *server_);
  const Events events = pump_until(*server_, Kind::kReport, kClients);
  ASSERT_EQ(count_kind(events, Kind::kHello), static_cast<std::size_t>(kClients));
  ASSERT_EQ(count_kind(events, Kind::kReport), static_cast<std::size_t>(kClients));
  // Connection ids follow the connects (1..6 for this server); each report comes on its own one.
  std::map<int, int> who_on_conn;
  for (const auto& e : events)
    if (e.kind == Kind::kReport) who_on_conn[e.conn] = e.message["figures"]["who"].get<int>();
  ASSERT_EQ(who_on_conn.size(), static_cast<std::size_t>(kClients));
  for (const auto& [conn, who] : who_on_conn) EXPECT_EQ(conn, who + 1);
  EXPECT_EQ(server_->connections().size(), static_cast<std::size_t>(kClients));
  // An advice to connection 3 reaches client 2 only.
  ASSERT_TRUE(server_->send(3, {{"type", "advice"}, {"id", "j-1"}, {"level", 2}, {"action", "checkpoint_now"}}));
  const auto line = clients[2]->read_line(*server_);
  ASSERT_TRUE(line);
  EXPECT_EQ(json::parse(*line)["id"], "j-1");
  for (int i = 0; i < kClients; ++i) {
    if (i == 2) continue;
    clients[i]->read_available();
    EXPECT_TRUE(clients[i]->unread().empty()) << "client " << i << " got " << clients[i]->unread();
  }
  EXPECT_EQ(server_->stats().connections, static_cast<std::uint64_t>(kClients));
}

TEST_F(ChannelTest, AClientThatDiesMidLineIsClosedAndOthersCarryOn) {
  auto survivor = hello_client();
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(pipe_fds[0]);
    try {
      RawClient c(server_->path());
      const std::string bytes = hello_line(::getpid()) + "\n" + R"({"v":1,"type":"report","figu)";
      if (::send(c.fd(), bytes.data(), bytes.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(bytes.size())) ::_exit(2);
      char done = 'd';
      if (::write(pipe_fds[1], &done, 1) != 1) ::_exit(3);
      ::raise(SIGKILL);  // dies with half a line sent
    } catch (...) {
      ::_exit(1);
    }
    ::_exit(4);
  }
  ::close(pipe_fds[1]);
  char done = 0;
  ASSERT_EQ(::read(pipe_fds[0], &done, 1), 1);
  ::close(pipe_fds[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  const Events events = pump_until(*server_, Kind::kClosed);
  const ChannelEvent* closed = first_of(events, Kind::kClosed);
  ASSERT_NE(closed, nullptr);
  EXPECT_EQ(closed->peer_pid, child);
  EXPECT_NE(closed->error.find("middle of a line"), std::string::npos) << closed->error;
  EXPECT_EQ(count_kind(events, Kind::kReport), 0u);
  EXPECT_EQ(count_kind(events, Kind::kProtocolError), 0u);
  survivor->write_line(report_line(9), *server_);
  const Events later = pump_until(*server_, Kind::kReport);
  ASSERT_NE(first_of(later, Kind::kReport), nullptr);
  EXPECT_EQ(first_of(later, Kind::kReport)->message["figures"]["who"], 9);
  EXPECT_EQ(server_->connections().size(), 1u);
}

TEST_F(ChannelTest, AClientThatNeverReadsNeverBlocksTheServer) {
  int conn = 0;
  auto client = hello_client(&conn);
  const std::string filler(4000, 'f');
  constexpr int kLines = 2600;  // ~10.5 MB
  int refused = 0;
  auto slowest = std::chrono::nanoseconds(0);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kLines; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const bool sent = server_->send(conn, {{"type", "advice"}, {"id", std::to_string(i)}, {"message", filler}});
    slowest = std::max(slowest, std::chrono::steady_clock::now() - t0);
    refused += sent ? 0 : 1;
    if (i % 100 == 0) (void)server_->poll(0ms);  // the server's loop goes on meanwhile
  }
  const auto total = std::chrono::steady_clock::now() - start;
  // A send that blocked would wait for ever (the client never reads). Hang guards: normally ~0.5 s
  // in all and well under 10 ms the slowest send; 10x+ margin.
  EXPECT_LT(total, 30s);   // hang guard (above)
  EXPECT_LT(slowest, 2s);  // hang guard (above)
  const auto stats = server_->stats();
  EXPECT_GT(refused, kLines / 2);  // the kernel and the 256 KiB outbox take well under half
  EXPECT_EQ(stats.dropped_out, static_cast<std::uint64_t>(refused));
  EXPECT_EQ(stats.lines_out + stats.dropped_out, static_cast<std::uint64_t>(kLines));
  // Still connected, and what arrives is whole lines, in order, nothing cut.
  EXPECT_EQ(server_->connections(), std::vector<int>{conn});
  int previous = -1;
  int received = 0;
  while (auto line = client->read_line(*server_, 500ms)) {
    const json advice = json::parse(*line);  // throws (fails the test) on a cut line
    const int id = std::stoi(advice["id"].get<std::string>());
    EXPECT_GT(id, previous);
    previous = id;
    ++received;
  }
  EXPECT_EQ(static_cast<std::uint64_t>(received), stats.lines_out);
}

TEST_F(ChannelTest, SendRefusesALineOver64KiBAndNonObjects) {
  int conn = 0;
  auto client = hello_client(&conn);
  EXPECT_FALSE(server_->send(conn, {{"type", "advice"}, {"message", std::string(kMaxLineBytes, 'm')}}));
  EXPECT_EQ(server_->stats().dropped_out, 1u);
  EXPECT_FALSE(server_->send(conn, json::array({1, 2})));
  EXPECT_FALSE(server_->send(conn + 100, {{"type", "welcome"}}));
  // Text that is not UTF-8 from the caller is replaced, never thrown on.
  EXPECT_TRUE(server_->send(conn, {{"type", "welcome"}, {"job", "bad\xff"}}));
  const auto line = client->read_line(*server_);
  ASSERT_TRUE(line);
  const json welcome = json::parse(*line);
  EXPECT_EQ(welcome["v"], 1);
  EXPECT_EQ(welcome["type"], "welcome");
}

TEST_F(ChannelTest, AnAckOfASentAdviceComesThrough) {
  int conn = 0;
  auto client = hello_client(&conn);
  ASSERT_TRUE(server_->send(conn, {{"type", "advice"}, {"id", "j3-17"}, {"level", 1}, {"action", "shrink_batch"}}));
  ASSERT_TRUE(server_->send(conn, {{"type", "advice"}, {"id", 18}, {"level", 2}, {"action", "stop"}}));
  ASSERT_TRUE(client->read_line(*server_));
  ASSERT_TRUE(client->read_line(*server_));
  client->write_line(R"({"v":1,"type":"ack","id":"j3-17","action":"shrink_batch","status":"done","batch_size":48})",
                     *server_);
  client->write_line(R"({"v":1,"type":"ack","id":"18","status":"refused"})", *server_);
  const Events events = pump_until(*server_, Kind::kAck, 2);
  ASSERT_EQ(count_kind(events, Kind::kAck), 2u);
  const ChannelEvent* ack = first_of(events, Kind::kAck);
  EXPECT_EQ(ack->message["batch_size"], 48);
  EXPECT_EQ(ack->conn, conn);
  EXPECT_EQ(count_kind(events, Kind::kProtocolError), 0u);
}

TEST_F(ChannelTest, ByeThenEndOfStreamGiveByeThenClosed) {
  auto client = hello_client();
  client->write_line(R"({"v":1,"type":"bye","reason":"done","dropped":0})", *server_);
  client->close();
  const Events events = pump_until(*server_, Kind::kClosed);
  ASSERT_EQ(count_kind(events, Kind::kBye), 1u);
  ASSERT_EQ(count_kind(events, Kind::kClosed), 1u);
  EXPECT_EQ(first_of(events, Kind::kBye)->message["reason"], "done");
  const auto bye_at = first_of(events, Kind::kBye) - events.data();
  const auto closed_at = first_of(events, Kind::kClosed) - events.data();
  EXPECT_LT(bye_at, closed_at);
  EXPECT_EQ(first_of(events, Kind::kClosed)->error, "the peer closed the connection");
  EXPECT_TRUE(server_->connections().empty());
}

TEST_F(ChannelTest, CloseSaysByeAndTheConnectionEnds) {
  int conn = 0;
  auto client = hello_client(&conn);
  server_->close(conn, "guard_stopping");
  EXPECT_TRUE(server_->connections().empty());
  EXPECT_FALSE(server_->send(conn, {{"type", "advice"}}));
  const auto line = client->read_line(*server_);
  ASSERT_TRUE(line);
  const json bye = json::parse(*line);
  EXPECT_EQ(bye["type"], "bye");
  EXPECT_EQ(bye["reason"], "guard_stopping");
  EXPECT_EQ(bye["v"], 1);
  EXPECT_FALSE(client->read_line(*server_, 200ms));  // end of stream
  EXPECT_TRUE(client->read_available());
  const Events seen = client->take_seen();
  ASSERT_EQ(count_kind(seen, Kind::kClosed), 1u);
  EXPECT_EQ(first_of(seen, Kind::kClosed)->conn, conn);
  EXPECT_NE(first_of(seen, Kind::kClosed)->error.find("guard_stopping"), std::string::npos);
}

TEST_F(ChannelTest, GarbageNeverCrashesTheServer) {
  std::mt19937 random(20241130);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<int> length(1, 3000);
  const std::vector<std::string> seeds = {hello_line(::getpid()), report_line(1),
                                          R"({"v":1,"type":"ack","id":"a","status":"done"})",
                                          R"({"v":1,"type":"bye","reason":"done"})", R"({"v":1,"type":"error"})"};
  Events events;
  for (int round = 0; round < 4; ++round) {
    RawClient client(server_->path());
    for (int i = 0; i < 300; ++i) {
      std::string bytes;
      if (i % 2 == 0) {  // random bytes, newlines among them
        bytes.resize(static_cast<std::size_t>(length(random)));
        for (auto& ch : bytes) ch = static_cast<char>(byte(random) < 20 ? '\n' : byte(random));
      } else {  // a valid message with a few bytes changed
        bytes = seeds[static_cast<std::size_t>(i / 2) % seeds.size()];
        for (int k = 0; k < 3; ++k)
          bytes[static_cast<std::size_t>(length(random)) % bytes.size()] = static_cast<char>(byte(random));
        bytes += '\n';
      }
      client.write(bytes, *server_, &events);
      if (round == 3 && i == 150) break;  // the last client leaves in the middle of it all
    }
    for (auto& e : pump(
             *server_, [](const Events&) { return false; }, 50ms))
      events.push_back(std::move(e));
    client.read_available();  // and reads some of the answers, not necessarily all
  }
  for (auto& e : pump(*server_, [&](const Events& more) {
         return count_kind(events, Kind::kClosed) + count_kind(more, Kind::kClosed) >= 4;
       }))
    events.push_back(std::move(e));
  EXPECT_EQ(count_kind(events, Kind::kClosed), 4u);
  EXPECT_GT(server_->stats().bad_lines, 100u);
  EXPECT_EQ(count_kind(events, Kind::kConnected), 4u);
  // Still serving.
  auto fresh = hello_client();
  fresh->write_line(report_line(8), *server_);
  const Events after = pump_until(*server_, Kind::kReport);
  ASSERT_NE(first_of(after, Kind::kReport), nullptr);
  EXPECT_EQ(first_of(after, Kind::kReport)->message["figures"]["who"], 8);
}

TEST_F(ChannelTest, PollWaitsForItsTimeoutAndWakesOnACallersFd) {
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(server_->poll(150ms).empty());
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 140ms);

  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ASSERT_EQ(::write(fds[1], "x", 1), 1);
  const int wake[] = {fds[0]};
  const auto t1 = std::chrono::steady_clock::now();
  const Events events = server_->poll(60s, wake);
  EXPECT_LT(std::chrono::steady_clock::now() - t1, 10s);  // hang guard: normally < 1 ms, the timeout 60 s
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, Kind::kWake);
  EXPECT_EQ(events[0].fd, fds[0]);
  EXPECT_EQ(events[0].conn, 0);
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST_F(ChannelTest, AJobsPidfdWakesThePollWhenItExits) {
  int gate[2];
  const pid_t child = testing::waiting_child(gate);
  ASSERT_GT(child, 0);
  auto job = Pidfd::open(child);
  ASSERT_TRUE(job) << job.error().message();
  const int wake[] = {job->fd()};
  EXPECT_TRUE(server_->poll(50ms, wake).empty());  // still running
  ::close(gate[1]);                                // it exits
  Events events;
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (events.empty() && std::chrono::steady_clock::now() < deadline) events = server_->poll(1s, wake);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, Kind::kWake);
  EXPECT_EQ(events[0].fd, job->fd());
  EXPECT_TRUE(job->exited());
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
}

TEST(ChannelServer, DestructorSaysByeAndRemovesTheSocketAndItsFolder) {
  core::ManualClock clock;
  std::string path;
  std::unique_ptr<RawClient> client;
  {
    auto server = ChannelServer::open(clock);
    ASSERT_TRUE(server) << server.error().message();
    path = server->path();
    ASSERT_TRUE(std::filesystem::exists(path));
    client = std::make_unique<RawClient>(path);
    ASSERT_EQ(count_kind(pump_until(*server, Kind::kConnected), Kind::kConnected), 1u);
    // Moving the server keeps one owner of the socket: the moved-from one removes nothing.
    ChannelServer moved(std::move(server).value());
    EXPECT_EQ(moved.path(), path);
    EXPECT_TRUE(std::filesystem::exists(path));
  }
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::path(path).parent_path()));
  std::string got;
  char chunk[4096];
  ssize_t n;
  while ((n = ::recv(client->fd(), chunk, sizeof(chunk), 0)) > 0) got.append(chunk, static_cast<std::size_t>(n));
  EXPECT_EQ(n, 0);  // end of stream
  ASSERT_FALSE(got.empty());
  const json bye = json::parse(got.substr(0, got.find('\n')));
  EXPECT_EQ(bye["type"], "bye");
  EXPECT_EQ(bye["reason"], "guard_stopping");
}

}  // namespace
}  // namespace gpudoc::guard
