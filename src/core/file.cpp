#include "core/file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <new>

#include "core/temp_dir.hpp"

namespace gpudoc::core {

std::string describe_limit(std::uint64_t bytes) {
  constexpr const char* kUnits[] = {"TiB", "GiB", "MiB", "KiB"};
  for (int i = 0; i < 4; ++i) {
    const int shift = 40 - 10 * i;
    if (bytes >= (1ULL << shift) && bytes % (1ULL << shift) == 0)
      return fmt::format("{} {}", bytes >> shift, kUnits[i]);
  }
  return fmt::format("{} bytes", bytes);
}

namespace {

Error larger_than(const std::string& where, const InputLimits& limits) {
  return Error(ErrorKind::kBadInput, fmt::format("{}: larger than the limit of {} for {}", where,
                                                 describe_limit(limits.max_bytes), limits.what));
}

// read(2) until `size` bytes or the end of the input; EINTR is retried. -1 on an error (errno).
ssize_t read_some(int fd, char* into, std::size_t size) {
  ssize_t n = 0;
  do {
    n = ::read(fd, into, size);
  } while (n < 0 && errno == EINTR);
  return n;
}

}  // namespace

Result<std::string> read_file(const std::string& path, const InputLimits& limits) {
  std::string content;
  try {
    const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) return Error(ErrorKind::kIo, fmt::format("reading {}: {}", path, std::strerror(errno)));
    // A regular file larger than the limit is refused before anything is read; the buffer starts at
    // the file's size (a 1 h, 8-GPU trace is ~100 MB) and grows in blocks, since a trace still being
    // recorded grows while it is read; a device or a FIFO is read in blocks up to the limit + 1.
    struct stat st {};
    if (::fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode) && static_cast<std::uint64_t>(st.st_size) > limits.max_bytes)
      return larger_than(path, limits);
    constexpr std::size_t kBlock = 1 << 16;
    const std::uint64_t most = limits.max_bytes + 1;  // one byte over says "larger"
    content.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(
        most, S_ISREG(st.st_mode) && st.st_size > 0 ? static_cast<std::uint64_t>(st.st_size) + 1 : kBlock)));
    while (content.size() < most) {
      const std::size_t have = content.size();
      const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(kBlock, most - have));
      // Grows by half, never past the limit + 1: memory stays near what was read.
      if (have + want > content.capacity())
        content.reserve(static_cast<std::size_t>(
            std::min<std::uint64_t>(most, std::max(have + want, content.capacity() + content.capacity() / 2))));
      content.resize(have + want);
      const ssize_t n = read_some(fd.get(), content.data() + have, content.size() - have);
      if (n < 0) return Error(ErrorKind::kIo, fmt::format("reading {}: {}", path, std::strerror(errno)));
      content.resize(have + static_cast<std::size_t>(n));
      if (n == 0) break;
    }
    if (content.size() > limits.max_bytes) return larger_than(path, limits);
  } catch (const std::bad_alloc&) {
    return Error(ErrorKind::kIo, fmt::format("reading {}: too large to read into memory", path));
  }
  return content;
}

// ---- LineReader -----------------------------------------------------------------------------

struct LineReader::Impl {
  // A block read at a time; the buffer holds at most one line (<= max_line_bytes) not yet
  // returned plus one block.
  static constexpr std::size_t kBlock = 1 << 18;

  InputLimits limits;
  std::size_t capacity = 0;
  std::string name;
  int fd = -1;                     // -1: text in memory
  std::unique_ptr<char[]> buffer;  // file mode: [start, end) read, not yet returned
  std::size_t start = 0, end = 0;
  bool eof = false;
  bool over = false;           // the input goes on past max_bytes
  std::uint64_t consumed = 0;  // bytes before `start` (file mode)
  std::string_view text;       // memory mode: what is left
  std::size_t line_no = 0;
  bool terminated = true;
  bool replay = false;
  std::string_view last;

  ~Impl() {
    if (fd >= 0) ::close(fd);
  }

  Error too_long() const {
    return Error(ErrorKind::kBadInput, fmt::format("{} line {}: the line is longer than the limit of {} bytes", name,
                                                   line_no + 1, limits.max_line_bytes));
  }

  // Reads one more block after what is left of the buffer. false at the end of the file.
  // Reads one more block after what is left of the buffer. false at the end of the file. Never
  // more than max_bytes + 1 in all: the byte past the limit is dropped and marks `over`, so the lines
  // within the limit are still returned and the one that needs more is refused.
  Result<bool> fill() {
    if (over) return larger_than(fmt::format("{} line {}", name, line_no + 1), limits);
    if (eof) return false;
    if (start > 0) {
      std::memmove(buffer.get(), buffer.get() + start, end - start);
      end -= start;
      consumed += start;
      start = 0;
    }
    const std::uint64_t room = limits.max_bytes + 1 - (consumed + end);  // >= 1: `end` never passes the limit
    const ssize_t n =
        read_some(fd, buffer.get() + end, static_cast<std::size_t>(std::min<std::uint64_t>(capacity - end, room)));
    if (n < 0) return Error(ErrorKind::kIo, fmt::format("reading {}: {}", name, std::strerror(errno)));
    end += static_cast<std::size_t>(n);
    if (n == 0) eof = true;
    if (consumed + end > limits.max_bytes) {
      --end;
      over = true;
    }
    return n > 0;
  }

