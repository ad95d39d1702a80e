// The cost of a baseline run's figures by the name: N distinct names on the workload's stdout
// (::gpudoc lines of 1000 names each), gathered, compared with themselves and confirmed, as
// `gpudoc baseline check` does. Each name is a hash lookup, so the time grows as N; when each
// sample scanned every figure so far, 100k names took 33 s. Google Benchmark fits the complexity
// over the sizes of one run (the BigO and RMS lines); the unit test Scale.* checks the figures.
//
//   build/tests/perf/bench_baseline_figures [--benchmark_repetitions=3]
#include <benchmark/benchmark.h>

#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "baseline/collect.hpp"
#include "baseline/compare.hpp"
#include "baseline/metrics_protocol.hpp"

namespace gpudoc::baseline {
namespace {

constexpr int kNamesPerLine = 1000;

std::vector<std::string> stdout_lines(int names) {
  std::vector<std::string> lines;
  for (int line = 0; line * kNamesPerLine < names; ++line) {
    std::ostringstream os;
    os << "::gpudoc {";
    for (int k = 0; k < kNamesPerLine && line * kNamesPerLine + k < names; ++k)
      os << (k ? ", " : "") << "\"m" << line * kNamesPerLine + k << "_ms\": " << k;
    os << "}";
    lines.push_back(os.str());
  }
  return lines;
}

void distinct_names(benchmark::State& state) {
  const int names = static_cast<int>(state.range(0));
  const std::vector<std::string> lines = stdout_lines(names);
  for (auto _ : state) {
    MetricsCollector metrics;
    for (std::size_t i = 0; i < lines.size(); ++i) metrics.add_stdout_line(lines[i], i + 1);
    FigureAccumulator figs;
    for (const auto& [name, samples] : metrics.figures())
      for (double v : samples) figs.add(name, "", "workload", std::nullopt, v);
    const std::vector<Figure> now = figs.figures();
    const Comparison c = compare(now, now, Config{});
    const Comparison confirmed = confirm(c, c);
    benchmark::DoNotOptimize(confirmed.figures.data());
  }
  state.SetComplexityN(names);
  state.counters["names"] = names;
}
BENCHMARK(distinct_names)
    ->Arg(10'000)
    ->Arg(30'000)
    ->Arg(100'000)
    ->Complexity(benchmark::oAuto)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace gpudoc::baseline

BENCHMARK_MAIN();
