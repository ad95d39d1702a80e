// gpudoc::fleet prometheus — instant and range queries against a Prometheus server's HTTP API
// (POST /api/v1/query and /api/v1/query_range), the answers as labelled numbers, with the server's
// warnings kept (partial data: a remote store that did not answer, a query that hit a limit).
//
//   auto p = fleet::Prometheus::open("http://prom:9090");         // Result: a bad URL is kUsage
//   auto a = p->query("sum by (id) (increase(gpudoc_gpu_lost_seconds_total[7d]))", end_s);
//   for (const auto& s : a->samples) s.labels.at("id"), s.value;
//   a->warnings;                                                  // said by the report
//   auto r = p->query_range("sum(increase(x[6h]))", start_s, end_s, 6 * 3600);  // r->series[0].points
//
// The HTTP client is a small HTTP/1.0 one over a socket (plain http only, for now). Errors:
// kEnvironment when the server cannot be reached or answers other than 200 with a JSON body
// (naming the URL and what happened), kBadInput when it refuses the query (status "error": its
// errorType and error).
//
// Thread-safety: one Prometheus per thread.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/result.hpp"

namespace gpudoc::fleet {

struct Sample {
  std::map<std::string, std::string> labels{};
  double value = 0;
};

struct Answer {
  std::vector<Sample> samples{};
  std::vector<std::string> warnings{};  // the API's "warnings" (and "infos"), as given
};

// A range query's series: its labels and its points (Unix seconds, value), in time order.
struct Series {
  std::map<std::string, std::string> labels{};
  std::vector<std::pair<double, double>> points{};
};

struct RangeAnswer {
  std::vector<Series> series{};
  std::vector<std::string> warnings{};
};

// http://host[:port][/prefix]: a Prometheus behind a path prefix keeps it.
struct Url {
  std::string scheme{};  // "http"
  std::string host{};
  int port = 0;
  std::string prefix{};  // "" or "/prometheus"
};
[[nodiscard]] core::Result<Url> parse_url(const std::string& text);

class Prometheus {
 public:
  [[nodiscard]] static core::Result<Prometheus> open(const std::string& url, double timeout_s = 30);
  // An instant query evaluated at `time_s` (Unix seconds). Vector answers only (a scalar is one
  // sample without labels).
  [[nodiscard]] core::Result<Answer> query(const std::string& promql, double time_s) const;
  // A range query (/api/v1/query_range) from `start_s` to `end_s` every `step_s`. Matrix answers only.
  [[nodiscard]] core::Result<RangeAnswer> query_range(const std::string& promql, double start_s, double end_s,
                                                      double step_s) const;
  [[nodiscard]] const std::string& url() const { return text_; }

 private:
  Url url_{};
  std::string text_{};
  double timeout_s_ = 30;
};

}  // namespace gpudoc::fleet
