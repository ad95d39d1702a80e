#include "guard/channel.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "core/log.hpp"
#include "core/text.hpp"
#include "core/utf8.hpp"

namespace gpudoc::guard {
namespace {

using json = nlohmann::json;
using Kind = ChannelEvent::Kind;

constexpr std::size_t kMaxAdviceIds = 4096;
constexpr std::size_t kMaxRefBytes = 64;
constexpr std::size_t kMaxShownBytes = 120;
// Deeper JSON is refused before parsing: protocol messages nest three levels, and a deep tree
// would cost the guard's stack wherever it is later copied or printed.
constexpr int kMaxDepth = 32;
constexpr int kProtocolVersion = 1;

// `s` cut to at most `max` bytes, on a UTF-8 character boundary.
std::string_view cut(std::string_view s, std::size_t max) {
  if (s.size() <= max) return s;
  std::size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0U) == 0x80U) --n;
  return s.substr(0, n);
}

// Peer text as it may go into an error message or a log: cut short, every control character and
// stray byte escaped.
std::string shown(std::string_view s) {
  std::string out = core::terminal_safe(cut(s, kMaxShownBytes));
  if (s.size() > kMaxShownBytes) out += "…";
  return out;
}

bool is_blank(std::string_view line) { return line.find_first_not_of(" \t\r") == std::string_view::npos; }

// True when `line` nests arrays and objects deeper than `max` (text inside strings is skipped).
// Malformed text may be misjudged; it then fails to parse anyway.
bool nested_deeper_than(std::string_view line, int max) {
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (const char ch : line) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (ch == '\\') {
        escaped = true;
      } else if (ch == '"') {
        in_string = false;
      }
    } else if (ch == '"') {
      in_string = true;
    } else if (ch == '[' || ch == '{') {
      if (++depth > max) return true;
    } else if (ch == ']' || ch == '}') {
      --depth;
    }
  }
  return false;
}

std::optional<std::int64_t> integer(const json& j) {
  if (j.is_number_unsigned()) {
    const auto u = j.get<std::uint64_t>();
    return u > static_cast<std::uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<std::int64_t>(u);
  }
  if (j.is_number_integer()) return j.get<std::int64_t>();
  return std::nullopt;
}

// An advice's or an ack's id as text: the Python client keeps ids as strings.
std::optional<std::string> id_text(const json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (auto i = integer(j)) return std::to_string(*i);
  return std::nullopt;
}

std::string string_field(const json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The strings of an array field; items of another type are skipped.
std::vector<std::string> strings_field(const json& object, const char* key) {
  std::vector<std::string> out;
  const auto it = object.find(key);
  if (it == object.end() || !it->is_array()) return out;
  for (const auto& item : *it)
    if (item.is_string()) out.push_back(item.get<std::string>());
  return out;
}

// A hello's GPUs: non-negative integers as decimal text, strings as they are; the rest skipped.
std::vector<std::string> gpus_field(const json& object) {
  std::vector<std::string> out;
  const auto it = object.find("gpus");
  if (it == object.end() || !it->is_array()) return out;
  for (const auto& item : *it) {
    if (item.is_string()) {
      out.push_back(item.get<std::string>());
    } else if (auto i = integer(item); i && *i >= 0) {
      out.push_back(std::to_string(*i));
    }
  }
  return out;
}

bool known_job_type(std::string_view type) {
  return type == "hello" || type == "ack" || type == "report" || type == "bye" || type == "error";
}

std::string dump_line(const json& message) {
  // replace: text that is not UTF-8 (from the caller) never makes dump() throw.
  std::string line = message.dump(-1, ' ', false, json::error_handler_t::replace);
  line += '\n';
  return line;
}

// The folder the socket's private folder goes in: $XDG_RUNTIME_DIR when it is this user's folder
// (under sudo it may still name the invoking user's), else $TMPDIR, else /tmp.
std::string runtime_base() {
  const char* runtime = std::getenv("XDG_RUNTIME_DIR");
  if (runtime != nullptr && runtime[0] == '/') {
    struct stat st {};
    if (::stat(runtime, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::geteuid()) return runtime;
  }
  return core::temp_base();
}

core::Error io_error(const std::string& what, int err) {
  return core::Error(core::ErrorKind::kIo, fmt::format("{}: {}", what, std::strerror(err)));
}

bool would_block(int err) { return err == EAGAIN || err == EWOULDBLOCK || err == EINTR; }

}  // namespace

core::Result<ChannelServer> ChannelServer::open(core::Clock& clock) {
  auto dir = core::PrivateDir::create("gpudoc-guard", runtime_base());
  if (!dir) return dir.error().with_context("making the guard's socket folder");
  std::string path = dir->file("guard.sock");
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof(address.sun_path))
    return core::Error(core::ErrorKind::kIo,
                       fmt::format("the socket path {} is longer than a Unix socket's {} bytes (set TMPDIR to a "
                                   "shorter folder)",
                                   path, sizeof(address.sun_path) - 1));
  std::memcpy(address.sun_path, path.data(), path.size());
  core::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return io_error("creating a Unix socket", errno);
  // bind() gives the socket 0777 less the umask; the folder is 0700, so nobody else can reach it
  // before chmod makes it 0600, whatever the umask was.
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0)
    return io_error(fmt::format("binding the socket {}", path), errno);
  if (::chmod(path.c_str(), 0600) != 0) return io_error(fmt::format("making {} private", path), errno);
  if (::listen(fd.get(), 64) != 0) return io_error(fmt::format("listening on {}", path), errno);
  return ChannelServer(clock, std::move(dir).value(), std::move(path), std::move(fd));
}

