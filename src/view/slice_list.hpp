// gpudoc::view slice list — `gpudoc slice list`: the slices that run now, their processes and their
// use against the limits, as a terminal table or as JSON.
//
//   const auto slices = slice::list();
//   std::fputs(view::render_slice_list(slices).c_str(), stdout);
//   print_json(view::slice_list_json(slices));
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "slice/slice.hpp"

namespace gpudoc::view {

// One row a slice: name, gpudoc's pid ("(gone)" when it no longer runs), mechanism, memory used
// against the cap, SM share (and where its window starts without MPS), each process's memory, the
// command; names and commands escaped by core::terminal_safe. A line saying how to start one when
// there is none.
[[nodiscard]] std::string render_slice_list(const std::vector<slice::Listed>& slices);
// {"slices": [{"name", "command", "gpudoc_pid", "running", "mechanism", limits and use in bytes,
// bytes per second and seconds, "processes": [{"pid", "used_bytes", "peak_bytes", ...}]}]}
[[nodiscard]] nlohmann::json slice_list_json(const std::vector<slice::Listed>& slices);

// What `gpudoc slice` says on stderr before the job starts (unless --quiet): "gpudoc slice: NAME:
// memory 40.0 GiB, SM 30 %; NOTE" (a limit not given: "no cap"; NOTE why this mechanism, the
// placement's), then slice::enforcement_notes' lines. The name, the command's or --name's, is
// escaped by core::terminal_safe; the rest is gpudoc's own text.
[[nodiscard]] std::string render_slice_start(const std::string& name, const slice::Limits& limits,
                                             const slice::Placement& placement);

}  // namespace gpudoc::view
