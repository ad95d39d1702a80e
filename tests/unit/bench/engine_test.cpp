#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>

#include "bench/engine.hpp"

namespace gpudoc::bench {
namespace {

enum class Behaviour { kOk, kFail, kThrow, kUnverified, kWaive };

class FakeBenchmark final : public Benchmark {
 public:
  FakeBenchmark(std::string key, Behaviour b) : key_(std::move(key)), b_(b) {}
  std::string key() const override { return key_; }
  std::string description() const override { return "fake: x = 1"; }
  std::optional<std::string> applicable(const Context&) const override {
    if (b_ == Behaviour::kWaive) return std::string("waived: fake reason");
    return std::nullopt;
  }
  core::Result<BenchResult> run(const Context&, const RunOptions& options) const override {
    ++runs;
    last_mode = options.mode;
    if (b_ == Behaviour::kFail) return core::Error(core::ErrorKind::kEnvironment, "cudaMalloc: out of memory");
    if (b_ == Behaviour::kThrow) throw std::runtime_error("boom");
    BenchResult r;
    r.key = key_;
    r.unit = "GB/s";
    r.samples = {1, 2, 3};
    summarize_into(r);
    r.verified = b_ != Behaviour::kUnverified;
    r.verify_detail = r.verified ? "ok" : "MISMATCH at word 7";
    return r;
  }
  mutable int runs = 0;
  mutable Mode last_mode = Mode::kDefault;

 private:
  std::string key_;
  Behaviour b_;
};

TEST(BenchEngine, OneFailureNeverStopsTheOthers) {
  FakeBenchmark fail("a.fail", Behaviour::kFail);
  FakeBenchmark thrower("a.throw", Behaviour::kThrow);
  FakeBenchmark good("a.ok", Behaviour::kOk);
  FakeBenchmark waived("a.waived", Behaviour::kWaive);
  RunOptions opt;
  opt.mode = Mode::kQuick;
  std::vector<std::string> progressed;
  const Report rep = run_benchmarks({&fail, &thrower, &good, &waived}, Context{}, opt,
                                    [&](std::size_t, std::size_t n, const std::string& key) {
                                      EXPECT_EQ(n, 4u);
                                      progressed.push_back(key);
                                    });
  ASSERT_EQ(rep.outcomes.size(), 4u);
  EXPECT_THAT(progressed, ::testing::ElementsAre("a.fail", "a.throw", "a.ok", "a.waived"));
  EXPECT_EQ(rep.outcomes[0].status, OutcomeStatus::kFailed);
  EXPECT_EQ(rep.outcomes[0].reason, "cudaMalloc: out of memory");
  EXPECT_EQ(rep.outcomes[1].status, OutcomeStatus::kFailed);
  EXPECT_THAT(rep.outcomes[1].reason, ::testing::HasSubstr("boom"));
  EXPECT_EQ(rep.outcomes[2].status, OutcomeStatus::kOk);
  ASSERT_TRUE(rep.outcomes[2].result.has_value());
  EXPECT_DOUBLE_EQ(rep.outcomes[2].result->median, 2);
  EXPECT_EQ(good.last_mode, Mode::kQuick);
  EXPECT_EQ(rep.outcomes[3].status, OutcomeStatus::kWaived);
  EXPECT_EQ(rep.outcomes[3].reason, "waived: fake reason");
  EXPECT_EQ(waived.runs, 0);
  EXPECT_EQ(exit_code(rep), core::kExitEnvironment);  // the first failure's kind
}

TEST(BenchEngine, UnverifiedResultIsAFailureThatKeepsItsFigures) {
  FakeBenchmark bad("a.bad", Behaviour::kUnverified);
  const Report rep = run_benchmarks({&bad}, Context{}, RunOptions{}, nullptr);
  ASSERT_EQ(rep.outcomes.size(), 1u);
  EXPECT_EQ(rep.outcomes[0].status, OutcomeStatus::kFailed);
  EXPECT_TRUE(rep.outcomes[0].result.has_value());
  EXPECT_THAT(rep.outcomes[0].reason, ::testing::HasSubstr("MISMATCH at word 7"));
  EXPECT_EQ(exit_code(rep), core::kExitInternal);
}

TEST(BenchEngine, ExitCodes) {
  FakeBenchmark good("a.ok", Behaviour::kOk);
  FakeBenchmark waived("a.waived", Behaviour::kWaive);
  EXPECT_EQ(exit_code(run_benchmarks({&good, &waived}, Context{}, RunOptions{}, nullptr)), core::kExitOk);
  EXPECT_EQ(exit_code(run_benchmarks({&waived}, Context{}, RunOptions{}, nullptr)), core::kExitEnvironment);
}

TEST(BenchEngine, EveryBuiltInIsWaivedWithoutGpu) {
  Context ctx;
  ctx.cuda_built = true;
  ctx.no_gpu_reason = "cudaGetDeviceCount: no CUDA-capable device is detected";
  const Report rep = run_benchmarks(registry().all(), ctx, RunOptions{}, nullptr);
  ASSERT_EQ(rep.outcomes.size(), registry().all().size());
  for (const Outcome& o : rep.outcomes) {
    EXPECT_EQ(o.status, OutcomeStatus::kWaived) << o.key;
    EXPECT_THAT(o.reason, ::testing::StartsWith("waived: no GPU")) << o.key;
  }
  EXPECT_EQ(exit_code(rep), core::kExitEnvironment);
  const auto j = to_json(rep);
  EXPECT_EQ(j["results"].size(), rep.outcomes.size());
  EXPECT_EQ(j["results"][0]["status"], "waived");
  EXPECT_EQ(j["exit_code"], 3);
}

}  // namespace
}  // namespace gpudoc::bench
