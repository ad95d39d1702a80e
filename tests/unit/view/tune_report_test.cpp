// view::tune_text and tune_html: the headline, the layers, the lines to apply, and text from the
// user's command escaped in the page.
#include "view/tune_report.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "view/web_assets.hpp"

namespace gpudoc::view {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

tune::Trial trial(int n, const std::string& arm, std::vector<double> samples) {
  tune::Trial t;
  t.number = n;
  t.arm = arm;
  t.block = "framework";
  t.samples = std::move(samples);
  return t;
}

tune::Report kept_report() {
  tune::Report r;
  r.command = {"python3", "train.py", "<script>alert(1)</script>"};
  r.work.figure = "step_ms";
  r.budget.budget_s = 600;
  r.budget.spent_s = 420;
  r.trials = 9;
  tune::LayerResult l;
  l.layer = tune::Layer::kFramework;
  l.planned_s = 300;
  l.spent_s = 280;
  l.reference = {trial(2, "unchanged", {40, 41}), trial(4, "unchanged", {40, 42})};
  tune::ArmResult a;
  a.change = tune::Change{.id = "loader_workers_pinned", .knob = "loader", .layer = tune::Layer::kFramework};
  a.change.what = "DataLoaders get 8 workers";
  a.change.patches = {"workers=8"};
  a.trials = {trial(3, "loader_workers_pinned", {16, 17}), trial(5, "loader_workers_pinned", {16, 16})};
  tune::Judgement j;
  j.speedup_percent = 150;
  j.interval = baseline::ChangeInterval{.low_percent = 140, .high_percent = 160};
  a.first = j;
  a.overall = j;
  a.outcome = "kept";
  a.reason = "+150.0 % [+140.0, +160.0], confirmed";
  l.arms.push_back(a);
  r.layers.push_back(l);
  r.kept.push_back(a.change);
  r.overall = j;
  r.overall_from = "loader_workers_pinned";
  r.apply_lines = {"export NCCL_NVLS_ENABLE=0", "python3 -m gpudoc.tune --patch workers=8 -- train.py"};
  r.not_tried.push_back({"nccl_algo_ring", tune::Layer::kNccl, "one GPU"});
  r.advice.push_back({"thp", "Transparent huge pages", "always", "echo madvise | sudo tee ...", "machine-wide"});
  return r;
}

TEST(TuneText, TheHeadlineTheLayerTheLinesAndWhatWasNotTried) {
  const std::string t = tune_text(kept_report());
  EXPECT_THAT(t, HasSubstr("2.50x as much work per second: +150.0 % (95 % interval [+140.0, +160.0] %)"));
  EXPECT_THAT(t, HasSubstr("Layer: framework (Python shim) (planned 300 s, spent 280 s)"));
  EXPECT_THAT(t, HasSubstr("loader_workers_pinned"));
  EXPECT_THAT(t, HasSubstr("To apply (kept: loader_workers_pinned):\n  export NCCL_NVLS_ENABLE=0\n"));
  EXPECT_THAT(t, HasSubstr("pip install"));  // the shim is the package
  EXPECT_THAT(t, HasSubstr("nccl_algo_ring (nccl): one GPU"));
  EXPECT_THAT(t, HasSubstr("Transparent huge pages = always"));
  EXPECT_THAT(t, HasSubstr("Budget: 600 s; spent 420 s (-30 %) in 9 trials"));
  EXPECT_THAT(t, HasSubstr("without them: 2 trials, median 40.5 step_ms"));
}

TEST(TuneText, NothingKeptSaysSoAndPrintsNoLines) {
  tune::Report r = kept_report();
  r.kept.clear();
  r.overall.reset();
  r.layers[0].arms[0].outcome = "not kept";
  const std::string t = tune_text(r);
  EXPECT_THAT(t, HasSubstr("Nothing worth changing"));
  EXPECT_THAT(t, Not(HasSubstr("To apply")));
}

TEST(TuneHtml, ThePageEscapesTheCommandAndCarriesEveryTrial) {
  if (!web_assets()) GTEST_SKIP() << "built without uPlot (npm ci --prefix web)";
  auto page = tune_html(kept_report());
  ASSERT_TRUE(page) << page.error().message();
  EXPECT_THAT(*page, Not(HasSubstr("<script>alert(1)</script>")));
  EXPECT_THAT(*page, HasSubstr("&lt;script&gt;alert(1)&lt;/script&gt;"));
  EXPECT_THAT(*page, HasSubstr("id=\"trials\""));
  EXPECT_THAT(*page, HasSubstr("\"arm\":\"loader_workers_pinned\""));
  EXPECT_THAT(*page, HasSubstr("python3 -m gpudoc.tune --patch workers=8 -- train.py"));
}

}  // namespace
}  // namespace gpudoc::view
