#include "profile/records.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <string_view>
#include <unordered_map>

#include "profile/record_format.hpp"

namespace gpudoc::profile {
namespace {

std::vector<std::string_view> split_tabs(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t pos = 0;
  while (true) {
    const std::size_t tab = line.find('\t', pos);
    out.push_back(line.substr(pos, tab == std::string_view::npos ? std::string_view::npos : tab - pos));
    if (tab == std::string_view::npos) return out;
    pos = tab + 1;
  }
}

// The fields of one line as numbers; `ok` goes false at the first one that is not.
struct Fields {
  std::vector<std::string_view> f;
  bool ok = true;
  template <class T>
  T num(std::size_t i) {
    T v{};
    if (i >= f.size()) {
      ok = false;
      return v;
    }
    const auto* end = f[i].data() + f[i].size();
    auto [p, ec] = std::from_chars(f[i].data(), end, v);
    if (ec != std::errc() || p != end) ok = false;
    return v;
  }
  std::string text(std::size_t i) {
    if (i >= f.size()) {
      ok = false;
      return {};
    }
    return unescape_field(f[i]);
  }
};

struct OpenMarker {
  std::uint64_t start = 0;
  std::uint32_t thread = 0;
  std::string name, domain;
};

// "" or why a span cannot be one CUPTI measured: it ends before it starts, or lasts over a day.
std::string bad_span(const char* what, std::uint64_t start, std::uint64_t end) {
  if (end < start) return fmt::format("{} that ends ({}) before it starts ({})", what, end, start);
  if (end - start > kMaxSpanNs) return fmt::format("{} {} ns long (over a day)", what, end - start);
  return {};
}

struct Reader {
  RecordSet set;
  std::map<std::pair<bool, std::uint32_t>, std::string> api_names;
  std::unordered_map<std::uint32_t, OpenMarker> open_markers;
  bool header = false;
  std::uint64_t warnings_left_out = 0;

  // Returns "" or what is wrong with the line.
  std::string line(std::string_view text) {
    Fields l{split_tabs(text)};
    if (l.f.empty() || l.f[0].size() != 1) return "not a record (the first field is not one letter)";
    const char kind = l.f[0][0];
    if (!header && kind != 'H') return "not a gpudoc profile (no H line first)";
    switch (kind) {
      case 'H': {
        if (l.text(1) != kRecordMagic) return "not a gpudoc profile (H line without gpudoc-profile)";
        const int version = l.num<int>(2);
        if (l.ok && version > kRecordFormatVersion)
          return fmt::format("format version {} is newer than this gpudoc reads ({})", version, kRecordFormatVersion);
        set.pid = l.num<std::uint32_t>(3);
        set.cupti_version = l.num<std::uint32_t>(4);
        header = true;
        break;
      }
      case 'K': return timed(l, kernel(l));
      case 'M':
      case 'S': return timed(l, copy(l, kind == 'S'));
      case 'R':
      case 'D': {
        ApiRecord a{l.num<std::uint64_t>(1),
                    l.num<std::uint64_t>(2),
                    l.num<std::uint32_t>(3),
                    l.num<std::uint32_t>(4),
                    l.num<std::uint32_t>(5),
                    kind == 'D',
                    {}};
        const auto [start, end] = std::pair(a.start_ns, a.end_ns);
        set.api_calls.push_back(std::move(a));
        return timed(l, bad_span(kind == 'D' ? "a driver API call" : "a runtime API call", start, end));
      }
      case 'C': api_names[{l.text(1) == "D", l.num<std::uint32_t>(2)}] = l.text(3); break;
      case 'Y':
        set.syncs.push_back({l.num<std::uint64_t>(1), l.num<std::uint64_t>(2), l.num<std::uint32_t>(3),
                             l.num<std::uint32_t>(4), l.num<std::uint32_t>(5)});
        return timed(l, bad_span("a synchronization", set.syncs.back().start_ns, set.syncs.back().end_ns));
      case 'G':
        set.graph_launches.push_back({l.num<std::uint64_t>(1), l.num<std::uint64_t>(2), l.num<std::uint32_t>(3),
                                      l.num<std::uint32_t>(4), l.num<std::uint32_t>(5), l.num<std::uint32_t>(6)});
        return timed(l,
                     bad_span("a graph launch", set.graph_launches.back().start_ns, set.graph_launches.back().end_ns));
      case 'N': return timed(l, marker(l));
      case 'X': (l.text(1) == "LIMIT" ? set.over_file_limit : set.dropped) += l.num<std::uint64_t>(2); break;
      case 'W':
        if (set.warnings.size() < kMaxWarnings)
          set.warnings.push_back(l.text(1));
        else
          ++warnings_left_out;
        break;
      case 'O': {
        const auto at = l.num<std::uint64_t>(1);
        if (!l.ok) break;
        // The library stamps both lines from CUPTI's clock, which never goes back: a window that opens
        // before the last one opened or closed is not what it wrote (the look-ups need time order).
        if (!set.windows.empty()) {
          TraceWindow& last = set.windows.back();
          const bool open = last.end_ns == UINT64_MAX;
          if (at < (open ? last.start_ns : last.end_ns))
            return fmt::format("a sampling window opens at {}, before the last one {} at {}", at,
                               open ? "opened" : "closed", open ? last.start_ns : last.end_ns);
          if (open) last.end_ns = at;  // an O after an O (never written so) closes the first
        }
        set.windows.push_back({at, UINT64_MAX});
        break;
      }
      case 'F': {
        const auto at = l.num<std::uint64_t>(1);
        if (!l.ok || set.windows.empty() || set.windows.back().end_ns != UINT64_MAX) break;
        if (at < set.windows.back().start_ns)
          return fmt::format("a sampling window closes at {}, before it opened at {}", at, set.windows.back().start_ns);
        set.windows.back().end_ns = at;
        break;
      }
      case 'E': set.complete = true; break;
      case 'T': set.clock_pairs.push_back({l.num<std::uint64_t>(1), l.num<std::uint64_t>(2)}); break;
      case 'P': set.device_buses.push_back({l.num<std::uint32_t>(1), l.text(2)}); break;
      case 'J': {
        EnergyReading e{l.num<std::uint64_t>(1), l.text(2), l.num<std::int64_t>(3)};
        if (l.ok && e.millijoules < 0) return fmt::format("an energy reading below 0 ({} mJ)", e.millijoules);
        set.energy.push_back(std::move(e));
        break;
      }
      case 'U':
        if (set.energy_notes.size() < kMaxWarnings) set.energy_notes.push_back(l.text(1));
        break;
      default: return fmt::format("unknown record kind '{}'", kind);
    }
    return timed(l, {});
  }

