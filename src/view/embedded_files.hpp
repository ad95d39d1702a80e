// gpudoc::view::detail embedded files — the hand-written files of web/ as compiled into the binary
// (generated at build time by embed_files.cmake): web/dashboard/ (`gpudoc serve`'s dashboard, and
// the files the reports share with it), web/report/ (the HTML reports' scripts and styles) and
// docs/cli/ (each command's help).
// Internal to view: callers use dashboard_assets.hpp (URL paths) and html_page.hpp (report_file).
#pragma once

#include <span>
#include <string_view>

namespace gpudoc::view::detail {

struct EmbeddedFile {
  std::string_view name;  // the file's name in its folder: "dashboard.js"
  std::string_view body;  // its bytes
};

// Every file of web/dashboard/ listed in src/view/CMakeLists.txt, in that order. Static storage.
[[nodiscard]] std::span<const EmbeddedFile> dashboard_files();
// Every file of web/report/ listed in src/view/CMakeLists.txt, in that order. Static storage.
[[nodiscard]] std::span<const EmbeddedFile> report_files();
// Every file of docs/cli/ (each command's help: help_text.hpp). Static storage.
[[nodiscard]] std::span<const EmbeddedFile> help_files();

}  // namespace gpudoc::view::detail
