#include "core/line_tap.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <array>

#include <cerrno>
#include <cstring>

namespace gpudoc::core {

LineTap::LineTap(int echo_fd, LineHandlers handlers) : echo_(echo_fd), handlers_(std::move(handlers)) {}

LineTap::~LineTap() {
  close_write_end();
  finish();
}

Status LineTap::open() {
  if (echo_ >= 0 && ::isatty(echo_) == 1) {
    if (auto st = open_terminal(); !st) return st;
  } else {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
      return Error(ErrorKind::kIo, fmt::format("making a pipe for the command's output: {}", std::strerror(errno)));
    read_ = fds[0];
    write_ = fds[1];
  }
  reader_ = std::thread([this] { read_loop(); });
  return {};
}

// A pseudo-terminal: gpudoc reads the master, the command writes into the slave. Not the
// command's controlling terminal (O_NOCTTY, and the command's stdin is not it).
Status LineTap::open_terminal() {
  auto fail = [this](const char* what) {
    const int err = errno;
    if (read_ >= 0) ::close(read_);
    read_ = -1;
    return Error(ErrorKind::kIo,
                 fmt::format("making a terminal for the command's output: {}: {}", what, std::strerror(err)));
  };
  read_ = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (read_ < 0) return fail("posix_openpt");
  if (::grantpt(read_) != 0 || ::unlockpt(read_) != 0) return fail("grantpt");
  std::array<char, 128> name{};
  if (::ptsname_r(read_, name.data(), name.size()) != 0) return fail("ptsname");
  write_ = ::open(name.data(), O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (write_ < 0) return fail(name.data());
  termios t{};
  if (::tcgetattr(write_, &t) == 0) {
    t.c_oflag &= ~static_cast<tcflag_t>(OPOST);  // "\n" stays "\n": the bytes pass unchanged
    (void)::tcsetattr(write_, TCSANOW, &t);
  }
  terminal_ = true;
  follow_window_size();
  return {};
}

// The pseudo-terminal takes gpudoc's terminal's size when it changed; the command's group is told.
void LineTap::follow_window_size() {
  winsize size{};
  if (::ioctl(echo_, TIOCGWINSZ, &size) != 0 || (size.ws_row == rows_ && size.ws_col == columns_)) return;
  if (::ioctl(read_, TIOCSWINSZ, &size) != 0) return;
  const bool resized = rows_ != 0 || columns_ != 0;
  rows_ = size.ws_row;
  columns_ = size.ws_col;
  if (const pid_t group = resize_group_.load(); resized && group > 0) (void)::kill(-group, SIGWINCH);
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
    const int ready = ::poll(&p, 1, 100);
    if (terminal_) follow_window_size();
    if (ready <= 0) continue;
    const ssize_t n = ::read(read_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // a pipe's end; a pseudo-terminal's is EIO once no one holds its slave
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