  // What is wrong with a line that carries a span: malformed first, else `span_why` ("" when none).
  static std::string timed(const Fields& l, std::string span_why) {
    if (!l.ok) return fmt::format("malformed '{}' record ({} fields)", l.f[0], l.f.size());
    return span_why;
  }

  std::string kernel(Fields& l) {
    KernelRecord k;
    k.start_ns = l.num<std::uint64_t>(1), k.end_ns = l.num<std::uint64_t>(2);
    k.device = l.num<std::uint32_t>(3), k.stream = l.num<std::uint32_t>(4), k.correlation = l.num<std::uint32_t>(5);
    for (int i = 0; i < 3; ++i) k.grid[i] = l.num<int>(6 + static_cast<std::size_t>(i));
    for (int i = 0; i < 3; ++i) k.block[i] = l.num<int>(9 + static_cast<std::size_t>(i));
    k.graph = l.num<std::uint32_t>(12);
    k.name = l.text(13);
    if (k.start_ns == 0 || k.end_ns == 0) {
      ++set.untimed;
      return {};
    }
    std::string why = bad_span("a kernel", k.start_ns, k.end_ns);
    set.kernels.push_back(std::move(k));
    return why;
  }

  std::string copy(Fields& l, bool memset) {
    CopyRecord c;
    c.start_ns = l.num<std::uint64_t>(1), c.end_ns = l.num<std::uint64_t>(2);
    c.device = l.num<std::uint32_t>(3), c.stream = l.num<std::uint32_t>(4), c.correlation = l.num<std::uint32_t>(5);
    c.memset = memset;
    if (memset) {
      c.bytes = l.num<std::uint64_t>(6), c.dst_memory = l.num<std::uint8_t>(7), c.graph = l.num<std::uint32_t>(8);
    } else {
      c.kind = l.num<std::uint8_t>(6), c.src_memory = l.num<std::uint8_t>(7), c.dst_memory = l.num<std::uint8_t>(8);
      c.bytes = l.num<std::uint64_t>(9), c.graph = l.num<std::uint32_t>(10);
    }
    if (c.start_ns == 0 || c.end_ns == 0) {
      ++set.untimed;
      return {};
    }
    set.copies.push_back(c);
    return bad_span(memset ? "a memset" : "a copy", c.start_ns, c.end_ns);
  }

