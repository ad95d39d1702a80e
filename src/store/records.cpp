#include "store/records.hpp"

namespace gpudoc::store {

const char* to_string(Direction d) noexcept {
  switch (d) {
    case Direction::kLowerIsBetter: return "lower";
    case Direction::kHigherIsBetter: return "higher";
    case Direction::kUnknown: return "unknown";
  }
  return "unknown";
}

std::optional<Direction> direction_from_string(std::string_view s) noexcept {
  if (s == "lower") return Direction::kLowerIsBetter;
  if (s == "higher") return Direction::kHigherIsBetter;
  if (s == "unknown") return Direction::kUnknown;
  return std::nullopt;
}

nlohmann::json to_json(const MachineContext& m) {
  return {{"host", m.host},
          {"gpus", m.gpus},
          {"driver_version", m.driver_version},
          {"cuda_version", m.cuda_version},
          {"extra", m.extra}};
}

MachineContext machine_from_json(const nlohmann::json& j) {
  MachineContext m;
  if (!j.is_object()) return m;
  m.host = j.value("host", "");
  if (j.contains("gpus") && j["gpus"].is_array())
    for (const auto& g : j["gpus"])
      if (g.is_string()) m.gpus.push_back(g.get<std::string>());
  m.driver_version = j.value("driver_version", "");
  m.cuda_version = j.value("cuda_version", "");
  if (j.contains("extra") && j["extra"].is_object()) m.extra = j["extra"];
  return m;
}

}  // namespace gpudoc::store
