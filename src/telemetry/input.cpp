#include "telemetry/input.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "telemetry/import_nvidia_smi.hpp"

namespace gpudoc::telemetry {

// ---- LineReader -----------------------------------------------------------------------------

struct LineReader::Impl {
  // A block read at a time; the buffer holds at most one line (<= kMaxLineBytes) not yet
  // returned plus one block.
  static constexpr std::size_t kBlock = 1 << 18;
  static constexpr std::size_t kCapacity = kMaxLineBytes + 1 + kBlock;

  std::string name;
  int fd = -1;                     // -1: text in memory
  std::unique_ptr<char[]> buffer;  // file mode: [start, end) read, not yet returned
  std::size_t start = 0, end = 0;
  bool eof = false;
  std::uint64_t consumed = 0;  // bytes before `start` (file mode)
  std::string_view text;       // memory mode: what is left
  std::size_t line_no = 0;
  bool terminated = true;
  bool replay = false;
  std::string_view last;

  ~Impl() {
    if (fd >= 0) ::close(fd);
  }

  core::Error too_long() const {
    return core::Error(
        core::ErrorKind::kBadInput,
        fmt::format("{} line {}: the line is longer than the limit of {} bytes", name, line_no + 1, kMaxLineBytes));
  }

  // Reads one more block after what is left of the buffer. false at the end of the file.
  core::Result<bool> fill() {
    if (eof) return false;
    if (start > 0) {
      std::memmove(buffer.get(), buffer.get() + start, end - start);
      end -= start;
      consumed += start;
      start = 0;
    }
    ssize_t n = 0;
    do {
      n = ::read(fd, buffer.get() + end, kCapacity - end);
    } while (n < 0 && errno == EINTR);
    if (n < 0) return core::Error(core::ErrorKind::kIo, fmt::format("reading {}: {}", name, std::strerror(errno)));
    end += static_cast<std::size_t>(n);
    if (n == 0) eof = true;
    if (consumed + end > kMaxInputBytes)
      return core::Error(core::ErrorKind::kBadInput,
                         fmt::format("{} line {}: the file is longer than the limit of {} GiB", name, line_no + 1,
                                     kMaxInputBytes >> 30));
    return n > 0;
  }

  core::Result<std::optional<std::string_view>> next_from_file() {
    std::size_t scanned = 0;  // bytes of the pending line already searched for '\n'
    while (true) {
      const char* from = buffer.get() + start + scanned;
      const auto* nl = static_cast<const char*>(std::memchr(from, '\n', end - start - scanned));
      if (nl != nullptr) {
        const auto len = static_cast<std::size_t>(nl - (buffer.get() + start));
        if (len > kMaxLineBytes) return too_long();
        std::string_view line(buffer.get() + start, len);
        start += len + 1;
        terminated = true;
        return std::optional<std::string_view>(line);
      }
      scanned = end - start;
      if (scanned > kMaxLineBytes) return too_long();
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

  core::Result<std::optional<std::string_view>> next_from_text() {
    if (text.empty()) return std::optional<std::string_view>();
    const std::size_t nl = text.find('\n');
    const std::size_t len = nl == std::string_view::npos ? text.size() : nl;
    if (len > kMaxLineBytes) return too_long();
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

core::Result<LineReader> LineReader::open(const std::string& path) {
  auto impl = std::make_unique<Impl>();
  impl->name = path;
  impl->fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (impl->fd < 0) return core::Error(core::ErrorKind::kIo, fmt::format("reading {}: {}", path, std::strerror(errno)));
  impl->buffer = std::make_unique<char[]>(Impl::kCapacity);
  return LineReader(std::move(impl));
}

LineReader LineReader::of_text(std::string_view text, std::string name) {
  auto impl = std::make_unique<Impl>();
  impl->name = std::move(name);
  impl->text = text;
  return LineReader(std::move(impl));
}

core::Result<std::optional<std::string_view>> LineReader::next() {
  Impl& m = *impl_;
  if (m.replay) {
    m.replay = false;
    return std::optional<std::string_view>(m.last);
  }
  auto line = m.fd >= 0 ? m.next_from_file() : m.next_from_text();
  if (line && *line) {
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

// ---- formats --------------------------------------------------------------------------------

InputFormat detect_format(std::string_view content) {
  std::string_view first = content.substr(0, content.find('\n'));
  if (first.substr(0, 3) == "\xEF\xBB\xBF") first.remove_prefix(3);  // a BOM from some editors
  std::size_t i = first.find_first_not_of(" \t\r");
  if (i != std::string_view::npos && first[i] == '{') return InputFormat::kGpudocTrace;
  if (looks_like_nvidia_smi_csv(first)) return InputFormat::kNvidiaSmiCsv;
  return InputFormat::kUnknown;
}

namespace {

core::Error neither_format(const std::string& path) {
  return core::Error(core::ErrorKind::kBadInput,
                     fmt::format("{} line 1: neither a gpudoc trace (a JSON header line) nor an nvidia-smi CSV log "
                                 "(a header such as \"timestamp, index, utilization.gpu [%], ...\")",
                                 path));
}

// Opens path and tells its format from line 1 (left to be read again by the parser).
core::Result<std::pair<LineReader, InputFormat>> open_detected(const std::string& path) {
  auto lines = LineReader::open(path);
  if (!lines) return lines.error();
  auto first = lines->next();
  if (!first) return first.error();
  const InputFormat format = detect_format(*first ? **first : std::string_view());
  if (*first) lines->unread();
  if (format == InputFormat::kUnknown) return neither_format(path);
  return std::pair<LineReader, InputFormat>(std::move(*lines), format);
}

}  // namespace

core::Result<Trace> read_telemetry_file(const std::string& path, const ReadOptions& options) {
  auto opened = open_detected(path);
  if (!opened) return opened.error();
  auto& [lines, format] = *opened;
  if (format == InputFormat::kNvidiaSmiCsv) return read_nvidia_smi_csv(lines, options);
  return read_trace_lines(lines, options);
}

core::Result<InputFormat> visit_telemetry_file(const std::string& path, TraceVisitor& visitor) {
  auto opened = open_detected(path);
  if (!opened) return opened.error();
  auto& [lines, format] = *opened;
  if (format == InputFormat::kNvidiaSmiCsv) {
    auto trace = read_nvidia_smi_csv(lines, ReadOptions{});
    if (!trace) return trace.error();
    visit_trace(*trace, visitor);
    return format;
  }
  if (auto st = visit_trace_lines(lines, visitor); !st) return st.error();
  return format;
}

}  // namespace gpudoc::telemetry
