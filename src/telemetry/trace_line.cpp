#include "telemetry/trace_line.hpp"

#include <charconv>
#include <cmath>
#include <cstring>
#include <system_error>

namespace gpudoc::telemetry::detail {
namespace {

// JSON whitespace (RFC 8259). '\r' matters: a trace edited on Windows ends lines with "\r\n".
constexpr bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
constexpr bool is_digit(char c) { return c >= '0' && c <= '9'; }

class Cursor {
 public:
  explicit Cursor(std::string_view s) : s_(s) {}

  void skip_ws() {
    while (i_ < s_.size() && is_ws(s_[i_])) ++i_;
  }
  [[nodiscard]] bool at_end() const { return i_ >= s_.size(); }
  [[nodiscard]] char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  bool eat(char c) {
    if (peek() != c || at_end()) return false;
    ++i_;
    return true;
  }

  // A string without escapes, control characters or non-ASCII bytes; the opening quote is next.
  bool string(std::string_view& out) {
    if (!eat('"')) return false;
    std::size_t start = i_;
    while (i_ < s_.size()) {
      auto c = static_cast<unsigned char>(s_[i_]);
      if (c == '"') {
        out = s_.substr(start, i_ - start);
        ++i_;
        return true;
      }
      if (c == '\\' || c < 0x20 || c >= 0x80) return false;
      ++i_;
    }
    return false;
  }

  // RFC 8259 number grammar, checked here because std::from_chars accepts more ("inf", "1.", ...).
  bool number(FlatValue& v) {
    std::size_t start = i_;
    bool negative = eat('-');
    if (peek() == '0' && !at_end()) {
      ++i_;
    } else if (is_digit(peek()) && !at_end()) {
      while (!at_end() && is_digit(s_[i_])) ++i_;
    } else {
      return false;
    }
    bool integral = true;
    if (eat('.')) {
      integral = false;
      if (at_end() || !is_digit(s_[i_])) return false;
      while (!at_end() && is_digit(s_[i_])) ++i_;
    }
    if (peek() == 'e' || peek() == 'E') {
      if (at_end()) return false;
      ++i_;
      integral = false;
      if (peek() == '+' || peek() == '-') ++i_;
      if (at_end() || !is_digit(s_[i_])) return false;
      while (!at_end() && is_digit(s_[i_])) ++i_;
    }
    const char* first = s_.data() + start;
    const char* last = s_.data() + i_;
    auto r = std::from_chars(first, last, v.number);
    // Out of range (1e999) is rejected by the reference parser too; let it phrase the error.
    if (r.ec != std::errc() || r.ptr != last || !std::isfinite(v.number)) return false;
    v.kind = FlatKind::kNumber;
    v.exact_u64 = false;
    if (integral && !negative) {
      auto u = std::from_chars(first, last, v.u64);
      v.exact_u64 = u.ec == std::errc() && u.ptr == last;
    }
    return true;
  }

  bool literal(std::string_view word) {
    if (s_.substr(i_, word.size()) != word) return false;
    i_ += word.size();
    return true;
  }

 private:
  std::string_view s_;
  std::size_t i_ = 0;
};

}  // namespace

FlatParse parse_flat_line(std::string_view line, std::vector<FlatField>& out) {
  out.clear();
  Cursor c(line);
  c.skip_ws();
  if (!c.eat('{')) return FlatParse::kFallback;
  c.skip_ws();
  if (!c.eat('}')) {
    while (true) {
      FlatField f;
      if (!c.string(f.key)) return FlatParse::kFallback;
      c.skip_ws();
      if (!c.eat(':')) return FlatParse::kFallback;
      c.skip_ws();
      switch (c.peek()) {
        case '"':
          f.value.kind = FlatKind::kString;
          if (!c.string(f.value.text)) return FlatParse::kFallback;
          break;
        case 't':
          f.value.kind = FlatKind::kTrue;
          if (!c.literal("true")) return FlatParse::kFallback;
          break;
        case 'f':
          f.value.kind = FlatKind::kFalse;
          if (!c.literal("false")) return FlatParse::kFallback;
          break;
        case 'n':
          f.value.kind = FlatKind::kNull;
          if (!c.literal("null")) return FlatParse::kFallback;
          break;
        default:
          // '{' and '[' (nested values) end here too: the reference parser builds those.
          if (!c.number(f.value)) return FlatParse::kFallback;
          break;
      }
      // A repeated key: the reference parser keeps the last one; leave that rule to it.
      for (const auto& prev : out)
        if (prev.key == f.key) return FlatParse::kFallback;
      out.push_back(f);
      c.skip_ws();
      if (c.eat(',')) {
        c.skip_ws();
        continue;
      }
      if (c.eat('}')) break;
      return FlatParse::kFallback;
    }
  }
  c.skip_ws();
  return c.at_end() ? FlatParse::kOk : FlatParse::kFallback;
}

}  // namespace gpudoc::telemetry::detail
