#include "cli/commands.hpp"

namespace gpudoc::cli {
void register_record(CLI::App&, Action&) {}
}  // namespace gpudoc::cli
