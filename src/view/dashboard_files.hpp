// gpudoc::view::detail dashboard files — the files of web/dashboard/ as compiled into the binary
// (generated at build time by embed_dashboard.cmake). Internal to view: callers use
// dashboard_assets.hpp, which maps URL paths to these and to the embedded plot library.
#pragma once

#include <span>
#include <string_view>

namespace gpudoc::view::detail {

struct EmbeddedFile {
  std::string_view name;  // the file's name in web/dashboard/: "dashboard.js"
  std::string_view body;  // its bytes
};

// Every file of web/dashboard/ listed in src/view/CMakeLists.txt, in that order. Static storage.
[[nodiscard]] std::span<const EmbeddedFile> dashboard_files();

}  // namespace gpudoc::view::detail
