#include "guard/event_log.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "core/log.hpp"
#include "core/text.hpp"

namespace gpudoc::guard {

core::Result<EventLog> EventLog::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    const int err = errno;  // before anything else can overwrite it
    return core::Error(core::ErrorKind::kIo,
                       fmt::format("--log {}: {}", core::terminal_safe(path), std::strerror(err)));
  }
  return EventLog(fd);
}

EventLog::EventLog(EventLog&& o) noexcept : fd_(std::exchange(o.fd_, -1)), failed_(o.failed_) {}

EventLog::~EventLog() {
  if (fd_ >= 0) ::close(fd_);
}

void EventLog::write(const nlohmann::json& event) {
  const std::string line = event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::size_t off = 0;
  while (off < line.size()) {
    const ssize_t n = ::write(fd_, line.data() + off, line.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (!failed_) core::log_warn("the guard log could not be written: {}", std::strerror(errno));
      failed_ = true;
      return;
    }
    off += static_cast<std::size_t>(n);
  }
}

}  // namespace gpudoc::guard
