// gpudoc::bench registry — the GPU benchmarks `gpudoc bench` runs, each a Benchmark with a stable
// key (the key baselines are stored under: never rename one), a description, an applicability
// check that gives a waiver reason, and run() that returns a BenchResult.
//
//   bench::Context ctx = bench::probe_context(0);
//   for (const bench::Benchmark* b : bench::registry().all())
//     if (auto why = b->applicable(ctx)) print(*why);    // "waived: no GPU (...)"
//     else auto r = b->run(ctx, bench::RunOptions{});
//
// The registry is a built-in list (no static-initialization registration). Benchmarks are
// stateless; run() is not thread-safe (CUDA device state).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/cuda/device.hpp"
#include "bench/machine.hpp"
#include "core/result.hpp"

namespace gpudoc::bench {

// The machine a run happens on, probed once per run and recorded with every result.
struct Context {
  int device = 0;
  bool cuda_built = false;
  std::optional<cuda::DeviceInfo> gpu;  // absent: no GPU usable (see no_gpu_reason)
  std::string no_gpu_reason;            // why gpu is absent, e.g. "cudaGetDeviceCount: no CUDA-capable device"
  // Driver, clocks, power limit, temperature from NVML (bench/machine.hpp); filled by the caller,
  // which owns the NVML backend. Absent: machine_reason says why (no NVML, no GPU...).
  std::optional<MachineInfo> machine;
  std::string machine_reason;
  // Every visible GPU, for the benchmarks that use several (p2p.*, nccl.*), whatever `device` is.
  // device_count is 0 when no GPU is usable (then gpu is absent too).
  int device_count = 0;
  std::vector<cuda::DeviceInfo> gpus;          // by CUDA ordinal; may be shorter if one could not be read
  std::vector<std::vector<bool>> peer_access;  // [i][j]: GPU i can map GPU j's memory (cudaDeviceCanAccessPeer)
};

// Probes CUDA for `device`. Never fails: what is missing is recorded in the Context.
[[nodiscard]] Context probe_context(int device);
[[nodiscard]] nlohmann::json to_json(const Context& ctx);

enum class Mode { kQuick, kDefault, kFull };
[[nodiscard]] const char* to_string(Mode mode) noexcept;

struct RunOptions {
  Mode mode = Mode::kDefault;
  int repetitions = 0;  // samples per benchmark; 0 = the benchmark's default for the mode
};

struct BenchResult {
  std::string key;
  std::string unit;  // "GB/s" (1e9 bytes/s), "us", "TFLOP/s"
  bool higher_is_better = true;
  double median = 0;
  double min = 0;
  double max = 0;
  double mean = 0;
  double cv = 0;                                     // coefficient of variation, a fraction
  std::vector<double> samples;                       // raw, in the unit, in the order measured
  nlohmann::json params = nlohmann::json::object();  // sizes, launch shape, repetitions...
  bool verified = false;                             // the result was checked outside the timed region
  std::string verify_detail;
};

// Fills median/min/max/mean/cv from r.samples.
void summarize_into(BenchResult& r);
[[nodiscard]] nlohmann::json to_json(const BenchResult& r);

class Benchmark {
 public:
  virtual ~Benchmark() = default;
  [[nodiscard]] virtual std::string key() const = 0;          // "hbm.copy"
  [[nodiscard]] virtual std::string description() const = 0;  // what it measures and the formula, one line
  // nullopt when it can run here; otherwise the waiver reason ("waived: built without CUDA").
  [[nodiscard]] virtual std::optional<std::string> applicable(const Context& ctx) const = 0;
  [[nodiscard]] virtual core::Result<BenchResult> run(const Context& ctx, const RunOptions& options) const = 0;
};

// The waiver shared by every GPU benchmark: built without CUDA, or no GPU.
[[nodiscard]] std::optional<std::string> gpu_waiver(const Context& ctx);
// gpu_waiver, or "waived: needs 2 or more GPUs (1 visible)" (p2p.cpp).
[[nodiscard]] std::optional<std::string> multi_gpu_waiver(const Context& ctx);

class Registry {
 public:
  Registry() = default;
  explicit Registry(std::vector<std::unique_ptr<Benchmark>> benchmarks) : benchmarks_(std::move(benchmarks)) {}
  [[nodiscard]] std::vector<const Benchmark*> all() const;
  [[nodiscard]] const Benchmark* find(std::string_view key) const;
  // Resolves "--only" items: an exact key, or a group ("hbm" = every "hbm.*"), in registry order
  // without duplicates. Errors: kUsage naming the unknown item and listing the valid keys.
  [[nodiscard]] core::Result<std::vector<const Benchmark*>> select(const std::vector<std::string>& items) const;

 private:
  std::vector<std::unique_ptr<Benchmark>> benchmarks_;
};

// Every built-in benchmark, in a fixed order.
[[nodiscard]] const Registry& registry();

// Factories of the built-in benchmarks (hbm.cpp, launch.cpp).
void add_hbm_benchmarks(std::vector<std::unique_ptr<Benchmark>>& out);
void add_pcie_benchmarks(std::vector<std::unique_ptr<Benchmark>>& out);  // pcie.cpp
void add_gemm_benchmarks(std::vector<std::unique_ptr<Benchmark>>& out);  // gemm.cpp
void add_launch_benchmarks(std::vector<std::unique_ptr<Benchmark>>& out);
void add_p2p_benchmarks(std::vector<std::unique_ptr<Benchmark>>& out);   // p2p.cpp
void add_nccl_benchmarks(std::vector<std::unique_ptr<Benchmark>>& out);  // nccl.cpp

}  // namespace gpudoc::bench
