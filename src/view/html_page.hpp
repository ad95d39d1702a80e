// gpudoc::view html page — the one skeleton and the one escaping every gpudoc page uses (diagnose,
// bench, baseline history, the health report): a self-contained page that opens offline, with
// uPlot embedded, the page's data as JSON in a <script type="application/json" id="gpudoc-data">,
// and the page's own script last. Pure: no I/O.
//
//   std::string page = view::html_page_start("gpudoc report", assets, view::report_file("x.css"));
//   page += "<p>" + view::html_escape(note) + "</p>\n";          // anything from the input
//   page += view::html_page_end({{"t", times}}, view::report_file("x.js"), assets);  // data, uPlot, script
//
// The pages' scripts and styles are files of web/report/, embedded at build time.
//
// Everything taken from the input is escaped with html_escape; the embedded data is JSON with <, >
// and & escaped, so no input can end a <script> element.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "view/web_assets.hpp"

namespace gpudoc::view {

// HTML text/attribute escaping: & < > " '.
[[nodiscard]] std::string html_escape(std::string_view s);
// JSON for embedding inside <script>: <, >, & and U+2028/2029 become \u escapes.
[[nodiscard]] std::string script_safe_json(const nlohmann::json& j);
// A <script> or <style> body (tag "script"/"style") with every "</tag" written "<\/tag", so that
// the element cannot end early (in JS and CSS, "<\/" only occurs in strings, where it means "</").
[[nodiscard]] std::string guard_end_tag(std::string_view body, std::string_view tag);

// A file of web/report/ (the pages' own scripts and styles: "diagnose.js", "diagnose.css", ...) as
// compiled into the binary; empty for a name not embedded (src/view/CMakeLists.txt lists them).
[[nodiscard]] std::string_view report_file(std::string_view name);

// The start of every gpudoc page: doctype, head (the escaped title, the hook that records script
// errors on <html data-errors>, which the headless-browser test reads: web/dashboard/errors.js, the
// dashboard's own; the embedded uPlot CSS, then `page_css`), then <body data-rendered="no"> and the
// title as <h1>.
[[nodiscard]] std::string html_page_start(std::string_view title, const WebAssets& assets, std::string_view page_css);
// The end of every gpudoc page: `data` as <script type="application/json" id="gpudoc-data">, the
// embedded uPlot, the page's own script `page_js` (which marks the body data-rendered="ok" when it
// is done), then </body></html>.
[[nodiscard]] std::string html_page_end(const nlohmann::json& data, std::string_view page_js, const WebAssets& assets);

}  // namespace gpudoc::view
