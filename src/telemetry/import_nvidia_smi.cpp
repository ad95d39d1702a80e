// The nvidia-smi CSV importer (docs/trace-format.md, "Importing nvidia-smi CSV").
//
// nvidia-smi writes one header line, then one row per GPU per sample: cells separated by ", ",
// values with their unit ("81.31 W") unless `nounits`, "[N/A]"-style text for readings it does
// not have. Nothing is sized from the input: rows are read one at a time, GPUs are capped at
// kMaxGpus and indices are checked before they are used.
#include "telemetry/import_nvidia_smi.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <new>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace gpudoc::telemetry {
namespace {

using gpu::Metric;

constexpr double kBytesPerMiB = 1024.0 * 1024.0;
constexpr double kMaxMiB = 1.0e12;                       // far above any device; keeps bytes in uint64
constexpr double kMinT = -1.0;                           // as the trace reader
constexpr std::int64_t kMaxUnixSeconds = 4'000'000'000;  // year 2096, as the trace reader
constexpr std::uint64_t kMaxBlankBytes = 1ULL << 20;     // blank lines in a row before the log is refused

enum class ColumnKind { kIgnored, kTimestamp, kIndex, kUuid, kName, kPciBusId, kMetric, kMemoryTotal, kSmClockMax };

struct Column {
  std::string text;  // as in the header, trimmed: "power.draw [W]"
  ColumnKind kind = ColumnKind::kIgnored;
  Metric metric = Metric::kPowerWatts;  // kMetric only
  std::string unit;                     // the value suffix nvidia-smi prints: "W", "%", "MiB", "MHz"
  bool hex = false;                     // clocks_event_reasons.active
  double scale = 1.0;                   // MiB -> bytes
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// Cell text is quoted in messages and stored in the trace (GPU names, notes), and both must be
// valid UTF-8 as the trace reader's strings are: JSON output of an invalid sequence throws. Each
// byte that does not start a well-formed sequence becomes U+FFFD (as the trace writer does).
std::string utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      out += s[i++];
      continue;
    }
    // Continuation bytes, and the second byte's range: no overlong forms, surrogates or > U+10FFFF.
    const std::size_t n = c >= 0xC2 && c <= 0xDF ? 1 : (c >= 0xE0 && c <= 0xEF ? 2 : (c >= 0xF0 && c <= 0xF4 ? 3 : 0));
    const unsigned char lo = c == 0xE0 ? 0xA0 : (c == 0xF0 ? 0x90 : 0x80);
    const unsigned char hi = c == 0xED ? 0x9F : (c == 0xF4 ? 0x8F : 0xBF);
    bool ok = n > 0 && i + n < s.size();
    for (std::size_t k = 1; ok && k <= n; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      ok = k == 1 ? (b >= lo && b <= hi) : (b >= 0x80 && b <= 0xBF);
    }
    if (ok) {
      out.append(s.substr(i, n + 1));
      i += n + 1;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

// Text from the log as messages quote it: a JSON string, so that control characters are escapes
// ("\u001b"), not bytes that reach the terminal with the error. `s` is valid UTF-8 (utf8()).
std::string json_quoted(const std::string& s) { return nlohmann::json(s).dump(); }

std::vector<std::string_view> split_cells(std::string_view line) {
  std::vector<std::string_view> cells;
  std::size_t start = 0;
  for (;;) {
    std::size_t comma = line.find(',', start);
    if (comma == std::string_view::npos) {
      cells.push_back(trim(line.substr(start)));
      return cells;
    }
    cells.push_back(trim(line.substr(start, comma - start)));
    start = comma + 1;
  }
}

// "power.draw [W]" -> key "power.draw", unit "W".
std::pair<std::string_view, std::string_view> split_header_cell(std::string_view cell) {
  std::size_t open = cell.rfind(" [");
  if (open != std::string_view::npos && cell.size() >= open + 3 && cell.back() == ']')
    return {trim(cell.substr(0, open)), cell.substr(open + 2, cell.size() - open - 3)};
  return {cell, {}};
}

Column classify(std::string_view cell) {
  Column c;
  c.text = utf8(cell);
  auto [key, header_unit] = split_header_cell(cell);
  auto metric = [&](Metric m, std::string_view unit) {
    c.kind = ColumnKind::kMetric;
    c.metric = m;
    c.unit = std::string(unit);
  };
  if (key == "timestamp")
    c.kind = ColumnKind::kTimestamp;
  else if (key == "index")
    c.kind = ColumnKind::kIndex;
  else if (key == "uuid")
    c.kind = ColumnKind::kUuid;
  else if (key == "name" || key == "gpu_name")
    c.kind = ColumnKind::kName;
  else if (key == "pci.bus_id" || key == "gpu_bus_id")
    c.kind = ColumnKind::kPciBusId;
  else if (key == "utilization.gpu")
    metric(Metric::kGpuUtilizationPercent, "%");
  else if (key == "utilization.memory")
    metric(Metric::kMemoryUtilizationPercent, "%");
  else if (key == "memory.used") {
    metric(Metric::kMemoryUsedBytes, "MiB");
    c.scale = kBytesPerMiB;
  } else if (key == "memory.total") {
    c.kind = ColumnKind::kMemoryTotal;
    c.unit = "MiB";
  } else if (key == "power.draw" || key == "power.draw.instant")
    metric(Metric::kPowerWatts, "W");
  else if (key == "power.limit" || key == "enforced.power.limit")
    metric(Metric::kPowerLimitWatts, "W");
  else if (key == "temperature.gpu")
    metric(Metric::kGpuTemperatureCelsius, "C");
  else if (key == "clocks.sm" || key == "clocks.current.sm")
    metric(Metric::kSmClockMhz, "MHz");
  else if (key == "clocks.max.sm" || key == "clocks.max.sm_clock") {
    c.kind = ColumnKind::kSmClockMax;
    c.unit = "MHz";
  } else if (key == "clocks_event_reasons.active" || key == "clocks_throttle_reasons.active") {
    metric(Metric::kClockEventReasonsMask, "");
    c.hex = true;
  }
  if (!header_unit.empty() && c.kind != ColumnKind::kIgnored) c.unit = std::string(header_unit);
  return c;
}

// "[N/A]", "[Not Supported]", "[Unknown Error]", "N/A", "": nvidia-smi has no reading.
bool is_absent(std::string_view v) {
  return v.empty() || v == "N/A" || (v.size() >= 2 && v.front() == '[' && v.back() == ']');
}

std::optional<double> parse_number(std::string_view v, std::string_view unit) {
  if (!unit.empty() && v.size() > unit.size() && v.substr(v.size() - unit.size()) == unit)
    v = trim(v.substr(0, v.size() - unit.size()));
  if (v.empty() || v.front() == '+') return std::nullopt;
  double out = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || p != v.data() + v.size() || !std::isfinite(out)) return std::nullopt;
  return out;
}

std::optional<double> parse_hex(std::string_view v) {
  if (v.size() < 3 || v.size() > 18 || v[0] != '0' || (v[1] != 'x' && v[1] != 'X')) return std::nullopt;
  std::uint64_t out = 0;
  auto [p, ec] = std::from_chars(v.data() + 2, v.data() + v.size(), out, 16);
  if (ec != std::errc() || p != v.data() + v.size()) return std::nullopt;
  return static_cast<double>(out);
}

std::optional<int> parse_digits(std::string_view s) {
  if (s.empty() || s.size() > 9) return std::nullopt;
  int out = 0;
  for (char ch : s) {
    if (ch < '0' || ch > '9') return std::nullopt;
    out = out * 10 + (ch - '0');
  }
  return out;
}

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2 ? 1 : 0;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

// "2026/11/29 18:45:48.466" (fraction optional, 1..9 digits), read as UTC.
std::optional<std::int64_t> parse_timestamp_ns(std::string_view v) {
  if (v.size() < 19 || v[4] != '/' || v[7] != '/' || v[10] != ' ' || v[13] != ':' || v[16] != ':') return std::nullopt;
  auto year = parse_digits(v.substr(0, 4)), month = parse_digits(v.substr(5, 2)), day = parse_digits(v.substr(8, 2));
  auto hour = parse_digits(v.substr(11, 2)), minute = parse_digits(v.substr(14, 2)),
       second = parse_digits(v.substr(17, 2));
  if (!year || !month || !day || !hour || !minute || !second) return std::nullopt;
  if (*year < 1970 || *month < 1 || *month > 12 || *day < 1 || *hour > 23 || *minute > 59 || *second > 59)
    return std::nullopt;
  static constexpr int kDays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (*year % 4 == 0 && *year % 100 != 0) || *year % 400 == 0;
  if (*day > kDays[*month - 1] || (*month == 2 && *day == 29 && !leap)) return std::nullopt;
  std::int64_t frac_ns = 0;
  if (v.size() > 19) {
    std::string_view frac = v.substr(20);
    if (v[19] != '.' || frac.empty() || frac.size() > 9) return std::nullopt;
    auto digits = parse_digits(frac);
    if (!digits) return std::nullopt;
    frac_ns = *digits;
    for (std::size_t k = frac.size(); k < 9; ++k) frac_ns *= 10;
  }
  const std::int64_t days = days_from_civil(*year, static_cast<unsigned>(*month), static_cast<unsigned>(*day));
  const std::int64_t seconds = days * 86400 + *hour * 3600 + *minute * 60 + *second;
  if (seconds > kMaxUnixSeconds) return std::nullopt;
  return seconds * 1'000'000'000 + frac_ns;
}

struct GpuRows {
  gpu::DeviceInfo info;
  GpuTrace trace;
  std::vector<double> row_t;  // every accepted row's t, for the period estimate
  std::optional<double> last_t;
  std::optional<long long> index;  // the index column's value
};

// Rows skipped for one reason: how many, and the first few lines, for the warning.
struct Skipped {
  std::size_t count = 0;
  std::vector<std::size_t> first_lines;
  void add(std::size_t line) {
    if (first_lines.size() < 5) first_lines.push_back(line);
    ++count;
  }
  [[nodiscard]] std::string where() const {
    std::string out = count == 1 ? "line " : "lines ";
    for (std::size_t i = 0; i < first_lines.size(); ++i) out += (i ? ", " : "") + std::to_string(first_lines[i]);
    if (count > first_lines.size()) out += fmt::format(" and {} more", count - first_lines.size());
    return out;
  }
};

class Importer {
 public:
  Importer(std::string name, const ReadOptions& options) : name_(std::move(name)), options_(options) {}

