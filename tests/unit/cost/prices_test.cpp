// Prices: flags over environment over the one prices file; per GPU model or node; bad values are
// usage errors (exit 2) naming the value and where it came from; no price without a currency.
#include "cost/prices.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <fstream>
#include <map>

#include "support/temp_dir.hpp"

namespace gpudoc::cost {
namespace {

struct FakeEnv {
  std::map<std::string, std::string> vars;
  PriceSources sources(const std::string& system_file = "/nonexistent/gpudoc/prices.json") const {
    PriceSources s;
    s.getenv = [this](const char* n) -> const char* {
      auto it = vars.find(n);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
    s.system_file = system_file;
    return s;
  }
};

std::string write(const testing::TempDir& dir, const std::string& name, const std::string& text) {
  const std::string path = dir.file(name);
  std::ofstream(path) << text;
  return path;
}

constexpr const char* kH200Node = R"({
  "currency": "USD",
  "note": "an owned H200 node: purchase amortised over 4 years, power at the meter",
  "prices": [
    {"node": "gpu-node-07", "gpu": "NVIDIA H200", "gpu_hour": 2.10},
    {"gpu": "NVIDIA H200", "gpu_hour": 3.72, "note": "the cloud rate we compare with"},
    {"kwh": 0.14, "pue": 1.3, "co2_g_per_kwh": 380}
  ]
})";

TEST(CostPrices, NothingGivenIsAnEmptyBookNotADefault) {
  FakeEnv env;
  auto book = load_prices({}, env.sources());
  ASSERT_TRUE(book) << book.error().message();
  EXPECT_TRUE(book->empty());
  const GpuPrices p = book->for_gpu("node", "NVIDIA H200");
  EXPECT_FALSE(p.gpu_hour);
  EXPECT_FALSE(p.kwh);
  EXPECT_FALSE(p.pue);
  EXPECT_FALSE(book->currency);
}

TEST(CostPrices, TheFileMatchesNodeAndModelFieldByField) {
  testing::TempDir tmp("gpudoc-prices-test");
  const testing::TempDir* dir = &tmp;
  FakeEnv env;
  const std::string path = write(*dir, "prices.json", kH200Node);
  auto book = load_prices({.file = path}, env.sources());
  ASSERT_TRUE(book) << book.error().message();
  EXPECT_EQ(*book->currency, "USD");
  const GpuPrices owned = book->for_gpu("GPU-NODE-07", "nvidia h200");  // names match ignoring case
  EXPECT_DOUBLE_EQ(*owned.gpu_hour, 2.10);
  EXPECT_DOUBLE_EQ(*owned.kwh, 0.14);
  EXPECT_DOUBLE_EQ(*owned.pue, 1.3);
  EXPECT_EQ(owned.source[kGpuHour], path + " prices[0]");
  EXPECT_EQ(owned.source[kKwh], path + " prices[2]");
  const GpuPrices cloud = book->for_gpu("other", "NVIDIA H200");
  EXPECT_DOUBLE_EQ(*cloud.gpu_hour, 3.72);
  const GpuPrices a100 = book->for_gpu("other", "NVIDIA A100");
  EXPECT_FALSE(a100.gpu_hour);
  EXPECT_DOUBLE_EQ(*a100.co2_g_per_kwh, 380);
}

TEST(CostPrices, FlagsOverEnvironmentOverTheFile) {
  testing::TempDir tmp("gpudoc-prices-test");
  const testing::TempDir* dir = &tmp;
  FakeEnv env;
  env.vars["GPUDOC_PRICES"] = write(*dir, "p.json", kH200Node);
  env.vars["GPUDOC_PRICE_GPU_HOUR"] = "5";
  env.vars["GPUDOC_PRICE_KWH"] = "0.2";
  env.vars["GPUDOC_CURRENCY"] = "EUR";
  auto book = load_prices({.gpu_hour = "7.5"}, env.sources());
  ASSERT_TRUE(book) << book.error().message();
  const GpuPrices p = book->for_gpu("gpu-node-07", "NVIDIA H200");
  EXPECT_DOUBLE_EQ(*p.gpu_hour, 7.5);
  EXPECT_EQ(p.source[kGpuHour], "--price-gpu-hour");
  EXPECT_DOUBLE_EQ(*p.kwh, 0.2);
  EXPECT_EQ(p.source[kKwh], "GPUDOC_PRICE_KWH (environment)");
  EXPECT_DOUBLE_EQ(*p.pue, 1.3);  // from the file
  EXPECT_EQ(*book->currency, "EUR");
  auto flagged = load_prices({.currency = "JPY"}, env.sources());
  ASSERT_TRUE(flagged);
  EXPECT_EQ(*flagged->currency, "JPY");
  EXPECT_EQ(flagged->currency_source, "--currency");
}

TEST(CostPrices, TheUsersFileBeforeTheSystemsAndOnlyOne) {
  testing::TempDir tmp("gpudoc-prices-test");
  const testing::TempDir* dir = &tmp;
  ASSERT_EQ(::mkdir(dir->file("gpudoc").c_str(), 0700), 0);
  write(*dir, "gpudoc/prices.json", R"({"currency": "USD", "prices": [{"gpu_hour": 1}]})");
  const std::string system =
      write(*dir, "system.json", R"({"currency": "EUR", "prices": [{"gpu_hour": 2, "kwh": 1}]})");
  FakeEnv env;
  env.vars["XDG_CONFIG_HOME"] = dir->str();
  auto book = load_prices({}, env.sources(system));
  ASSERT_TRUE(book);
  EXPECT_EQ(book->file, dir->file("gpudoc/prices.json"));
  EXPECT_FALSE(book->for_gpu("h", "g").kwh);  // not merged with the system's file
  FakeEnv bare;
  auto sys = load_prices({}, bare.sources(system));
  ASSERT_TRUE(sys);
  EXPECT_EQ(*sys->currency, "EUR");
}

TEST(CostPrices, BadValuesNameTheValueAndWhereItCameFrom) {
  FakeEnv env;
  auto flag = load_prices({.kwh = "cheap", .currency = "USD"}, env.sources());
  ASSERT_FALSE(flag);
  EXPECT_EQ(flag.error().kind(), core::ErrorKind::kUsage);
  EXPECT_NE(flag.error().message().find("--price-kwh cheap"), std::string::npos) << flag.error().message();
  env.vars["GPUDOC_PUE"] = "0.8";
  auto pue = load_prices({}, env.sources());
  ASSERT_FALSE(pue);
  EXPECT_NE(pue.error().message().find("GPUDOC_PUE (environment) 0.8"), std::string::npos) << pue.error().message();
  EXPECT_EQ(core::exit_code(pue.error().kind()), 2);
  FakeEnv e2;
  auto cur = load_prices({.currency = "usd"}, e2.sources());
  ASSERT_FALSE(cur);
  EXPECT_NE(cur.error().message().find("--currency usd"), std::string::npos);
  auto nan = load_prices({.gpu_hour = "nan", .currency = "USD"}, e2.sources());
  ASSERT_FALSE(nan);
  EXPECT_NE(nan.error().message().find("not a finite number"), std::string::npos);
}

TEST(CostPrices, APriceWithoutACurrencyIsRefused) {
  FakeEnv env;
  auto r = load_prices({.gpu_hour = "3"}, env.sources());
  ASSERT_FALSE(r);
  EXPECT_EQ(core::exit_code(r.error().kind()), 2);
  EXPECT_NE(r.error().message().find("no currency"), std::string::npos);
  EXPECT_NE(r.error().message().find("--price-gpu-hour"), std::string::npos);
  // A PUE or a CO2 intensity alone is no money: no currency needed.
  auto co2 = load_prices({.co2 = "400"}, env.sources());
  ASSERT_TRUE(co2) << co2.error().message();
}

TEST(CostPrices, TheFileIsCheckedKeyByKey) {
  const std::pair<const char*, const char*> bad[] = {
      {"[1]", "expected an object"},
      {R"({"currency": "usd"})", "currency: \"usd\""},
      {R"({"prices": [{"gpu_hour": -1}]})", "prices[0].gpu_hour: -1"},
      {R"({"prices": [{"kwh": "0.1"}]})", "prices[0].kwh: \"0.1\""},
      {R"({"prices": [{"pue": 0.9}]})", "a PUE is never below 1"},
      {R"({"prices": [{"gpu-hour": 1}]})", "unknown key \"gpu-hour\""},
      {R"({"price": []})", "unknown key \"price\""},
      {R"({"prices": [{"gpu": 7}]})", "prices[0].gpu: expected a string"},
      {"{", "not valid JSON"},
  };
  for (const auto& [text, says] : bad) {
    auto r = parse_prices_file(text, "p.json");
    ASSERT_FALSE(r) << text;
    EXPECT_EQ(r.error().kind(), core::ErrorKind::kBadInput);
    EXPECT_NE(r.error().message().find("p.json"), std::string::npos);
    EXPECT_NE(r.error().message().find(says), std::string::npos) << r.error().message();
  }
}

TEST(CostPrices, AFileNamedButMissingIsAUsageError) {
  FakeEnv env;
  auto r = load_prices({.file = "/nonexistent/prices.json"}, env.sources());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind(), core::ErrorKind::kUsage);
  EXPECT_NE(r.error().message().find("--prices /nonexistent/prices.json"), std::string::npos);
  env.vars["GPUDOC_PRICES"] = "/nonexistent/p.json";
  auto e = load_prices({}, env.sources());
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message().find("GPUDOC_PRICES /nonexistent/p.json"), std::string::npos);
}

TEST(CostPrices, JsonNamesEachValueAndItsSource) {
  FakeEnv env;
  auto book = load_prices({.gpu_hour = "2", .currency = "USD"}, env.sources());
  ASSERT_TRUE(book);
  const auto j = to_json(book->for_gpu("h", "g"), *book);
  EXPECT_EQ(j["currency"], "USD");
  EXPECT_EQ(j["gpu_hour"], 2.0);
  EXPECT_TRUE(j["kwh"].is_null());
  EXPECT_EQ(j["sources"]["gpu_hour"], "--price-gpu-hour");
  EXPECT_EQ(j["sources"]["currency"], "--currency");
}

}  // namespace
}  // namespace gpudoc::cost
