#include "cli/commands.hpp"

namespace gpudoc::cli {
void register_trace(CLI::App&, Action&) {}
}  // namespace gpudoc::cli
