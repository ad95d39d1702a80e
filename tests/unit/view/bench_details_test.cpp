// The terminal sections under the bench table: the p2p matrices, the NCCL curves, and the verdict
// on a launch figure's spread.
#include "view/bench_details.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace gpudoc::view {
namespace {

using bench::BenchResult;
using ::testing::HasSubstr;

TEST(MultiGpuDetails, P2pResultPrintsItsMatrixAndTheDatasheet) {
  BenchResult r;
  r.key = "p2p.bandwidth";
  r.unit = "GB/s";
  r.params = {
      {"matrix",
       {{"rows", "src"}, {"columns", "dst"}, {"unit", "GB/s"}, {"values", {{nullptr, 380.0}, {381.0, nullptr}}}}},
      {"datasheet",
       {{"link", "NVLink 4 (18 links)"}, {"per_direction_gb_per_s", 450}, {"bidirectional_gb_per_s", 900}}}};
  const std::string t = details_text(r);
  EXPECT_THAT(t, HasSubstr("p2p.bandwidth: GB/s one direction"));
  EXPECT_THAT(t, HasSubstr("datasheet NVLink 4 (18 links) 450 GB/s per direction"));
  EXPECT_THAT(t, HasSubstr("src\\dst"));
  EXPECT_THAT(t, HasSubstr("380.0"));
}

TEST(MultiGpuDetails, NcclResultPrintsItsCurve) {
  BenchResult r;
  r.key = "nccl.all_reduce";
  r.unit = "GB/s";
  r.params = {{"ranks", 2},
              {"formula", "busbw = algbw x 2(n-1)/n"},
              {"curve",
               {{{"bytes", 8},
                 {"time_us", 10.0},
                 {"algbw_gb_per_s", 0.0008},
                 {"busbw_gb_per_s", 0.0008},
                 {"verified", true}}}}};
  const std::string t = details_text(r);
  EXPECT_THAT(t, HasSubstr("nccl.all_reduce: 2 ranks"));
  EXPECT_THAT(t, HasSubstr("8 B"));
}

TEST(MultiGpuDetails, OtherResultsAndMalformedParamsPrintNothing) {
  BenchResult r;
  r.key = "hbm.copy";
  EXPECT_EQ(details_text(r), "");
  r.params = {{"matrix", 3}};
  EXPECT_EQ(details_text(r), "");
  r.params = {{"curve", {{"bytes", "x"}}}};
  EXPECT_EQ(details_text(r), "");
}

// The verdict on a spread goes under the table, one line per result that carries one (the text is
// the H200's launch.throughput --full of 2026-11-30 at 50e29bb, docs/results/bench-h200.md).
TEST(MultiGpuDetails, SpreadLineCarriesTheHostVerdict) {
  BenchResult r;
  r.key = "launch.throughput";
  r.cv = 0.0274165;
  EXPECT_EQ(spread_text(r), "");
  r.params = {{"host_cpu", 6}, {"host_spread", ""}};
  EXPECT_EQ(spread_text(r), "");
  r.params["host_spread"] = 3;
  EXPECT_EQ(spread_text(r), "");
  r.params["host_spread"] =
      "slower CPU: the thread ran the whole time, and its CPU time per unit moved with the figure (correlation 1.00; "
      "slower half 4.82, faster half 4.62) without steal to explain it";
  EXPECT_EQ(spread_text(r),
            "launch.throughput: CV 2.74 %: slower CPU: the thread ran the whole time, and its CPU time per unit moved "
            "with the figure (correlation 1.00; slower half 4.82, faster half 4.62) without steal to explain it\n");
}

}  // namespace
}  // namespace gpudoc::view
