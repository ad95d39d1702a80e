// Pieces several subcommands share: the sampler's command-line options, the stop signals, and
// printing JSON. The GPU backend is chosen once (telemetry/backend_source.hpp, held by the Context
// in cli/commands.hpp).
#pragma once

#include <atomic>
#include <csignal>
#include <cstdio>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "baseline/workload_run.hpp"
#include "core/result.hpp"
#include "gpu/backend.hpp"
#include "telemetry/sampler.hpp"

namespace CLI {
class App;
}

namespace gpudoc::cli {

// Prints `j` to stdout with a newline, indented by `indent` (-1: one line, as a JSON Lines
// stream). Strings that are not valid UTF-8 (a file name, a GPU name, a command's output) are
// written with U+FFFD in place of the bad bytes instead of throwing: --json output never dies on
// the data it reports. An nlohmann::ordered_json keeps its keys in insertion order.
template <class Json = nlohmann::json>
void print_json(const Json& j, int indent = 2) {
  std::fputs((j.dump(indent, ' ', false, Json::error_handler_t::replace) + "\n").c_str(), stdout);
}

// Sampler flags shared by record, watch, doctor and diagnose: --gpus, --period GROUP=MS. Each takes
// one word (comma-separated lists), so a positional after it (watch --gpus 0 run.jsonl) stays one.
struct SamplerFlags {
  std::vector<int> gpus;
  std::vector<std::string> periods;  // "fast=100"
  bool no_xid = false;
  // `defaults_note`: a line after the catalog's defaults, for a command whose own differ.
  void add_to(CLI::App& cmd, std::string_view defaults_note = {});
  // The flags applied over `defaults` (a command's own periods; the catalog's by default).
  // Errors: kUsage for an unknown group, a malformed value, or a period below the sensor's
  // minimum (the message says why the minimum exists).
  [[nodiscard]] core::Result<telemetry::SamplerConfig> to_config(
      const std::array<std::chrono::milliseconds, gpu::kMetricGroupCount>& defaults =
          telemetry::SamplerConfig::default_periods()) const;
};

// A --duration flag in seconds: 0 (the default) is none; otherwise a finite number of seconds up to
// kMaxDurationSeconds. Errors: kUsage naming the flag for a negative, NaN or infinite value (there
// is no "inf": leaving the flag out already means until the end or Ctrl-C).
inline constexpr double kMaxDurationSeconds = 1e9;
[[nodiscard]] core::Result<std::optional<core::Nanos>> parse_duration(double seconds,
                                                                      std::string_view flag = "--duration");

// Stopping, one handler for every command: install_stop_handlers() makes each of `signals` a
// request to stop (SA_RESTART: a read in progress goes on). Each request increments
// stop_requests(); the first one's number is kept in stop_signal() (beside the same count), which
// baseline record and check hand to the workload they run (SIGINT, SIGTERM and SIGHUP: the
// workload's group is stopped, what was measured is stored, gpudoc exits 128 + N). A signal sent
// by another process (kill), not by the terminal, is also stored in forward_signal() for a child
// command (record -- CMD), which did not get it; the terminal's Ctrl-C reached it already.
void install_stop_handlers(std::initializer_list<int> signals = {SIGINT, SIGTERM});
std::atomic<int>& stop_requests();
// Sleeps until a stop request or `timeout`, whichever comes first, without waking in between (the
// handler wakes it through a pipe); true when a stop was requested, at once if one came before.
[[nodiscard]] bool wait_for_stop(core::Nanos timeout);
std::atomic<int>& forward_signal();
const baseline::StopSignal& stop_signal();

}  // namespace gpudoc::cli