  core::Result<Trace> run(LineReader& lines) {
    bool have_header = false;
    std::uint64_t blank_bytes = 0;  // of the blank lines since the last line with text
    std::string header_line;
    while (true) {
      auto next = lines.next();
      if (!next) return next.error();
      if (!*next) break;
      line_no_ = lines.line_no();
      std::string_view line = **next;
      if (line_no_ == 1 && line.substr(0, 3) == "\xEF\xBB\xBF") line.remove_prefix(3);
      const std::size_t raw_size = line.size();
      line = trim(line);
      if (line.empty()) {
        // A log may hold a few blank lines (runs appended one after another); a stream of them
        // (`yes ''`) is not a log and would otherwise be read up to the input limit.
        blank_bytes += raw_size + 1;
        if (blank_bytes > kMaxBlankBytes)
          return bad(fmt::format("over {} MiB of blank lines in a row: not an nvidia-smi log", kMaxBlankBytes >> 20));
        continue;
      }
      blank_bytes = 0;
      if (!have_header) {
        if (auto s = read_header(line); !s) return s.error();
        have_header = true;
        header_line = std::string(line);
        continue;
      }
      if (line == header_line) continue;  // logs appended from several runs repeat the header
      auto cells = split_cells(line);
      if (cells.size() != columns_.size()) {
        if (!lines.terminated()) {
          notes_.push_back(fmt::format("line {}: truncated last line skipped ({} of {} columns)", line_no_,
                                       cells.size(), columns_.size()));
          warnings_.push_back(fmt::format("{} line {}: the last line is cut off ({} of {} columns): it is skipped",
                                          utf8(name_), line_no_, cells.size(), columns_.size()));
          break;
        }
        return bad(fmt::format("{} columns, the header has {}", cells.size(), columns_.size()));
      }
      if (auto s = read_row(cells); !s) return s.error();
    }
    if (!have_header)
      return core::Error(core::ErrorKind::kBadInput, fmt::format("{}: empty file (not an nvidia-smi CSV)", name_));
    if (rows_ == 0) return core::Error(core::ErrorKind::kBadInput, fmt::format("{}: no data rows", name_));
    return finish();
  }

