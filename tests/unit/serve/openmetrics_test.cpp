// The reference parsers on the exposition: the Prometheus Python client's strict OpenMetrics 1.0
// parser and its text-format parser (Debian package python3-prometheus-client), through
// openmetrics_check.py. Skipped when CMake found no Python with the client.
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

struct Parsed {
  int status = -1;
  std::string output;
};

Parsed parse(const std::string& body, const std::string& parser) {
  gpudoc::testing::TempDir tmp("gpudoc-openmetrics");
  const std::string in = tmp.file("metrics.txt");
  const std::string out = tmp.file("parser.out");
  std::ofstream(in) << body;
  const std::string cmd = std::string("'") + GPUDOC_OM_PYTHON + "' '" + GPUDOC_SOURCE_DIR +
                          "/tests/unit/serve/openmetrics_check.py' " + parser + " < '" + in + "' > '" + out + "' 2>&1";
  const int rc = std::system(cmd.c_str());
  std::ifstream o(out);
  std::stringstream ss;
  ss << o.rdbuf();
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, ss.str()};
}

class ReferenceParser : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string(GPUDOC_OM_PYTHON).empty())
      GTEST_SKIP() << "no Python with prometheus_client (Debian package python3-prometheus-client)";
  }
};

TEST_F(ReferenceParser, OpenMetricsParsesStrictly) {
  for (bool dcgm : {false, true}) {
    const auto r = parse(render(testing::full_snapshot(), {.format = Format::kOpenMetrics, .dcgm_compatible = dcgm}),
                         "openmetrics");
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("gpudoc_energy_joules counter joules 8\n"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("gpudoc_power_watts gauge watts 8\n"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("gpudoc_clock_event_reason gauge - 80\n"), std::string::npos) << r.output;
  }
}

TEST_F(ReferenceParser, PrometheusTextParses) {
  const auto r = parse(render(testing::full_snapshot(), {.dcgm_compatible = true}), "prometheus");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("DCGM_FI_DEV_FB_USED gauge - 8\n"), std::string::npos) << r.output;
}

TEST_F(ReferenceParser, ComplainsAboutAMissingEof) {
  std::string body = render(testing::small_snapshot(), {.format = Format::kOpenMetrics});
  body.resize(body.size() - std::string("# EOF\n").size());
  const auto r = parse(body, "openmetrics");
  EXPECT_EQ(r.status, 1) << r.output;
}

}  // namespace
}  // namespace gpudoc::serve
