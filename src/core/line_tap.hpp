// gpudoc::core line tap — a command's stdout read line by line while every byte is passed on:
// the command writes into a pipe, a thread of the tap reads the other end, copies each chunk to
// `echo_fd` and hands each line (without its '\n', and without a '\r' before it) to a handler.
// When `echo_fd` is a terminal, the command writes into a pseudo-terminal instead of a pipe (its
// size that of `echo_fd`, no output processing: the bytes pass unchanged): the command still sees
// a terminal on its stdout, so it prints line by line (Python, the C library) and keeps its
// progress bars and colours, as it would without gpudoc. The pseudo-terminal's size follows
// `echo_fd`'s within 0.1 s of a resize, and the command's process group, when named
// (signal_resizes_to), is told of it with SIGWINCH, as a terminal tells its foreground group. A
// failed echo (gpudoc's own stdout closed: `| head -1`) stops the echo, never the reading: the
// command is never blocked on a full pipe. A line longer than `max_line_bytes` is not kept: only
// its first `head_bytes` reach the oversized handler, with its length.
//
//   core::LineTap tap(STDOUT_FILENO, {.line = [&](std::string_view l, std::size_t n) { ... }});
//   tap.open();                       // starts the reading thread
//   spawn.stdout_fd = tap.write_end();
//   auto child = core::ChildProcess::spawn(argv, spawn);
//   tap.close_write_end();            // the command holds the only write end: its exit ends the pipe
//   tap.signal_resizes_to(child->pid());   // a command in a process group of its own
//   ...
//   tap.finish();                     // the last lines read (or, after a bounded wait, given up)
//
// The handlers run on the tap's thread, one call at a time.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <thread>

#include "core/result.hpp"

namespace gpudoc::core {

struct LineHandlers {
  std::function<void(std::string_view line, std::size_t line_number)> line;  // 1-based
  std::function<void(std::string_view head, std::size_t line_number, std::size_t bytes)> oversized;
  std::size_t max_line_bytes = std::size_t{1} << 20;
  std::size_t head_bytes = 64;  // what an oversized line keeps
};

class LineTap {
 public:
  LineTap(int echo_fd, LineHandlers handlers);
  LineTap(const LineTap&) = delete;
  LineTap& operator=(const LineTap&) = delete;
  ~LineTap();

  // Makes the pipe (or the pseudo-terminal) and starts the reading thread. Errors: kIo.
  [[nodiscard]] Status open();
  [[nodiscard]] bool terminal() const { return terminal_; }  // the command writes into a pseudo-terminal
  [[nodiscard]] int write_end() const { return write_; }
  void close_write_end();
  // On a terminal, the process group that gets SIGWINCH when gpudoc's terminal is resized (the
  // command's own group: outside the terminal's foreground group, it would not hear of it).
  void signal_resizes_to(pid_t process_group) { resize_group_ = process_group; }
  // Waits up to `wait` for the end of the pipe (a background grandchild may hold it open for
  // ever), hands on what was read, then stops the thread. Idempotent.
  void finish(std::chrono::milliseconds wait = std::chrono::seconds(2));

 private:
  void read_loop();
  void consume(const char* p, std::size_t n);
  void end_line();
  void echo(const char* p, std::size_t n);
  void follow_window_size();

  [[nodiscard]] Status open_terminal();

  int echo_ = -1;
  bool echo_ok_ = true;
  bool terminal_ = false;
  LineHandlers handlers_;
  int read_ = -1;
  int write_ = -1;
  std::string pending_;
  std::size_t line_no_ = 0;
  bool oversized_ = false;
  std::string oversized_head_;
  std::size_t oversized_bytes_ = 0;
  std::atomic<pid_t> resize_group_{0};
  unsigned short rows_ = 0, columns_ = 0;  // the pseudo-terminal's size as last set
  std::atomic<bool> stop_{false};
  std::atomic<bool> eof_{false};
  std::thread reader_;
};

}  // namespace gpudoc::core
