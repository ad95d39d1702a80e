// view::dashboard_asset: every path the dashboard consists of resolves with its content type, every
// file the page references is one of them, the embedded bytes are web/dashboard's files, and any
// other path is nullopt.
#include "view/dashboard_assets.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

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
    std::string_view want = p == "/"              ? "text/html; charset=utf-8"
                            : p.ends_with(".js")  ? "text/javascript; charset=utf-8"
                            : p.ends_with(".css") ? "text/css; charset=utf-8"
                                                  : "?";
    EXPECT_EQ(a->content_type, want) << p;
  }
}

TEST(DashboardAssets, TheEmbeddedBytesAreTheCommittedFiles) {
  EXPECT_EQ(dashboard_asset("/")->body, source_file("web/dashboard/index.html"));
  EXPECT_EQ(dashboard_asset("/assets/dashboard.js")->body, source_file("web/dashboard/dashboard.js"));
  EXPECT_EQ(dashboard_asset("/assets/dashboard.css")->body, source_file("web/dashboard/dashboard.css"));
  EXPECT_EQ(dashboard_asset("/assets/errors.js")->body, source_file("web/dashboard/errors.js"));
  EXPECT_EQ(dashboard_asset("/assets/uPlot.iife.min.js")->body, gpudoc::view::web_assets()->js);
  EXPECT_EQ(dashboard_asset("/assets/uPlot.min.css")->body, gpudoc::view::web_assets()->css);
}

// Every src= and href= of the page is a listed path that resolves, and every listed asset is used:
// a renamed file cannot leave the page pointing at nothing.
TEST(DashboardAssets, EveryFileThePageReferencesIsServed) {
  const std::string page(dashboard_asset("/")->body);
  std::set<std::string> referenced;
  const std::regex ref(R"re((?:src|href)="([^"]*)")re");
  for (auto it = std::sregex_iterator(page.begin(), page.end(), ref); it != std::sregex_iterator(); ++it)
    if (!(*it)[1].str().starts_with("data:")) referenced.insert("/" + (*it)[1].str());  // the empty favicon
  EXPECT_EQ(referenced.size(), 6u);  // errors.js, uPlot (js, css), findings_shading.js, dashboard (js, css)
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

TEST(DashboardAssets, AnyOtherPathIsNotFound) {
  for (std::string_view p :
       {"", "/index.html", "/assets/index.html", "/assets/", "/assets", "/assets/nope.js", "/assets/../dashboard.js",
        "/assets//dashboard.js", "/assets/dashboard.js/", "/assets/DASHBOARD.JS", "/dashboard.js", "//",
        "/api/v1/snapshot", "/assets/dashboard.js?x=1", "assets/dashboard.js"})
    EXPECT_FALSE(dashboard_asset(p).has_value()) << p;
}

}  // namespace
