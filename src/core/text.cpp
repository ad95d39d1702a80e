#include "core/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <ctime>

#include "core/utf8.hpp"

namespace gpudoc::core {
namespace {
constexpr std::array<const char*, 8> kBlocks = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};

const char* block_for(double v, double lo, double hi) {
  if (!std::isfinite(v)) return " ";
  double span = hi - lo;
  double x = span > 0 ? (v - lo) / span : 0.0;
  x = std::clamp(x, 0.0, 1.0);
  auto i = static_cast<std::size_t>(std::lround(x * 7.0));
  return kBlocks[std::min<std::size_t>(i, 7)];
}

std::uint32_t code_point(std::string_view seq) {
  const auto c0 = static_cast<unsigned char>(seq[0]);
  if (seq.size() == 1) return c0;
  std::uint32_t cp = c0 & (seq.size() == 2 ? 0x1Fu : seq.size() == 3 ? 0x0Fu : 0x07u);
  for (std::size_t k = 1; k < seq.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(seq[k]) & 0x3Fu);
  return cp;
}

bool must_escape(std::uint32_t cp) {
  return cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 ||
         (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

}  // namespace

std::string sparkline(std::span<const std::optional<double>> values, double lo, double hi) {
  std::string out;
  for (const auto& v : values) out += v ? block_for(*v, lo, hi) : " ";
  return out;
}

std::string sparkline(std::span<const double> values, double lo, double hi) {
  std::string out;
  for (double v : values) out += block_for(v, lo, hi);
  return out;
}

std::string human_bytes(double bytes) {
  constexpr std::array<const char*, 6> kUnits = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  std::size_t u = 0;
  double v = bytes;
  while (std::fabs(v) >= 1024.0 && u + 1 < kUnits.size()) {
    v /= 1024.0;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f} B", v) : fmt::format("{:.1f} {}", v, kUnits[u]);
}

std::string value_with_unit(std::optional<double> value, std::string_view unit) {
  if (!value || !std::isfinite(*value)) return "—";
  if (unit == "By") return human_bytes(*value);
  const std::string s = fmt::format("{:.4g}", *value);
  if (unit.empty() || unit == "1") return s;
  return s + " " + (unit == "percent" ? std::string("%") : std::string(unit));
}

std::string utc_seconds_text(std::int64_t unix_ns) {
  const auto t = static_cast<std::time_t>(unix_ns / 1'000'000'000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%SZ", &tm);
  return buf;
}

std::string human_duration(double seconds) {
  if (!std::isfinite(seconds)) return "?";
  if (seconds < 1.0) return fmt::format("{:.0f} ms", seconds * 1000.0);
  if (seconds < 60.0) return fmt::format("{:.1f} s", seconds);
  auto total = static_cast<long long>(seconds);
  if (total < 3600) return fmt::format("{}m {:02}s", total / 60, total % 60);
  return fmt::format("{}h {:02}m", total / 3600, (total % 3600) / 60);
}

std::size_t display_width(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++n;
  return n;
}

std::string fit(const std::string& s, std::size_t width) {
  std::size_t w = display_width(s);
  if (w <= width) return s + std::string(width - w, ' ');
  std::string out;
  std::size_t n = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if ((c & 0xC0) != 0x80) {
      if (n == width) break;
      ++n;
    }
    out += s[i];
  }
  return out;
}

std::string terminal_safe(std::string_view s, Newlines newlines) {
  std::string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    const std::size_t n = utf8_sequence_length(s, i);
    if (n == 0) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(s[i]));
      ++i;
      continue;
    }
    const std::string_view seq = s.substr(i, n);
    const std::uint32_t cp = code_point(seq);
    if (!must_escape(cp) || (cp == '\n' && newlines == Newlines::kKeep))
      out.append(seq);
    else if (cp < 0x80)
      out += fmt::format("\\x{:02x}", cp);
    else
      out += fmt::format("\\u{{{:04x}}}", cp);
    i += n;
  }
  return out;
}

std::string render_table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> widths;
  for (const auto& r : rows) {
    if (widths.size() < r.size()) widths.resize(r.size(), 0);
    for (std::size_t i = 0; i < r.size(); ++i) widths[i] = std::max(widths[i], display_width(terminal_safe(r[i])));
  }
  std::string out;
  for (const auto& r : rows) {
    std::string line;
    for (std::size_t i = 0; i < r.size(); ++i) {
      const std::string cell = terminal_safe(r[i]);
      line += (i + 1 == r.size()) ? cell : fit(cell, widths[i]) + "  ";
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string first_clause(std::string why) {
  if (auto cut = why.find_first_of("(;\n"); cut != std::string::npos && cut > 0) why.resize(cut);
  while (!why.empty() && why.back() == ' ') why.pop_back();
  return why;
}

std::vector<std::string> split_list(std::string_view text, char separator) {
  std::vector<std::string> items;
  while (!text.empty()) {
    const std::size_t end = std::min(text.find(separator), text.size());
    if (end > 0) items.emplace_back(text.substr(0, end));
    text.remove_prefix(std::min(end + 1, text.size()));
  }
  return items;
}

}  // namespace gpudoc::core
