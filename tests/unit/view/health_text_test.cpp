// view/health_text.hpp: `health --gate`'s one line.
#include "view/health_text.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace gpudoc::view {
namespace {

health::CheckResult check(const std::string& name, health::Status status, const std::string& evidence) {
  health::CheckResult r;
  r.check = name;
  r.gpu = 0;
  r.status = status;
  r.evidence = evidence;
  return r;
}

TEST(HealthGateLine, OkCountsChecksAndWarnings) {
  const std::vector<health::CheckResult> results = {check("ecc", health::Status::kPass, "0 errors"),
                                                    check("power", health::Status::kWarn, "limit 600 W of 700")};
  EXPECT_EQ(health_gate_line(results), "ok: 2 checks, none failed (1 warnings; `gpudoc health` shows them)\n");
}

TEST(HealthGateLine, AFailedCheckIsTheDrainReasonOnOneLine) {
  const std::vector<health::CheckResult> results = {check("ecc", health::Status::kFail, "3 uncorrectable\nerrors"),
                                                    check("power", health::Status::kPass, "")};
  const auto line = health_gate_line(results);
  EXPECT_EQ(line, health::gate_reason(results) + "\n");
  EXPECT_NE(line.find("ecc on GPU 0"), std::string::npos) << line;
  EXPECT_EQ(std::count(line.begin(), line.end(), '\n'), 1) << line;
}

}  // namespace
}  // namespace gpudoc::view