  Result<std::optional<std::string_view>> next_from_file() {
    std::size_t scanned = 0;  // bytes of the pending line already searched for '\n'
    while (true) {
      const char* from = buffer.get() + start + scanned;
      const auto* nl = static_cast<const char*>(std::memchr(from, '\n', end - start - scanned));
      if (nl != nullptr) {
        const auto len = static_cast<std::size_t>(nl - (buffer.get() + start));
        if (len > limits.max_line_bytes) return too_long();
        std::string_view line(buffer.get() + start, len);
        start += len + 1;
        terminated = true;
        return std::optional<std::string_view>(line);
      }
      scanned = end - start;
      if (scanned > limits.max_line_bytes) return too_long();
      auto more = fill();
      if (!more) return more.error();
      if (!*more) break;
    }
    if (start >= end) return std::optional<std::string_view>();
    std::string_view line(buffer.get() + start, end - start);
    start = end;
    terminated = false;
    return std::optional<std::string_view>(line);
  }

  Result<std::optional<std::string_view>> next_from_text() {
    if (text.empty()) return std::optional<std::string_view>();
    const std::size_t nl = text.find('\n');
    const std::size_t len = nl == std::string_view::npos ? text.size() : nl;
    if (len > limits.max_line_bytes) return too_long();
    std::string_view line = text.substr(0, len);
    terminated = nl != std::string_view::npos;
    text.remove_prefix(terminated ? len + 1 : len);
    return std::optional<std::string_view>(line);
  }
};

LineReader::LineReader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LineReader::LineReader(LineReader&&) noexcept = default;
LineReader& LineReader::operator=(LineReader&&) noexcept = default;
LineReader::~LineReader() = default;

Result<LineReader> LineReader::open(const std::string& path, const InputLimits& limits) {
  auto impl = std::make_unique<Impl>();
  impl->limits = limits;
  impl->name = path;
  impl->fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (impl->fd < 0) return Error(ErrorKind::kIo, fmt::format("reading {}: {}", path, std::strerror(errno)));
  impl->capacity = limits.max_line_bytes + 1 + Impl::kBlock;
  impl->buffer = std::make_unique<char[]>(impl->capacity);
  return LineReader(std::move(impl));
}

LineReader LineReader::of_text(std::string_view text, std::string name, const InputLimits& limits) {
  auto impl = std::make_unique<Impl>();
  impl->limits = limits;
  impl->name = std::move(name);
  impl->text = text;
  return LineReader(std::move(impl));
}

Result<std::optional<std::string_view>> LineReader::next() {
  Impl& m = *impl_;
  if (m.replay) {
    m.replay = false;
    return std::optional<std::string_view>(m.last);
  }
  auto line = m.fd >= 0 ? m.next_from_file() : m.next_from_text();
  if (line && *line) {
    if (m.line_no >= m.limits.max_lines)
      return Error(ErrorKind::kBadInput, fmt::format("{} line {}: more than {} lines, the limit for {}", m.name,
                                                     m.line_no + 1, m.limits.max_lines, m.limits.what));
    ++m.line_no;
    m.last = **line;
  }
  return line;
}

void LineReader::unread() {
  if (impl_->line_no > 0) impl_->replay = true;
}

bool LineReader::terminated() const { return impl_->terminated; }
std::size_t LineReader::line_no() const { return impl_->line_no; }
const std::string& LineReader::name() const { return impl_->name; }

namespace {

Status write_directly(const std::string& path, std::string_view content) {
  std::FILE* f = std::fopen(path.c_str(), "wbe");
  if (f == nullptr) return Error(ErrorKind::kIo, fmt::format("writing {}: {}", path, std::strerror(errno)));
  const bool wrote = std::fwrite(content.data(), 1, content.size(), f) == content.size();
  int err = errno;
  const bool closed = std::fclose(f) == 0;
  if (!closed && wrote) err = errno;
  if (!wrote || !closed) return Error(ErrorKind::kIo, fmt::format("writing {}: {}", path, std::strerror(err)));
  return ok_status();
}

mode_t current_umask() {
  const mode_t m = ::umask(022);
  ::umask(m);
  return m;
}

}  // namespace

Status write_file(const std::string& path, std::string_view content) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) return write_directly(path, content);
  const std::filesystem::path target(path);
  const std::filesystem::path dir = target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
  // The name is appended to a string that exists, not built with operator+ on temporaries: g++ 12's
  // -O3 inlining of that operator warns of an overlapping memcpy that cannot happen (-Wrestrict,
  // GCC bug 105329).
  std::string name = ".";
  name += target.filename().string();
  name += ".gpudoc-XXXXXX";
  std::string tmp = (dir / name).string();
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) return Error(ErrorKind::kIo, fmt::format("writing {}: {}", path, std::strerror(errno)));
  UniqueFd owned(fd);
  auto fail = [&](int err) {
    ::unlink(tmp.c_str());
    return Error(ErrorKind::kIo, fmt::format("writing {}: {}", path, std::strerror(err)));
  };
  if (auto st_write = write_all(fd, content, path); !st_write) {
    ::unlink(tmp.c_str());
    return st_write.error();
  }
  const mode_t mode = S_ISREG(st.st_mode) ? (st.st_mode & 07777) : (0666 & ~current_umask());
  if (::fchmod(fd, mode) != 0 || ::fsync(fd) != 0) return fail(errno);
  if (::close(owned.release()) != 0) return fail(errno);
  if (::rename(tmp.c_str(), path.c_str()) != 0) return fail(errno);
  return ok_status();
}

Status flush_stream(std::FILE* stream, std::string_view name) {
  errno = 0;
  const bool failed = std::fflush(stream) != 0 || std::ferror(stream) != 0;
  if (!failed) return ok_status();
  const int err = errno;
  return Error(ErrorKind::kIo, fmt::format("writing to {} failed{}: the output is incomplete", name,
                                           err != 0 ? fmt::format(" ({})", std::strerror(err)) : std::string()));
}

}  // namespace gpudoc::core
