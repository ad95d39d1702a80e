// view::dashboard_asset: every path the dashboard consists of resolves with its content type, every
// file the page references is one of them, the embedded bytes are web/dashboard's files, and any
// other path is nullopt.
#include "view/dashboard_assets.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "gpu/metrics.hpp"
#include "view/html_page.hpp"
#include "view/web_assets.hpp"

namespace {

using gpudoc::view::dashboard_asset;
using gpudoc::view::dashboard_paths;

std::string source_file(const std::string& rel) {
  std::ifstream in(std::string(GPUDOC_SOURCE_DIR) + "/" + rel, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(DashboardAssets, EveryPathResolvesWithItsContentType) {
  ASSERT_TRUE(gpudoc::view::web_assets().has_value()) << "built without uPlot: " << gpudoc::view::kWebAssetsMissing;
  ASSERT_FALSE(dashboard_paths().empty());
  for (std::string_view p : dashboard_paths()) {
    auto a = dashboard_asset(p);
    ASSERT_TRUE(a.has_value()) << p;
    EXPECT_FALSE(a->body.empty()) << p;
    std::string_view want = p == "/"               ? "text/html; charset=utf-8"
                            : p.ends_with(".js")   ? "text/javascript; charset=utf-8"
                            : p.ends_with(".css")  ? "text/css; charset=utf-8"
                            : p.ends_with(".json") ? "application/json"
                                                   : "?";
    EXPECT_EQ(a->content_type, want) << p;
  }
}

TEST(DashboardAssets, TheEmbeddedBytesAreTheCommittedFiles) {
  EXPECT_EQ(dashboard_asset("/")->body, source_file("web/dashboard/index.html"));
  EXPECT_EQ(dashboard_asset("/assets/dashboard.js")->body, source_file("web/dashboard/dashboard.js"));
  EXPECT_EQ(dashboard_asset("/assets/dashboard.css")->body, source_file("web/dashboard/dashboard.css"));
  EXPECT_EQ(dashboard_asset("/assets/errors.js")->body, source_file("web/dashboard/errors.js"));
  EXPECT_EQ(dashboard_asset("/assets/findings_shading.js")->body, source_file("web/dashboard/findings_shading.js"));
  EXPECT_EQ(dashboard_asset("/assets/plot_catalog.json")->body, source_file("web/dashboard/plot_catalog.json"));
  EXPECT_EQ(dashboard_asset("/assets/uPlot.iife.min.js")->body, gpudoc::view::web_assets()->js);
  EXPECT_EQ(dashboard_asset("/assets/uPlot.min.css")->body, gpudoc::view::web_assets()->css);
}

// Every src= and href= of the page, and every asset its script fetches, is a listed path that
// resolves, and every listed asset is used: a renamed file cannot leave the page pointing at nothing.
TEST(DashboardAssets, EveryFileThePageReferencesIsServed) {
  const std::string page(dashboard_asset("/")->body);
  std::set<std::string> referenced;
  const std::regex ref(R"re((?:src|href)="([^"]*)")re");
  for (auto it = std::sregex_iterator(page.begin(), page.end(), ref); it != std::sregex_iterator(); ++it)
    if (!(*it)[1].str().starts_with("data:")) referenced.insert("/" + (*it)[1].str());  // the empty favicon
  EXPECT_EQ(referenced.size(), 6u);  // errors.js, uPlot (js, css), findings_shading.js, dashboard (js, css)
  const std::string script(dashboard_asset("/assets/dashboard.js")->body);
  const std::regex fetched(R"re(getJson\("(assets/[^"]*)"\))re");
  for (auto it = std::sregex_iterator(script.begin(), script.end(), fetched); it != std::sregex_iterator(); ++it)
    referenced.insert("/" + (*it)[1].str());
  EXPECT_EQ(referenced.size(), 7u);  // and plot_catalog.json
  for (const auto& r : referenced) {
    EXPECT_TRUE(dashboard_asset(r).has_value()) << r;
    EXPECT_NE(std::find(dashboard_paths().begin(), dashboard_paths().end(), r), dashboard_paths().end()) << r;
  }
  for (std::string_view p : dashboard_paths()) {
    if (p == "/") continue;
    EXPECT_TRUE(referenced.contains(std::string(p))) << p << " is listed but the page does not load it";
  }
}

// The server's CSP forbids inline script and style: the page has neither.
TEST(DashboardAssets, ThePageHasNoInlineScriptOrStyle) {
  const std::string page(dashboard_asset("/")->body);
  EXPECT_EQ(page.find("<style"), std::string::npos);
  EXPECT_EQ(page.find("style="), std::string::npos);
  EXPECT_FALSE(std::regex_search(page, std::regex("<script(?![^>]*\\ssrc=)[^>]*>"))) << "a script without src=";
  EXPECT_FALSE(std::regex_search(page, std::regex("\\son[a-z]+="))) << "an inline event handler";
}

// The one catalog of plotted curves, read by the dashboard and by `diagnose --html`: every plot of
// both layouts names curves the catalog describes, and every curve is a trace metric.
TEST(DashboardAssets, ThePlotCatalogDescribesEveryCurveOfBothPagesAndEachIsAMetric) {
  const auto catalog = nlohmann::json::parse(dashboard_asset("/assets/plot_catalog.json")->body, nullptr, false);
  ASSERT_TRUE(catalog.is_object());
  for (const auto& [name, curve] : catalog["series"].items()) {
    EXPECT_TRUE(gpudoc::gpu::metric_from_name(name).has_value()) << name;
    for (const char* field : {"label", "color", "unit"}) EXPECT_TRUE(curve[field].is_string()) << name << " " << field;
    EXPECT_TRUE(curve["decimals"].is_number_integer()) << name;
  }
  for (const char* layout : {"report", "dashboard"}) {
    ASSERT_FALSE(catalog[layout].empty()) << layout;
    for (const auto& plot : catalog[layout]) {
      EXPECT_TRUE(plot["title"].is_string());
      ASSERT_FALSE(plot["series"].empty()) << plot["title"];
      for (const auto& name : plot["series"]) EXPECT_TRUE(catalog["series"].contains(name)) << layout << " " << name;
    }
  }
  for (const auto& plot : catalog["dashboard"]) EXPECT_TRUE(plot["key"].is_string()) << plot["title"];
}

// The HTML reports' scripts and styles are web/report/'s files, byte for byte.
TEST(ReportFiles, TheEmbeddedBytesAreTheCommittedFiles) {
  for (const char* page : {"diagnose", "baseline", "bench", "health", "profile"})
    for (const char* ext : {".js", ".css"}) {
      const std::string name = std::string(page) + ext;
      EXPECT_FALSE(gpudoc::view::report_file(name).empty()) << name;
      EXPECT_EQ(gpudoc::view::report_file(name), source_file("web/report/" + name)) << name;
    }
  EXPECT_TRUE(gpudoc::view::report_file("nope.js").empty());
}

TEST(DashboardAssets, AnyOtherPathIsNotFound) {
  for (std::string_view p :
       {"", "/index.html", "/assets/index.html", "/assets/", "/assets", "/assets/nope.js", "/assets/../dashboard.js",
        "/assets//dashboard.js", "/assets/dashboard.js/", "/assets/DASHBOARD.JS", "/dashboard.js", "//",
        "/api/v1/snapshot", "/assets/dashboard.js?x=1", "assets/dashboard.js"})
    EXPECT_FALSE(dashboard_asset(p).has_value()) << p;
}

}  // namespace
