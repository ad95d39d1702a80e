#include "profile/analysis.hpp"

#include <cxxabi.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <unordered_map>

namespace gpudoc::profile {
namespace {

enum class OpType { kKernel, kPageableCopy, kDtoHCopy, kOtherCopy };

struct Op {
  std::uint64_t start = 0, end = 0;
  OpType type = OpType::kKernel;
};

// A stretch of the GPU with something running, and what ran at its two ends.
struct Busy {
  std::uint64_t start = 0, end = 0;
  OpType first = OpType::kKernel, last = OpType::kKernel;
};

struct Interval {
  std::uint64_t start = 0, end = 0;
};

std::vector<Busy> merge_ops(std::vector<Op> ops) {
  std::sort(ops.begin(), ops.end(), [](const Op& a, const Op& b) { return a.start < b.start; });
  std::vector<Busy> out;
  for (const Op& op : ops) {
    if (!out.empty() && op.start <= out.back().end) {
      if (op.end >= out.back().end) out.back().last = op.type;
      out.back().end = std::max(out.back().end, op.end);
    } else {
      out.push_back({op.start, op.end, op.type, op.type});
    }
  }
  return out;
}

std::vector<Interval> merge_intervals(std::vector<Interval> v) {
  std::sort(v.begin(), v.end(), [](const Interval& a, const Interval& b) { return a.start < b.start; });
  std::vector<Interval> out;
  for (const Interval& i : v) {
    if (!out.empty() && i.start <= out.back().end)
      out.back().end = std::max(out.back().end, i.end);
    else
      out.push_back(i);
  }
  return out;
}

// Whether a sorted, disjoint interval list touches [a, b].
bool overlaps(const std::vector<Interval>& v, std::uint64_t a, std::uint64_t b) {
  auto it = std::upper_bound(v.begin(), v.end(), b, [](std::uint64_t t, const Interval& i) { return t < i.start; });
  return it != v.begin() && std::prev(it)->end >= a;
}

// The longest part of [a, b] that no interval of the sorted, disjoint list covers.
std::uint64_t longest_uncovered(const std::vector<Interval>& v, std::uint64_t a, std::uint64_t b) {
  auto it = std::upper_bound(v.begin(), v.end(), a, [](std::uint64_t t, const Interval& i) { return t < i.start; });
  if (it != v.begin()) --it;
  std::uint64_t cursor = a, longest = 0;
  for (; it != v.end() && it->start < b; ++it) {
    if (it->end <= cursor) continue;
    if (it->start > cursor) longest = std::max(longest, it->start - cursor);
    cursor = std::max(cursor, it->end);
  }
  if (cursor < b) longest = std::max(longest, b - cursor);
  return longest;
}

// Everything the gap attribution needs, built once.
struct Context {
  Context(const RecordSet& s, const AnalysisOptions& o) : set(s), opt(o) {}
  const RecordSet& set;
  const AnalysisOptions& opt;
  std::uint32_t device = 0;
  std::vector<Busy> busy;
  std::vector<Interval> api_union, sync_calls, alloc_calls;
  std::vector<const KernelRecord*> kernels;  // of the device, by GPU start
  std::vector<std::uint64_t> launch_ns;      // for each of kernels: when the host launched it
};

IdleCause attribute_gap(const Context& c, std::uint64_t a, std::uint64_t b, OpType before, OpType after) {
  if (overlaps(c.alloc_calls, a, b)) return IdleCause::kAllocation;
  // Host work before a pageable copy: a loader without pin_memory makes both, the loading is the cost.
  const std::uint64_t stretch = longest_uncovered(c.api_union, a, b);
  if (stretch >= c.opt.host_stretch_ns && stretch * 2 >= b - a) return IdleCause::kHost;
  if (before == OpType::kPageableCopy || after == OpType::kPageableCopy) return IdleCause::kPageableCopy;
  // 5 us of slack: the host and GPU timestamps of CUPTI agree to about that.
  if (before == OpType::kDtoHCopy || overlaps(c.sync_calls, a, a + 5'000)) return IdleCause::kSync;
  return IdleCause::kLaunch;
}

std::uint32_t busiest_device(const RecordSet& set) {
  std::map<std::uint32_t, std::size_t> n;
  for (const auto& k : set.kernels) ++n[k.device];
  if (n.empty())
    for (const auto& cp : set.copies) ++n[cp.device];
  std::uint32_t best = 0;
  std::size_t most = 0;
  for (const auto& [dev, count] : n)
    if (count > most) best = dev, most = count;
  return best;
}

void build_context(Context& c) {
  c.device = busiest_device(c.set);
  std::vector<Op> ops;
  for (const auto& k : c.set.kernels) {
    if (k.device != c.device) continue;
    ops.push_back({k.start_ns, k.end_ns, OpType::kKernel});
    c.kernels.push_back(&k);
  }
  for (const auto& cp : c.set.copies) {
    if (cp.device != c.device) continue;
    const OpType t = cp.pageable()                                                         ? OpType::kPageableCopy
                     : !cp.memset && cp.kind == static_cast<std::uint8_t>(CopyKind::kDtoH) ? OpType::kDtoHCopy
                                                                                           : OpType::kOtherCopy;
    ops.push_back({cp.start_ns, cp.end_ns, t});
  }
  c.busy = merge_ops(std::move(ops));
  std::vector<Interval> all, syncs, allocs;
  std::unordered_map<std::uint32_t, std::uint64_t> launched;  // correlation id -> API start
  for (const auto& api : c.set.api_calls) {
    all.push_back({api.start_ns, api.end_ns});
    const ApiClass cls = classify_api(api.name);
    if (cls == ApiClass::kSync) syncs.push_back({api.start_ns, api.end_ns});
    if (cls == ApiClass::kAllocation) allocs.push_back({api.start_ns, api.end_ns});
    if (api.correlation != 0) {
      auto [it, fresh] = launched.emplace(api.correlation, api.start_ns);
      if (!fresh) it->second = std::min(it->second, api.start_ns);
    }
  }
  c.api_union = merge_intervals(std::move(all));
  c.sync_calls = merge_intervals(std::move(syncs));
  c.alloc_calls = merge_intervals(std::move(allocs));
  for (const KernelRecord* k : c.kernels) {
    auto it = launched.find(k->correlation);
    c.launch_ns.push_back(it != launched.end() ? it->second : k->start_ns);
  }
}

std::uint64_t kernel_signature(const KernelRecord& k) {
  std::uint64_t h = std::hash<std::string>{}(k.name);
  for (int i = 0; i < 3; ++i) h = h * 1'000'003u ^ static_cast<std::uint64_t>(k.grid[i]);
  for (int i = 0; i < 3; ++i) h = h * 1'000'033u ^ static_cast<std::uint64_t>(k.block[i]);
  return h;
}

// Step boundaries as indices into c.kernels: NVTX ranges first.
std::vector<std::size_t> boundaries_from_nvtx(const Context& c, std::string& source) {
  std::map<std::string, std::size_t> count;
  for (const auto& r : c.set.ranges) ++count[r.name];
  std::string best;
  std::size_t most = 0;
  bool best_is_step = false;
  for (const auto& [name, n] : count) {
    std::string lower = name;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char ch) { return std::tolower(ch); });
    const bool is_step = lower.find("step") != std::string::npos || lower.find("iter") != std::string::npos;
    if (n < 2 || (best_is_step && !is_step)) continue;
    if ((is_step && !best_is_step) || n > most) best = name, most = n, best_is_step = is_step;
  }
  std::vector<std::size_t> out;
  if (best.empty()) return out;
  std::size_t k = 0;
  for (const auto& r : c.set.ranges) {
    if (r.name != best) continue;
    while (k < c.kernels.size() && c.launch_ns[k] < r.start_ns) ++k;
    if (k == c.kernels.size()) break;
    if (out.empty() || out.back() != k) out.push_back(k);
  }
  // The last range's end closes the last step: one boundary after its last kernel.
  const auto& last = *std::find_if(c.set.ranges.rbegin(), c.set.ranges.rend(), [&](auto& r) { return r.name == best; });
  while (k < c.kernels.size() && c.launch_ns[k] <= last.end_ns) ++k;
  if (!out.empty() && k > out.back()) out.push_back(k);
  source = "nvtx:" + best;
  return out;
}

// The hash of a run of kernels' names, in order (launch shapes left out: a step with a new batch
// size is the same step).
std::uint64_t names_signature(const Context& c, std::size_t a, std::size_t b) {
  std::uint64_t h = 1469598103934665603ull ^ (b - a);
  for (std::size_t k = a; k < b; ++k) h = (h ^ std::hash<std::string>{}(c.kernels[k]->name)) * 1099511628211ull;
  return h;
}

// Step boundaries from the host's synchronizations (synchronize calls, synchronous copies, what
// .item() and .cpu() end in): a step is what the host repeats between them. Each sync ends a
// segment at the first kernel launched after it; kernels after the last sync make no whole step.
// When several syncs come in each iteration (a .item() and an event wait), the segments repeat
// with a period: the shortest (up to kMaxSyncsPerStep) under which 80 % of them match by kernel
// names, cut where the GPU waited longest. Empty when fewer than 3 segments hold kernels.
std::vector<std::size_t> boundaries_from_syncs(const Context& c, std::string& source) {
  constexpr std::size_t kMaxSyncsPerStep = 8;
  const std::size_t n = c.kernels.size();
  std::vector<std::uint64_t> ends;
  for (const auto& api : c.set.api_calls)
    if (classify_api(api.name) == ApiClass::kSync) ends.push_back(api.end_ns);
  std::sort(ends.begin(), ends.end());
  // launch_ns follows the kernels' GPU order, which the launch order matches on one stream; across
  // streams take the first index launched after the sync.
  std::vector<std::size_t> bounds;
  std::size_t k = 0;
  for (std::uint64_t e : ends) {
    while (k < n && c.launch_ns[k] < e) ++k;
    if (bounds.empty() || bounds.back() != k) bounds.push_back(k);
    if (k == n) break;
  }
  std::vector<std::size_t> out;
  if (bounds.size() < 4) return out;  // fewer than 3 segments
  const std::size_t segs = bounds.size() - 1;
  std::vector<std::uint64_t> sig(segs);
  for (std::size_t i = 0; i < segs; ++i) sig[i] = names_signature(c, bounds[i], bounds[i + 1]);
  std::size_t period = 1;
  for (std::size_t p = 1; p <= kMaxSyncsPerStep && p * 3 <= segs; ++p) {
    std::size_t match = 0;
    for (std::size_t i = 0; i + p < segs; ++i) match += sig[i] == sig[i + p] ? 1 : 0;
    if (match * 100 >= (segs - p) * 80) {
      period = p;
      break;
    }
  }
  std::size_t phase = 0;
  if (period > 1) {
    std::vector<double> wait(period, 0);
    for (std::size_t i = 0; i < bounds.size(); ++i)
      if (bounds[i] > 0 && bounds[i] < n)
        wait[i % period] +=
            static_cast<double>(c.kernels[bounds[i]]->start_ns) - static_cast<double>(c.kernels[bounds[i] - 1]->end_ns);
    phase = static_cast<std::size_t>(std::max_element(wait.begin(), wait.end()) - wait.begin());
  }
  for (std::size_t i = phase; i < bounds.size(); i += period) out.push_back(bounds[i]);
  if (out.size() < 4) return {};
  source = "host-sync";
  return out;
}

// The shortest period (at least 2 kernels) over which the kernel sequence repeats in 95 % of a
// sample of places, with the boundary put where the GPU gap before a kernel is longest on average.
std::vector<std::size_t> boundaries_from_sequence(const Context& c, std::string& source) {
  const std::size_t n = c.kernels.size();
  std::vector<std::uint64_t> sig(n);
  for (std::size_t i = 0; i < n; ++i) sig[i] = kernel_signature(*c.kernels[i]);
  std::vector<std::size_t> out;
  if (n < 6) return out;
  const std::size_t anchor = n / 3;
  std::size_t period = 0;
  for (std::size_t p = 1; anchor + p < n && p <= n / 3; ++p) {
    if (sig[anchor + p] != sig[anchor]) continue;
    std::size_t match = 0, tried = 0;
    const std::size_t stride = std::max<std::size_t>(1, (n - p) / 4000);
    for (std::size_t i = 0; i + p < n; i += stride, ++tried) match += sig[i] == sig[i + p] ? 1 : 0;
    if (match * 100 >= tried * 95) {
      period = p;
      break;
    }
  }
  if (period < 2) return out;  // no period, or every kernel alike: the names say nothing of steps
  std::vector<double> gap_sum(period, 0);
  for (std::size_t i = 1; i < n; ++i)
    gap_sum[i % period] += static_cast<double>(c.kernels[i]->start_ns) - static_cast<double>(c.kernels[i - 1]->end_ns);
  const std::size_t phase =
      static_cast<std::size_t>(std::max_element(gap_sum.begin(), gap_sum.end()) - gap_sum.begin());
  for (std::size_t i = phase; i < n; i += period) out.push_back(i);
  source = "kernel-sequence";
  return out;
}

const char* copy_kind_name(std::uint8_t kind) {
  switch (static_cast<CopyKind>(kind)) {
    case CopyKind::kHtoD: return "HtoD";
    case CopyKind::kDtoH: return "DtoH";
    case CopyKind::kDtoD: return "DtoD";
    case CopyKind::kHtoH: return "HtoH";
    case CopyKind::kPtoP: return "PtoP";
    default: return "other";
  }
}

void count_host_calls(const Context& c, Step& s, std::uint64_t host_from, std::uint64_t host_to) {
  auto it = std::lower_bound(c.set.api_calls.begin(), c.set.api_calls.end(), host_from,
                             [](const ApiRecord& a, std::uint64_t t) { return a.start_ns < t; });
  for (; it != c.set.api_calls.end() && it->start_ns < host_to; ++it) {
    switch (classify_api(it->name)) {
      case ApiClass::kSync: ++s.syncs; break;
      case ApiClass::kAllocation: ++s.allocations; break;
      case ApiClass::kHostCallback: ++s.host_callbacks; break;
      default: break;
    }
  }
  for (const auto& cp : c.set.copies) {
    if (cp.device != c.device || cp.start_ns < s.start_ns || cp.start_ns >= s.end_ns) continue;
    if (cp.pageable()) ++s.pageable_copies;
    if (!cp.memset && cp.kind == static_cast<std::uint8_t>(CopyKind::kDtoH)) ++s.dtoh_copies;
  }
}

void fill_busy_and_gaps(const Context& c, Step& s) {
  auto it = std::upper_bound(c.busy.begin(), c.busy.end(), s.start_ns,
                             [](std::uint64_t t, const Busy& b) { return t < b.start; });
  if (it != c.busy.begin()) --it;
  std::uint64_t cursor = s.start_ns;
  OpType before = OpType::kKernel;
  for (; it != c.busy.end() && it->start < s.end_ns; ++it) {
    if (it->end <= cursor) {
      before = it->last;
      continue;
    }
    if (it->start > cursor)
      s.idle_ns[static_cast<std::size_t>(attribute_gap(c, cursor, it->start, before, it->first))] += it->start - cursor;
    const std::uint64_t from = std::max(cursor, it->start), to = std::min(s.end_ns, it->end);
    if (to > from) s.busy_ns += to - from;
    cursor = std::max(cursor, to);
    before = it->last;
  }
  if (cursor < s.end_ns)
    s.idle_ns[static_cast<std::size_t>(attribute_gap(c, cursor, s.end_ns, before, OpType::kKernel))] +=
        s.end_ns - cursor;
}

// The last of the windows (in time order, disjoint) that starts at or before `t`: the only one that can
// hold t. windows.end() when none does.
std::vector<TraceWindow>::const_iterator window_from(const std::vector<TraceWindow>& windows, std::uint64_t t) {
  auto it = std::upper_bound(windows.begin(), windows.end(), t,
                             [](std::uint64_t v, const TraceWindow& w) { return v < w.start_ns; });
  return it == windows.begin() ? windows.end() : std::prev(it);
}

// The window that holds [start, end] wholly; windows.end() when none does.
std::vector<TraceWindow>::const_iterator window_holding(const std::vector<TraceWindow>& windows, std::uint64_t start,
                                                        std::uint64_t end) {
  const auto w = window_from(windows, start);
  return w != windows.end() && end <= w->end_ns ? w : windows.end();
}

// Whether [start, end] lies wholly inside one of the windows (no windows: always).
bool inside_windows(const std::vector<TraceWindow>& windows, std::uint64_t start, std::uint64_t end) {
  return windows.empty() || window_holding(windows, start, end) != windows.end();
}

// Whether [start, end] overlaps any window: the last one starting before `end` reaches past `start`
// if any does (the windows before it end before it starts).
bool touches_windows(const std::vector<TraceWindow>& windows, std::uint64_t start, std::uint64_t end) {
  if (end == 0) return false;
  const auto w = window_from(windows, end - 1);
  return w != windows.end() && w->end_ns > start;
}

std::vector<Step> make_steps(const Context& c, const std::vector<std::size_t>& bounds, const AnalysisOptions& opt) {
  std::vector<Step> steps;
  std::size_t first = bounds.size() > 3 ? 1 : 0;  // the first step warms up (allocations, autotuning)
  for (std::size_t i = first; i + 1 < bounds.size(); ++i) {
    if (opt.max_steps > 0 && steps.size() >= opt.max_steps) break;
    const std::size_t a = bounds[i], b = bounds[i + 1];
    Step s;
    s.start_ns = c.kernels[a]->start_ns;
    s.end_ns = b < c.kernels.size() ? c.kernels[b]->start_ns : c.kernels[b - 1]->end_ns;
    // With sampling, a step that runs out of its window (the last of each) is not analysed.
    if (!inside_windows(c.set.windows, s.start_ns, s.end_ns)) continue;
    std::uint64_t sig = 1469598103934665603ull;
    for (std::size_t k = a; k < b; ++k) {
      s.kernel_ns += c.kernels[k]->end_ns - c.kernels[k]->start_ns;
      sig = (sig ^ kernel_signature(*c.kernels[k])) * 1099511628211ull;
    }
    s.kernels = b - a;
    s.signature = sig;
    fill_busy_and_gaps(c, s);
    count_host_calls(c, s, c.launch_ns[a], b < c.kernels.size() ? c.launch_ns[b] : c.launch_ns[b - 1] + 1);
    steps.push_back(s);
  }
  return steps;
}

void kernel_tables(const Context& c, Profile& p) {
  std::unordered_map<std::string, KernelStat> by_name;
  for (const KernelRecord* k : c.kernels) {
    const std::uint64_t d = k->end_ns - k->start_ns;
    auto& st = by_name[k->name];
    if (st.count == 0) st.min_ns = d;
    ++st.count;
    st.total_ns += d;
    st.min_ns = std::min(st.min_ns, d);
    st.max_ns = std::max(st.max_ns, d);
    p.kernel_ns += d;
    std::size_t bucket = 0;
    for (std::uint64_t us = d / 1000; us >= 2 && bucket + 1 < p.duration_histogram.size(); us /= 2) ++bucket;
    ++p.duration_histogram[bucket];
  }
  p.kernel_count = c.kernels.size();
  for (auto& [name, st] : by_name) {
    st.name = short_kernel_name(name);
    p.top_kernels.push_back(st);
  }
  std::sort(p.top_kernels.begin(), p.top_kernels.end(),
            [](const KernelStat& a, const KernelStat& b) { return a.total_ns > b.total_ns; });
  if (p.top_kernels.size() > 15) p.top_kernels.resize(15);
  std::map<std::string, CopyVolume> volumes;
  for (const auto& cp : c.set.copies) {
    if (cp.device != c.device) continue;
    const std::string kind = cp.memset ? "memset"
                             : (cp.kind == 1 || cp.kind == 2)
                                 ? fmt::format("{} {}", copy_kind_name(cp.kind), cp.pageable() ? "pageable" : "pinned")
                                 : copy_kind_name(cp.kind);
    auto& v = volumes[kind];
    v.kind = kind;
    ++v.count;
    v.bytes += cp.bytes;
    v.total_ns += cp.end_ns - cp.start_ns;
  }
  for (auto& [kind, v] : volumes) p.copies.push_back(v);
}

std::uint64_t median(std::vector<std::uint64_t> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// The step ranges named `name` inside the windows against those between them.
Sampling sampling_of(const RecordSet& set, const std::string& name) {
  Sampling sm;
  sm.windows = set.windows.size();
  const std::uint64_t last = last_end_ns(set);
  for (const auto& w : set.windows) sm.traced_ns += w.end_by(last) - w.start_ns;
  std::vector<std::uint64_t> traced, untraced;
  std::uint64_t all_ns = 0, all = 0, untraced_ns = 0;
  for (const auto& r : set.ranges) {
    if (name.empty() || r.name != name || r.end_ns <= r.start_ns) continue;  // no step ranges: no steps
    all_ns += r.end_ns - r.start_ns, ++all;
    if (inside_windows(set.windows, r.start_ns, r.end_ns))
      traced.push_back(r.end_ns - r.start_ns);
    else if (!touches_windows(set.windows, r.start_ns, r.end_ns))
      untraced.push_back(r.end_ns - r.start_ns), untraced_ns += r.end_ns - r.start_ns;
  }
  sm.step_mean_ns = all > 0 ? all_ns / all : 0;
  sm.step_untraced_mean_ns = untraced.empty() ? 0 : untraced_ns / untraced.size();
  sm.steps_traced = traced.size();
  sm.steps_untraced = untraced.size();
  sm.step_traced_ns = median(std::move(traced));
  sm.step_untraced_ns = median(std::move(untraced));
  return sm;
}

// What CUPTI left out of the traced windows that ran work: windows with steps (the NVTX ranges named
// `name`, recorded throughout) but no kernel record, and windows with kernels but no API call. Both
// happened on an H200 before the library flushed at each window's end and kept the API calls' kinds.
std::vector<std::string> gaps_in_windows(const RecordSet& set, const std::string& name) {
  auto count_in = [](const auto& sorted, const TraceWindow& w) {
    auto from = std::lower_bound(sorted.begin(), sorted.end(), w.start_ns,
                                 [](const auto& r, std::uint64_t t) { return r.start_ns < t; });
    auto to =
        std::lower_bound(from, sorted.end(), w.end_ns, [](const auto& r, std::uint64_t t) { return r.start_ns < t; });
    return static_cast<std::size_t>(to - from);
  };
  // which windows hold a whole step: one pass over the steps
  std::vector<bool> has_steps(set.windows.size(), false);
  for (const auto& r : set.ranges) {
    if (name.empty() || r.name != name) continue;
    const auto w = window_holding(set.windows, r.start_ns, r.end_ns);
    if (w != set.windows.end()) has_steps[static_cast<std::size_t>(w - set.windows.begin())] = true;
  }
  std::size_t with_steps = 0, without_kernels = 0, with_kernels = 0, without_api = 0;
  for (std::size_t i = 0; i < set.windows.size(); ++i) {
    const TraceWindow& w = set.windows[i];
    const bool steps = has_steps[i];
    const std::size_t kernels = count_in(set.kernels, w);
    with_steps += steps ? 1 : 0;
    without_kernels += steps && kernels == 0 ? 1 : 0;
    with_kernels += kernels > 0 ? 1 : 0;
    without_api += kernels > 0 && count_in(set.api_calls, w) == 0 ? 1 : 0;
  }
  std::vector<std::string> out;
  if (without_kernels > 0)
    out.push_back(
        fmt::format("CUPTI delivered no kernel records in {} of the {} traced windows that ran steps; "
                    "the analysis covers the others",
                    without_kernels, with_steps));
  if (without_api > 0)
    out.push_back(
        fmt::format("no API calls were recorded in {} of the {} traced windows that ran kernels; idle "
                    "time there reads as host work",
                    without_api, with_kernels));
  return out;
}

}  // namespace

const char* to_string(IdleCause c) {
  switch (c) {
    case IdleCause::kLaunch: return "launch";
    case IdleCause::kSync: return "sync";
    case IdleCause::kPageableCopy: return "pageable_copy";
    case IdleCause::kAllocation: return "allocation";
    case IdleCause::kHost: return "host";
  }
  return "unknown";
}

ApiClass classify_api(const std::string& name) {
  auto has = [&](const char* s) { return name.find(s) != std::string::npos; };
  if (has("Synchronize")) return ApiClass::kSync;
  if (has("LaunchHostFunc") || has("AddCallback")) return ApiClass::kHostCallback;
  if (has("Launch")) return ApiClass::kLaunch;
  if (has("Malloc") || has("MemAlloc") || has("Free") || has("HostAlloc") || has("HostRegister") || has("MemCreate"))
    return ApiClass::kAllocation;
  if (has("Memcpy")) {
    // The synchronous copies (cudaMemcpy, cuMemcpyDtoH) wait for the GPU like a synchronize.
    return has("Async") ? ApiClass::kMemcpy : ApiClass::kSync;
  }
  return ApiClass::kOther;
}

std::string short_kernel_name(const std::string& mangled) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), std::free);
  std::string name = status == 0 && d ? std::string(d.get()) : mangled;
  // Cut the parameter list: the '(' at template depth 0 after the function name.
  int depth = 0;
  constexpr std::string_view kAnonymous = "(anonymous namespace)";
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (name.compare(i, kAnonymous.size(), kAnonymous) == 0) {
      i += kAnonymous.size() - 1;  // a namespace, not the parameter list
      continue;
    }
    if (name[i] == '<') ++depth;
    if (name[i] == '>') --depth;
    if (name[i] == '(' && depth == 0 && i > 0) {
      name.resize(i);
      break;
    }
  }
  if (name.rfind("void ", 0) == 0) name.erase(0, 5);
  if (name.size() > 80) name = name.substr(0, 77) + "...";
  return name;
}

