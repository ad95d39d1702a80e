#include "guard/policy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <regex>
#include <sstream>
#include <utility>

#include "core/file.hpp"
#include "core/text.hpp"

namespace gpudoc::guard {
namespace {

// The built-in policy. Temperatures are relative to the GPU's own NVML limits; on an H200 the
// maximum operating temperature is below the slowdown one, which is below shutdown.
constexpr std::string_view kDefaultPolicy = R"(# gpudoc guard: the built-in policy
horizon_s = 5

[level1]                                   # advise the job to shrink its batch by 25 %
when = gpu_temp_forecast >= max_operating - 2
clear_below = max_operating - 6
when = memory_temp_forecast >= memory_max - 5
clear_below = memory_max - 10
when = seconds_to_oom <= 120
clear_above = 300
action = shrink_batch 0.75
min_interval_s = 60

[level2]                                   # checkpoint now, pause non-critical work
when = gpu_temp_forecast >= slowdown - 1
clear_below = slowdown - 6
when = memory_temp_forecast >= memory_max
clear_below = memory_max - 5
when = seconds_to_oom <= 30
clear_above = 120
action = checkpoint_now, pause_noncritical
min_interval_s = 120

[level3]                                   # checkpoint and stop the job cleanly
when = gpu_temp_forecast >= shutdown - 3
clear_below = slowdown - 6
fatal = xid, ecc_uncorrectable, row_remap_failure, gpu_lost
action = checkpoint_now, stop
min_interval_s = 0
)";

constexpr std::array<std::pair<std::string_view, Metric>, 4> kMetrics = {{
    {"gpu_temp_forecast", Metric::kGpuTempForecast},
    {"memory_temp_forecast", Metric::kMemoryTempForecast},
    {"power", Metric::kPower},
    {"seconds_to_oom", Metric::kSecondsToOom},
}};
constexpr std::array<std::pair<std::string_view, LimitBase>, 5> kBases = {{
    {"slowdown", LimitBase::kSlowdown},
    {"max_operating", LimitBase::kMaxOperating},
    {"shutdown", LimitBase::kShutdown},
    {"memory_max", LimitBase::kMemoryMax},
    {"power_limit", LimitBase::kPowerLimit},
}};
constexpr std::array<std::pair<std::string_view, FatalEvent>, 4> kEvents = {{
    {"xid", FatalEvent::kXid},
    {"ecc_uncorrectable", FatalEvent::kEccUncorrectable},
    {"row_remap_failure", FatalEvent::kRowRemapFailure},
    {"gpu_lost", FatalEvent::kGpuLost},
}};

constexpr const char* kAllowedActions =
    "allowed: shrink_batch FACTOR (0 < FACTOR < 1), checkpoint_now, pause_noncritical, stop";
constexpr const char* kAllowedKeys =
    "allowed: horizon_s, noncritical, [level1], [level2], [level3]; in a level: when, clear_below, clear_above, "
    "fatal, action, min_interval_s";

// "allowed: a, b, c": the names of a table, for error messages.
template <class T, std::size_t N>
std::string allowed(const std::array<std::pair<std::string_view, T>, N>& table) {
  std::string out = "allowed: ";
  for (std::size_t i = 0; i < N; ++i) out += (i ? ", " : "") + std::string(table[i].first);
  return out;
}

template <class T, std::size_t N>
std::optional<T> lookup(const std::array<std::pair<std::string_view, T>, N>& table, std::string_view word) {
  for (const auto& [name, value] : table) {
    if (name == word) return value;
  }
  return std::nullopt;
}

template <class T, std::size_t N>
const char* name_of(const std::array<std::pair<std::string_view, T>, N>& table, T value) noexcept {
  for (const auto& [name, v] : table) {
    if (v == value) return name.data();  // the literals are NUL-terminated
  }
  return "?";
}

std::string_view trim(std::string_view s) {
  const auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == sep) {
      out.push_back(trim(s.substr(start, i - start)));
      start = i + 1;
    }
  }
  return out;
}

std::vector<std::string_view> words(std::string_view s) {
  std::vector<std::string_view> out;
  for (std::string_view w : split(s, ' ')) {
    for (std::string_view v : split(w, '\t')) {
      if (!v.empty()) out.push_back(v);
    }
  }
  return out;
}

