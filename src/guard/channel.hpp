// gpudoc::guard::ChannelServer — the guard's end of the job channel (docs/guard-protocol.md): a
// Unix socket in a private folder, JSON Lines both ways, one connection per job. It knows the
// protocol (lines, versions, message types, required fields, errors) and nothing of GPUs or
// policies: it hands the guard what the jobs said and sends what the guard says.
//
//   auto server = guard::ChannelServer::open(clock);        // Result<ChannelServer>
//   if (!server) return server.error();
//   child_env.push_back("GPUDOC_GUARD_SOCKET=" + server->path());
//   int wake[] = {signal_fd, job_pidfd};
//   for (auto& e : server->poll(std::chrono::milliseconds(200), wake)) {
//     if (e.kind == guard::ChannelEvent::Kind::kHello) server->send(e.conn, {{"type", "welcome"}, ...});
//     if (e.kind == guard::ChannelEvent::Kind::kWake && e.fd == signal_fd) stop = true;
//   }
//   server->close_all("guard_stopping");
//
// Single-threaded and poll(2)-driven: nothing blocks but poll()'s own wait; one thread owns the
// server (no method is thread-safe). What a peer sends never crashes the server, never blocks it
// and never grows its memory past fixed bounds: a line is cut off at 64 KiB, each connection's
// unsent output at 256 KiB (lines past that are dropped whole and counted), and at most
// kMaxConnections are open. The server logs refused lines at debug level only; the guard logs
// the events, through describe(), which escapes the peer's text.
//
// Decisions where the protocol page leaves room (also written there):
// - hello must come first: before it, any message but an `error` is answered with an `error`
//   `no_hello` (ref: its type) and otherwise ignored; the connection stays open. A second hello
//   is answered with `second_hello` and ignored.
// - The hello's pid is checked against the connection's SO_PEERCRED. On a mismatch the hello is
//   still taken, answered with `pid_mismatch`, and the event's JobHello::pid is the kernel's pid,
//   never the claimed one (which stays in claimed_pid). The guard opens its pidfd from pid.
// - Required fields: hello `pid` (a positive integer); ack `id` (string or integer) and `status`
//   (string); report `figures` (an object). A known field of the wrong type in a hello is ignored
//   (a `rank` that is not an integer from 0 to INT_MAX too).
// - `v` other than 1 (0 or negative too) is `unsupported_version`. A line that is empty or only
//   white space is skipped without an answer (as the Python client does). JSON nested deeper
//   than 32 levels is `bad_json` (messages nest three).
// - An `ack` is checked against the advice ids sent on the same connection (the last 4096):
//   another id is answered with `unknown_advice`.
// - A message that says it is an `error` is never answered, whatever is wrong with it.
// - The server does not send `welcome`: its content (the GPUs watched, the horizon) is the
//   guard's, so the guard sends it on kHello.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/clock.hpp"
#include "core/result.hpp"
#include "core/temp_dir.hpp"

namespace gpudoc::guard {

// The longest line either side sends or takes, its newline included (protocol: 64 KiB).
inline constexpr std::size_t kMaxLineBytes = 64 * 1024;
// Unsent output kept per connection for a peer that reads slowly (protocol: 256 KiB).
inline constexpr std::size_t kMaxOutboxBytes = 256 * 1024;
// Connections open at once; one more is accepted and closed at once (logged).
inline constexpr int kMaxConnections = 256;
// The environment variable that tells a job the socket's path.
inline constexpr const char* kSocketEnv = "GPUDOC_GUARD_SOCKET";

// What a job said in its hello. Text fields are the peer's raw text (valid UTF-8, else the line
// was refused): escape them (core::terminal_safe) before they reach a terminal or a log.
struct JobHello {
  int pid = 0;          // the connecting process as the kernel names it (SO_PEERCRED); 0: unknown
  int claimed_pid = 0;  // what the hello said; differs from pid only on a pid_mismatch
  std::string name;
  std::vector<std::string> gpus;  // CUDA indices as decimal text ("0"), or UUIDs ("GPU-…", "MIG-…")
  std::vector<std::string> capabilities, signals;
  std::string client;
  std::optional<int> rank{};  // the job's rank in a distributed run (0 .. INT_MAX), when it said one
};

struct ChannelEvent {
  enum class Kind {
    kConnected,      // a job connected (peer_pid, peer_uid set)
    kHello,          // its first hello: `hello` set (error set too on a pid_mismatch)
    kAck,            // `message`: an ack of an advice sent on this connection
    kReport,         // `message`: a report (figures)
    kBye,            // `message`: the job says it ends; kClosed follows when it closes
    kPeerError,      // `message`: the job answered one of our lines with an error (never answered)
    kProtocolError,  // a line was refused; `error` says why; answered already, unless it was an error
    kClosed,         // the connection is gone (end of stream, read error, or close()); `error` says how
    kWake,           // one of the caller's wake fds is ready (`fd`); conn is 0
  };
  Kind kind = Kind::kConnected;
  int conn = 0;             // connection id: 1, 2, ... never reused by one server; 0 for kWake
  core::MonoTime received;  // when the line was read (the Clock given to open())
  std::optional<JobHello> hello;
  // The whole message when it parsed as an object (every kind but kConnected, kClosed, kWake, and
  // kProtocolError for a line that was not an object). Unknown fields are kept: ignore them.
  nlohmann::json message;
  // kProtocolError and a pid_mismatch kHello: "CODE: detail", peer text escaped. kClosed: how.
  std::string error;
  std::optional<int> peer_pid, peer_uid;  // SO_PEERCRED of the connection
  int fd = -1;                            // kWake
};

// One line for the guard's log: what happened, on which connection, with every piece of peer text
// cut short and escaped (core::terminal_safe). "job connection 3 (pid 41237): bye (done)".
[[nodiscard]] std::string describe(const ChannelEvent& e);

class ChannelServer {
 public:
  // Makes a private folder (mkdtemp, 0700) in $XDG_RUNTIME_DIR when it is a folder of this user,
  // else in $TMPDIR, else /tmp, and the socket `guard.sock` in it: mode 0600 whatever the umask,
  // listening, non-blocking, close-on-exec. Errors: kIo naming the folder or socket and why.
  [[nodiscard]] static core::Result<ChannelServer> open(core::Clock& clock);

