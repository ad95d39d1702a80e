#include "cli/commands.hpp"

namespace gpudoc::cli {
void register_watch(CLI::App&, Action&) {}
}  // namespace gpudoc::cli
