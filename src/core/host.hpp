// gpudoc::core host — facts about the machine gpudoc runs on that every record names.
//
//   std::string h = core::host_name();   // "gpu-node-17"; "unknown" when the kernel will not say
//
// Thread-safe; never throws.
#pragma once

#include <string>

namespace gpudoc::core {

// This machine's host name (gethostname), or "unknown" when it cannot be read.
[[nodiscard]] std::string host_name();

}  // namespace gpudoc::core