 private:
  core::Error bad(const std::string& message) const {
    return core::Error(core::ErrorKind::kBadInput, fmt::format("{} line {}: {}", name_, line_no_, message));
  }
  core::Error bad_cell(std::size_t col, std::string_view value, std::string_view what) const {
    return bad(fmt::format("column {} ({}): {} is not {}", col + 1, json_quoted(columns_[col].text),
                           json_quoted(utf8(value)), what));
  }

  core::Status read_header(std::string_view line) {
    auto cells = split_cells(line);
    bool known = false;
    for (std::size_t k = 0; k < cells.size(); ++k) {
      Column c = classify(cells[k]);
      if (c.kind != ColumnKind::kIgnored) {
        for (std::size_t j = 0; j < columns_.size(); ++j)
          if (columns_[j].kind == c.kind && (c.kind != ColumnKind::kMetric || columns_[j].metric == c.metric))
            return bad(fmt::format("column {} ({}) repeats column {} ({})", k + 1, json_quoted(c.text), j + 1,
                                   json_quoted(columns_[j].text)));
        known = true;
        if (c.kind == ColumnKind::kTimestamp) timestamp_col_ = k;
        if (c.kind == ColumnKind::kIndex) index_col_ = k;
        if (c.kind == ColumnKind::kUuid) uuid_col_ = k;
        if (c.kind == ColumnKind::kPciBusId) bus_col_ = k;
      } else if (!cells[k].empty()) {
        notes_.push_back(fmt::format("column {} (\"{}\") is not imported", k + 1, c.text));
      }
      columns_.push_back(std::move(c));
    }
    if (!known)
      return bad("no known nvidia-smi column in the header (expected e.g. \"timestamp, index, power.draw [W]\")");
    if (!timestamp_col_) return bad("no timestamp column: the rows cannot be placed in time");
    return core::ok_status();
  }

