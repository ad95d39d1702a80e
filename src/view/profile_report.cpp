#include "view/profile_report.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "cost/job.hpp"
#include "view/cost_view.hpp"
#include "view/html_page.hpp"
#include "view/web_assets.hpp"

namespace gpudoc::view {
namespace {

using profile::Blocker;
using profile::IdleCause;
using profile::Verdict;

std::string ms(std::uint64_t ns) { return fmt::format("{:.3f} ms", static_cast<double>(ns) / 1e6); }
std::string pct(double x) { return fmt::format("{:.0f} %", 100.0 * x); }

std::string join(const std::vector<std::string>& words) {
  std::string s;
  for (const auto& w : words) s += (s.empty() ? "" : " ") + w;
  return s;
}

std::uint64_t idle_total(const profile::Profile& p) {
  std::uint64_t t = 0;
  for (auto v : p.idle_ns) t += v;
  return t;
}

std::string steps_line(const profile::Profile& p) {
  const std::string from = p.step_source.rfind("nvtx:", 0) == 0
                               ? fmt::format("NVTX ranges \"{}\"", p.step_source.substr(5))
                           : p.step_source == "host-sync" ? "the host's synchronizations (what it repeats between them)"
                           : p.step_source == "kernel-sequence"
                               ? "the repeating kernel sequence"
                               : "the whole run: no step found (no NVTX ranges, no synchronization the host repeats, "
                                 "no repeating kernel sequence); mark one with torch.cuda.nvtx.range_push(\"step\") "
                                 "... range_pop()";
  return fmt::format("Steps: {} from {}\n", p.steps.size(), from);
}

}  // namespace

std::string idle_cause_text(IdleCause c) {
  switch (c) {
    case IdleCause::kLaunch: return "launch-bound: the host was busy issuing the next work (launch latency, Python)";
    case IdleCause::kSync: return "synchronization: the host waited for the GPU (.item(), synchronize, a D2H copy)";
    case IdleCause::kPageableCopy: return "pageable copies: staged through a bounce buffer, the host blocked";
    case IdleCause::kAllocation: return "allocation: cudaMalloc/cudaFree (they synchronize)";
    case IdleCause::kHost: return "host work with no CUDA call (data loading, Python, I/O)";
  }
  return "unknown";
}

std::string blocker_text(Blocker b) {
  switch (b) {
    case Blocker::kSync:
      return "a synchronization each step (.item(), .cpu(), torch.cuda.synchronize(), a blocking copy): "
             "capture cannot contain it; keep values on the GPU or read them every N steps";
    case Blocker::kAllocation:
      return "memory allocations each step (cudaMalloc/cudaFree): allocate once before capture "
             "(PyTorch's caching allocator does after warm-up; static input buffers)";
    case Blocker::kHostCallback: return "host callbacks each step (cudaLaunchHostFunc): move that work out of the step";
    case Blocker::kPageableCopy:
      return "copies from pageable host memory each step: use pinned memory (pin_memory=True) "
             "and non_blocking copies";
    case Blocker::kDynamicShapes:
      return "the kernel sequence changes between steps (shapes or control flow): pad inputs to a few fixed "
             "shapes (one graph each) or make the control flow static";
  }
  return "unknown";
}

std::string verdict_line(const profile::GraphAdvice& a) {
  const double gain =
      a.step_ns == 0 ? 0.0 : 1.0 - static_cast<double>(a.predicted_step_ns) / static_cast<double>(a.step_ns);
  switch (a.verdict) {
    case Verdict::kRecommend:
      return fmt::format("RECOMMENDED: expected step {} instead of {} ({:+.0f} %)", ms(a.predicted_step_ns),
                         ms(a.step_ns), -100.0 * gain);
    case Verdict::kAdviseAgainst:
      return fmt::format("NOT ADVISED: launch overhead is {} of the step; a graph would save about {} of {}",
                         pct(a.launch_share), ms(a.step_ns - std::min(a.step_ns, a.predicted_step_ns)), ms(a.step_ns));
    case Verdict::kFixFirst:
      return fmt::format("FIX FIRST: {}; then expect a step of about {} instead of {}",
                         a.fix_first.empty() ? std::string("?") : std::string(profile::to_string(a.fix_first[0])),
                         ms(a.predicted_step_ns), ms(a.step_ns));
    case Verdict::kAlreadyGraphs: return "ALREADY IN USE: most kernels ran inside CUDA graphs";
    case Verdict::kNotEnoughData: return "NO VERDICT: fewer than 3 steps were found";
  }
  return "";
}

std::string graph_recipe(const profile::GraphAdvice& a) {
  if (a.how == "torch")
    return "torch.compile(model, mode=\"reduce-overhead\"), or by hand: warm up on a side stream, capture one "
           "step with torch.cuda.graph(g) on static input tensors, then copy inputs in and g.replay()";
  return "capture one step with cudaStreamBeginCapture/cudaStreamEndCapture, cudaGraphInstantiate once, then "
         "cudaGraphLaunch each step";
}

namespace {

// With sampling: what was traced, and what tracing cost the program's steps.
std::string sampling_text(const profile::Sampling& sm) {
  if (sm.windows == 0) return {};
  std::string s = fmt::format("Sampled: traced {} in {} window{}; the steps above are the traced ones.\n",
                              ms(sm.traced_ns), sm.windows, sm.windows == 1 ? "" : "s");
  if (sm.measured()) {
    s += fmt::format(
        "Tracing cost this program {:+.1f} % a step: {} (median of {}) while traced, {} (median of {}) between "
        "the windows.\n",
        100.0 * sm.overhead(), ms(sm.step_traced_ns), sm.steps_traced, ms(sm.step_untraced_ns), sm.steps_untraced);
    s += fmt::format("Over the whole run tracing added {:+.1f} %: a mean step of {}, {} untraced.\n",
                     100.0 * sm.run_overhead(), ms(sm.step_mean_ns), ms(sm.step_untraced_mean_ns));
  } else {
    s += fmt::format(
        "What tracing cost is not measured: it takes NVTX step ranges, at least 3 inside the windows and 3 between "
        "them ({} and {} here).\n",
        sm.steps_traced, sm.steps_untraced);
  }
  return s;
}

std::string summary_text(const profile::Profile& p, const std::vector<std::string>& command) {
  std::string s = fmt::format("gpudoc profile: {}\n", join(command));
  s += fmt::format("Device {}: {} kernels ({} of kernel time), {} API calls, {} graph launches\n", p.device,
                   p.kernel_count, ms(p.kernel_ns), p.api_calls, p.graph_launches);
  if (p.kernel_count == 0) return s + "No kernel ran on the GPU while profiling.\n";
  s += steps_line(p);
  const auto& a = p.advice;
  if (!p.steps.empty() && p.span_ns > 0)
    s += fmt::format("Per step (median): {} wall; over all steps the GPU was busy {} of the time\n", ms(a.step_ns),
                     pct(static_cast<double>(p.busy_ns) / static_cast<double>(p.span_ns)));
  const std::uint64_t idle = idle_total(p);
  if (idle > 0) {
    s += fmt::format("GPU idle {} of the steps, by cause:\n",
                     pct(static_cast<double>(idle) / static_cast<double>(p.span_ns)));
    for (std::size_t i = 0; i < profile::kIdleCauseCount; ++i) {
      if (p.idle_ns[i] == 0) continue;
      s += fmt::format("  {:>5}  {:>12}  {}\n", pct(static_cast<double>(p.idle_ns[i]) / static_cast<double>(idle)),
                       ms(p.idle_ns[i]), idle_cause_text(static_cast<IdleCause>(i)));
    }
  }
  s += "\nCUDA Graphs: " + verdict_line(a) + "\n";
  if (a.verdict != Verdict::kNotEnoughData && a.verdict != Verdict::kAlreadyGraphs)
    s += fmt::format("  launch overhead {} of the step; the kernel sequence is the same in {} of steps ({} kernels)\n",
                     pct(a.launch_share), pct(a.static_share), a.kernels_per_step);
  for (Blocker b : a.fix_first) s += "  fix: " + blocker_text(b) + "\n";
  if (a.verdict == Verdict::kRecommend || a.verdict == Verdict::kFixFirst) s += "  how: " + graph_recipe(a) + "\n";
  s += "\nTop kernels by total time:\n";
  for (std::size_t i = 0; i < std::min<std::size_t>(p.top_kernels.size(), 8); ++i) {
    const auto& k = p.top_kernels[i];
    s += fmt::format("  {:>12}  {:>7}x  {:>9.1f} us avg  {}\n", ms(k.total_ns), k.count,
                     static_cast<double>(k.total_ns) / static_cast<double>(k.count) / 1e3, k.name);
  }
  s += "Kernel durations:";
  for (std::size_t i = 0; i < p.duration_histogram.size(); ++i) {
    if (p.duration_histogram[i] == 0) continue;
    const std::string range = i == 0 ? std::string("< 2 us") : fmt::format("{}-{} us", 1u << i, 1u << (i + 1));
    s += fmt::format("  {} {}", range, p.duration_histogram[i]);
  }
  s += "\n";
  if (!p.copies.empty()) s += "Copies:\n";
  for (const auto& c : p.copies)
    s += fmt::format("  {:<14} {:>7}x  {:>10.1f} MiB  {}\n", c.kind, c.count, static_cast<double>(c.bytes) / 1048576.0,
                     ms(c.total_ns));
  s += sampling_text(p.sampling);
  if (p.dropped > 0) s += fmt::format("WARNING: CUPTI dropped {} records (its buffers were full)\n", p.dropped);
  if (p.over_file_limit > 0)
    s += fmt::format(
        "WARNING: the records file reached its bound (GPUDOC_PROFILE_MAX_MIB, default 512 MiB); {} records after it "
        "were counted, not written: this profile covers the run up to that point\n",
        p.over_file_limit);
  if (!p.complete) s += "Note: the program did not exit cleanly; the profile holds what was flushed before it ended\n";
  for (const auto& w : p.warnings) s += "CUPTI: " + w + "\n";
  return s;
}

}  // namespace

std::string profile_text(const profile::Profile& p, const std::vector<std::string>& command, const ProfileCost& cost) {
  std::string s = summary_text(p, command);
  if (cost.prices != nullptr && p.span_ns > 0)
    s += "\n" + render_cost(cost::cost_of_profile(p, cost.host), *cost.prices);
  return s;
}

nlohmann::ordered_json profile_json(const profile::Profile& p, const std::vector<std::string>& command,
                                    const ProfileCost& cost) {
  nlohmann::ordered_json j;
  j["command"] = command;
  j["device"] = p.device;
  j["step_source"] = p.step_source;
  j["steps"] = p.steps.size();
  j["span_ns"] = p.span_ns;
  j["busy_ns"] = p.busy_ns;
  nlohmann::ordered_json idle = nlohmann::ordered_json::object();
  for (std::size_t i = 0; i < profile::kIdleCauseCount; ++i)
    idle[profile::to_string(static_cast<IdleCause>(i))] = p.idle_ns[i];
  j["idle_ns"] = idle;
  const auto& a = p.advice;
  nlohmann::ordered_json g;
  g["verdict"] = profile::to_string(a.verdict);
  g["text"] = verdict_line(a);
  g["fix_first"] = nlohmann::ordered_json::array();
  for (Blocker b : a.fix_first) g["fix_first"].push_back({{"what", profile::to_string(b)}, {"text", blocker_text(b)}});
  g["step_ns"] = a.step_ns;
  g["predicted_step_ns"] = a.predicted_step_ns;
  g["launch_share"] = a.launch_share;
  g["static_share"] = a.static_share;
  g["kernels_per_step"] = a.kernels_per_step;
  g["how"] = a.verdict == Verdict::kRecommend || a.verdict == Verdict::kFixFirst ? graph_recipe(a) : "";
  j["cuda_graphs"] = g;
  j["kernels"] = {{"count", p.kernel_count}, {"total_ns", p.kernel_ns}};
  j["duration_histogram_us_log2"] = p.duration_histogram;
  j["top_kernels"] = nlohmann::ordered_json::array();
  for (const auto& k : p.top_kernels)
    j["top_kernels"].push_back(
        {{"name", k.name}, {"count", k.count}, {"total_ns", k.total_ns}, {"min_ns", k.min_ns}, {"max_ns", k.max_ns}});
  j["copies"] = nlohmann::ordered_json::array();
  for (const auto& c : p.copies)
    j["copies"].push_back({{"kind", c.kind}, {"count", c.count}, {"bytes", c.bytes}, {"total_ns", c.total_ns}});
  j["per_step"] = nlohmann::ordered_json::array();
  for (const auto& s : p.steps) {
    nlohmann::ordered_json st{
        {"start_ns", s.start_ns}, {"wall_ns", s.wall_ns()}, {"busy_ns", s.busy_ns}, {"kernels", s.kernels}};
    for (std::size_t i = 0; i < profile::kIdleCauseCount; ++i)
      st[std::string("idle_") + profile::to_string(static_cast<IdleCause>(i)) + "_ns"] = s.idle_ns[i];
    j["per_step"].push_back(st);
  }
  j["api_calls"] = p.api_calls;
  j["graph_launches"] = p.graph_launches;
  j["dropped_records"] = p.dropped + p.over_file_limit;  // everything not in the analysis
  j["records_over_file_limit"] = p.over_file_limit;
  j["complete"] = p.complete;
  j["warnings"] = p.warnings;
  if (p.sampling.windows > 0) {
    const auto& sm = p.sampling;
    j["sampling"] = {{"windows", sm.windows},
                     {"traced_ns", sm.traced_ns},
                     {"steps_traced", sm.steps_traced},
                     {"steps_untraced", sm.steps_untraced},
                     {"step_traced_ns", sm.step_traced_ns},
                     {"step_untraced_ns", sm.step_untraced_ns}};
    j["sampling"]["overhead"] = sm.measured() ? nlohmann::ordered_json(sm.overhead()) : nlohmann::ordered_json();
    j["sampling"]["run_overhead"] =
        sm.measured() ? nlohmann::ordered_json(sm.run_overhead()) : nlohmann::ordered_json();
  }
  if (cost.prices != nullptr)
    j["cost"] = nlohmann::ordered_json(cost::to_json(cost::cost_of_profile(p, cost.host), *cost.prices));
  return j;
}

core::Result<std::string> profile_html(const profile::Profile& p, const std::vector<std::string>& command,
                                       const ProfileCost& cost) {
  auto assets = web_assets();
  if (!assets) return core::Error(core::ErrorKind::kEnvironment, std::string(kWebAssetsMissing));
  std::string page = html_page_start("gpudoc profile: " + join(command), *assets, report_file("profile.css"));
  page += "<p class=\"verdict\">CUDA Graphs: " + html_escape(verdict_line(p.advice)) + "</p>\n";
  page += "<h2>Steps</h2>\n<div id=\"steps\"></div>\n<h2>Kernel durations</h2>\n<div id=\"hist\"></div>\n";
  page += "<h2>Summary</h2>\n<pre>" + html_escape(summary_text(p, command)) + "</pre>\n";
  if (cost.prices != nullptr && p.span_ns > 0) page += cost_html(cost::cost_of_profile(p, cost.host), *cost.prices);
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& s : p.steps) {
    nlohmann::json row = nlohmann::json::array({s.busy_ns});
    for (auto v : s.idle_ns) row.push_back(v);
    steps.push_back(row);
  }
  nlohmann::json parts = nlohmann::json::array({"busy"});
  for (std::size_t i = 0; i < profile::kIdleCauseCount; ++i)
    parts.push_back(std::string("idle: ") + profile::to_string(static_cast<IdleCause>(i)));
  page += html_page_end({{"steps", steps}, {"parts", parts}, {"histogram", p.duration_histogram}},
                        report_file("profile.js"), *assets);
  return page;
}

}  // namespace gpudoc::view
