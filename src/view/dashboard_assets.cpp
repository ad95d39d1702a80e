#include "view/dashboard_assets.hpp"

#include <array>

#include "view/embedded_files.hpp"
#include "view/web_assets.hpp"

namespace gpudoc::view {
namespace {

constexpr std::string_view kAssets = "/assets/";
constexpr std::string_view kUplotJs = "uPlot.iife.min.js";
constexpr std::string_view kUplotCss = "uPlot.min.css";

constexpr std::array<std::string_view, 8> kPaths = {"/",
                                                    "/assets/dashboard.js",
                                                    "/assets/findings_shading.js",
                                                    "/assets/plot_catalog.json",
                                                    "/assets/dashboard.css",
                                                    "/assets/errors.js",
                                                    "/assets/uPlot.iife.min.js",
                                                    "/assets/uPlot.min.css"};

std::string_view content_type_of(std::string_view name) {
  if (name.ends_with(".html")) return "text/html; charset=utf-8";
  if (name.ends_with(".js")) return "text/javascript; charset=utf-8";
  if (name.ends_with(".css")) return "text/css; charset=utf-8";
  if (name.ends_with(".json")) return "application/json";
  return "application/octet-stream";
}

std::optional<Asset> embedded(std::string_view name) {
  for (const auto& f : detail::dashboard_files())
    if (f.name == name) return Asset{f.body, content_type_of(name)};
  return std::nullopt;
}

}  // namespace

std::span<const std::string_view> dashboard_paths() { return kPaths; }

std::optional<Asset> dashboard_asset(std::string_view path) {
  if (path == "/") return embedded("index.html");
  if (!path.starts_with(kAssets)) return std::nullopt;
  const std::string_view name = path.substr(kAssets.size());
  if (name == kUplotJs || name == kUplotCss) {
    const auto web = web_assets();
    if (!web) return std::nullopt;
    return Asset{name == kUplotJs ? web->js : web->css, content_type_of(name)};
  }
  // index.html is served at "/" only, so that the page has one address.
  if (name == "index.html") return std::nullopt;
  return embedded(name);
}

}  // namespace gpudoc::view
