// gpudoc::serve::http — the HTTP/1.1 that `gpudoc serve` speaks, as pure functions: where a request's
// head ends, what it asks, and an answer's bytes. No sockets (serve::Server does the I/O), so every
// limit and every malformed request is testable on its own.
//
//   std::string_view buf = ...;                       // what a connection has sent so far
//   auto end = http::head_end(buf);                   // nullopt: not whole yet
//   if (!end && buf.size() >= http::kMaxHead) ...     // http::too_long(buf): 414 or 431
//   http::Parsed p = http::parse_head(buf.substr(0, *end));
//   if (p.status != 0) ... answer p.status with p.reason and close
//   std::string bytes = http::format({.status = 200, .content_type = "text/plain", .body = "ok\n"}, p.request);
//
// Read-only by design: GET and HEAD only (any other method: 405 with Allow), no request body (a
// Content-Length above 0 or a Transfer-Encoding: 400, or 405 for another method), a head of at most
// kMaxHead bytes and kMaxHeaders lines, HTTP/1.0 and 1.1 only (505).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpudoc::serve::http {

inline constexpr std::size_t kMaxHead = 8192;  // request line and headers together
inline constexpr std::size_t kMaxHeaders = 100;

struct Request {
  std::string method;  // "GET" or "HEAD" once parsed without error
  std::string path;    // the target before '?', as sent (not decoded)
  std::string query;   // after '?', as sent
  bool http11 = true;
  bool keep_alive = true;  // HTTP/1.1 unless "Connection: close"; HTTP/1.0 only with "Connection: keep-alive"
  std::vector<std::pair<std::string, std::string>> headers;

  // The first header of that name (case-insensitive), its value without surrounding blanks.
  [[nodiscard]] std::optional<std::string_view> header(std::string_view name) const;
  // The first query parameter of that name, percent-decoded ('+' is a space); nullopt when absent,
  // or when it is not valid percent-encoding.
  [[nodiscard]] std::optional<std::string> param(std::string_view name) const;
};

struct Parsed {
  int status = 0;      // 0: a request to answer; else the error status to answer with, then close
  std::string reason;  // for an error: one line for the client
  Request request;     // method/path/version filled as far as they were read
};

// Where the head ends (the offset after its blank line: "\r\n\r\n", or "\n\n" from a client that
// sends bare LFs); nullopt while it has not.
[[nodiscard]] std::optional<std::size_t> head_end(std::string_view buffer) noexcept;
// The error for a head that has reached kMaxHead bytes without ending: 414 while the request line
// itself has not ended, 431 otherwise.
[[nodiscard]] Parsed too_long(std::string_view buffer);
// A whole head (as found by head_end, its blank line included).
[[nodiscard]] Parsed parse_head(std::string_view head);

[[nodiscard]] std::string_view reason_phrase(int status) noexcept;

struct Answer {
  int status = 200;
  std::string content_type;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // more: Allow, Retry-After, ...
  bool close = false;                                        // the connection ends after this answer
  bool stream = false;  // the body goes on after this (an event stream): no Content-Length, ends with the connection
};

// The bytes of `answer` to `request`: status line, headers (Content-Type, Content-Length unless a
// stream, `common_headers`, Connection), and the body unless the request was HEAD.
[[nodiscard]] std::string format(const Answer& answer, bool head_request, bool keep_alive,
                                 const std::vector<std::pair<std::string, std::string>>& common_headers);

}  // namespace gpudoc::serve::http
