// gpudoc::core text helpers — terminal output shared by every command: sparklines, human units,
// aligned tables, and text from traces made safe to print. Pure functions, no I/O.
//
//   std::string s = core::sparkline({0, 50, 100}, 0, 100);   // "▁▄█"
//   core::human_bytes(143771ull << 20)                       // "140.4 GiB"
//   core::terminal_safe(host_name)                           // "evil\x1b]0;owned\x07" stays text
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gpudoc::core {

// One block character per value, scaled between lo and hi; an absent value is a space.
[[nodiscard]] std::string sparkline(std::span<const std::optional<double>> values, double lo, double hi);
[[nodiscard]] std::string sparkline(std::span<const double> values, double lo, double hi);
// The first clause of a message: up to its first '(', ';' or newline, trailing spaces dropped
// ("cannot load libnvidia-ml.so.1 (no such file); ..." -> "cannot load libnvidia-ml.so.1"); the
// whole message when that would leave nothing.
[[nodiscard]] std::string first_clause(std::string message);
// The items of a list written as one word, "a,b,,c" -> {"a", "b", "c"} (empty items dropped), as a
// flag that takes a comma-separated list gives it.
[[nodiscard]] std::vector<std::string> split_list(std::string_view text, char separator = ',');
[[nodiscard]] std::string human_bytes(double bytes);       // "1.5 GiB"
[[nodiscard]] std::string human_duration(double seconds);  // "1h 02m", "3.2 s", "850 ms"
// A measured figure with its unit: bytes ("By") as human_bytes, "percent" as "%", no unit for
// "" and "1", otherwise "95.54 ms"; 4 significant digits. "—" when absent or not finite.
[[nodiscard]] std::string value_with_unit(std::optional<double> value, std::string_view unit);
// A wall-clock time in UTC to the second: "2026-11-30 03:03:56Z".
[[nodiscard]] std::string utc_seconds_text(std::int64_t unix_ns);
// Display width in terminal columns of a UTF-8 string (counts code points; no wide-char support).
[[nodiscard]] std::size_t display_width(const std::string& s);
// Pads (or cuts) a UTF-8 string to exactly `width` columns.
[[nodiscard]] std::string fit(const std::string& s, std::size_t width);

// Text from outside gpudoc (a trace, a log, a process, the store, a config, a workload's figures:
// host, GPU, process, job, baseline and metric names, event kinds, commands) as it may be printed on
// a terminal or into plain text: every control character (C0 including tab and newline, DEL, the C1
// range U+0080..U+009F with the 8-bit CSI U+009B), every byte that is not part of valid UTF-8 (each
// one shown alone), and the Unicode bidirectional and line/paragraph separators (U+2028/2029,
// U+202A..U+202E, U+2066..U+2069) are written as visible escapes ("\x1b", "\xff", "\u{009b}",
// "\u{202e}"), so the text cannot move the cursor, retitle the window, clear the screen or reorder
// what follows. Everything else, other UTF-8 included, is kept; a backslash stays a backslash, so
// escaping twice changes nothing. `Newlines::kKeep` keeps '\n' (a message or report of several
// lines); nothing else is kept. This is the one way such text reaches a terminal: the views escape
// each field with it (colour is added to the escaped text), render_table escapes every cell, the
// CLI writes its plain text through it (cli::print_text), and so does the log. JSON carries the
// exact text (the JSON library escapes it); HTML has its own escaping (view/html_page.hpp).
enum class Newlines { kEscape, kKeep };
[[nodiscard]] std::string terminal_safe(std::string_view s, Newlines newlines = Newlines::kEscape);

// A simple aligned table: first row is the header. Every cell is shown through terminal_safe, so
// a name from a trace or the store can neither drive the terminal nor break the columns.
[[nodiscard]] std::string render_table(const std::vector<std::vector<std::string>>& rows);

}  // namespace gpudoc::core
