// The catalog: ids unique and well formed, every entry documented in docs/findings.md (one
// "## `id`" heading each, no extra ones), make_finding and to_json.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>

#include "findings/finding.hpp"

namespace gpudoc::findings {
namespace {

TEST(Catalog, IdsAreUniqueSnakeCaseAndComplete) {
  std::set<std::string> ids;
  const std::regex snake("[a-z][a-z0-9_]*");
  for (const CatalogEntry& e : catalog()) {
    EXPECT_TRUE(std::regex_match(std::string(e.id), snake)) << e.id;
    EXPECT_TRUE(ids.insert(std::string(e.id)).second) << "duplicate id " << e.id;
    EXPECT_FALSE(e.title.empty()) << e.id;
    EXPECT_FALSE(e.meaning.empty()) << e.id;
    EXPECT_FALSE(e.next_steps.empty()) << e.id;
    EXPECT_TRUE(e.area == "diagnose" || e.area == "health" || e.area == "guard") << e.id;
  }
  for (const char* id : {"idle", "healthy", "sawtooth", "plateau", "memory_bound", "pulse", "staircase",
                         "memory_growth", "throttled", "insufficient_data"})
    EXPECT_EQ(ids.count(id), 1u) << "the issue's finding " << id << " is missing";
}

TEST(Catalog, DocsListEveryIdAndNoOther) {
  std::ifstream in(std::string(GPUDOC_SOURCE_DIR) + "/docs/findings.md");
  ASSERT_TRUE(in) << "docs/findings.md missing";
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string doc = ss.str();
  std::set<std::string> documented;
  const std::regex heading("^## `([a-z0-9_]+)`", std::regex::multiline);
  for (auto it = std::sregex_iterator(doc.begin(), doc.end(), heading); it != std::sregex_iterator(); ++it)
    EXPECT_TRUE(documented.insert((*it)[1]).second) << "documented twice: " << (*it)[1];
  std::set<std::string> ids;
  for (const CatalogEntry& e : catalog()) ids.insert(std::string(e.id));
  EXPECT_EQ(documented, ids);
}

TEST(Catalog, FindEntry) {
  ASSERT_NE(find_entry("sawtooth"), nullptr);
  EXPECT_EQ(find_entry("sawtooth")->id, "sawtooth");
  EXPECT_EQ(find_entry("no_such_finding"), nullptr);
}

TEST(Finding, MakeFindingCopiesNextStepsAndRejectsUnknownIds) {
  const Finding f = make_finding("plateau", Severity::kWarning);
  EXPECT_EQ(f.id, "plateau");
  EXPECT_EQ(f.severity, Severity::kWarning);
  EXPECT_EQ(f.next_steps.size(), find_entry("plateau")->next_steps.size());
  EXPECT_THROW((void)make_finding("nope", Severity::kInfo), std::logic_error);
}

TEST(Finding, SeverityOrderAndNames) {
  EXPECT_LT(Severity::kInfo, Severity::kWarning);
  EXPECT_LT(Severity::kWarning, Severity::kCritical);
  for (Severity s : {Severity::kInfo, Severity::kWarning, Severity::kCritical})
    EXPECT_EQ(parse_severity(to_string(s)), s);
  EXPECT_EQ(parse_severity("fatal"), std::nullopt);
}

TEST(Finding, ToJsonCarriesEverything) {
  Finding f = make_finding("sawtooth", Severity::kCritical);
  f.gpus = {0, 1};
  f.window = {1.5, 9.0};
  f.confidence = 0.7;
  f.message = "m";
  f.evidence.push_back({"period_s", 1.0, "s", "acf"});
  f.caveats.push_back("c");
  f.details = {{"below_sensor_resolution", true}};
  const nlohmann::json j = to_json(f);
  EXPECT_EQ(j["id"], "sawtooth");
  EXPECT_EQ(j["severity"], "critical");
  EXPECT_EQ(j["gpus"], nlohmann::json({0, 1}));
  EXPECT_DOUBLE_EQ(j["window"]["end_s"].get<double>(), 9.0);
  EXPECT_EQ(j["evidence"][0]["name"], "period_s");
  EXPECT_EQ(j["caveats"][0], "c");
  EXPECT_TRUE(j["details"]["below_sensor_resolution"].get<bool>());
  EXPECT_FALSE(j["next_steps"].empty());
  EXPECT_EQ(to_json(*find_entry("idle"))["area"], "diagnose");
}

}  // namespace
}  // namespace gpudoc::findings
