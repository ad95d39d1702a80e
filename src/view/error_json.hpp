// gpudoc::view error JSON — an error as --json output carries it, the same shape wherever a command
// reports one (a failed command's document, health's no-GPU document):
//
//   print_json(nlohmann::json{{"error", view::error_json(error)}});
//   // {"error": {"kind": "environment", "message": "...", "exit_code": 3}}
#pragma once

#include <nlohmann/json.hpp>

#include "core/result.hpp"

namespace gpudoc::view {

// {"kind": core::to_string(kind), "message": the full message, "exit_code": core::exit_code(kind)}.
[[nodiscard]] nlohmann::json error_json(const core::Error& error);

}  // namespace gpudoc::view
