#include "view/error_json.hpp"

namespace gpudoc::view {

nlohmann::json error_json(const core::Error& error) {
  return {{"kind", core::to_string(error.kind())},
          {"message", error.message()},
          {"exit_code", core::exit_code(error.kind())}};
}

}  // namespace gpudoc::view
