// Every real H200 trace in tests/data, and its nvidia-smi CSV form (for the patterns CSV can
// show), gives its expected finding and no wrong finding at warning or above. The expectations
// live in diagnose_expectations.hpp (shared with the confusion-table generator).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "diagnose/diagnose.hpp"
#include "diagnose_expectations.hpp"
#include "support/temp_dir.hpp"
#include "telemetry/input.hpp"

namespace gpudoc {
namespace {

namespace fs = std::filesystem;
using findings::Severity;

const fs::path kSrc = GPUDOC_SOURCE_DIR;

class DiagnoseFixture : public ::testing::TestWithParam<testing::Expectation> {};

void check(const diagnose::Diagnosis& d, const std::string& expected, const testing::Expectation& e,
           const std::string& what) {
  bool found = expected.empty();
  for (const auto& f : d.findings) {
    if (f.id == expected) found = true;
    const bool allowed = f.id == expected || f.id == e.expected ||
                         std::find(e.allowed.begin(), e.allowed.end(), f.id) != e.allowed.end();
    if (f.severity >= Severity::kWarning) {
      EXPECT_TRUE(allowed) << what << ": wrong finding " << f.id << " (" << findings::to_string(f.severity)
                           << "): " << f.message;
    }
    EXPECT_GE(f.confidence, 0.0);
    EXPECT_LE(f.confidence, 1.0);
    EXPECT_FALSE(f.message.empty());
    EXPECT_FALSE(f.next_steps.empty()) << f.id;
  }
  EXPECT_TRUE(found) << what << ": expected finding " << expected << " missing";
}

TEST_P(DiagnoseFixture, Trace) {
  const auto& e = GetParam();
  auto t = telemetry::read_telemetry_file((kSrc / "tests/data" / (e.trace + ".jsonl")).string());
  ASSERT_TRUE(t) << t.error().message();
  const auto d = diagnose::diagnose(*t, diagnose::Options{});
  check(d, e.expected, e, e.trace + " (trace)");
  EXPECT_TRUE(d.unseen.empty() || std::find(d.unseen.begin(), d.unseen.end(), "GPM SM activity") == d.unseen.end());
}

TEST_P(DiagnoseFixture, NvidiaSmiCsv) {
  const auto& e = GetParam();
  const testing::TempDir tmp("gpudoc-diag");  // private: never a guessable name in $TMPDIR
  const fs::path csv = tmp.path() / (e.trace + ".csv");
  const std::string cmd = "python3 '" + (kSrc / "scripts/trace_to_nvidia_smi_csv.py").string() + "' '" +
                          (kSrc / "tests/data" / (e.trace + ".jsonl")).string() + "' '" + csv.string() + "'";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  auto t = telemetry::read_telemetry_file(csv.string());
  fs::remove(csv);
  ASSERT_TRUE(t) << t.error().message();
  const auto d = diagnose::diagnose(*t, diagnose::Options{});
  EXPECT_EQ(d.input_format, "nvidia-smi-csv");
  // CSV has no GPM and no per-process data: the diagnosis says so.
  EXPECT_NE(std::find(d.unseen.begin(), d.unseen.end(), "GPM SM activity"), d.unseen.end());
  EXPECT_NE(std::find(d.unseen.begin(), d.unseen.end(), "per-process utilization"), d.unseen.end());
  check(d, e.csv_expected, e, e.trace + " (nvidia-smi CSV)");
}

std::vector<testing::Expectation> tuned() {
  std::vector<testing::Expectation> v;
  for (const auto& e : testing::expectations())
    if (!e.heldout) v.push_back(e);
  return v;
}

// Held out of tuning; run once after tuning (all passed, docs/results/diagnosis-accuracy.md)
// and kept here so that later changes cannot silently break them.
std::vector<testing::Expectation> heldout() {
  std::vector<testing::Expectation> v;
  for (const auto& e : testing::expectations())
    if (e.heldout) v.push_back(e);
  return v;
}

std::string name_of(const ::testing::TestParamInfo<testing::Expectation>& i) { return i.param.trace; }

INSTANTIATE_TEST_SUITE_P(Tuned, DiagnoseFixture, ::testing::ValuesIn(tuned()), name_of);
INSTANTIATE_TEST_SUITE_P(HeldOut, DiagnoseFixture, ::testing::ValuesIn(heldout()), name_of);

}  // namespace
}  // namespace gpudoc
