// gpudoc::view::web_assets — the third-party files the HTML report embeds (uPlot's JS and CSS),
// compiled into the binary at build time so that a report opens offline and the tree holds no
// copy of them. They come from npm (web/package.json, pinned in web/package-lock.json), installed
// by scripts/setup.sh into web/node_modules; CMake finds them (GPUDOC_WEB_ASSETS_DIR).
//
//   if (auto a = view::web_assets()) page += a->js; else fail(view::kWebAssetsMissing);
#pragma once

#include <optional>
#include <string_view>

namespace gpudoc::view {

struct WebAssets {
  std::string_view js;       // uPlot.iife.min.js: defines the global uPlot
  std::string_view css;      // uPlot.min.css
  std::string_view version;  // "uplot 1.6.32"
};

// nullopt when the build did not find the files (the build still succeeds; --html then fails).
[[nodiscard]] std::optional<WebAssets> web_assets();

inline constexpr std::string_view kWebAssetsMissing =
    "this gpudoc was built without the HTML report's plot library (uPlot, from npm): run "
    "scripts/setup.sh (it runs `npm ci --prefix web`), or `npm ci --prefix web` yourself, then "
    "reconfigure and rebuild (cmake --preset default && cmake --build --preset default); "
    "or point -DGPUDOC_WEB_ASSETS_DIR at a folder holding uPlot.iife.min.js and uPlot.min.css";

}  // namespace gpudoc::view