  // Which GPU a row belongs to: the index column, else uuid, else PCI bus id, else the one GPU.
  core::Result<std::size_t> gpu_of(const std::vector<std::string_view>& cells) {
    std::optional<long long> index;
    std::string key;
    if (index_col_) {
      std::string_view v = cells[*index_col_];
      auto n = parse_digits(v);
      if (!n || *n >= static_cast<int>(kMaxGpus)) return bad_cell(*index_col_, v, "a GPU index");
      index = *n;
      key = fmt::format("#{}", *n);
    } else if (uuid_col_ && !is_absent(cells[*uuid_col_])) {
      key = std::string(cells[*uuid_col_]);
    } else if (bus_col_ && !is_absent(cells[*bus_col_])) {
      key = std::string(cells[*bus_col_]);
    }
    for (std::size_t g = 0; g < keys_.size(); ++g)
      if (keys_[g] == key) return g;
    if (gpus_.size() >= kMaxGpus) return bad(fmt::format("more than {} GPUs", kMaxGpus));
    keys_.push_back(key);
    GpuRows rows;
    rows.index = index;
    rows.info.index = index ? static_cast<int>(*index) : static_cast<int>(gpus_.size());
    gpus_.push_back(std::move(rows));
    return gpus_.size() - 1;
  }