ChannelServer::ChannelServer(core::Clock& clock, core::PrivateDir dir, std::string socket_path,
                             core::UniqueFd listen_fd)
    : clock_(&clock), dir_(std::move(dir)), socket_path_(std::move(socket_path)), listen_fd_(std::move(listen_fd)) {}

ChannelServer::ChannelServer(ChannelServer&& other) noexcept
    : clock_(other.clock_),
      dir_(std::move(other.dir_)),
      socket_path_(std::exchange(other.socket_path_, std::string())),
      listen_fd_(std::move(other.listen_fd_)),
      conns_(std::exchange(other.conns_, {})),
      pending_(std::exchange(other.pending_, {})),
      next_conn_(other.next_conn_),
      accept_paused_until_(other.accept_paused_until_),
      stats_(other.stats_) {}

ChannelServer::~ChannelServer() {
  // No reap(): no events are due any more, and the Clock may be gone already.
  for (auto& [id, c] : conns_) say_bye_and_kill(c, "guard_stopping");
  listen_fd_ = core::UniqueFd();
  if (!socket_path_.empty()) ::unlink(socket_path_.c_str());
  // dir_ goes last and removes the folder.
}

std::vector<ChannelEvent> ChannelServer::poll(std::chrono::milliseconds timeout, std::span<const int> wake_fds) {
  Events events = std::exchange(pending_, {});
  const auto deadline = std::chrono::steady_clock::now() + std::max(timeout, std::chrono::milliseconds(0));
  std::vector<pollfd> fds;
  std::vector<int> ids;
  for (;;) {
    fds.clear();
    ids.clear();
    const auto now = std::chrono::steady_clock::now();
    const bool accepting = listen_fd_.valid() && now >= accept_paused_until_;
    fds.push_back({accepting ? listen_fd_.get() : -1, POLLIN, 0});
    for (const int fd : wake_fds) fds.push_back({fd, POLLIN, 0});
    for (const auto& [id, c] : conns_) {
      if (c.dead) continue;
      const bool unsent = c.out.size() > c.out_head;
      fds.push_back({c.fd.get(), static_cast<short>(POLLIN | (unsent ? POLLOUT : 0)), 0});
      ids.push_back(id);
    }
    int wait_ms = 0;
    if (events.empty() && now < deadline) {
      auto until = accept_paused_until_ > now && accept_paused_until_ < deadline ? accept_paused_until_ : deadline;
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - now).count();
      wait_ms = static_cast<int>(std::min<std::int64_t>(left, INT_MAX));
    }
    const int n = ::poll(fds.data(), fds.size(), wait_ms);
    if (n < 0) {
      if (errno != EINTR) core::log_warn("guard channel: poll: {}", std::strerror(errno));
      return events;  // a signal: the caller may have something to do
    }
    if (n > 0) {
      if (fds[0].revents != 0) accept_all(events);
      for (std::size_t i = 0; i < wake_fds.size(); ++i) {
        if (fds[1 + i].revents == 0) continue;
        ChannelEvent e;
        e.kind = Kind::kWake;
        e.received = clock_->now();
        e.fd = wake_fds[i];
        events.push_back(std::move(e));
      }
      for (std::size_t i = 0; i < ids.size(); ++i) {
        const short revents = fds[1 + wake_fds.size() + i].revents;
        const auto it = conns_.find(ids[i]);
        if (revents == 0 || it == conns_.end()) continue;
        // Read before writing: a peer that closed may have left lines (its bye) to read.
        if ((revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL)) != 0) read_from(it->second, events);
        if ((revents & POLLOUT) != 0 && !it->second.dead) flush(it->second);
      }
    }
    reap();
    events.insert(events.end(), std::make_move_iterator(pending_.begin()), std::make_move_iterator(pending_.end()));
    pending_.clear();
    if (!events.empty() || std::chrono::steady_clock::now() >= deadline) return events;
  }
}

