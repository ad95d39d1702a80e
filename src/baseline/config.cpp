#include "baseline/config.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "core/file.hpp"

namespace gpudoc::baseline {

bool glob_match(std::string_view pattern, std::string_view name) noexcept {
  // Iterative matcher with one backtrack point: linear for the short patterns configs hold.
  std::size_t p = 0, n = 0, star = std::string_view::npos, mark = 0;
  while (n < name.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = n;
    } else if (p < pattern.size() && pattern[p] == name[n]) {
      ++p;
      ++n;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      n = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Why start-up is shown and not gated; the figures are on docs/results/baseline-gate.md.
constexpr const char* kStartupNotGated =
    "not gated: start-up (interpreter, imports, CUDA context) moves with the host's caches and load more than "
    "with the job (\"gate\": true in the config gates it)";

bool any_glob(std::initializer_list<std::string_view> patterns, std::string_view name) {
  return std::any_of(patterns.begin(), patterns.end(), [&](std::string_view p) { return glob_match(p, name); });
}

}  // namespace

Rule default_rule(std::string_view name_in, std::string_view unit_in) {
  const std::string name = lower(name_in), unit = lower(unit_in);
  if (name == "wall_s") return {Direction::kLowerIsBetter, 10, 0.2, "default: wall time (changes under 0.2 s ignored)"};
  if (name == "gpu_active_s")
    return {Direction::kLowerIsBetter, 5, 0.2,
            "default: steady GPU work (changes under 0.2 s, one utilization sample, ignored)"};
  if (name == "startup_s") {
    Rule r{Direction::kLowerIsBetter, 10, 0.5, "default: start-up (changes under 0.5 s ignored)"};
    r.gated = false;
    r.why_not_gated = kStartupNotGated;
    return r;
  }
  // Order matters: "tokens_per_second" is a throughput even though it ends like a time.
  if (unit == "gb/s" || unit == "gib/s" || unit == "by/s" || any_glob({"*bandwidth*", "*gbps*"}, name))
    return {Direction::kHigherIsBetter, 5, 0, "default: bandwidth"};
  if (unit == "tflop/s" || unit == "/s" ||
      any_glob(
          {"*_per_second", "*_per_s", "*per_sec", "throughput*", "*_throughput", "*tflops*", "*samples_s", "*tokens_s"},
          name))
    return {Direction::kHigherIsBetter, 5, 0, "default: throughput"};
  if (any_glob(
          {"accuracy*", "*_accuracy", "acc", "*_acc", "f1", "*_f1", "*score*", "top1*", "top5*", "bleu*", "map", "auc"},
          name))
    return {Direction::kHigherIsBetter, 1, 0, "default: accuracy"};
  if (any_glob({"loss*", "*_loss", "perplexity*", "*_perplexity"}, name))
    return {Direction::kLowerIsBetter, 5, 0, "default: loss"};
  if (unit == "s" || unit == "ms" || unit == "us" || unit == "ns" ||
      any_glob({"*_ms", "*_us", "*_ns", "*_s", "*_sec", "*_seconds", "time*", "*_time*", "*latency*"}, name))
    return {Direction::kLowerIsBetter, 10, 0, "default: time"};
  if (unit == "by" || unit == "bytes" || any_glob({"*_bytes", "*memory*", "*_mib", "*_gib"}, name))
    return {Direction::kLowerIsBetter, 10, 0, "default: memory"};
  if (unit == "j" || any_glob({"*joules*", "*energy*"}, name))
    return {Direction::kLowerIsBetter, 10, 0, "default: energy"};
  return {Direction::kUnknown, 5, 0, "default: no direction known (shown, not gated)"};
}

Rule Config::rule_for(std::string_view name, std::string_view unit, std::optional<Direction> figure_direction) const {
  Rule rule = default_rule(name, unit);
  if (figure_direction && *figure_direction != Direction::kUnknown) {
    rule.direction = *figure_direction;
    rule.origin = "the figure's own direction";
  }
  const MetricOverride* best = nullptr;
  for (const auto& m : metrics)
    if (m.pattern == name) {
      best = &m;
      break;
    }
  if (best == nullptr)
    for (const auto& m : metrics)
      if (m.pattern.find('*') != std::string::npos && glob_match(m.pattern, name) &&
          (best == nullptr || m.pattern.size() > best->pattern.size()))
        best = &m;
  if (best != nullptr) {
    if (best->direction) rule.direction = *best->direction;
    if (best->threshold_percent) rule.threshold_percent = *best->threshold_percent;
    if (best->min_change) rule.min_change = *best->min_change;
    if (best->gate) {
      rule.gated = *best->gate;
      rule.gate_from_config = true;
      rule.why_not_gated = rule.gated ? std::string() : fmt::format("not gated: \"gate\": false in {}", source);
    }
    rule.origin = fmt::format("{}: {}", source, best->pattern);
  }
  return rule;
}

core::Result<Config> parse_config(std::string_view text, std::string_view source_name) {
  auto bad = [&](const std::string& what) {
    return core::Error(core::ErrorKind::kBadInput, fmt::format("{}: {}", source_name, what));
  };
  nlohmann::json j;
  // The keys on the way to where the parser is, so that a value it cannot hold (1e309 overflows a
  // double) is named by its key.
  std::vector<std::string> path;
  const nlohmann::json::parser_callback_t track = [&](int depth, nlohmann::json::parse_event_t event,
                                                      nlohmann::json& parsed) {
    if (event == nlohmann::json::parse_event_t::key) {
      path.resize(static_cast<std::size_t>(std::max(depth - 1, 0)));
      path.push_back(parsed.is_string() ? parsed.get<std::string>() : parsed.dump());
    }
    return true;
  };
  try {
    j = nlohmann::json::parse(text.begin(), text.end(), track, true, /*ignore_comments=*/true);
  } catch (const nlohmann::json::parse_error& e) {
    return bad(fmt::format("not valid JSON ({})", e.what()));
  } catch (const nlohmann::json::exception& e) {
    std::string what = e.what();
    if (const auto close = what.find("] "); what.rfind("[json.exception", 0) == 0 && close != std::string::npos)
      what.erase(0, close + 2);
    return bad(fmt::format("{}: {} (a number gpudoc cannot hold)",
                           path.empty() ? std::string("value") : fmt::format("{}", fmt::join(path, ".")), what));
  }
  if (!j.is_object()) return bad("expected a JSON object at the top");
  Config cfg;
  cfg.source = std::string(source_name);
  for (const auto& [key, value] : j.items()) {
    if (key == "noise_k") {
      if (!value.is_number() || value.get<double>() < 0 || !std::isfinite(value.get<double>()))
        return bad("noise_k: expected a number >= 0");
      cfg.noise_k = value.get<double>();
    } else if (key == "alpha") {
      if (!value.is_number() || value.get<double>() <= 0 || value.get<double>() >= 1)
        return bad("alpha: expected a number between 0 and 1 (exclusive)");
      cfg.alpha = value.get<double>();
    } else if (key == "metrics") {
      if (!value.is_object())
        return bad("metrics: expected an object {\"NAME\": {\"direction\": ..., \"threshold_percent\": ...}}");
      for (const auto& [name, spec] : value.items()) {
        if (name.empty()) return bad("metrics: an empty name");
        if (!spec.is_object()) return bad(fmt::format("metrics.{}: expected an object", name));
        MetricOverride m;
        m.pattern = name;
        for (const auto& [field, v] : spec.items()) {
          if (field == "direction") {
            auto d = v.is_string() ? direction_from_string(v.get<std::string>()) : std::nullopt;
            if (!d || *d == Direction::kUnknown)
              return bad(fmt::format("metrics.{}.direction: expected \"lower\" or \"higher\", got {}", name, v.dump()));
            m.direction = d;
          } else if (field == "threshold_percent") {
            if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0)
              return bad(fmt::format("metrics.{}.threshold_percent: expected a number >= 0, got {}", name, v.dump()));
            m.threshold_percent = v.get<double>();
          } else if (field == "min_change") {
            if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0)
              return bad(fmt::format("metrics.{}.min_change: expected a number >= 0, got {}", name, v.dump()));
            m.min_change = v.get<double>();
          } else if (field == "gate") {
            if (!v.is_boolean())
              return bad(fmt::format("metrics.{}.gate: expected true or false, got {}", name, v.dump()));
            m.gate = v.get<bool>();
          } else {
            return bad(fmt::format(
                "metrics.{}: unknown key '{}' (known: direction, threshold_percent, min_change, gate)", name, field));
          }
        }
        cfg.metrics.push_back(std::move(m));
      }
    } else {
      return bad(fmt::format("unknown key '{}' (known: noise_k, alpha, metrics)", key));
    }
  }
  return cfg;
}

core::Result<Config> load_config(const std::optional<std::string>& path) {
  std::string file;
  if (path) {
    file = *path;
  } else {
    std::error_code ec;
    if (!std::filesystem::exists("gpudoc.baseline.json", ec)) return Config{};
    file = "gpudoc.baseline.json";
  }
  auto text = core::read_file(file, kConfigInput);
  if (!text) return text.error().with_context("reading the baseline config");
  return parse_config(*text, file);
}

}  // namespace gpudoc::baseline
