// Runs the CSV importer's fuzz target entry point (tests/fuzz/csv_import_fuzz.cpp, compiled into
// this test) over the seed corpus and 2000 fixed-seed mutations of it, so CI exercises the
// importer's invariants with gcc, without libFuzzer. A broken invariant aborts the test with the
// reason. Each seed's own outcome (accepted, or the specific rejection) is pinned too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "fuzz_mutate.hpp"
#include "telemetry/import_nvidia_smi.hpp"
#include "trace_test_util.hpp"

namespace gpudoc::telemetry {
namespace {

using testing::run_fuzz_input;

// What parse_nvidia_smi_csv says about each hand-made seed: "" = accepted, else a piece of the
// message. Seeds not listed (regression seeds found by fuzzing) only have to keep the invariants.
const std::map<std::string, std::string> kExpected = {
    {"real_h200_gemm_units.csv", ""},
    {"real_h200x2_allreduce_units.csv", ""},
    {"real_h200_sawtooth_nounits.csv", ""},
    {"real_h200_idle_plain_header.csv", ""},
    {"old_names_subset.csv", ""},
    {"uuid_keyed_two_gpus.csv", ""},
    {"one_sample.csv", ""},
    {"truncated.csv", ""},
    {"out_of_order.csv", ""},
    {"gaps_repeated_header.csv", ""},
    {"unknown_columns.csv", ""},
    {"bom_crlf_dates.csv", ""},
    {"empty.csv", "seed: empty file (not an nvidia-smi CSV)"},
    {"header_only.csv", "seed: no data rows"},
    {"absent_values.csv", ""},
    {"nan.csv", "seed line 3: column 3 (\"utilization.gpu [%]\"): \"NaN %\" is not a number"},
    {"missing_columns.csv", "seed line 3: 5 columns, the header has 7"},
    {"no_timestamp.csv", "seed line 1: no timestamp column"},
    {"bad_timestamp.csv", "seed line 2: column 1 (\"timestamp\"): \"2026/02/29 00:00:00.000\" is not a timestamp"},
    {"memory_used_overflow.csv", "seed line 3: column 3 (\"memory.used [MiB]\"): \"1e305 MiB\" is not a memory size"},
    // Found by fuzzing: invalid UTF-8 in a UUID; a median interval beyond the format's period_ms.
    {"crash_invalid_utf8_uuid.csv", ""},
    {"crash_period_beyond_format.csv", ""},
};

TEST(CsvFuzzCorpus, SeedsKeepTheInvariantsAndTheirOutcome) {
  auto seeds = testing::fuzz_seed_files("csv");
  ASSERT_GE(seeds.size(), kExpected.size());
  for (const auto& [name, expected] : kExpected) ASSERT_TRUE(seeds.count(name)) << name << " missing from the corpus";
  for (const auto& [name, content] : seeds) {
    EXPECT_EQ(run_fuzz_input(content), 0) << name;
    auto it = kExpected.find(name);
    if (it == kExpected.end()) continue;
    auto t = parse_nvidia_smi_csv(content, "seed");
    if (it->second.empty()) {
      EXPECT_TRUE(t.ok()) << name << ": " << (t.ok() ? "" : t.error().message());
    } else {
      ASSERT_FALSE(t.ok()) << name;
      EXPECT_EQ(t.error().kind(), core::ErrorKind::kBadInput) << name;
      EXPECT_NE(t.error().message().find(it->second), std::string::npos) << name << ": " << t.error().message();
    }
  }
}

TEST(CsvFuzzCorpus, SeedsCoverTheCasesTheyAreNamedFor) {
  auto seeds = testing::fuzz_seed_files("csv");
  auto t = parse_nvidia_smi_csv(seeds.at("real_h200x2_allreduce_units.csv"), "seed");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->gpus.size(), 2u);
  t = parse_nvidia_smi_csv(seeds.at("uuid_keyed_two_gpus.csv"), "seed");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->gpus.size(), 2u);
  t = parse_nvidia_smi_csv(seeds.at("truncated.csv"), "seed");
  ASSERT_TRUE(t.ok());
  EXPECT_NE(t->header.extra.dump().find("truncated last line skipped"), std::string::npos);
  t = parse_nvidia_smi_csv(seeds.at("out_of_order.csv"), "seed");
  ASSERT_TRUE(t.ok());
  EXPECT_NE(t->header.extra.dump().find("2 rows skipped: their time went backwards"), std::string::npos)
      << t->header.extra.dump();
  t = parse_nvidia_smi_csv(seeds.at("unknown_columns.csv"), "seed");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->header.extra["import_notes"][0], "column 3 (\"fan.speed [%]\") is not imported");
  t = parse_nvidia_smi_csv(seeds.at("absent_values.csv"), "seed");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->gpus[0].metric(gpu::Metric::kPowerWatts).size(), 2u);  // N/A is absent, not 0
  EXPECT_EQ(t->gpus[0].metric(gpu::Metric::kMemoryUsedBytes).size(), 1u);
  t = parse_nvidia_smi_csv(seeds.at("crash_invalid_utf8_uuid.csv"), "seed");
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->header.gpus.size(), 2u);  // keyed by UUID: the damaged one is a second GPU
  EXPECT_NE(t->header.gpus[1].uuid.find("\xEF\xBF\xBD"), std::string::npos);
  t = parse_nvidia_smi_csv(seeds.at("gaps_repeated_header.csv"), "seed");
  ASSERT_TRUE(t.ok());
  EXPECT_GT(t->duration_s, 7 * 3600.0);  // a 5 min gap and a 7 h gap, kept as they are
}

// Tokens that tend to reach the importer's edges.
const std::vector<std::string> kTokens = {
    "\n",
    ",",
    ", ",
    "[N/A]",
    "N/A",
    " %",
    " W",
    " MiB",
    " MHz",
    "0x",
    "0xFFFFFFFFFFFFFFFF",
    "-1",
    "1e999",
    "nan",
    "-0",
    "4096",
    "4095",
    "999999999",
    "2026/02/29",
    "1969/12/31",
    "2096/01/01",
    "23:59:59.",
    ".123456789",
    "\xEF\xBB\xBF",
    "\xff",
    "\xc3",
    "\r\n",
    " [",
    "]",
    "timestamp",
    "index",
    "uuid",
    "pci.bus_id",
    "power.draw [W]",
    "memory.total [MiB]",
    "clocks.max.sm [MHz]",
};

std::string mutate(const std::string& in, const std::vector<std::string>& seeds, std::mt19937_64& rng) {
  return testing::mutate(in, seeds, kTokens, rng);
}

TEST(CsvFuzzCorpus, TwoThousandMutationsKeepTheInvariants) {
  std::vector<std::string> seeds;
  for (auto& [name, content] : testing::fuzz_seed_files("csv"))
    if (!content.empty()) seeds.push_back(content);
  ASSERT_FALSE(seeds.empty());
  std::mt19937_64 rng(20261129);
  std::size_t accepted = 0;
  for (int i = 0; i < 2000; ++i) {
    std::string input = mutate(seeds[static_cast<std::size_t>(i) % seeds.size()], seeds, rng);
    EXPECT_EQ(run_fuzz_input(input), 0);
    if (parse_nvidia_smi_csv(input, "m").ok()) ++accepted;
  }
  // Mutations that still import exercise the well-formedness checks and the round trip.
  EXPECT_GT(accepted, 200u);
}

}  // namespace
}  // namespace gpudoc::telemetry