void ChannelServer::accept_all(Events& events) {
  for (;;) {
    const int fd = ::accept4(listen_fd_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      const int err = errno;
      if (err == EINTR || err == ECONNABORTED) continue;
      if (err == EAGAIN || err == EWOULDBLOCK) return;
      // Out of descriptors (or memory): the listening socket stays readable, so waiting on it
      // would spin. Leave the connections queued in the kernel and try again a little later.
      core::log_warn("guard channel: cannot accept a job's connection: {}; retrying in 100 ms", std::strerror(err));
      accept_paused_until_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
      return;
    }
    core::UniqueFd owned(fd);
    const auto open_now = std::count_if(conns_.begin(), conns_.end(), [](const auto& kv) { return !kv.second.dead; });
    if (open_now >= kMaxConnections) {
      core::log_warn("guard channel: {} connections are open; one more was refused", open_now);
      continue;  // `owned` closes it
    }
    Connection c;
    c.id = next_conn_++;
    c.fd = std::move(owned);
    ucred cred{};
    socklen_t length = sizeof(cred);
    if (::getsockopt(c.fd.get(), SOL_SOCKET, SO_PEERCRED, &cred, &length) == 0 && length == sizeof(cred)) {
      // pid 0: the peer's process is not visible in this pid namespace.
      if (cred.pid > 0) c.peer_pid = cred.pid;
      c.peer_uid = static_cast<int>(cred.uid);
    }
    ++stats_.connections;
    events.push_back(event_for(c, Kind::kConnected, clock_->now()));
    const int id = c.id;
    conns_.emplace(id, std::move(c));
  }
}

void ChannelServer::read_from(Connection& c, Events& events) {
  // One read per wake-up and connection: a peer that floods is served in turns with the others.
  std::array<char, kMaxLineBytes> buffer;
  const ssize_t n = ::recv(c.fd.get(), buffer.data(), buffer.size(), MSG_DONTWAIT);
  if (n < 0) {
    if (!would_block(errno)) kill(c, fmt::format("read error: {}", std::strerror(errno)));
    return;
  }
  if (n == 0) {
    if (c.in.empty() && !c.skipping) {
      kill(c, "the peer closed the connection");
    } else {
      kill(c, fmt::format("the peer closed the connection in the middle of a line ({} bytes dropped)",
                          c.skipping ? std::string("over 64 KiB") : std::to_string(c.in.size())));
    }
    return;
  }
  const core::MonoTime when = clock_->now();
  std::string_view data(buffer.data(), static_cast<std::size_t>(n));
  while (!data.empty() && !c.dead) {
    const std::size_t newline = data.find('\n');
    const std::string_view chunk = data.substr(0, newline);
    if (!c.skipping) {
      if (c.in.size() + chunk.size() + 1 > kMaxLineBytes) {  // + 1: the newline counts
        c.skipping = true;
        c.in.clear();
        ++stats_.lines_in;
        refuse(c, {"line_too_long", fmt::format("a line over {} bytes was skipped", kMaxLineBytes), {}}, nullptr, when,
               events);
      } else {
        c.in.append(chunk);
      }
    }
    if (newline == std::string_view::npos) break;
    if (!c.skipping) {
      ++stats_.lines_in;
      const std::string line = std::exchange(c.in, std::string());
      take_line(c, line, when, events);
    }
    c.skipping = false;
    data.remove_prefix(newline + 1);
  }
}