  // Flags: 1 instantaneous, 2 start, 4 end (CUPTI_ACTIVITY_FLAG_MARKER_*). Push/pop ranges and
  // start/end ranges both come as a start and an end record sharing an id.
  std::string marker(Fields& l) {
    const auto flags = l.num<std::uint32_t>(1);
    const auto id = l.num<std::uint32_t>(2);
    const auto ts = l.num<std::uint64_t>(3);
    const auto thread = l.num<std::uint32_t>(4);
    if ((flags & 2u) != 0) {
      open_markers[id] = {ts, thread, l.text(5), l.text(6)};
    } else if ((flags & 4u) != 0) {
      auto it = open_markers.find(id);
      if (it == open_markers.end()) return {};
      std::string why = bad_span("an NVTX range", it->second.start, ts);
      set.ranges.push_back({it->second.start, ts, it->second.thread, it->second.name, it->second.domain});
      open_markers.erase(it);
      return why;
    }
    return {};
  }

  void finish() {
    if (warnings_left_out > 0)
      set.warnings.push_back(fmt::format("{} more warnings (W lines) left out", warnings_left_out));
    for (auto& a : set.api_calls) {
      auto it = api_names.find({a.driver, a.cbid});
      a.name = it != api_names.end() && !it->second.empty() ? it->second : fmt::format("cbid {}", a.cbid);
    }
    auto by_start = [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; };
    std::stable_sort(set.kernels.begin(), set.kernels.end(), by_start);
    std::stable_sort(set.copies.begin(), set.copies.end(), by_start);
    std::stable_sort(set.api_calls.begin(), set.api_calls.end(), by_start);
    std::stable_sort(set.syncs.begin(), set.syncs.end(), by_start);
    std::stable_sort(set.graph_launches.begin(), set.graph_launches.end(), by_start);
    std::stable_sort(set.ranges.begin(), set.ranges.end(), by_start);
  }
};

}  // namespace

std::uint64_t last_end_ns(const RecordSet& set) {
  std::uint64_t last = 0;
  for (const auto& k : set.kernels) last = std::max(last, k.end_ns);
  for (const auto& c : set.copies) last = std::max(last, c.end_ns);
  for (const auto& a : set.api_calls) last = std::max(last, a.end_ns);
  for (const auto& r : set.ranges) last = std::max(last, r.end_ns);
  return last;
}

core::Result<RecordSet> read_records(core::LineReader& lines) {
  Reader r;
  while (true) {
    auto line = lines.next();
    if (!line) return line.error();
    if (!*line) break;
    if (!lines.terminated()) {  // no newline after it: the writer was stopped in the middle of this line
      ++r.set.truncated_lines;
      break;
    }
    if ((*line)->empty()) continue;
    if (std::string why = r.line(**line); !why.empty())
      return core::Error(core::ErrorKind::kBadInput, fmt::format("{} line {}: {}", lines.name(), lines.line_no(), why));
  }
  if (!r.header)
    return core::Error(core::ErrorKind::kBadInput,
                       fmt::format("{}: empty or not a gpudoc profile (no H line)", lines.name()));
  r.finish();
  return std::move(r.set);
}

core::Result<RecordSet> read_records_text(std::string_view text, const std::string& what,
                                          const core::InputLimits& limits) {
  core::LineReader lines = core::LineReader::of_text(text, what, limits);
  return read_records(lines);
}

std::string energy_lines(const std::vector<EnergyReading>& readings, const std::vector<std::string>& notes) {
  std::string out;
  for (const auto& r : readings) {
    out += fmt::format("J\t{}\t", r.monotonic_ns);
    append_escaped(out, r.pci_bus_id);
    out += fmt::format("\t{}\n", r.millijoules);
  }
  for (const auto& n : notes) {
    out += "U\t";
    append_escaped(out, n);
    out += '\n';
  }
  return out;
}

core::Result<RecordSet> read_records_file(const std::string& path) {
  auto lines = core::LineReader::open(path, kRecordsInput);
  if (!lines) return lines.error();
  return read_records(*lines);
}

}  // namespace gpudoc::profile
