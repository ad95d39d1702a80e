#include "serve/http.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>

namespace gpudoc::serve::http {
namespace {

bool iequals(std::string_view a, std::string_view b) noexcept {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// RFC 9110 token characters (a method, a header name).
bool is_token(std::string_view s) noexcept {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return std::isalnum(u) != 0 || std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
  });
}

// Whether a comma-separated header value (Connection) holds `word`.
bool has_word(std::string_view value, std::string_view word) noexcept {
  while (!value.empty()) {
    const auto comma = value.find(',');
    if (iequals(trim(value.substr(0, comma)), word)) return true;
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return false;
}

Parsed error(int status, std::string reason, Request request = {}) {
  return Parsed{.status = status, .reason = std::move(reason), .request = std::move(request)};
}

int hex(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::optional<std::string> percent_decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%') {
      if (i + 2 >= s.size()) return std::nullopt;
      const int hi = hex(s[i + 1]), lo = hex(s[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

// The body a request announces: its Content-Length (a bad one: nullopt), or -1 for any
// Transfer-Encoding (a body of unknown length).
std::optional<long long> announced_body(const Request& r) {
  if (r.header("Transfer-Encoding")) return -1;
  const auto cl = r.header("Content-Length");
  if (!cl) return 0;
  long long n = 0;
  const auto [end, ec] = std::from_chars(cl->data(), cl->data() + cl->size(), n);
  if (ec != std::errc() || end != cl->data() + cl->size() || n < 0) return std::nullopt;
  return n;
}

}  // namespace

std::optional<std::string_view> Request::header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (iequals(k, name)) return std::string_view(v);
  return std::nullopt;
}

std::optional<std::string> Request::param(std::string_view name) const {
  std::string_view q = query;
  while (!q.empty()) {
    const auto amp = q.find('&');
    const std::string_view pair = q.substr(0, amp);
    const auto eq = pair.find('=');
    const auto key = percent_decode(pair.substr(0, eq));
    if (key && *key == name) return percent_decode(eq == std::string_view::npos ? "" : pair.substr(eq + 1));
    if (amp == std::string_view::npos) break;
    q.remove_prefix(amp + 1);
  }
  return std::nullopt;
}

std::optional<std::size_t> head_end(std::string_view buffer) noexcept {
  for (std::size_t i = buffer.find('\n'); i != std::string_view::npos; i = buffer.find('\n', i + 1)) {
    // "\n\n" or "\n\r\n" after a line: the blank line that ends the head
    if (i + 1 < buffer.size() && buffer[i + 1] == '\n') return i + 2;
    if (i + 2 < buffer.size() && buffer[i + 1] == '\r' && buffer[i + 2] == '\n') return i + 3;
  }
  return std::nullopt;
}

Parsed too_long(std::string_view buffer) {
  if (buffer.find('\n') == std::string_view::npos)
    return error(414, fmt::format("the request line is longer than {} bytes", kMaxHead));
  return error(431, fmt::format("the request's headers are longer than {} bytes", kMaxHead));
}

Parsed parse_head(std::string_view head) {
  Request r;
  const auto eol = head.find('\n');
  if (eol == std::string_view::npos) return error(400, "no request line");
  const std::string_view line = trim(head.substr(0, eol));
  head.remove_prefix(eol + 1);
  const auto sp1 = line.find(' ');
  const auto sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos)
    return error(400, "the request line is not METHOD TARGET VERSION");
  const std::string_view method = line.substr(0, sp1), target = line.substr(sp1 + 1, sp2 - sp1 - 1),
                         version = line.substr(sp2 + 1);
  if (!is_token(method)) return error(400, "the method is not a token");
  r.method = std::string(method);
  if (version == "HTTP/1.1") {
    r.http11 = true;
  } else if (version == "HTTP/1.0") {
    r.http11 = false;
  } else if (version.starts_with("HTTP/")) {
    return error(505, "only HTTP/1.0 and HTTP/1.1 are served", std::move(r));
  } else {
    return error(400, "the request line does not end in an HTTP version", std::move(r));
  }
  const auto q = target.find('?');
  r.path = std::string(target.substr(0, q));
  if (q != std::string_view::npos) r.query = std::string(target.substr(q + 1));
  while (!head.empty()) {
    const auto nl = head.find('\n');
    std::string_view h = head.substr(0, nl);
    head.remove_prefix(nl == std::string_view::npos ? head.size() : nl + 1);
    if (!h.empty() && h.back() == '\r') h.remove_suffix(1);
    if (h.empty()) break;
    if (h.front() == ' ' || h.front() == '\t') return error(400, "folded header lines are not accepted", std::move(r));
    const auto colon = h.find(':');
    if (colon == std::string_view::npos || !is_token(h.substr(0, colon)))
      return error(400, "a header line is not NAME: VALUE", std::move(r));
    if (r.headers.size() >= kMaxHeaders)
      return error(431, fmt::format("more than {} header lines", kMaxHeaders), std::move(r));
    r.headers.emplace_back(std::string(h.substr(0, colon)), std::string(trim(h.substr(colon + 1))));
  }
  const auto conn = r.header("Connection");
  r.keep_alive = r.http11 ? !(conn && has_word(*conn, "close")) : (conn && has_word(*conn, "keep-alive"));
  const auto body = announced_body(r);
  if (r.method != "GET" && r.method != "HEAD")
    return error(405, "only GET and HEAD: gpudoc serve is read-only", std::move(r));
  if (!body) return error(400, "the Content-Length is not a number", std::move(r));
  if (*body != 0) return error(400, "no request body is accepted", std::move(r));
  if (r.path.empty() || r.path.front() != '/') return error(400, "the target is not a path", std::move(r));
  return Parsed{.status = 0, .reason = {}, .request = std::move(r)};
}

std::string_view reason_phrase(int status) noexcept {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
  }
}

std::string format(const Answer& answer, bool head_request, bool keep_alive,
                   const std::vector<std::pair<std::string, std::string>>& common_headers) {
  std::string out;
  out.reserve(256 + (head_request ? 0 : answer.body.size()));
  out += fmt::format("HTTP/1.1 {} {}\r\n", answer.status, reason_phrase(answer.status));
  if (!answer.content_type.empty()) out += fmt::format("Content-Type: {}\r\n", answer.content_type);
  if (!answer.stream) out += fmt::format("Content-Length: {}\r\n", answer.body.size());
  for (const auto& [k, v] : common_headers) out += fmt::format("{}: {}\r\n", k, v);
  for (const auto& [k, v] : answer.headers) out += fmt::format("{}: {}\r\n", k, v);
  out += (keep_alive && !answer.close && !answer.stream) ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
  out += "\r\n";
  if (!head_request) out += answer.body;
  return out;
}

}  // namespace gpudoc::serve::http