void ChannelServer::take_line(Connection& c, std::string_view line, core::MonoTime when, Events& events) {
  if (is_blank(line)) return;
  if (!core::is_valid_utf8(line)) {
    refuse(c, {"bad_json", "the line is not valid UTF-8: " + shown(line), {}}, nullptr, when, events);
    return;
  }
  if (nested_deeper_than(line, kMaxDepth)) {
    refuse(c, {"bad_json", fmt::format("the line nests deeper than {} levels", kMaxDepth), {}}, nullptr, when, events);
    return;
  }
  json message;
  try {
    message = json::parse(line.begin(), line.end());
  } catch (const json::exception& e) {
    refuse(c, {"bad_json", "not a JSON line: " + shown(e.what()), {}}, nullptr, when, events);
    return;
  }
  if (!message.is_object()) {
    refuse(c, {"not_an_object", fmt::format("a JSON {}, not an object", message.type_name()), {}}, nullptr, when,
           events);
    return;
  }
  take_message(c, std::move(message), when, events);
}

void ChannelServer::take_message(Connection& c, json message, core::MonoTime when, Events& events) {
  const auto type_it = message.find("type");
  const bool has_type = type_it != message.end() && type_it->is_string();
  const std::string type = has_type ? type_it->get<std::string>() : std::string();
  const std::string ref(cut(type, kMaxRefBytes));
  // An error is never answered with an error, whatever is wrong with it.
  const bool answer = type != "error";
  const auto v_it = message.find("v");
  const auto version = v_it != message.end() ? integer(*v_it) : std::nullopt;
  if (!version) {
    refuse(c, {"missing_field", "no integer \"v\"", ref, answer}, std::move(message), when, events);
    return;
  }
  if (*version != kProtocolVersion) {
    refuse(c,
           {"unsupported_version", fmt::format("version {}; this guard speaks {}", *version, kProtocolVersion), ref,
            answer},
           std::move(message), when, events);
    return;
  }
  if (!has_type) {
    refuse(c, {"missing_field", "no string \"type\"", {}}, std::move(message), when, events);
    return;
  }
  if (!known_job_type(type)) {
    refuse(c, {"unknown_type", fmt::format("unknown message type '{}'", shown(type)), ref}, std::move(message), when,
           events);
    return;
  }
  if (type == "error") {
    ChannelEvent e = event_for(c, Kind::kPeerError, when);
    e.message = std::move(message);
    events.push_back(std::move(e));
    return;
  }
  if (type == "hello") {
    take_hello(c, std::move(message), when, events);
    return;
  }
  if (!c.hello_seen) {
    refuse(c, {"no_hello", fmt::format("a '{}' before the hello; say hello first", type), ref}, std::move(message),
           when, events);
    return;
  }
  Kind kind = Kind::kBye;
  if (type == "ack") {
    const auto id_it = message.find("id");
    const auto id = id_it != message.end() ? id_text(*id_it) : std::nullopt;
    const auto status = message.find("status");
    if (!id || status == message.end() || !status->is_string()) {
      refuse(c, {"missing_field", R"(an ack needs "id" and "status")", id ? std::string(cut(*id, kMaxRefBytes)) : ref},
             std::move(message), when, events);
      return;
    }
    if (std::find(c.advice_ids.begin(), c.advice_ids.end(), *id) == c.advice_ids.end()) {
      refuse(c,
             {"unknown_advice", fmt::format("no advice '{}' was sent on this connection", shown(*id)),
              std::string(cut(*id, kMaxRefBytes))},
             std::move(message), when, events);
      return;
    }
    kind = Kind::kAck;
  } else if (type == "report") {
    const auto figures = message.find("figures");
    if (figures == message.end() || !figures->is_object()) {
      refuse(c, {"missing_field", R"(a report needs an object "figures")", ref}, std::move(message), when, events);
      return;
    }
    kind = Kind::kReport;
  }
  ChannelEvent e = event_for(c, kind, when);
  e.message = std::move(message);
  events.push_back(std::move(e));
}