Profile analyse(const RecordSet& set, const AnalysisOptions& options) {
  Context c(set, options);
  build_context(c);
  Profile p;
  p.device = c.device;
  p.dropped = set.dropped;
  p.over_file_limit = set.over_file_limit;
  p.complete = set.complete;
  p.warnings = set.warnings;
  if (set.untimed > 0)
    p.warnings.push_back(
        fmt::format("{} kernel or copy records came without valid times (a kernel still running "
                    "when a traced window closed) and are left out",
                    set.untimed));
  p.api_calls = set.api_calls.size();
  p.graph_launches = set.graph_launches.size();
  kernel_tables(c, p);
  if (!c.kernels.empty()) {
    std::vector<std::size_t> bounds = boundaries_from_nvtx(c, p.step_source);
    if (bounds.size() < 2) bounds = boundaries_from_syncs(c, p.step_source);
    if (bounds.size() < 2) bounds = boundaries_from_sequence(c, p.step_source);
    if (bounds.size() < 2) {
      bounds = {0, c.kernels.size()};
      p.step_source = "whole-run";
    }
    p.steps = make_steps(c, bounds, options);
    for (const Step& s : p.steps) {
      p.span_ns += s.wall_ns();
      p.busy_ns += s.busy_ns;
      for (std::size_t i = 0; i < kIdleCauseCount; ++i) p.idle_ns[i] += s.idle_ns[i];
    }
    p.advice = advise(p.steps, set, options);
  }
  p.energy = device_energy(set, p.device);
  // A sampled run says so even when its windows caught no kernel.
  if (!set.windows.empty()) {
    const std::string nvtx = "nvtx:";
    const std::string steps = p.step_source.rfind(nvtx, 0) == 0 ? p.step_source.substr(nvtx.size()) : "";
    p.sampling = sampling_of(set, steps);
    for (std::string& gap : gaps_in_windows(set, steps)) p.warnings.push_back(std::move(gap));
  }
  return p;
}

}  // namespace gpudoc::profile
