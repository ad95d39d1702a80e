// The launch.* benchmarks: the cost of launching work, through cuda/launch.hpp.
#include <pthread.h>
#include <sched.h>

#include "bench/cuda/launch.hpp"
#include "bench/host_cpu.hpp"
#include "bench/registry.hpp"

namespace gpudoc::bench {
namespace {

// Holds the calling thread on the CPU it runs on for the scope's life, then gives back the CPUs it
// had. A launch is host work: a thread moved between CPUs mid-sample pays cold caches, which showed
// as a slow drift of the launch figures (CV 2.9% over 50 samples on an H200 host). Best effort: if
// the CPU cannot be read or set, nothing changes.
class PinToCurrentCpu {
 public:
  PinToCurrentCpu() {
    const int cpu = sched_getcpu();
    if (cpu < 0 || pthread_getaffinity_np(pthread_self(), sizeof old_, &old_) != 0) return;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    pinned_ = pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0;
  }
  ~PinToCurrentCpu() {
    if (pinned_) (void)pthread_setaffinity_np(pthread_self(), sizeof old_, &old_);
  }
  PinToCurrentCpu(const PinToCurrentCpu&) = delete;
  PinToCurrentCpu& operator=(const PinToCurrentCpu&) = delete;
  [[nodiscard]] bool pinned() const { return pinned_; }

 private:
  cpu_set_t old_{};
  bool pinned_ = false;
};

// The CV above which a launch figure's spread is looked into (the issue's bound on headline figures).
constexpr double kHostSpreadCv = 0.02;

class LaunchBenchmark final : public Benchmark {
 public:
  LaunchBenchmark(cuda::LaunchKind kind, std::string key, std::string description)
      : kind_(kind), key_(std::move(key)), description_(std::move(description)) {}
  std::string key() const override { return key_; }
  std::string description() const override { return description_; }
  std::optional<std::string> applicable(const Context& ctx) const override { return gpu_waiver(ctx); }

  core::Result<BenchResult> run(const Context& ctx, const RunOptions& options) const override {
    cuda::LaunchOptions opt;
    opt.device = ctx.device;
    const bool quick = options.mode == Mode::kQuick;
    if (kind_ == cuda::LaunchKind::kLatency) {
      // One launch per sample: many samples, each cheap.
      opt.repetitions = quick ? 200 : (options.mode == Mode::kFull ? 5000 : 1000);
    } else {
      opt.repetitions = quick ? 10 : (options.mode == Mode::kFull ? 50 : 20);
    }
    if (options.repetitions > 0) opt.repetitions = options.repetitions;
    core::Result<cuda::LaunchTiming> t = core::Error(core::ErrorKind::kInternal, "not run");
    bool pinned = false;
    {
      PinToCurrentCpu pin;
      pinned = pin.pinned();
      t = cuda::run_launch(kind_, opt);
    }
    if (!t) return t.error().with_context(key_);
    BenchResult r;
    r.key = key_;
    r.unit = "us";
    r.higher_is_better = false;
    for (double s : t->seconds) r.samples.push_back(s * 1e6);
    summarize_into(r);
    r.params = {{"warmup", opt.warmup},
                {"repetitions", opt.repetitions},
                {"grid", 1},
                {"block", 1},
                {"host_thread_pinned_to_one_cpu", pinned}};
    if (!t->issue_seconds.empty()) {
      // Where the host's time went while it issued each sample (bench/host_cpu.hpp): a host-bound
      // figure that spreads is explained here, or at least not blamed on the GPU.
      auto us = [](const std::vector<double>& v) {
        std::vector<double> out;
        for (double x : v) out.push_back(x * 1e6);
        return out;
      };
      const std::vector<double> cpu_us = us(t->thread_cpu_seconds);
      r.params["host_cpu"] = t->host_cpu;
      r.params["host_issue_us"] = us(t->issue_seconds);
      r.params["host_thread_cpu_us"] = cpu_us;
      if (!t->steal_share.empty()) r.params["host_steal_share"] = t->steal_share;
      if (auto note = host_spread_note(r.samples, cpu_us, t->steal_share, kHostSpreadCv))
        r.params["host_spread"] = *note;
    }
    if (kind_ == cuda::LaunchKind::kThroughput) r.params["launches_per_sample"] = opt.launches;
    if (kind_ == cuda::LaunchKind::kGraphNode) r.params["graph_nodes"] = opt.graph_nodes;
    r.verified = t->verified;
    r.verify_detail = t->verify_detail;
    return r;
  }

 private:
  cuda::LaunchKind kind_;
  std::string key_;
  std::string description_;
};

}  // namespace

void add_launch_benchmarks(std::vector<std::unique_ptr<Benchmark>>& out) {
  out.push_back(std::make_unique<LaunchBenchmark>(
      cuda::LaunchKind::kThroughput, "launch.throughput",
      "empty kernels launched back to back on one stream: us = event time of 30000 launches / 30000"));
  out.push_back(std::make_unique<LaunchBenchmark>(
      cuda::LaunchKind::kLatency, "launch.latency",
      "one empty kernel between two events on an idle stream: us = event time (median of many)"));
  out.push_back(std::make_unique<LaunchBenchmark>(
      cuda::LaunchKind::kGraphNode, "launch.graph_node",
      "CUDA Graph of 1000 empty kernels replayed: us = event time of one replay / 1000"));
}

}  // namespace gpudoc::bench
