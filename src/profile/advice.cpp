// The CUDA Graph decision (source article 000 §3): graphs remove the host's launch cost of a step
// whose kernel sequence is static, and only that; they cannot capture a step that synchronizes,
// allocates or calls back into the host, and a step whose shapes change needs one graph per shape.
#include <algorithm>
#include <map>

#include "profile/analysis.hpp"

namespace gpudoc::profile {
namespace {

constexpr double kMinLaunchShare = 0.10;  // below this the launch cost is not worth a graph
constexpr double kMinGain = 0.10;         // the predicted step must be at least this much shorter
constexpr double kStaticShare = 0.90;     // steps with the most common kernel sequence
constexpr double kBlockerPerStep = 0.5;   // a blocker seen in at least half the steps

template <class T, class F>
T median_of(const std::vector<Step>& steps, F f) {
  std::vector<T> v;
  v.reserve(steps.size());
  for (const Step& s : steps) v.push_back(f(s));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// The step replayed as a graph: the GPU's own busy time, a node gap per kernel, one graph launch,
// and every idle gap whose cause a graph does not remove (host work, syncs, copies, allocations).
std::uint64_t predicted_graph_step(const Step& s, const AnalysisOptions& opt) {
  std::uint64_t t = s.busy_ns + s.kernels * opt.graph_node_ns + opt.graph_launch_ns;
  for (std::size_t i = 0; i < kIdleCauseCount; ++i)
    if (static_cast<IdleCause>(i) != IdleCause::kLaunch) t += s.idle_ns[i];
  return std::min(t, s.wall_ns());
}

bool looks_like_pytorch(const RecordSet& set) {
  for (const auto& k : set.kernels)
    if (k.name.find("at6native") != std::string::npos || k.name.find("triton") != std::string::npos) return true;
  return false;
}

}  // namespace

const char* to_string(Verdict v) {
  switch (v) {
    case Verdict::kRecommend: return "recommend";
    case Verdict::kAdviseAgainst: return "advise_against";
    case Verdict::kFixFirst: return "fix_first";
    case Verdict::kAlreadyGraphs: return "already_graphs";
    case Verdict::kNotEnoughData: return "not_enough_data";
  }
  return "unknown";
}

const char* to_string(Blocker b) {
  switch (b) {
    case Blocker::kSync: return "sync";
    case Blocker::kAllocation: return "allocation";
    case Blocker::kHostCallback: return "host_callback";
    case Blocker::kPageableCopy: return "pageable_copy";
    case Blocker::kDynamicShapes: return "dynamic_shapes";
  }
  return "unknown";
}

GraphAdvice advise(const std::vector<Step>& steps, const RecordSet& set, const AnalysisOptions& options) {
  GraphAdvice a;
  a.how = looks_like_pytorch(set) ? "torch" : "cpp";
  if (steps.size() < 3) return a;  // kNotEnoughData: one or two steps show no repetition
  a.step_ns = median_of<std::uint64_t>(steps, [](const Step& s) { return s.wall_ns(); });
  a.predicted_step_ns =
      median_of<std::uint64_t>(steps, [&](const Step& s) { return predicted_graph_step(s, options); });
  a.launch_share = median_of<double>(steps, [](const Step& s) {
    return s.wall_ns() == 0 ? 0.0
                            : static_cast<double>(s.idle_ns[static_cast<std::size_t>(IdleCause::kLaunch)]) /
                                  static_cast<double>(s.wall_ns());
  });
  a.kernels_per_step = median_of<std::size_t>(steps, [](const Step& s) { return s.kernels; });
  std::map<std::uint64_t, std::size_t> signatures;
  for (const Step& s : steps) ++signatures[s.signature];
  std::size_t most = 0;
  for (const auto& [sig, n] : signatures) most = std::max(most, n);
  a.static_share = static_cast<double>(most) / static_cast<double>(steps.size());
  const double n = static_cast<double>(steps.size());
  for (const Step& s : steps) {
    a.blockers_per_step[static_cast<int>(Blocker::kSync)] += static_cast<double>(s.syncs) / n;
    a.blockers_per_step[static_cast<int>(Blocker::kAllocation)] += static_cast<double>(s.allocations) / n;
    a.blockers_per_step[static_cast<int>(Blocker::kHostCallback)] += static_cast<double>(s.host_callbacks) / n;
    a.blockers_per_step[static_cast<int>(Blocker::kPageableCopy)] += static_cast<double>(s.pageable_copies) / n;
  }
  a.blockers_per_step[static_cast<int>(Blocker::kDynamicShapes)] = 1.0 - a.static_share;

  std::size_t in_graphs = 0;
  for (const auto& k : set.kernels) in_graphs += k.graph != 0 ? 1 : 0;
  if (!set.kernels.empty() && in_graphs * 2 >= set.kernels.size()) {
    a.verdict = Verdict::kAlreadyGraphs;
    return a;
  }
  for (Blocker b : {Blocker::kSync, Blocker::kAllocation, Blocker::kHostCallback, Blocker::kPageableCopy})
    if (a.blockers_per_step[static_cast<int>(b)] >= kBlockerPerStep) a.fix_first.push_back(b);
  std::stable_sort(a.fix_first.begin(), a.fix_first.end(), [&](Blocker x, Blocker y) {
    return a.blockers_per_step[static_cast<int>(x)] > a.blockers_per_step[static_cast<int>(y)];
  });
  if (a.static_share < kStaticShare) a.fix_first.insert(a.fix_first.begin(), Blocker::kDynamicShapes);
  const bool worth_it = a.launch_share >= kMinLaunchShare &&
                        static_cast<double>(a.predicted_step_ns) <= (1.0 - kMinGain) * static_cast<double>(a.step_ns);
  // Blockers matter only where a graph could gain: the host's share of the step (launches, and the
  // syncs that keep the host from queueing ahead) must be worth removing.
  const double host_share = median_of<double>(steps, [](const Step& s) {
    const auto idle =
        s.idle_ns[static_cast<std::size_t>(IdleCause::kLaunch)] + s.idle_ns[static_cast<std::size_t>(IdleCause::kSync)];
    return s.wall_ns() == 0 ? 0.0 : static_cast<double>(idle) / static_cast<double>(s.wall_ns());
  });
  if (!a.fix_first.empty() && host_share >= kMinLaunchShare)
    a.verdict = Verdict::kFixFirst;
  else if (a.fix_first.empty() && worth_it)
    a.verdict = Verdict::kRecommend;
  else
    a.verdict = Verdict::kAdviseAgainst;
  return a;
}

}  // namespace gpudoc::profile
