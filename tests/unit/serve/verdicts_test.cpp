// serve verdicts: the last health run and each baseline's last verdict read back from a real store
// (read-only), a store not yet created is no error, and a file that is not a store is one.
#include "serve/verdicts.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "health/history.hpp"
#include "support/temp_dir.hpp"

namespace gpudoc::serve {
namespace {

store::NewBaseline golden(const std::string& name, std::int64_t t) {
  store::NewBaseline b;
  b.name = name;
  b.kinds = "workload";
  b.run.time_unix_ns = t;
  b.run.machine = store::MachineContext{"host", {"NVIDIA H200"}, "580.1", "13.0", {}};
  b.run.figures = {store::Figure{"step_ms", "ms", "workload", std::nullopt, {41.0, 42.0, 40.0}}};
  return b;
}

TEST(Verdicts, LastHealthRunAndEachBaselinesLastRun) {
  testing::TempDir dir("gpudoc-serve-verdicts");
  const std::string path = dir.file("s.db");
  {
    auto s = store::Database::open(path);
    ASSERT_TRUE(s) << s.error().message();
    ASSERT_TRUE(s->record_baseline(golden("resnet", 1'780'000'000'000'000'000)));
    ASSERT_TRUE(s->record_baseline(golden("bert \"large\"", 1'780'000'001'000'000'000)));
    store::NewRun check;
    check.baseline = "resnet";
    check.time_unix_ns = 1'780'000'100'000'000'000;
    check.role = "check";
    check.verdict = "regression";
    check.figures = golden("resnet", 0).run.figures;
    ASSERT_TRUE(s->add_run(check));
  }
  health::NodeReport node;
  health::CheckResult ecc;
  ecc.check = "ecc";
  ecc.gpu = 1;
  ecc.status = health::Status::kFail;
  ecc.evidence = "3 uncorrectable";
  health::CheckResult driver;
  driver.check = "driver";
  node.results = {ecc, driver};
  ASSERT_TRUE(health::keep_health_result(path, node, health::to_json(node)));

  auto v = read_verdicts(path);
  ASSERT_TRUE(v) << v.error().message();
  ASSERT_TRUE(v->health);
  EXPECT_EQ(v->health->status, "fail");
  ASSERT_EQ(v->health->checks.size(), 2u);
  EXPECT_EQ(v->health->checks[0].check, "ecc");
  EXPECT_EQ(v->health->checks[0].status, "fail");
  EXPECT_EQ(v->health->checks[0].gpu, 1);
  EXPECT_FALSE(v->health->checks[1].gpu);
  ASSERT_EQ(v->baselines.size(), 2u);
  for (const auto& b : v->baselines) {
    if (b.name == "resnet") {
      EXPECT_EQ(b.verdict, "regression");
      EXPECT_EQ(b.time_unix_ns, 1'780'000'100'000'000'000);
    } else {
      EXPECT_EQ(b.name, "bert \"large\"");
      EXPECT_EQ(b.verdict, "recorded");  // never checked
    }
  }
  const auto j = to_json(*v);
  EXPECT_EQ(j["health"]["checks"][0]["detail"], "3 uncorrectable");
  EXPECT_EQ(j["baselines"].size(), 2u);
}

TEST(Verdicts, NoStoreYetIsNoVerdictsAndAForeignFileIsAnError) {
  testing::TempDir dir("gpudoc-serve-verdicts");
  auto none = read_verdicts(dir.file("missing.db"));
  ASSERT_TRUE(none) << none.error().message();
  EXPECT_FALSE(none->health);
  EXPECT_TRUE(none->baselines.empty());
  EXPECT_TRUE(to_json(*none)["health"].is_null());
  std::ofstream(dir.file("junk.db")) << "this is not an SQLite database, it is a text file of some length.....";
  auto junk = read_verdicts(dir.file("junk.db"));
  ASSERT_FALSE(junk);
  EXPECT_NE(junk.error().message().find("junk.db"), std::string::npos) << junk.error().message();
}

}  // namespace
}  // namespace gpudoc::serve
