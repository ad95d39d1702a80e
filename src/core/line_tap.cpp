#include "core/line_tap.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace gpudoc::core {

LineTap::LineTap(int echo_fd, LineHandlers handlers) : echo_(echo_fd), handlers_(std::move(handlers)) {}

LineTap::~LineTap() {
  close_write_end();
  finish();
}

Status LineTap::open() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    return Error(ErrorKind::kIo, fmt::format("making a pipe for the command's output: {}", std::strerror(errno)));
  read_ = fds[0];
  write_ = fds[1];
  reader_ = std::thread([this] { read_loop(); });
  return {};
}

void LineTap::close_write_end() {
  if (write_ >= 0) ::close(write_);
  write_ = -1;
}

void LineTap::finish(std::chrono::milliseconds wait) {
  if (!reader_.joinable()) return;
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (!eof_.load() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  stop_ = true;
  reader_.join();
  ::close(read_);
  read_ = -1;
}

void LineTap::read_loop() {
  char buf[65536];
  while (!stop_.load()) {
    pollfd p{read_, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    const ssize_t n = ::read(read_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    echo(buf, static_cast<std::size_t>(n));
    consume(buf, static_cast<std::size_t>(n));
  }
  if (oversized_ || !pending_.empty()) end_line();
  eof_ = true;
}

void LineTap::consume(const char* p, std::size_t n) {
  while (n > 0) {
    const auto* nl = static_cast<const char*>(std::memchr(p, '\n', n));
    const std::size_t take = nl != nullptr ? static_cast<std::size_t>(nl - p) : n;
    if (oversized_) {
      oversized_bytes_ += take;
    } else {
      pending_.append(p, take);
      if (pending_.size() > handlers_.max_line_bytes) {  // counted, not kept
        oversized_ = true;
        oversized_head_ = pending_.substr(0, handlers_.head_bytes);
        oversized_bytes_ = pending_.size();
        std::string().swap(pending_);
      }
    }
    if (nl == nullptr) return;
    end_line();
    p += take + 1;
    n -= take + 1;
  }
}

void LineTap::end_line() {
  ++line_no_;
  if (oversized_) {
    if (handlers_.oversized) handlers_.oversized(oversized_head_, line_no_, oversized_bytes_);
    oversized_ = false;
  } else if (handlers_.line) {
    std::string_view line = pending_;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    handlers_.line(line, line_no_);
  }
  pending_.clear();
}

void LineTap::echo(const char* p, std::size_t n) {
  while (n > 0 && echo_ok_ && echo_ >= 0) {
    const ssize_t w = ::write(echo_, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      echo_ok_ = false;  // gpudoc's own output is gone: keep reading, stop echoing
    } else {
      p += w;
      n -= static_cast<std::size_t>(w);
    }
  }
}

}  // namespace gpudoc::core
