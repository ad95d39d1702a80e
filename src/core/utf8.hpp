// gpudoc::core UTF-8 — text from other programs (a workload's output, its arguments) made valid
// UTF-8 before it goes into JSON, the store or a report, so one stray byte never ends a run.
//
//   std::string s = "step\xff";
//   if (!core::is_valid_utf8(s)) s = core::to_valid_utf8(s);   // "step\uFFFD"
//
// Pure functions, thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace gpudoc::core {

// True when `s` is well-formed UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF).
[[nodiscard]] bool is_valid_utf8(std::string_view s) noexcept;

// The length (1..4) of the well-formed UTF-8 sequence that starts at s[i], or 0 when the bytes
// there are ill-formed (a stray continuation byte, a cut sequence, an overlong form, a surrogate,
// anything above U+10FFFF). i < s.size(). The one decoder behind is_valid_utf8, to_valid_utf8 and
// core::terminal_safe.
[[nodiscard]] std::size_t utf8_sequence_length(std::string_view s, std::size_t i) noexcept;

// `s` with each ill-formed byte sequence replaced by U+FFFD (one per maximal ill-formed
// subpart, as Unicode recommends). `replaced`, when given, receives how many were replaced.
[[nodiscard]] std::string to_valid_utf8(std::string_view s, std::size_t* replaced = nullptr);

}  // namespace gpudoc::core