  ChannelServer(ChannelServer&& other) noexcept;
  ChannelServer& operator=(ChannelServer&&) = delete;
  ChannelServer(const ChannelServer&) = delete;
  ChannelServer& operator=(const ChannelServer&) = delete;
  // Says bye ("guard_stopping") to the connections still open, closes them, removes the socket
  // and its folder.
  ~ChannelServer();

  // The socket's path, for GPUDOC_GUARD_SOCKET.
  [[nodiscard]] const std::string& path() const { return socket_path_; }

  // Accepts, reads, answers refused lines, writes out what waits; returns what happened. Waits
  // until something does or `timeout` has passed (0: never waits); returns early, perhaps with no
  // event, when interrupted by a signal. Each fd of `wake_fds` that is readable (or hung up, or
  // invalid) gives a kWake event and ends the wait; the server never reads it, so the caller must
  // (or stop passing it) lest the next call return at once again.
  std::vector<ChannelEvent> poll(std::chrono::milliseconds timeout, std::span<const int> wake_fds = {});

  // Sends one message (an object; "v": 1 is set) as one line. Never blocks: what the kernel does
  // not take waits in the connection's outbox; a line that does not fit there (or is over 64 KiB)
  // is dropped whole and counted in dropped_out. False when dropped, when `message` is not an
  // object, or when `conn` is not open. An advice's id is remembered for checking acks.
  bool send(int conn, nlohmann::json message);
  // Sends {"type":"bye","reason":reason,"dropped":N} and closes the connection at once (what the kernel has
  // taken is still delivered; what waits in the outbox is dropped and counted). kClosed follows
  // from the next poll(). No-op for a connection that is not open.
  void close(int conn, std::string_view reason);
  void close_all(std::string_view reason);

  // Connections open now.
  [[nodiscard]] std::vector<int> connections() const;

  struct Stats {
    std::uint64_t lines_in = 0;     // complete lines read (over-long ones included)
    std::uint64_t lines_out = 0;    // lines sent or queued
    std::uint64_t bad_lines = 0;    // lines refused (a kProtocolError, or a bad `error` not answered)
    std::uint64_t dropped_out = 0;  // lines not sent: outbox full, over 64 KiB, or dropped at close
    std::uint64_t connections = 0;  // connections accepted so far
  };
  [[nodiscard]] Stats stats() const { return stats_; }

 private:
  struct Connection {
    int id = 0;
    core::UniqueFd fd;
    std::optional<int> peer_pid, peer_uid;
    std::string in;         // the line read so far, under kMaxLineBytes
    bool skipping = false;  // inside an over-long line: reading on to its newline, keeping nothing
    std::string out;        // unsent output, from out_head on
    std::size_t out_head = 0;
    bool hello_seen = false;
    std::deque<std::string> advice_ids;  // sent on this connection, newest last
    std::uint64_t dropped = 0;           // lines not sent to this peer (goes out with our bye)
    bool write_broken = false;           // the peer stopped reading for good (EPIPE): read on to its end
    bool dead = false;                   // closed; kClosed is due, with `how`
    std::string how;
  };
  ChannelServer(core::Clock& clock, core::PrivateDir dir, std::string socket_path, core::UniqueFd listen_fd);

  using Events = std::vector<ChannelEvent>;
  struct Refusal {
    std::string_view code;
    std::string detail;  // peer text in it already escaped
    std::string ref;     // empty: none
    bool answer = true;  // false for a line that said it was an error
  };

  void accept_all(Events& events);
  void read_from(Connection& c, Events& events);
  void take_line(Connection& c, std::string_view line, core::MonoTime when, Events& events);
  void take_message(Connection& c, nlohmann::json message, core::MonoTime when, Events& events);
  void take_hello(Connection& c, nlohmann::json message, core::MonoTime when, Events& events);
  void refuse(Connection& c, Refusal r, nlohmann::json message, core::MonoTime when, Events& events);
  bool send_message(Connection& c, const nlohmann::json& message);
  void flush(Connection& c);
  void say_bye_and_kill(Connection& c, std::string_view reason);
  void kill(Connection& c, std::string how);
  void reap();
  [[nodiscard]] ChannelEvent event_for(const Connection& c, ChannelEvent::Kind kind, core::MonoTime when) const;

  core::Clock* clock_;
  core::PrivateDir dir_;  // destroyed last: the socket lives in it
  std::string socket_path_;
  core::UniqueFd listen_fd_;
  std::map<int, Connection> conns_;
  std::vector<ChannelEvent> pending_;  // kClosed events found outside poll() (send, close)
  int next_conn_ = 1;
  std::chrono::steady_clock::time_point accept_paused_until_{};  // out of descriptors: retry later
  Stats stats_;
};

}  // namespace gpudoc::guard
