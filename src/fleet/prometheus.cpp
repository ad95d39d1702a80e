// Instant and range queries over Prometheus's HTTP API (prometheus.hpp), by a small HTTP/1.0 client.
#include "fleet/prometheus.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <regex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <netdb.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

namespace gpudoc::fleet {
namespace {

core::Error unreachable(const std::string& url, const std::string& why) {
  return {core::ErrorKind::kEnvironment, fmt::format("Prometheus at {}: {}", url, why)};
}

double number(const nlohmann::json& v) {
  // The API gives values as strings: "1.5", "NaN", "+Inf".
  if (!v.is_string()) return std::nan("");
  const std::string& s = v.get_ref<const std::string&>();
  try {
    return std::stod(s);
  } catch (...) {
    return std::nan("");
  }
}

std::string form_escape(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~')
      out += static_cast<char>(c);
    else
      out += fmt::format("%{:02X}", c);
  }
  return out;
}

struct Reply {
  int status = 0;
  std::string body{};
};

// One HTTP/1.0 POST (no chunked answers, the server closes when done) with a form body.
core::Result<Reply> post(const Url& u, const std::string& url, const std::string& path, const std::string& form,
                         double timeout_s) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  std::string host = u.host.front() == '[' ? u.host.substr(1, u.host.size() - 2) : u.host;
  if (int rc = getaddrinfo(host.c_str(), std::to_string(u.port).c_str(), &hints, &found); rc != 0)
    return unreachable(url, fmt::format("cannot be reached ({})", gai_strerror(rc)));
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    // The fraction kept: a timeval of 0 s 0 us would mean no timeout at all.
    const double wait_s = std::max(timeout_s, 0.001);
    timeval tv{.tv_sec = static_cast<time_t>(wait_s),
               .tv_usec = static_cast<suseconds_t>((wait_s - std::floor(wait_s)) * 1e6)};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  if (fd < 0) return unreachable(url, fmt::format("cannot be reached (connection refused or timed out)"));
  const std::string request = fmt::format(
      "POST {} HTTP/1.0\r\nHost: {}\r\nUser-Agent: gpudoc\r\nAccept: application/json\r\n"
      "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{}",
      path, u.host, form.size(), form);
  std::string in;
  bool ok = send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size());
  char buf[65536];
  for (ssize_t n = 0; ok && (n = recv(fd, buf, sizeof buf, 0)) != 0;) {
    if (n < 0)
      ok = false;
    else
      in.append(buf, static_cast<std::size_t>(n));
  }
  close(fd);
  if (!ok) return unreachable(url, "the connection failed or timed out before the answer was complete");
  const auto head_end = in.find("\r\n\r\n");
  int status = 0;
  if (head_end == std::string::npos || std::sscanf(in.c_str(), "HTTP/%*d.%*d %d", &status) != 1)
    return unreachable(url, "the answer is not HTTP");
  return Reply{.status = status, .body = in.substr(head_end + 4)};
}

// The answer's JSON once it says "success" (its warnings kept in `warnings`), else the error.
core::Result<nlohmann::json> parse_success(const std::string& url, const std::string& body,
                                           std::vector<std::string>& warnings) {
  nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return unreachable(url, "the answer is not JSON (is this Prometheus?)");
  for (const char* key : {"warnings", "infos"})
    if (j.contains(key) && j[key].is_array())
      for (const auto& w : j[key])
        if (w.is_string()) warnings.push_back(w.get<std::string>());
  if (j.value("status", "") != "success")
    return core::Error(core::ErrorKind::kBadInput, fmt::format("Prometheus at {} refused the query: {}: {}", url,
                                                               j.value("errorType", "error"), j.value("error", "")));
  return j.contains("data") && j["data"].is_object() ? std::move(j["data"]) : nlohmann::json::object();
}

std::map<std::string, std::string> labels_of(const nlohmann::json& r) {
  std::map<std::string, std::string> out;
  if (r.contains("metric") && r["metric"].is_object())
    for (const auto& [k, v] : r["metric"].items())
      if (v.is_string()) out[k] = v.get<std::string>();
  return out;
}