void ChannelServer::take_hello(Connection& c, json message, core::MonoTime when, Events& events) {
  if (c.hello_seen) {
    refuse(c, {"second_hello", "this connection said hello already; this one is ignored", "hello"}, std::move(message),
           when, events);
    return;
  }
  const auto pid_it = message.find("pid");
  const auto pid = pid_it != message.end() ? integer(*pid_it) : std::nullopt;
  if (!pid || *pid <= 0 || *pid > INT_MAX) {
    refuse(c, {"missing_field", R"(a hello needs a positive integer "pid")", "hello"}, std::move(message), when,
           events);
    return;
  }
  c.hello_seen = true;
  JobHello hello;
  hello.claimed_pid = static_cast<int>(*pid);
  hello.pid = c.peer_pid.value_or(0);
  hello.name = string_field(message, "name");
  hello.gpus = gpus_field(message);
  hello.capabilities = strings_field(message, "capabilities");
  hello.signals = strings_field(message, "signals");
  hello.client = string_field(message, "client");
  if (const auto rank = message.find("rank"); rank != message.end())
    if (const auto r = integer(*rank); r && *r >= 0 && *r <= INT_MAX) hello.rank = static_cast<int>(*r);
  ChannelEvent e = event_for(c, Kind::kHello, when);
  if (hello.pid != hello.claimed_pid) {
    const std::string detail =
        c.peer_pid
            ? fmt::format("the hello says pid {}, the kernel says the peer is pid {}", hello.claimed_pid, *c.peer_pid)
            : fmt::format("the hello says pid {}, the kernel does not name the peer's pid", hello.claimed_pid);
    json answer = {
        {"type", "error"}, {"code", "pid_mismatch"}, {"message", detail}, {"ref", "hello"}, {"v", kProtocolVersion}};
    send_message(c, answer);
    e.error = "pid_mismatch: " + detail;
    core::log_debug("guard channel: connection {}: pid_mismatch: {}", c.id, detail);
  }
  e.hello = std::move(hello);
  e.message = std::move(message);
  events.push_back(std::move(e));
}

void ChannelServer::refuse(Connection& c, Refusal r, json message, core::MonoTime when, Events& events) {
  ++stats_.bad_lines;
  if (r.answer) {
    json answer = {{"type", "error"}, {"code", r.code}, {"message", r.detail}, {"v", kProtocolVersion}};
    if (!r.ref.empty()) answer["ref"] = r.ref;
    send_message(c, answer);
  }
  ChannelEvent e = event_for(c, Kind::kProtocolError, when);
  e.error = fmt::format("{}: {}{}", r.code, r.detail, r.answer ? "" : " (an error: not answered)");
  e.message = std::move(message);
  core::log_debug("guard channel: connection {}: {}", c.id, e.error);
  events.push_back(std::move(e));
}

bool ChannelServer::send(int conn, json message) {
  const auto it = conns_.find(conn);
  if (it == conns_.end() || it->second.dead || !message.is_object()) return false;
  message["v"] = kProtocolVersion;
  const bool sent = send_message(it->second, message);
  reap();
  return sent;
}

bool ChannelServer::send_message(Connection& c, const json& message) {
  const std::string line = dump_line(message);
  if (line.size() > kMaxLineBytes) {
    ++stats_.dropped_out;
    ++c.dropped;
    core::log_warn("guard channel: a '{}' line of {} bytes was not sent to connection {}: over {} bytes",
                   shown(string_field(message, "type")), line.size(), c.id, kMaxLineBytes);
    return false;
  }
  if (c.dead || c.write_broken) {
    ++stats_.dropped_out;
    ++c.dropped;
    return false;
  }
  flush(c);
  if (c.write_broken || c.out.size() - c.out_head + line.size() > kMaxOutboxBytes) {
    ++stats_.dropped_out;
    ++c.dropped;
    return false;
  }
  c.out += line;
  flush(c);
  if (c.write_broken) {  // flush counted it among the dropped
    return false;
  }
  ++stats_.lines_out;
  if (string_field(message, "type") == "advice") {
    if (const auto id = message.find("id"); id != message.end()) {
      if (auto text = id_text(*id)) {
        c.advice_ids.push_back(std::move(*text));
        if (c.advice_ids.size() > kMaxAdviceIds) c.advice_ids.pop_front();
      }
    }
  }
  return true;
}

void ChannelServer::flush(Connection& c) {
  while (c.out_head < c.out.size() && !c.write_broken) {
    const ssize_t n =
        ::send(c.fd.get(), c.out.data() + c.out_head, c.out.size() - c.out_head, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      c.out_head += static_cast<std::size_t>(n);
      continue;
    }
    const int err = errno;
    if (n < 0 && err == EINTR) continue;
    if (n < 0 && (err == EAGAIN || err == EWOULDBLOCK)) break;
    // The peer reads no more (EPIPE, ECONNRESET): drop what waits, but read on to its end, where
    // its last lines (a bye) may still be.
    const auto lines = std::count(c.out.begin() + static_cast<std::ptrdiff_t>(c.out_head), c.out.end(), '\n');
    stats_.dropped_out += static_cast<std::uint64_t>(lines);
    c.dropped += static_cast<std::uint64_t>(lines);
    c.write_broken = true;
    c.out_head = c.out.size();
  }
  if (c.out_head == c.out.size()) {
    c.out.clear();
    c.out_head = 0;
  } else if (c.out_head > kMaxOutboxBytes / 2) {
    c.out.erase(0, c.out_head);
    c.out_head = 0;
  }
}

