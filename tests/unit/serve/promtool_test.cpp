// Prometheus's own linter on the exposition: `promtool check metrics` (Debian package prometheus)
// must find nothing to say about gpudoc's names, with and without dcgm-exporter's. Skipped when
// CMake found no promtool.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "sample_snapshot.hpp"
#include "serve/exposition.hpp"
#include "support/temp_dir.hpp"

namespace gpudoc::serve {
namespace {

struct Checked {
  int status = -1;
  std::string output;
};

Checked promtool_check(const std::string& body) {
  gpudoc::testing::TempDir tmp("gpudoc-promtool");
  const std::string in = tmp.file("metrics.prom");
  const std::string out = tmp.file("promtool.out");
  std::ofstream(in) << body;
  const std::string cmd = std::string("'") + GPUDOC_PROMTOOL + "' check metrics < '" + in + "' > '" + out + "' 2>&1";
  const int rc = std::system(cmd.c_str());
  std::ifstream o(out);
  std::stringstream ss;
  ss << o.rdbuf();
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, ss.str()};
}

class Promtool : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string(GPUDOC_PROMTOOL).empty()) GTEST_SKIP() << "promtool not found (Debian package prometheus)";
  }
};

TEST_F(Promtool, AcceptsGpudocNames) {
  const auto r = promtool_check(render(testing::full_snapshot(), {}));
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output, "");
}

TEST_F(Promtool, AcceptsTheSmallSnapshot) {
  const auto r = promtool_check(render(testing::small_snapshot(), {}));
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output, "");
}

TEST_F(Promtool, AcceptsTheProcessSeries) {
  Snapshot s = testing::small_snapshot();
  s.process = {.cpu_seconds = 1.5,
               .resident_memory_bytes = 4096,
               .virtual_memory_bytes = 8192,
               .start_time_seconds = 1.7e9,
               .open_fds = 9,
               .max_fds = 1024};
  const std::string body = render(s, {});
  ASSERT_NE(body.find("\nprocess_cpu_seconds_total 1.5\n"), std::string::npos);
  const auto r = promtool_check(body);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output, "");
}

TEST_F(Promtool, DcgmNamesRaiseOnlyDcgmExportersOwnLint) {
  // dcgm-exporter's names and labels are kept exactly (dashboards query them): its counters (energy,
  // ECC, remapped rows, PCIe replays, NVLink errors) have no _total, PCIE_REPLAY_COUNTER has its type
  // in its name and its modelName label is camelCase, which promtool's linter notes, as it does on
  // dcgm-exporter's own output. Nothing else, and nothing on gpudoc's names.
  const auto r = promtool_check(render(testing::full_snapshot(), {.dcgm_compatible = true}));
  std::istringstream in(r.output);
  int lines = 0;
  for (std::string line; std::getline(in, line); ++lines) {
    const bool energy =
        line.starts_with("DCGM_FI_DEV_") && line.ends_with(R"( counter metrics should have "_total" suffix)");
    const bool model_name = line.starts_with("DCGM_FI_") &&
                            line.ends_with(" label names should be written in 'snake_case' not 'camelCase'");
    const bool replay_name = line == "DCGM_FI_DEV_PCIE_REPLAY_COUNTER metric name should not include type 'counter'";
    EXPECT_TRUE(energy || model_name || replay_name) << line;
  }
  EXPECT_GT(lines, 0);  // the linter did run on them
}

TEST_F(Promtool, RejectsBrokenInput) {
  // The check itself works: a duplicate family and a bad line are reported.
  const auto r = promtool_check("# TYPE a gauge\na 1\n# TYPE a gauge\na{b=\"c} 2\n");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output, "");
}

}  // namespace
}  // namespace gpudoc::serve
