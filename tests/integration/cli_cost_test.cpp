// The Cost block end to end (docs/cost.md): `gpudoc diagnose` on the real H200 traces and on fake
// GPUs (`-- CMD`), `gpudoc baseline record` on fake GPUs; prices from flags, the environment and a
// prices file, their precedence, and bad values as exit 2 naming the value and where it came from.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_runner.hpp"
#include "support/temp_dir.hpp"

namespace {

using gpudoc::testing::CliRun;
using gpudoc::testing::data_file;
using gpudoc::testing::gpudoc_binary;
using gpudoc::testing::run_gpudoc_stdout;
using gpudoc::testing::run_shell;

// stdout and stderr together, with `env` ("NAME=VALUE ...") before the command.
CliRun run_gpudoc(const std::string& args, const std::string& env) {
  return run_shell(env + " " + gpudoc_binary() + " " + args + " 2>&1");
}

bool has(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

// Each part of the split and each GPU's parts add up to the GPU time (microseconds) and to the
// energy (millijoules) exactly.
void expect_closes(const nlohmann::json& c) {
  std::int64_t t = 0, e = 0;
  for (const auto& p : c["split"]) {
    t += p["gpu_time_us"].get<std::int64_t>();
    if (!c["energy_mj"].is_null()) e += p["energy_mj"].get<std::int64_t>();
  }
  EXPECT_EQ(t, c["gpu_time_us"].get<std::int64_t>());
  if (!c["energy_mj"].is_null()) {
    EXPECT_EQ(e, c["energy_mj"].get<std::int64_t>());
  }
  for (const auto& g : c["gpus"]) {
    std::int64_t gt = g["useful_us"].get<std::int64_t>() + g["unexplained_us"].get<std::int64_t>();
    for (const auto& x : g["causes"]) gt += x["gpu_time_us"].get<std::int64_t>();
    EXPECT_EQ(gt, g["gpu_time_us"].get<std::int64_t>()) << g.dump();
  }
}

// No prices file of this machine's or user's may change what the tests see.
const std::string kNoFiles = "XDG_CONFIG_HOME=/nonexistent HOME=/nonexistent GPUDOC_PRICES= ";

TEST(CliCost, ATraceWithoutPricesGivesTimeAndEnergyAndSaysMoneyNeedsAPrice) {
  auto r = run_gpudoc("diagnose " + data_file("sawtooth_p1000_d50.jsonl"), kNoFiles);
  EXPECT_EQ(r.exit_code, 1) << r.output;  // the sawtooth is a warning
  EXPECT_TRUE(has(r.output, "Cost: 1 GPU × 21.5 s (the command's start to its exit)")) << r.output;
  EXPECT_TRUE(has(r.output, "money needs a price"));
  EXPECT_TRUE(has(r.output, "sawtooth (GPU 0, "));
  auto j = run_gpudoc_stdout("diagnose --json " + data_file("sawtooth_p1000_d50.jsonl"), kNoFiles);
  const auto c = nlohmann::json::parse(j.output)["cost"];
  EXPECT_TRUE(c["money"].is_null());
  EXPECT_GT(c["energy_kwh"].get<double>(), 0);
  EXPECT_EQ(c["findings"][0]["id"], "sawtooth");
  expect_closes(c);
}

TEST(CliCost, FlagsOverEnvironmentOverThePricesFile) {
  gpudoc::testing::TempFile prices(
      "prices.json",
      R"({"currency": "EUR", "prices": [{"gpu": "NVIDIA H200", "gpu_hour": 4.0, "kwh": 0.2, "pue": 1.25}]})");
  const std::string env = kNoFiles + "GPUDOC_PRICES=" + prices.path() + " GPUDOC_PRICE_KWH=0.3 ";
  auto r = run_gpudoc_stdout("diagnose --json --price-gpu-hour 8 " + data_file("gemm_saturated.jsonl"), env);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto c = nlohmann::json::parse(r.output)["cost"];
  const auto& p = c["gpus"][0]["prices"];
  EXPECT_EQ(p["gpu_hour"], 8.0);
  EXPECT_EQ(p["sources"]["gpu_hour"], "--price-gpu-hour");
  EXPECT_EQ(p["kwh"], 0.3);
  EXPECT_EQ(p["sources"]["kwh"], "GPUDOC_PRICE_KWH (environment)");
  EXPECT_EQ(p["pue"], 1.25);
  EXPECT_EQ(c["currency"], "EUR");
  const double hours = c["gpu_hours"].get<double>(), kwh = c["energy_kwh"].get<double>();
  EXPECT_NEAR(c["money"].get<double>(), hours * 8 + kwh * 1.25 * 0.3, 1e-9);
  expect_closes(c);
}

TEST(CliCost, BadPricesAreExit2NamingTheValueAndItsSource) {
  const std::string t = " " + data_file("idle.jsonl");
  auto flag = run_gpudoc("diagnose --price-kwh cheap --currency USD" + t, kNoFiles);
  EXPECT_EQ(flag.exit_code, 2);
  EXPECT_TRUE(has(flag.output, "--price-kwh cheap: not a number")) << flag.output;
  auto env = run_gpudoc("diagnose" + t, kNoFiles + "GPUDOC_PUE=0.5");
  EXPECT_EQ(env.exit_code, 2);
  EXPECT_TRUE(has(env.output, "GPUDOC_PUE (environment) 0.5: out of range")) << env.output;
  gpudoc::testing::TempFile bad("prices.json", R"({"prices": [{"kwh": -1}]})");
  auto file = run_gpudoc("diagnose --prices " + bad.path() + t, kNoFiles);
  EXPECT_EQ(file.exit_code, 2);
  EXPECT_TRUE(has(file.output, bad.path() + ": prices[0].kwh: -1")) << file.output;
  auto currency = run_gpudoc("diagnose --price-gpu-hour 2" + t, kNoFiles);
  EXPECT_EQ(currency.exit_code, 2);
  EXPECT_TRUE(has(currency.output, "no currency")) << currency.output;
}

TEST(CliCost, ALiveRunOnFakeGpusClosesExactly) {
  auto r = run_gpudoc_stdout("diagnose --json -- sleep 1", kNoFiles + "GPUDOC_BACKEND=fake:2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto c = nlohmann::json::parse(r.output)["cost"];
  EXPECT_EQ(c["gpu_count"], 2);
  EXPECT_EQ(c["run"]["span"], "the command's start to its exit");
  EXPECT_GE(c["gpu_time_s"].get<double>(), 2.0);
  EXPECT_LT(c["gpu_time_s"].get<double>(), 30.0);  // hang guard: normally ~3 s (2 GPUs)
  EXPECT_FALSE(c["energy_mj"].is_null());
  expect_closes(c);
}

// diagnose -- CMD reads the job's ::gpudoc lines as it runs: the cost per step, sample and token;
// the job's other output still reaches the user (on stderr, beside a --json document).
TEST(CliCost, ADiagnosedCommandSaysWhatItCostPerSampleAndToken) {
  const std::string job =
      R"(sh -c 'for i in 1 2 3; do echo "::gpudoc {\"step\": $i, \"samples\": 32, \"tokens\": 2048}"; )"
      R"(echo "loss 1.$i"; sleep 0.2; done')";
  const std::string env = kNoFiles + "GPUDOC_BACKEND=fake:1";
  auto r = run_gpudoc_stdout("diagnose --json --price-gpu-hour 3.6 --currency USD -- " + job, env);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto c = nlohmann::json::parse(r.output)["cost"];
  ASSERT_TRUE(c.is_object()) << r.output;
  EXPECT_EQ(c["work"]["steps"], 3.0);
  EXPECT_EQ(c["work"]["samples"], 96.0);
  EXPECT_EQ(c["work"]["tokens"], 6144.0);
  EXPECT_NEAR(c["per_unit"]["sample"]["money"].get<double>(), c["money"].get<double>() / 96, 1e-12);
  EXPECT_NEAR(c["per_unit"]["token"]["gpu_s"].get<double>(), c["gpu_time_s"].get<double>() / 6144, 1e-12);
  expect_closes(c);
  auto both = run_gpudoc("diagnose --json -- " + job, env);
  EXPECT_NE(both.output.find("loss 1.3\n"), std::string::npos) << both.output;
}

TEST(CliCost, ABaselineRecordSaysWhatItsWorkloadCostPerSample) {
  gpudoc::testing::TempDir dir("gpudoc-cli-cost");
  const std::string job = R"(sh -c 'echo "::gpudoc {\"step\": 4, \"samples\": 128}"; sleep 0.5')";
  auto r = run_gpudoc_stdout("baseline record cost --json --repeat 1 --store " + dir.file("s.db") +
                                 " --price-gpu-hour 3.6 --currency USD -- " + job,
                             kNoFiles + "GPUDOC_BACKEND=fake:1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto c = nlohmann::json::parse(r.output)["cost"];
  ASSERT_TRUE(c.is_object()) << r.output;
  EXPECT_EQ(c["work"]["samples"], 128.0);
  EXPECT_EQ(c["work"]["steps"], 4.0);
  EXPECT_NEAR(c["per_unit"]["sample"]["money"].get<double>(), c["money"].get<double>() / 128, 1e-12);
  expect_closes(c);
}

}  // namespace