// A finite decimal number and nothing else.
std::optional<double> number(std::string_view s) {
  if (s.empty() || s.size() > 64) return std::nullopt;
  const std::string copy(s);
  char* end = nullptr;
  const double v = std::strtod(copy.c_str(), &end);
  if (end != copy.c_str() + copy.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

class Parser {
 public:
  Parser(Policy base, std::string_view file) : policy_(std::move(base)), file_(file) {}
  core::Result<Policy> run(std::string_view text);

 private:
  core::Error error(const std::string& what) const {
    return core::Error(core::ErrorKind::kBadInput, fmt::format("{}:{}: {}", file_, line_, what));
  }
  core::Status statement(std::string_view line);
  core::Status section(std::string_view line);
  core::Status finish_level();
  core::Status key_value(std::string_view key, std::string_view value);
  core::Status level_key(std::string_view key, std::string_view value);
  core::Status when(std::string_view value);
  core::Status clear(std::string_view key, std::string_view value);
  core::Status fatal(std::string_view value);
  core::Status actions(std::string_view value);
  core::Status noncritical(std::string_view value);
  core::Result<Limit> limit(std::string_view text, Metric metric) const;
  core::Result<ActionStep> action(std::string_view text) const;

  Policy policy_;
  std::string file_;
  int line_ = 0;
  std::optional<Level> level_;  // the level being read
  int level_line_ = 0;
  std::vector<int> seen_;  // level numbers already in this file
};

core::Result<Policy> Parser::run(std::string_view text) {
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    ++line_;
    std::string_view line = text.substr(start, end - start);
    if (const std::size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    line = trim(line);
    if (!line.empty()) {
      if (auto s = statement(line); !s) return s.error();
    }
    start = end + 1;
  }
  if (auto s = finish_level(); !s) return s.error();
  std::sort(policy_.levels.begin(), policy_.levels.end(),
            [](const Level& a, const Level& b) { return a.number < b.number; });
  return policy_;
}

core::Status Parser::statement(std::string_view line) {
  if (line.front() == '[') return section(line);
  const std::size_t eq = line.find('=');
  if (eq == std::string_view::npos) {
    return error(fmt::format("expected KEY = VALUE or [levelN], got '{}'; {}", line, kAllowedKeys));
  }
  const std::string_view key = trim(line.substr(0, eq));
  const std::string_view value = trim(line.substr(eq + 1));
  if (value.empty()) return error(fmt::format("'{}' has no value after '='", key));
  return key_value(key, value);
}

core::Status Parser::section(std::string_view line) {
  if (auto s = finish_level(); !s) return s;
  int n = 0;
  if (line == "[level1]") n = 1;
  if (line == "[level2]") n = 2;
  if (line == "[level3]") n = 3;
  if (n == 0) return error(fmt::format("unknown section '{}'; allowed: [level1], [level2], [level3]", line));
  if (std::find(seen_.begin(), seen_.end(), n) != seen_.end()) {
    return error(fmt::format("[level{}] appears twice; each level may be written once", n));
  }
  seen_.push_back(n);
  level_ = Level{};
  level_->number = n;
  level_line_ = line_;
  return core::ok_status();
}

core::Status Parser::finish_level() {
  if (!level_) return core::ok_status();
  Level level = std::move(*level_);
  level_.reset();
  const int here = std::exchange(line_, level_line_);
  core::Status status;
  if (level.actions.empty()) {
    status = error(fmt::format("[level{}] has no action; {}", level.number, kAllowedActions));
  } else if (level.triggers.empty() && level.fatal.empty()) {
    status = error(fmt::format("[level{}] has neither 'when' nor 'fatal': it could never fire", level.number));
  }
  line_ = here;
  if (!status) return status;
  std::erase_if(policy_.levels, [&](const Level& l) { return l.number == level.number; });
  policy_.levels.push_back(std::move(level));
  return core::ok_status();
}

core::Status Parser::key_value(std::string_view key, std::string_view value) {
  if (key == "noncritical") return noncritical(value);
  if (key == "horizon_s") {
    if (level_) return error("horizon_s belongs before the first [levelN]; it is global");
    const auto v = number(value);
    if (!v || *v <= 0 || *v > 600)
      return error(fmt::format("horizon_s '{}' is not a number of seconds in (0, 600]", value));
    policy_.horizon_s = *v;
    return core::ok_status();
  }
  if (!level_) {
    if (key == "when" || key == "clear_below" || key == "clear_above" || key == "fatal" || key == "action" ||
        key == "min_interval_s") {
      return error(fmt::format("'{}' outside a level; put it under [level1], [level2] or [level3]", key));
    }
    return error(fmt::format("unknown key '{}'; {}", key, kAllowedKeys));
  }
  return level_key(key, value);
}

core::Status Parser::level_key(std::string_view key, std::string_view value) {
  if (key == "when") return when(value);
  if (key == "clear_below" || key == "clear_above") return clear(key, value);
  if (key == "fatal") return fatal(value);
  if (key == "action") return actions(value);
  if (key == "min_interval_s") {
    const auto v = number(value);
    if (!v || *v < 0) return error(fmt::format("min_interval_s '{}' is not a number of seconds >= 0", value));
    level_->min_interval_s = *v;
    return core::ok_status();
  }
  return error(fmt::format("unknown key '{}'; {}", key, kAllowedKeys));
}

core::Result<Limit> Parser::limit(std::string_view text, Metric metric) const {
  if (metric == Metric::kSecondsToOom) {
    const auto v = number(text);
    if (!v || *v < 0) return error(fmt::format("'{}' is not a number of seconds >= 0 (seconds_to_oom)", text));
    return Limit{.base = LimitBase::kNone, .offset = *v};
  }
  std::size_t i = 0;
  while (i < text.size() && (std::islower(static_cast<unsigned char>(text[i])) != 0 || text[i] == '_')) ++i;
  const std::string_view base_word = text.substr(0, i);
  const auto base = lookup(kBases, base_word);
  if (!base) {
    if (number(text)) {
      return error(fmt::format("'{}' is a fixed number; a limit is relative to what the GPU reports ({})", text,
                               allowed(kBases)));
    }
    return error(fmt::format("unknown limit '{}'; {}", base_word.empty() ? text : base_word, allowed(kBases)));
  }
  const bool power_metric = metric == Metric::kPower;
  if (power_metric != (*base == LimitBase::kPowerLimit)) {
    return error(fmt::format("{} is compared with {}; '{}' is not one", to_string(metric),
                             power_metric ? "power_limit" : "a temperature limit", base_word));
  }
  const std::string_view rest = trim(text.substr(i));
  if (rest.empty()) return Limit{.base = *base, .offset = 0};
  const auto amount = (rest.front() == '+' || rest.front() == '-') ? number(trim(rest.substr(1))) : std::nullopt;
  if (!amount || *amount < 0) {
    return error(fmt::format("expected '{0}', '{0} - NUMBER' or '{0} + NUMBER', got '{1}'", base_word, text));
  }
  return Limit{.base = *base, .offset = rest.front() == '-' ? -*amount : *amount};
}

core::Status Parser::when(std::string_view value) {
  const std::vector<std::string_view> w = words(value);
  const auto metric = w.empty() ? std::nullopt : lookup(kMetrics, w[0]);
  if (!metric) return error(fmt::format("unknown metric '{}'; {}", w.empty() ? value : w[0], allowed(kMetrics)));
  const char* op = fires_below(*metric) ? "<=" : ">=";
  if (w.size() < 3 || w[1] != op) {
    return error(fmt::format("expected '{} {} LIMIT', got '{}'", w[0], op, value));
  }
  const std::size_t at = value.find(w[1]) + w[1].size();
  auto threshold = limit(trim(value.substr(at)), *metric);
  if (!threshold) return threshold.error();
  level_->triggers.push_back(Trigger{.metric = *metric,
                                     .threshold = *threshold,
                                     .clear = std::nullopt,
                                     .text = fmt::format("{} {} {}", w[0], op, trim(value.substr(at))),
                                     .line = line_});
  return core::ok_status();
}

core::Status Parser::clear(std::string_view key, std::string_view value) {
  if (level_->triggers.empty()) return error(fmt::format("'{}' must follow a 'when' in the same level", key));
  Trigger& t = level_->triggers.back();
  if (t.clear) return error(fmt::format("the 'when' of line {} already has a clear limit", t.line));
  const bool below = key == "clear_below";
  if (below == fires_below(t.metric)) {
    return error(fmt::format("{} does not fit '{}'; use {}", key, t.text, below ? "clear_above" : "clear_below"));
  }
  auto c = limit(value, t.metric);
  if (!c) return c.error();
  t.clear = *c;
  return core::ok_status();
}

core::Status Parser::fatal(std::string_view value) {
  for (std::string_view word : split(value, ',')) {
    const auto e = lookup(kEvents, word);
    if (!e) return error(fmt::format("unknown fatal event '{}'; {}", word, allowed(kEvents)));
    if (std::find(level_->fatal.begin(), level_->fatal.end(), *e) == level_->fatal.end()) level_->fatal.push_back(*e);
  }
  return core::ok_status();
}

core::Result<ActionStep> Parser::action(std::string_view text) const {
  const std::vector<std::string_view> w = words(text);
  const std::string_view name = w.empty() ? text : w[0];
  if (name.find("reset") != std::string_view::npos) {
    return error(fmt::format("'{}': a GPU reset is never an action (the guard only suggests one in its log); {}", name,
                             kAllowedActions));
  }
  if (name == "resume_noncritical") {
    return error(
        fmt::format("resume_noncritical is sent by the guard when a paused level clears; {}", kAllowedActions));
  }
  if (name == "shrink_batch") {
    const auto f = w.size() == 2 ? number(w[1]) : std::nullopt;
    if (!f || *f <= 0 || *f >= 1)
      return error(fmt::format("'{}': shrink_batch takes one FACTOR, 0 < FACTOR < 1", text));
    return ActionStep{.action = Action::kShrinkBatch, .factor = *f};
  }
  const std::optional<Action> a = action_from_string(name);  // shrink and resume are handled above
  if (!a) return error(fmt::format("unknown action '{}'; {}", name, kAllowedActions));
  if (w.size() != 1) return error(fmt::format("'{}': {} takes no argument", text, name));
  return ActionStep{.action = *a, .factor = 0};
}

core::Status Parser::actions(std::string_view value) {
  if (!level_->actions.empty())
    return error("a level has one 'action' line (list the actions on it, separated by ',')");
  for (std::string_view text : split(value, ',')) {
    auto a = action(text);
    if (!a) return a.error();
    level_->actions.push_back(*a);
  }
  return core::ok_status();
}

core::Status Parser::noncritical(std::string_view value) {
  for (std::string_view w : words(value)) {
    if (w.starts_with("re:")) {
      try {
        const std::regex re(std::string(w.substr(3)), std::regex::ECMAScript);
      } catch (const std::regex_error& e) {
        return error(
            fmt::format("'{}' is not a valid regular expression ({}); write re:REGEX (ECMAScript)", w, e.what()));
      }
      if (w.size() == 3) return error("'re:' has no regular expression after it");
    }
    policy_.noncritical.emplace_back(w);
  }
  return core::ok_status();
}

}  // namespace

const char* to_string(Metric m) noexcept { return name_of(kMetrics, m); }
const char* to_string(LimitBase b) noexcept { return b == LimitBase::kNone ? "" : name_of(kBases, b); }
const char* to_string(FatalEvent e) noexcept { return name_of(kEvents, e); }
const char* to_string(Action a) noexcept {
  switch (a) {
    case Action::kShrinkBatch: return "shrink_batch";
    case Action::kCheckpointNow: return "checkpoint_now";
    case Action::kPauseNoncritical: return "pause_noncritical";
    case Action::kResumeNoncritical: return "resume_noncritical";
    case Action::kStop: return "stop";
  }
  return "?";
}
std::optional<Action> action_from_string(std::string_view name) noexcept {
  for (Action a : {Action::kShrinkBatch, Action::kCheckpointNow, Action::kPauseNoncritical, Action::kResumeNoncritical,
                   Action::kStop})
    if (name == to_string(a)) return a;
  return std::nullopt;
}

core::Result<std::vector<Action>> signal_opt_in_from_text(const std::string& text) {
  std::vector<Action> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    const auto a = action_from_string(item == "checkpoint" ? "checkpoint_now" : item);
    if (!a || (*a != Action::kCheckpointNow && *a != Action::kStop))
      return core::Error(
          core::ErrorKind::kUsage,
          fmt::format("--signal '{}': allowed: checkpoint (SIGUSR1), stop (SIGTERM)", core::terminal_safe(item)));
    out.push_back(*a);
  }
  return out;
}
bool fires_below(Metric m) noexcept { return m == Metric::kSecondsToOom; }

std::string_view default_policy_text() noexcept { return kDefaultPolicy; }

Policy default_policy() {
  auto p = Parser(Policy{}, "(built-in policy)").run(kDefaultPolicy);
  return p ? std::move(p).value() : Policy{};  // the built-in text parses (a unit test says so)
}

core::Result<Policy> parse_policy(std::string_view text, std::string_view file_name) {
  return Parser(default_policy(), file_name).run(text);
}

core::Result<Policy> load_policy(const std::string& path) {
  auto text = core::read_file(path, kPolicyInput);
  if (!text) return text.error();
  return parse_policy(*text, path);
}

}  // namespace gpudoc::guard