void ChannelServer::close(int conn, std::string_view reason) {
  const auto it = conns_.find(conn);
  if (it == conns_.end() || it->second.dead) return;
  say_bye_and_kill(it->second, reason);
  reap();
}

void ChannelServer::say_bye_and_kill(Connection& c, std::string_view reason) {
  if (c.dead) return;
  json bye = {{"type", "bye"}, {"reason", reason}, {"v", kProtocolVersion}};
  bye["dropped"] = c.dropped;
  send_message(c, bye);
  kill(c, fmt::format("closed by the guard ({})", shown(reason)));
}

void ChannelServer::close_all(std::string_view reason) {
  for (const int conn : connections()) close(conn, reason);
}

std::vector<int> ChannelServer::connections() const {
  std::vector<int> out;
  for (const auto& [id, c] : conns_)
    if (!c.dead) out.push_back(id);
  return out;
}

void ChannelServer::kill(Connection& c, std::string how) {
  if (c.dead) return;
  const auto unsent = std::count(c.out.begin() + static_cast<std::ptrdiff_t>(c.out_head), c.out.end(), '\n');
  stats_.dropped_out += static_cast<std::uint64_t>(unsent);
  c.out.clear();
  c.out_head = 0;
  c.fd = core::UniqueFd();
  c.dead = true;
  c.how = std::move(how);
}

void ChannelServer::reap() {
  for (auto it = conns_.begin(); it != conns_.end();) {
    if (!it->second.dead) {
      ++it;
      continue;
    }
    ChannelEvent e = event_for(it->second, Kind::kClosed, clock_->now());
    e.error = std::move(it->second.how);
    pending_.push_back(std::move(e));
    it = conns_.erase(it);
  }
}

ChannelEvent ChannelServer::event_for(const Connection& c, ChannelEvent::Kind kind, core::MonoTime when) const {
  ChannelEvent e;
  e.kind = kind;
  e.conn = c.id;
  e.received = when;
  e.peer_pid = c.peer_pid;
  e.peer_uid = c.peer_uid;
  return e;
}

std::string describe(const ChannelEvent& e) {
  if (e.kind == Kind::kWake) return fmt::format("fd {} is ready", e.fd);
  std::string who = fmt::format("job connection {}", e.conn);
  if (e.peer_pid) who += fmt::format(" (pid {})", *e.peer_pid);
  const json& m = e.message;
  auto text = [&m](const char* key) { return shown(string_field(m, key)); };
  switch (e.kind) {
    case Kind::kConnected:
      return fmt::format("{}: connected{}", who, e.peer_uid ? fmt::format(", uid {}", *e.peer_uid) : std::string());
    case Kind::kHello: {
      std::string out = fmt::format("{}: hello from '{}'", who, e.hello ? shown(e.hello->name) : std::string());
      if (e.hello) {
        std::string gpus;
        for (const auto& g : e.hello->gpus) gpus += (gpus.empty() ? "" : ", ") + g;
        out += fmt::format(", GPUs [{}], client '{}'", shown(gpus), shown(e.hello->client));
        if (e.hello->rank) out += fmt::format(", rank {}", *e.hello->rank);
      }
      if (!e.error.empty()) out += "; " + e.error;
      return out;
    }
    case Kind::kAck: {
      const auto id = m.find("id");
      return fmt::format("{}: ack of advice '{}': {}", who, id != m.end() ? shown(id_text(*id).value_or("")) : "",
                         text("status"));
    }
    case Kind::kReport: {
      const auto figures = m.find("figures");
      return fmt::format("{}: report {}", who,
                         figures != m.end() ? shown(figures->dump(-1, ' ', false, json::error_handler_t::replace))
                                            : std::string("{}"));
    }
    case Kind::kBye: return fmt::format("{}: bye ({})", who, text("reason"));
    case Kind::kPeerError:
      return fmt::format("{}: the job answered with an error: {} (ref '{}'): {}", who, text("code"), text("ref"),
                         text("message"));
    case Kind::kProtocolError: return fmt::format("{}: refused a line: {}", who, e.error);
    case Kind::kClosed: return fmt::format("{}: closed: {}", who, e.error);
    case Kind::kWake: break;
  }
  return who;
}

}  // namespace gpudoc::guard