  core::Status read_row(const std::vector<std::string_view>& cells) {
    std::string_view ts = cells[*timestamp_col_];
    auto ns = parse_timestamp_ns(ts);
    if (!ns) return bad_cell(*timestamp_col_, ts, "a timestamp (YYYY/MM/DD HH:MM:SS.mmm)");
    auto g = gpu_of(cells);
    if (!g) return g.error();
    GpuRows& gpu = gpus_[*g];
    // Parse every cell before storing any, so a bad row leaves nothing behind.
    std::vector<std::pair<std::size_t, double>> values;
    for (std::size_t k = 0; k < cells.size(); ++k) {
      const Column& c = columns_[k];
      std::string_view v = cells[k];
      switch (c.kind) {
        case ColumnKind::kIgnored:
        case ColumnKind::kTimestamp:
        case ColumnKind::kIndex: break;
        case ColumnKind::kUuid:
          if (!is_absent(v) && gpu.info.uuid.empty()) gpu.info.uuid = utf8(v);
          break;
        case ColumnKind::kName:
          if (!is_absent(v) && gpu.info.name.empty()) gpu.info.name = utf8(v);
          break;
        case ColumnKind::kPciBusId:
          if (!is_absent(v) && gpu.info.pci_bus_id.empty()) gpu.info.pci_bus_id = utf8(v);
          break;
        case ColumnKind::kMetric:
        case ColumnKind::kMemoryTotal:
        case ColumnKind::kSmClockMax: {
          if (is_absent(v)) break;
          auto x = c.hex ? parse_hex(v) : parse_number(v, c.unit);
          if (!x) return bad_cell(k, v, c.hex ? "a hexadecimal mask" : "a number");
          if (c.kind == ColumnKind::kMemoryTotal) {
            if (*x < 0 || *x > kMaxMiB) return bad_cell(k, v, "a memory size");
            if (!gpu.info.memory_total_bytes)
              gpu.info.memory_total_bytes = static_cast<std::uint64_t>(std::llround(*x * kBytesPerMiB));
          } else if (c.kind == ColumnKind::kSmClockMax) {
            if (!gpu.info.sm_clock_max_mhz) gpu.info.sm_clock_max_mhz = *x;
          } else {
            // memory.used in MiB: as memory.total, so that bytes stay finite (1e305 MiB would not).
            if (c.scale != 1.0 && (*x < 0 || *x > kMaxMiB)) return bad_cell(k, v, "a memory size");
            values.emplace_back(k, *x * c.scale);
          }
          break;
        }
      }
    }
    if (!start_ns_) start_ns_ = *ns;
    const double t = static_cast<double>(*ns - *start_ns_) / 1e9;
    ++rows_;
    if (t > kMaxTraceSeconds) {  // the trace format's limit (3.2 years after the first row)
      too_late_.add(line_no_);
      return core::ok_status();
    }
    if (t < kMinT || (gpu.last_t && t < *gpu.last_t)) {
      backwards_.add(line_no_);
      return core::ok_status();
    }
    gpu.last_t = t;
    gpu.row_t.push_back(t);
    duration_s_ = std::max(duration_s_, t);
    if (!values.empty()) {
      first_sample_s_ = std::min(first_sample_s_.value_or(t), t);
      last_sample_s_ = std::max(last_sample_s_.value_or(t), t);
    }
    for (auto [k, x] : values) {
      if (!options_.metrics.test(gpu::index(columns_[k].metric))) continue;
      Series& s = gpu.trace.metric(columns_[k].metric);
      s.t.push_back(t);
      s.v.push_back(x);
    }
    return core::ok_status();
  }

  std::int64_t period_ms() const {
    std::vector<double> gaps;
    for (const auto& g : gpus_)
      for (std::size_t k = 1; k < g.row_t.size(); ++k) gaps.push_back(g.row_t[k] - g.row_t[k - 1]);
    if (gaps.empty()) return 0;
    auto mid = gaps.begin() + static_cast<std::ptrdiff_t>(gaps.size() / 2);
    std::nth_element(gaps.begin(), mid, gaps.end());
    // The trace format holds periods up to 2^32 - 1 ms (49.7 days); a log sparser than that keeps
    // the limit, so that the imported trace can be written and read back.
    constexpr double kMaxPeriodMs = 4'294'967'295.0;
    return std::llround(std::min(*mid * 1000.0, kMaxPeriodMs));
  }

