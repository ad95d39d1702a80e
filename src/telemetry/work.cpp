#include "telemetry/work.hpp"

#include <algorithm>
#include <cmath>

#include "core/utf8.hpp"

namespace gpudoc::telemetry {
namespace {

std::optional<double> sum(const std::optional<double>& a, const std::optional<double>& b) {
  if (!a) return b;
  if (!b) return a;
  return *a + *b;
}

}  // namespace

void Work::add(const Work& o) {
  steps = sum(steps, o.steps);
  samples = sum(samples, o.samples);
  tokens = sum(tokens, o.tokens);
}

bool is_work_key(std::string_view key) { return key == "step" || key == "samples" || key == "tokens"; }

std::vector<std::string> WorkCounter::add(const nlohmann::json& report) {
  std::vector<std::string> refused;
  if (!report.is_object() || report.contains("event")) return refused;
  for (const char* key : {"step", "samples", "tokens"}) {
    if (!report.contains(key)) continue;
    const auto& v = report[key];
    const double x = v.is_number() ? v.get<double>() : -1;
    if (!v.is_number() || !std::isfinite(x) || x < 0) {
      refused.emplace_back(key);
      continue;
    }
    if (std::string_view(key) == "step")
      work_.steps = std::max(work_.steps.value_or(0.0), x);
    else if (std::string_view(key) == "samples")
      work_.samples = work_.samples.value_or(0.0) + x;
    else
      work_.tokens = work_.tokens.value_or(0.0) + x;
  }
  return refused;
}

nlohmann::json to_json(const Work& w) {
  auto opt = [](const std::optional<double>& x) { return x ? nlohmann::json(*x) : nlohmann::json(nullptr); };
  return {{"steps", opt(w.steps)}, {"samples", opt(w.samples)}, {"tokens", opt(w.tokens)}};
}

void WorkLines::add_line(std::string_view line) {
  if (line.substr(0, kMetricsPrefix.size()) != kMetricsPrefix) return;
  auto j = nlohmann::json::parse(core::to_valid_utf8(line.substr(kMetricsPrefix.size())), nullptr, false);
  if (!j.is_object() || j.contains("event")) return;
  if (!std::any_of(j.items().begin(), j.items().end(), [](const auto& kv) { return is_work_key(kv.key()); })) return;
  const std::lock_guard lock(mutex_);
  refused_ += pending_.add(j).size();
  ++lines_;
}

std::optional<nlohmann::json> WorkLines::take() {
  const std::lock_guard lock(mutex_);
  if (lines_ == 0) return std::nullopt;
  nlohmann::json fields = nlohmann::json::object();
  const Work& w = pending_.work();
  if (w.steps) fields["step"] = *w.steps;
  if (w.samples) fields["samples"] = *w.samples;
  if (w.tokens) fields["tokens"] = *w.tokens;
  fields["lines"] = lines_;
  if (refused_ > 0) fields["refused"] = refused_;
  pending_ = WorkCounter{};
  lines_ = 0;
  refused_ = 0;
  return fields;
}

}  // namespace gpudoc::telemetry
