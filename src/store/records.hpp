// gpudoc::store records — what every stored run carries: the machine it ran on and its figures.
// The regression gate (baseline/) judges them; the store only keeps them, so they live here, below
// both.
//
//   store::Figure f{"step_ms", "ms", "workload", store::Direction::kLowerIsBetter, {12.1, 12.3}};
//   nlohmann::json j = store::to_json(machine);   // the store's machine_json
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace gpudoc::store {

// Which way a figure gets better. kUnknown: the figure is stored and shown but never gates (no
// direction is known for it).
enum class Direction { kLowerIsBetter, kHigherIsBetter, kUnknown };
[[nodiscard]] const char* to_string(Direction d) noexcept;  // "lower", "higher", "unknown"
[[nodiscard]] std::optional<Direction> direction_from_string(std::string_view s) noexcept;

// One measured quantity of a run. samples are in `unit`, in the order measured.
struct Figure {
  std::string name;                    // "step_ms", "hbm.copy", "wall_s"
  std::string unit;                    // "ms", "GB/s", "" when the workload did not say
  std::string source;                  // "workload", "gpudoc", "bench", "probe"
  std::optional<Direction> direction;  // when the producer knows it (benchmarks do)
  std::vector<double> samples;
};

// The machine a run happened on, as far as comparability goes.
struct MachineContext {
  std::string host;
  std::vector<std::string> gpus;                    // model names in index order; empty: no GPU visible
  std::string driver_version;                       // "580.159.03"; empty when unknown
  std::string cuda_version;                         // "13.0"; empty when unknown
  nlohmann::json extra = nlohmann::json::object();  // UUIDs, torch version...: recorded, not compared
};
[[nodiscard]] nlohmann::json to_json(const MachineContext& m);
// Whatever fields of `j` can be read; an object that is not one gives an empty context.
[[nodiscard]] MachineContext machine_from_json(const nlohmann::json& j);

}  // namespace gpudoc::store
