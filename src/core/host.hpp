// gpudoc::core host — facts about the machine gpudoc runs on that every record names.
//
//   std::string h = core::host_name();   // "gpu-node-17"; "unknown" when the kernel will not say
//   core::name_this_thread("gpudoc-gpu0");  // what `top -H` and /proc/PID/task/TID/comm show
//
// Thread-safe; never throws.
#pragma once

#include <string>
#include <string_view>

namespace gpudoc::core {

// This machine's host name (gethostname), or "unknown" when it cannot be read.
[[nodiscard]] std::string host_name();

// Names the calling thread for `top -H`, `ps -L` and /proc/PID/task/TID/comm, so that what each of
// gpudoc's threads costs can be read from outside. The kernel keeps 15 bytes; longer names are cut.
void name_this_thread(std::string_view name);

// The folder of the running executable (/proc/self/exe), where gpudoc's own libraries are looked for
// beside it (libgpudoc_slice.so); "." when /proc cannot say.
[[nodiscard]] std::string executable_dir();

}  // namespace gpudoc::core
