#include "core/utf8.hpp"

namespace gpudoc::core {

namespace {

// The length of the well-formed sequence at s[i], or 0 when the bytes there are ill-formed;
// `bad_len` gets the length of the maximal ill-formed subpart to replace (at least 1).
std::size_t sequence_length(std::string_view s, std::size_t i, std::size_t& bad_len) noexcept {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  bad_len = 1;
  if (c < 0x80) return 1;
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the range allowed for the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;  // no overlong forms
    if (c == 0xED) hi = 0x9F;  // no surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;  // no overlong forms
    if (c == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return 0;
  }
  for (std::size_t k = 1; k < n; ++k) {
    if (i + k >= s.size()) return 0;
    const unsigned char x = b(i + k);
    const unsigned char from = k == 1 ? lo : 0x80, to = k == 1 ? hi : 0xBF;
    if (x < from || x > to) return 0;
    bad_len = k + 1;
  }
  return n;
}

}  // namespace

std::size_t utf8_sequence_length(std::string_view s, std::size_t i) noexcept {
  std::size_t bad = 0;
  return sequence_length(s, i, bad);
}

bool is_valid_utf8(std::string_view s) noexcept {
  std::size_t bad = 0;
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = sequence_length(s, i, bad);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string to_valid_utf8(std::string_view s, std::size_t* replaced) {
  std::string out;
  out.reserve(s.size());
  std::size_t count = 0, bad = 0;
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = sequence_length(s, i, bad);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++count;
      i += bad;
      continue;
    }
    out.append(s.substr(i, n));
    i += n;
  }
  if (replaced != nullptr) *replaced = count;
  return out;
}

}  // namespace gpudoc::core
