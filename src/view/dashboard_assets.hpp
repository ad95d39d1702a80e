// gpudoc::view dashboard assets — the files of `gpudoc serve`'s live web dashboard, by URL path:
// the page (web/dashboard/index.html at "/"), its script, style and error hook, and the plot
// library (uPlot from npm, the same bytes the HTML reports embed) under "/assets/". All are
// compiled into the binary at build time, so the dashboard opens with no internet and no file
// beside the binary. The page reads the JSON API (/api/v1/snapshot, /api/v1/history,
// /api/v1/events: docs/serve.md). Pure: no I/O.
//
//   if (auto a = view::dashboard_asset(req.path)) reply(200, a->body, a->content_type);
//   else reply(404);
#pragma once

#include <optional>
#include <span>
#include <string_view>

namespace gpudoc::view {

struct Asset {
  std::string_view body;          // the bytes to send; static storage, valid for the program's life
  std::string_view content_type;  // "text/html; charset=utf-8", "text/javascript; charset=utf-8", ...
};

// The URL paths the dashboard consists of: "/" and "/assets/NAME" for each file the page loads.
[[nodiscard]] std::span<const std::string_view> dashboard_paths();

// The asset served at `path` (the request's path without its query string), or nullopt for any
// other path. The plot library's paths are nullopt in a build that did not find uPlot (the page
// then says the plot library did not load; view::web_assets() tells the server at start-up).
// Thread-safe.
[[nodiscard]] std::optional<Asset> dashboard_asset(std::string_view path);

}  // namespace gpudoc::view
