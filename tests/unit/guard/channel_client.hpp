// Test helpers for the job channel: a raw client socket (bytes in, lines out), a pump that
// polls a ChannelServer until the events a test waits for have come, and a child process to watch.
#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "guard/channel.hpp"

namespace gpudoc::guard::testing {

using Events = std::vector<ChannelEvent>;
using Kind = ChannelEvent::Kind;

// Polls `server` until `done(events so far)` holds or `timeout` passes; returns every event seen.
inline Events pump(ChannelServer& server, const std::function<bool(const Events&)>& done,
                   std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  Events all;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done(all) && std::chrono::steady_clock::now() < deadline) {
    for (auto& e : server.poll(std::chrono::milliseconds(20))) all.push_back(std::move(e));
  }
  return all;
}

inline std::size_t count_kind(const Events& events, Kind kind) {
  std::size_t n = 0;
  for (const auto& e : events) n += e.kind == kind ? 1 : 0;
  return n;
}

// Waits until `n` events of `kind` have come (default 1).
inline Events pump_until(ChannelServer& server, Kind kind, std::size_t n = 1,
                         std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  return pump(
      server, [&](const Events& events) { return count_kind(events, kind) >= n; }, timeout);
}

inline const ChannelEvent* first_of(const Events& events, Kind kind) {
  for (const auto& e : events)
    if (e.kind == kind) return &e;
  return nullptr;
}

// The code of a kProtocolError ("bad_json: ..." -> "bad_json").
inline std::string code_of(const ChannelEvent& e) { return e.error.substr(0, e.error.find(':')); }

// A child that waits until `gate` is closed (or it is signalled), then exits 0; -1 when the pipe
// or the fork failed.
inline pid_t waiting_child(int gate[2]) {
  if (::pipe(gate) != 0) return -1;
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(gate[1]);
    char c;
    (void)!::read(gate[0], &c, 1);
    ::_exit(0);
  }
  ::close(gate[0]);
  return child;
}

// The client side, without the Python client: a blocking-connected, non-blocking-used socket.
class RawClient {
 public:
  explicit RawClient(const std::string& path) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::memcpy(address.sun_path, path.data(), path.size());
    if (::connect(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0)
      throw std::runtime_error("connect " + path + ": " + std::strerror(errno));
  }
  ~RawClient() { close(); }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  [[nodiscard]] int fd() const { return fd_; }

  // Writes all of `bytes`; while the kernel takes no more, polls `server` (keeping its events in
  // `events`) so that one thread plays both sides.
  void write(std::string_view bytes, ChannelServer& server, Events* events = nullptr) {
    while (!bytes.empty()) {
      const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
      if (n > 0) {
        bytes.remove_prefix(static_cast<std::size_t>(n));
        continue;
      }
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
        throw std::runtime_error(std::string("send: ") + std::strerror(errno));
      for (auto& e : server.poll(std::chrono::milliseconds(10)))
        if (events != nullptr) events->push_back(std::move(e));
    }
  }
  void write_line(std::string_view line, ChannelServer& server, Events* events = nullptr) {
    write(std::string(line) + "\n", server, events);
  }

  // The next line the server sent (without its newline), polling `server` meanwhile; nullopt on
  // end of stream or after `timeout`.
  std::optional<std::string> read_line(ChannelServer& server,
                                       std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      if (const auto nl = buffer_.find('\n'); nl != std::string::npos) {
        std::string line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        return line;
      }
      if (eof_ || std::chrono::steady_clock::now() >= deadline) return std::nullopt;
      for (auto& e : server.poll(std::chrono::milliseconds(5))) seen_.push_back(std::move(e));
      read_available();
    }
  }

  // Reads what is there without waiting; true when the server has closed (end of stream).
  bool read_available() {
    char chunk[65536];
    for (;;) {
      const ssize_t n = ::recv(fd_, chunk, sizeof(chunk), MSG_DONTWAIT);
      if (n > 0) {
        buffer_.append(chunk, static_cast<std::size_t>(n));
        continue;
      }
      if (n == 0) eof_ = true;
      return eof_;
    }
  }

  // Server events that read_line() pumped while waiting.
  Events take_seen() { return std::exchange(seen_, {}); }
  [[nodiscard]] const std::string& unread() const { return buffer_; }

 private:
  int fd_ = -1;
  std::string buffer_;
  bool eof_ = false;
  Events seen_;
};

}  // namespace gpudoc::guard::testing