  core::Result<Trace> finish() {
    Trace trace;
    TraceHeader& h = trace.header;
    h.host = "";
    h.start_unix_ns = *start_ns_;
    h.system.backend = "nvidia-smi-csv";
    const std::int64_t period = period_ms();
    for (Metric m : gpu::all_metrics()) {
      bool present = false;
      for (const auto& c : columns_) present = present || (c.kind == ColumnKind::kMetric && c.metric == m);
      if (!present) continue;
      const auto& mi = gpu::info(m);
      h.metrics.push_back(
          MetricColumn{std::string(mi.name), std::string(mi.unit), std::string(gpu::info(mi.group).name), period});
    }
    // GPUs in index order when the index column is there, else in order of first appearance.
    std::vector<std::size_t> order(gpus_.size());
    for (std::size_t g = 0; g < order.size(); ++g) order[g] = g;
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return gpus_[a].info.index < gpus_[b].info.index; });
    for (std::size_t g : order) {
      h.gpus.push_back(std::move(gpus_[g].info));
      trace.gpus.push_back(std::move(gpus_[g].trace));
    }
    h.extra["source"] = "nvidia-smi CSV";
    h.extra["source_file"] = utf8(name_);
    h.extra["timestamps"] = "nvidia-smi prints the logging machine's local time without a zone; it was read as UTC";
    if (backwards_.count > 0) {
      notes_.push_back(fmt::format("{} rows skipped: their time went backwards (clock change?)", backwards_.count));
      warnings_.push_back(fmt::format("{}: {} row{} skipped, {} time went backwards (clock change?): {}", utf8(name_),
                                      backwards_.count, backwards_.count == 1 ? "" : "s",
                                      backwards_.count == 1 ? "its" : "their", backwards_.where()));
    }
    if (too_late_.count > 0) {
      notes_.push_back(
          fmt::format("{} rows skipped: more than {:.0f} s after the first row", too_late_.count, kMaxTraceSeconds));
      warnings_.push_back(fmt::format("{}: {} row{} skipped, more than {:.0f} s after the first row: {}", utf8(name_),
                                      too_late_.count, too_late_.count == 1 ? "" : "s", kMaxTraceSeconds,
                                      too_late_.where()));
    }
    if (!notes_.empty()) h.extra["import_notes"] = notes_;
    trace.duration_s = duration_s_;
    trace.first_sample_s = first_sample_s_;
    trace.last_sample_s = last_sample_s_;
    trace.warnings = std::move(warnings_);
    return trace;
  }

  std::string name_;
  ReadOptions options_;
  std::size_t line_no_ = 0;
  std::vector<Column> columns_;
  std::optional<std::size_t> timestamp_col_, index_col_, uuid_col_, bus_col_;
  std::vector<std::string> keys_;
  std::vector<GpuRows> gpus_;
  std::optional<std::int64_t> start_ns_;
  std::size_t rows_ = 0;
  Skipped backwards_;
  Skipped too_late_;
  double duration_s_ = 0;
  std::optional<double> first_sample_s_, last_sample_s_;
  std::vector<std::string> notes_;     // header.extra["import_notes"]
  std::vector<std::string> warnings_;  // Trace::warnings: the same, naming file and lines
};

}  // namespace

bool looks_like_nvidia_smi_csv(std::string_view first_line) {
  if (first_line.size() >= 3 && first_line.substr(0, 3) == "\xEF\xBB\xBF") first_line.remove_prefix(3);
  first_line = trim(first_line);
  if (first_line.empty() || first_line.size() > kMaxLineBytes || first_line.front() == '{') return false;
  for (std::string_view cell : split_cells(first_line))
    if (classify(cell).kind != ColumnKind::kIgnored) return true;
  return false;
}

core::Result<Trace> read_nvidia_smi_csv(LineReader& lines, const ReadOptions& options) {
  try {
    return Importer(lines.name(), options).run(lines);
  } catch (const std::bad_alloc&) {
    return core::Error(core::ErrorKind::kBadInput, fmt::format("{}: out of memory while importing", lines.name()));
  }
}

core::Result<Trace> parse_nvidia_smi_csv(std::string_view content, std::string_view name) {
  LineReader lines = LineReader::of_text(content, std::string(name));
  return read_nvidia_smi_csv(lines);
}

}  // namespace gpudoc::telemetry
