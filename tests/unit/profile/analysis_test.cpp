// profile::analyse on synthetic loops: each idle cause is found where it was put, steps come from
// NVTX or the kernel sequence, and the CUDA Graph verdict follows the rules of docs/profile.md (Verdict).
#include "profile/analysis.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "synthetic_loop.hpp"

namespace gpudoc::profile {
namespace {

using testing::Loop;
using testing::make_loop;

double share(const Profile& p, IdleCause c) {
  std::uint64_t idle = 0;
  for (auto v : p.idle_ns) idle += v;
  return idle == 0 ? 0.0 : static_cast<double>(p.idle_ns[static_cast<std::size_t>(c)]) / static_cast<double>(idle);
}

TEST(ProfileAnalysis, ManyTinyKernelsAreLaunchBoundAndGraphsAreRecommended) {
  const Profile p = analyse(make_loop(Loop{}), {});
  EXPECT_EQ(p.step_source, "nvtx:train_step");
  ASSERT_EQ(p.steps.size(), 19u);  // 20 ranges, the first one left out as warm-up
  EXPECT_GT(share(p, IdleCause::kLaunch), 0.95);
  EXPECT_EQ(p.advice.verdict, Verdict::kRecommend);
  EXPECT_EQ(p.advice.how, "torch");
  EXPECT_EQ(p.advice.kernels_per_step, 50u);
  EXPECT_DOUBLE_EQ(p.advice.static_share, 1.0);
  // Eager: 50 launches of 12 us. As a graph: 50 x (2 us kernel + 0.25 us node gap) + 5 us launch.
  EXPECT_NEAR(static_cast<double>(p.advice.step_ns), 600e3, 1e3);
  EXPECT_EQ(p.advice.predicted_step_ns, 50u * 2'250u + 5'000u);
  EXPECT_GT(p.advice.launch_share, 0.7);
}

TEST(ProfileAnalysis, AGemmBoundLoopIsAdvisedAgainst) {
  Loop l;
  l.kernels = 10, l.kernel_ns = 2'000'000, l.launch_ns = 10'000;
  const Profile p = analyse(make_loop(l), {});
  EXPECT_GT(static_cast<double>(p.busy_ns) / static_cast<double>(p.span_ns), 0.99);
  EXPECT_EQ(p.advice.verdict, Verdict::kAdviseAgainst);
  EXPECT_LT(p.advice.launch_share, 0.01);
}

TEST(ProfileAnalysis, AnItemEachStepIsSyncBound) {
  Loop l;  // the GPU keeps ahead of the host within a step; the .item() at its end exposes the host
  l.item_each_step = true, l.kernels = 20, l.kernel_ns = 10'000, l.launch_ns = 8'000;
  const Profile p = analyse(make_loop(l), {});
  EXPECT_GT(share(p, IdleCause::kSync), 0.8);
  EXPECT_EQ(p.advice.verdict, Verdict::kFixFirst);
  ASSERT_FALSE(p.advice.fix_first.empty());
  EXPECT_EQ(p.advice.fix_first[0], Blocker::kSync);
  // every step but the last, whose host window closes at its last launch
  EXPECT_NEAR(p.advice.blockers_per_step[static_cast<int>(Blocker::kSync)], 18.0 / 19.0, 1e-9);
}

TEST(ProfileAnalysis, TinyKernelsWithAnItemEachStepMustFixTheSyncFirst) {
  Loop l;
  l.item_each_step = true, l.kernels = 20, l.kernel_ns = 3'000, l.launch_ns = 8'000;
  const Profile p = analyse(make_loop(l), {});
  EXPECT_EQ(p.advice.verdict, Verdict::kFixFirst);
  ASSERT_FALSE(p.advice.fix_first.empty());
  EXPECT_EQ(p.advice.fix_first[0], Blocker::kSync);
}

TEST(ProfileAnalysis, ChangingShapesMustBeFixedFirst) {
  Loop l;
  l.dynamic_shapes = true;
  const Profile p = analyse(make_loop(l), {});
  EXPECT_LT(p.advice.static_share, 0.5);
  EXPECT_EQ(p.advice.verdict, Verdict::kFixFirst);
  ASSERT_FALSE(p.advice.fix_first.empty());
  EXPECT_EQ(p.advice.fix_first[0], Blocker::kDynamicShapes);
}

TEST(ProfileAnalysis, AStarvedLoaderIsHostWork) {
  Loop l;
  l.host_work_ns = 5'000'000, l.kernels = 30, l.kernel_ns = 50'000, l.launch_ns = 10'000;
  const Profile p = analyse(make_loop(l), {});
  EXPECT_GE(share(p, IdleCause::kHost), 0.8);
  EXPECT_EQ(p.advice.verdict, Verdict::kAdviseAgainst);
  // Without pin_memory the batch then crosses in a pageable copy: the loading is still the cost.
  l.pageable_copy_each_step = true;
  EXPECT_GE(share(analyse(make_loop(l), {}), IdleCause::kHost), 0.8);
}

TEST(ProfileAnalysis, AllocationsAndPageableCopiesAreNamed) {
  Loop a;
  a.malloc_each_step = true, a.kernels = 10, a.kernel_ns = 20'000, a.launch_ns = 5'000;
  EXPECT_GT(share(analyse(make_loop(a), {}), IdleCause::kAllocation), 0.3);
  Loop c;
  c.pageable_copy_each_step = true, c.kernels = 10, c.kernel_ns = 20'000, c.launch_ns = 5'000;
  const Profile p = analyse(make_loop(c), {});
  EXPECT_GT(share(p, IdleCause::kPageableCopy), 0.3);
  ASSERT_EQ(p.copies.size(), 1u);
  EXPECT_EQ(p.copies[0].kind, "HtoD pageable");
  EXPECT_EQ(p.copies[0].bytes, 20u << 20);
}

TEST(ProfileAnalysis, WithoutNvtxStepsComeFromTheRepeatingKernelSequence) {
  Loop l;
  l.nvtx = false, l.host_work_ns = 200'000;
  const Profile p = analyse(make_loop(l), {});
  EXPECT_EQ(p.step_source, "kernel-sequence");
  ASSERT_GE(p.steps.size(), 17u);
  // The boundary sits at the longest gap, before each step's first kernel: every step alike.
  EXPECT_DOUBLE_EQ(p.advice.static_share, 1.0);
  EXPECT_EQ(p.advice.kernels_per_step, 5u);  // the sequence repeats every 5 kernels within a step too
}

// A loop that reads its loss each step (.item(): a copy and a stream synchronize) and has no NVTX:
// the step is what the host repeats between the syncs, not the 5-kernel pattern inside it.
TEST(ProfileAnalysis, WithoutNvtxAnItemEachStepMakesTheStep) {
  Loop l;
  l.nvtx = false, l.item_each_step = true;
  const Profile p = analyse(make_loop(l), {});
  EXPECT_EQ(p.step_source, "host-sync");
  EXPECT_GE(p.steps.size(), 17u);
  EXPECT_EQ(p.advice.kernels_per_step, 50u);
  EXPECT_NE(p.advice.verdict, Verdict::kNotEnoughData);
}

// Two syncs in each step (an event wait after 10 kernels, a .item() at the end): the segments
// between syncs alternate, and the step is their period.
TEST(ProfileAnalysis, SeveralSyncsAStepRepeatAsOneStep) {
  Loop l;
  l.nvtx = false, l.item_each_step = true, l.event_sync_after = 10;
  const Profile p = analyse(make_loop(l), {});
  EXPECT_EQ(p.step_source, "host-sync");
  EXPECT_EQ(p.advice.kernels_per_step, 50u);
  EXPECT_DOUBLE_EQ(p.advice.static_share, 1.0);
}

// Batch sizes that change each step keep the kernels' names: still one step per sync.
TEST(ProfileAnalysis, ChangingShapesBetweenSyncsAreStillSteps) {
  Loop l;
  l.nvtx = false, l.item_each_step = true, l.dynamic_shapes = true;
  const Profile p = analyse(make_loop(l), {});
  EXPECT_EQ(p.step_source, "host-sync");
  EXPECT_EQ(p.advice.kernels_per_step, 50u);
  EXPECT_EQ(p.advice.verdict, Verdict::kFixFirst);
}

// gpudoc profile --sample: only steps wholly inside a traced window are analysed, and the NVTX steps
// between the windows say what tracing cost.
TEST(ProfileAnalysis, SampledStepsAreAnalysedInsideTheWindowsAndTheCostIsMeasured) {
  Loop l;
  l.steps = 60, l.traced_steps = 5, l.untraced_steps = 15, l.tracing_ns = 3'000;  // 12 -> 15 us a launch
  const RecordSet set = make_loop(l);
  ASSERT_EQ(set.windows.size(), 3u);
  const Profile p = analyse(set, {});
  EXPECT_EQ(p.step_source, "nvtx:train_step");
  // 3 windows of 5 steps: the first step of the run is the warm-up, and the last step of the first two
  // windows runs out of them (its end is the next traced kernel); the run's last step ends with it
  EXPECT_EQ(p.steps.size(), 3u + 4u + 5u);
  for (const Step& st : p.steps)
    EXPECT_TRUE(std::any_of(set.windows.begin(), set.windows.end(),
                            [&](const TraceWindow& w) { return st.start_ns >= w.start_ns && st.end_ns <= w.end_ns; }));
  ASSERT_TRUE(p.sampling.measured());
  EXPECT_EQ(p.sampling.windows, 3u);
  EXPECT_EQ(p.sampling.steps_traced, 15u);
  EXPECT_EQ(p.sampling.steps_untraced, 45u);
  EXPECT_EQ(p.sampling.step_untraced_ns, 50u * 12'000);
  EXPECT_EQ(p.sampling.step_traced_ns, 50u * 15'000);
  EXPECT_NEAR(p.sampling.overhead(), 0.25, 1e-9);
  // Over the run: 15 steps of 750 us and 45 of 600 us (the steps across a window's edge pay nothing
  // more here), a mean of 637.5 us against 600.
  EXPECT_EQ(p.sampling.step_untraced_mean_ns, 50u * 12'000);
  EXPECT_EQ(p.sampling.step_mean_ns, (15u * 50 * 15'000 + 45u * 50 * 12'000) / 60);
  EXPECT_NEAR(p.sampling.run_overhead(), 0.0625, 1e-9);
  // The launch-bound verdict stands on the traced steps alone.
  EXPECT_GT(p.idle_ns[static_cast<std::size_t>(IdleCause::kLaunch)], 0u);
  EXPECT_EQ(p.idle_ns[static_cast<std::size_t>(IdleCause::kHost)], 0u);
}

// What CUPTI failed to deliver is said, not analysed as if it were the program: on an H200 some
// windows came back with steps but no kernel records, or kernels but no API calls.
TEST(ProfileAnalysis, TracedWindowsMissingKernelsOrApiCallsAreNamed) {
  Loop l;
  l.steps = 60, l.traced_steps = 5, l.untraced_steps = 15;
  const RecordSet whole = make_loop(l);
  ASSERT_EQ(whole.windows.size(), 3u);
  for (const std::string& w : analyse(whole, {}).warnings) EXPECT_EQ(w.find("windows"), std::string::npos) << w;
  auto in = [](const TraceWindow& w) {
    return [w](const auto& r) { return r.start_ns >= w.start_ns && r.start_ns < w.end_ns; };
  };
  RecordSet no_kernels = whole;  // the second window's kernels never came
  std::erase_if(no_kernels.kernels, in(whole.windows[1]));
  RecordSet no_api = whole;  // nor, in the third, the API calls
  std::erase_if(no_api.api_calls, in(whole.windows[2]));
  std::erase_if(no_api.api_calls, in(whole.windows[1]));
  auto said = [](const Profile& p, const std::string& what) {
    return std::count_if(p.warnings.begin(), p.warnings.end(),
                         [&](const std::string& w) { return w.find(what) != std::string::npos; });
  };
  const Profile a = analyse(no_kernels, {});
  EXPECT_EQ(said(a, "no kernel records in 1 of the 3 traced windows that ran steps"), 1)
      << ::testing::PrintToString(a.warnings);
  EXPECT_EQ(said(a, "no API calls"), 0);
  const Profile b = analyse(no_api, {});
  EXPECT_EQ(said(b, "no API calls were recorded in 2 of the 3 traced windows that ran kernels"), 1)
      << ::testing::PrintToString(b.warnings);
  EXPECT_EQ(said(b, "no kernel records"), 0);
}

// A sampled run whose windows caught no kernel at all is still a sampled run: the report says how
// many windows there were and how long they traced, not "traced throughout".
TEST(ProfileAnalysis, ASampledRunWithoutKernelsStillSaysItWasSampled) {
  Loop l;
  l.steps = 60, l.traced_steps = 5, l.untraced_steps = 15;
  RecordSet set = make_loop(l);
  set.kernels.clear();
  const Profile p = analyse(set, {});
  EXPECT_TRUE(p.steps.empty());
  EXPECT_EQ(p.sampling.windows, 3u);
  EXPECT_GT(p.sampling.traced_ns, 0u);
  EXPECT_FALSE(p.sampling.measured());  // no step ranges were chosen without kernels to place them
}

TEST(ProfileAnalysis, UntimedRecordsAreSaidToBeLeftOut) {
  RecordSet set = make_loop(Loop{});
  set.untimed = 3;
  const Profile p = analyse(set, {});
  ASSERT_FALSE(p.warnings.empty());
  EXPECT_NE(p.warnings.back().find("3 kernel or copy records came without valid times"), std::string::npos);
}

TEST(ProfileAnalysis, WithoutSamplingNothingIsSaidOfIt) {
  const Profile p = analyse(make_loop(Loop{}), {});
  EXPECT_EQ(p.sampling.windows, 0u);
  EXPECT_FALSE(p.sampling.measured());
  EXPECT_EQ(p.steps.size(), 19u);
}

TEST(ProfileAnalysis, StepsCanBeLimited) {
  AnalysisOptions o;
  o.max_steps = 4;
  EXPECT_EQ(analyse(make_loop(Loop{}), o).steps.size(), 4u);
}

TEST(ProfileAnalysis, KernelTablesAndNames) {
  const Profile p = analyse(make_loop(Loop{}), {});
  EXPECT_EQ(p.kernel_count, 1000u);
  ASSERT_EQ(p.top_kernels.size(), 2u);
  EXPECT_EQ(p.top_kernels[0].name, "at::native::elementwise_kernel<128, 4>");
  EXPECT_EQ(p.top_kernels[0].count, 800u);
  EXPECT_EQ(p.duration_histogram[1], 1000u);  // 2 us: [2, 4) us
  EXPECT_EQ(short_kernel_name("not_mangled"), "not_mangled");
  // A kernel in an anonymous namespace keeps its name (the '(' there opens no parameter list).
  EXPECT_EQ(short_kernel_name("_ZN2at6native12_GLOBAL__N_111fill_kernelEPf"),
            "at::native::(anonymous namespace)::fill_kernel");
}

TEST(ProfileAnalysis, ApiCallsAreClassifiedByName) {
  EXPECT_EQ(classify_api("cudaStreamSynchronize_v3020"), ApiClass::kSync);
  EXPECT_EQ(classify_api("cudaMemcpy_v3020"), ApiClass::kSync);
  EXPECT_EQ(classify_api("cudaMemcpyAsync_v3020"), ApiClass::kMemcpy);
  EXPECT_EQ(classify_api("cuLaunchKernel"), ApiClass::kLaunch);
  EXPECT_EQ(classify_api("cudaLaunchHostFunc_v10000"), ApiClass::kHostCallback);
  EXPECT_EQ(classify_api("cudaFree_v3020"), ApiClass::kAllocation);
  EXPECT_EQ(classify_api("cudaGetDevice_v3020"), ApiClass::kOther);
}

TEST(ProfileAnalysis, AnEmptySetHasNoStepsAndNoVerdict) {
  const Profile p = analyse(RecordSet{}, {});
  EXPECT_TRUE(p.steps.empty());
  EXPECT_EQ(p.advice.verdict, Verdict::kNotEnoughData);
}

}  // namespace
}  // namespace gpudoc::profile
