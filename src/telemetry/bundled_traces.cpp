#include "telemetry/bundled_traces.hpp"

#include <fmt/format.h>

#include <cstdlib>

namespace gpudoc::telemetry {

namespace fs = std::filesystem;

std::vector<fs::path> bundled_trace_dirs() {
  std::vector<fs::path> dirs;
  if (const char* env = std::getenv("GPUDOC_DATA_DIR"); env != nullptr && *env != '\0') dirs.emplace_back(env);
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path dir = exe.parent_path();
#ifdef GPUDOC_INSTALLED_TRACES
    dirs.push_back(dir / GPUDOC_INSTALLED_TRACES);
#endif
    dirs.push_back(dir / "../../../tests/data");
    dirs.push_back(dir / "../../tests/data");
  }
#ifdef GPUDOC_SOURCE_TREE
  dirs.push_back(fs::path(GPUDOC_SOURCE_TREE) / "tests/data");
#endif
  return dirs;
}

core::Result<fs::path> find_bundled_traces(std::string_view probe_file) {
  std::string looked;
  for (const auto& d : bundled_trace_dirs()) {
    std::error_code ec;
    if (fs::is_regular_file(d / probe_file, ec)) return fs::weakly_canonical(d, ec);
    looked += (looked.empty() ? "" : ", ") + d.lexically_normal().string();
  }
  return core::Error(core::ErrorKind::kEnvironment,
                     fmt::format("the bundled H200 traces were not found either (looked in {}); set GPUDOC_DATA_DIR to "
                                 "the repository's tests/data",
                                 looked));
}

}  // namespace gpudoc::telemetry