core::Result<RangeAnswer> parse_range(const std::string& url, const std::string& body) {
  RangeAnswer a;
  auto data = parse_success(url, body, a.warnings);
  if (!data) return data.error();
  if (data->value("resultType", "") != "matrix" || !(*data)["result"].is_array())
    return unreachable(url, fmt::format("expected a matrix answer, got '{}'", data->value("resultType", "")));
  for (const auto& r : (*data)["result"]) {
    Series s{.labels = labels_of(r), .points = {}};
    if (r.contains("values") && r["values"].is_array())
      for (const auto& v : r["values"])
        if (v.is_array() && v.size() == 2 && v[0].is_number()) s.points.emplace_back(v[0].get<double>(), number(v[1]));
    a.series.push_back(std::move(s));
  }
  return a;
}

core::Result<Answer> parse_answer(const std::string& url, const std::string& body) {
  Answer a;
  auto parsed = parse_success(url, body, a.warnings);
  if (!parsed) return parsed.error();
  nlohmann::json& data = *parsed;  // non-const: a missing "result" reads as null
  const std::string type = data.value("resultType", "");
  if (type == "scalar" && data["result"].is_array() && data["result"].size() == 2) {
    a.samples.push_back({.labels = {}, .value = number(data["result"][1])});
    return a;
  }
  if (type != "vector" || !data["result"].is_array())
    return unreachable(url, fmt::format("expected a vector answer, got '{}'", type));
  for (const auto& r : data["result"]) {
    Sample s{.labels = labels_of(r), .value = 0};
    if (r.contains("value") && r["value"].is_array() && r["value"].size() == 2) s.value = number(r["value"][1]);
    a.samples.push_back(std::move(s));
  }
  return a;
}

}  // namespace

core::Result<Url> parse_url(const std::string& text) {
  static const std::regex kUrl(R"(^(http)://([A-Za-z0-9.\-]+|\[[0-9A-Fa-f:]+\])(?::([0-9]{1,5}))?(/[^?#]*)?$)");
  std::smatch m;
  // No space or control character in the path either: it goes into the request line as it is.
  const bool plain = std::none_of(text.begin(), text.end(), [](unsigned char c) { return c <= 0x20 || c == 0x7f; });
  if (!plain || !std::regex_match(text, m, kUrl))
    return core::Error(core::ErrorKind::kUsage,
                       fmt::format("--prometheus {}: expected http://HOST[:PORT][/PATH] (https: not yet; a local proxy "
                                   "such as the Prometheus host's own port)",
                                   text));
  Url u;
  u.scheme = m[1].str();
  u.host = m[2].str();
  u.port = m[3].matched ? std::stoi(m[3].str()) : 80;
  if (u.port < 1 || u.port > 65535)
    return core::Error(core::ErrorKind::kUsage, fmt::format("--prometheus {}: port {} out of range", text, u.port));
  u.prefix = m[4].matched ? m[4].str() : "";
  while (!u.prefix.empty() && u.prefix.back() == '/') u.prefix.pop_back();
  return u;
}

core::Result<Prometheus> Prometheus::open(const std::string& url, double timeout_s) {
  auto u = parse_url(url);
  if (!u) return u.error();
  Prometheus p;
  p.url_ = *u;
  p.text_ = url;
  p.timeout_s_ = timeout_s;
  return p;
}

core::Result<Answer> Prometheus::query(const std::string& promql, double time_s) const {
  // POST with a form body, as the API allows: a long query does not meet a URL length limit.
  const std::string form = "query=" + form_escape(promql) + "&time=" + fmt::format("{:.3f}", time_s);
  auto res = post(url_, text_, url_.prefix + "/api/v1/query", form, timeout_s_);
  if (!res) return res.error();
  // 400 and 422 carry the API's own error object; anything else without JSON is not Prometheus.
  if (res->status != 200 && res->status != 400 && res->status != 422 && res->status != 503)
    return unreachable(text_, fmt::format("HTTP {} from /api/v1/query", res->status));
  return parse_answer(text_, res->body);
}

core::Result<RangeAnswer> Prometheus::query_range(const std::string& promql, double start_s, double end_s,
                                                  double step_s) const {
  const std::string form =
      fmt::format("query={}&start={:.3f}&end={:.3f}&step={:.3f}", form_escape(promql), start_s, end_s, step_s);
  auto res = post(url_, text_, url_.prefix + "/api/v1/query_range", form, timeout_s_);
  if (!res) return res.error();
  if (res->status != 200 && res->status != 400 && res->status != 422 && res->status != 503)
    return unreachable(text_, fmt::format("HTTP {} from /api/v1/query_range", res->status));
  return parse_range(text_, res->body);
}

}  // namespace gpudoc::fleet
