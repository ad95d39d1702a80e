// The pure parts of p2p.* and nccl.*: pairs, size schedule, nccl-tests' size convention and
// bus-bandwidth factors (worked numbers), the datasheet figure, matrix and curve text, the
// multi-GPU waivers; the sections under the bench table are tested in view/bench_details_test.cpp.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bench/multi_gpu.hpp"
#include "bench/registry.hpp"

namespace gpudoc::bench {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(MultiGpuPairs, OrderedPairsAreRowMajorWithoutTheDiagonal) {
  EXPECT_TRUE(ordered_pairs(0).empty());
  EXPECT_TRUE(ordered_pairs(1).empty());
  EXPECT_THAT(ordered_pairs(2), ElementsAre(GpuPair{0, 1}, GpuPair{1, 0}));
  EXPECT_THAT(ordered_pairs(3),
              ElementsAre(GpuPair{0, 1}, GpuPair{0, 2}, GpuPair{1, 0}, GpuPair{1, 2}, GpuPair{2, 0}, GpuPair{2, 1}));
  EXPECT_EQ(ordered_pairs(8).size(), 56u);  // n(n-1)
}

TEST(MultiGpuPairs, UnorderedPairsOncePerPair) {
  EXPECT_TRUE(unordered_pairs(1).empty());
  EXPECT_THAT(unordered_pairs(2), ElementsAre(GpuPair{0, 1}));
  EXPECT_THAT(unordered_pairs(3), ElementsAre(GpuPair{0, 1}, GpuPair{0, 2}, GpuPair{1, 2}));
  EXPECT_EQ(unordered_pairs(8).size(), 28u);  // n(n-1)/2
}

TEST(MultiGpuSizes, DoublingFrom8BytesTo1GiB) {
  const auto s = size_schedule(8, std::size_t{1} << 30, 2);
  ASSERT_EQ(s.size(), 28u);  // 2^3 .. 2^30
  EXPECT_EQ(s.front(), 8u);
  EXPECT_EQ(s[1], 16u);
  EXPECT_EQ(s.back(), std::size_t{1} << 30);
}

TEST(MultiGpuSizes, QuadruplingStillEndsAtTheTopSize) {
  const auto s = size_schedule(8, std::size_t{1} << 30, 4);
  // 2^3, 2^5, ..., 2^29, then 2^30 itself so the headline size is always measured.
  ASSERT_EQ(s.size(), 15u);
  EXPECT_EQ(s[0], 8u);
  EXPECT_EQ(s[1], 32u);
  EXPECT_EQ(s[13], std::size_t{1} << 29);
  EXPECT_EQ(s[14], std::size_t{1} << 30);
}

TEST(MultiGpuSizes, DegenerateInputsGiveNothing) {
  EXPECT_TRUE(size_schedule(0, 1024, 2).empty());
  EXPECT_TRUE(size_schedule(8, 1024, 1).empty());
  EXPECT_TRUE(size_schedule(2048, 1024, 2).empty());
  EXPECT_THAT(size_schedule(1024, 1024, 2), ElementsAre(1024u));
}

// nccl-tests: AllReduceGetBw: baseBw = count*typesize / t; busBw = baseBw * 2(n-1)/n.
TEST(MultiGpuCollectives, AllReduceWorkedExample) {
  const auto c = collective_counts(Collective::kAllReduce, std::size_t{1} << 30, 8, 4);
  EXPECT_EQ(c.count, std::size_t{1} << 28);
  EXPECT_EQ(c.send_elems, c.count);
  EXPECT_EQ(c.recv_elems, c.count);
  EXPECT_EQ(c.bytes, std::size_t{1} << 30);
  // 1 GiB in 4 ms on 8 GPUs: algbw = 1073741824 / 0.004 / 1e9 = 268.435456 GB/s;
  // busbw = 268.435456 x 14/8 = 469.762048 GB/s.
  const double algbw = static_cast<double>(c.bytes) / 0.004 / 1e9;
  EXPECT_NEAR(algbw, 268.435456, 1e-9);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::kAllReduce, 8), 1.75);
  EXPECT_NEAR(algbw * bus_bandwidth_factor(Collective::kAllReduce, 8), 469.762048, 1e-9);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::kAllReduce, 2), 1.0);  // 2(2-1)/2
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::kAllReduce, 1), 0.0);
}

// nccl-tests: AllGatherGetCollByteCount: sendcount = count/n, recvcount = sendcount*n;
// AllGatherGetBw: baseBw = sendcount*typesize*n / t; busBw = baseBw * (n-1)/n.
TEST(MultiGpuCollectives, AllGatherWorkedExample) {
  const auto c = collective_counts(Collective::kAllGather, std::size_t{1} << 30, 8, 4);
  EXPECT_EQ(c.count, std::size_t{1} << 25);  // per-rank sendcount: 2^30 / (4 x 8)
  EXPECT_EQ(c.send_elems, std::size_t{1} << 25);
  EXPECT_EQ(c.recv_elems, std::size_t{1} << 28);
  EXPECT_EQ(c.bytes, std::size_t{1} << 30);  // S = the gathered output
  // 1 GiB gathered in 2.5 ms on 8 GPUs: algbw = 429.4967296 GB/s; busbw x 7/8 = 375.8096384.
  const double algbw = static_cast<double>(c.bytes) / 0.0025 / 1e9;
  EXPECT_NEAR(algbw * bus_bandwidth_factor(Collective::kAllGather, 8), 375.8096384, 1e-9);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::kAllGather, 2), 0.5);
}

// nccl-tests: ReduceScatterGetCollByteCount: recvcount = count/n, sendcount = recvcount*n;
// ReduceScatterGetBw: baseBw = recvcount*typesize*n / t; busBw = baseBw * (n-1)/n.
TEST(MultiGpuCollectives, ReduceScatterWorkedExample) {
  const auto c = collective_counts(Collective::kReduceScatter, std::size_t{1} << 30, 2, 4);
  EXPECT_EQ(c.count, std::size_t{1} << 27);  // per-rank recvcount: 2^30 / (4 x 2)
  EXPECT_EQ(c.send_elems, std::size_t{1} << 28);
  EXPECT_EQ(c.recv_elems, std::size_t{1} << 27);
  EXPECT_EQ(c.bytes, std::size_t{1} << 30);  // S = the whole input
  // 1 GiB in 3 ms on 2 GPUs: algbw = 357.913941(3) GB/s; busbw x 1/2 = 178.956970(6).
  const double algbw = static_cast<double>(c.bytes) / 0.003 / 1e9;
  EXPECT_NEAR(algbw * bus_bandwidth_factor(Collective::kReduceScatter, 2), 178.95697066, 1e-6);
}

TEST(MultiGpuCollectives, SizesTruncateToWholeElementsPerRank) {
  // 8 B on 8 GPUs is below one float per rank: nothing to run.
  EXPECT_EQ(collective_counts(Collective::kAllGather, 8, 8, 4).count, 0u);
  EXPECT_EQ(collective_counts(Collective::kReduceScatter, 8, 8, 4).bytes, 0u);
  // 8 B on 2 GPUs: one float each.
  EXPECT_EQ(collective_counts(Collective::kAllGather, 8, 2, 4).bytes, 8u);
  // 100 B on 3 GPUs: 8 floats each, S = 96 B.
  const auto c = collective_counts(Collective::kReduceScatter, 100, 3, 4);
  EXPECT_EQ(c.count, 8u);
  EXPECT_EQ(c.bytes, 96u);
  EXPECT_EQ(collective_counts(Collective::kAllReduce, 10, 8, 4).bytes, 8u);
}

TEST(MultiGpuCollectives, Names) {
  EXPECT_STREQ(to_string(Collective::kAllReduce), "all_reduce");
  EXPECT_STREQ(to_string(Collective::kAllGather), "all_gather");
  EXPECT_STREQ(to_string(Collective::kReduceScatter), "reduce_scatter");
}

TEST(MultiGpuDatasheet, HopperSxmIsNvlink4At450PerDirection) {
  const auto h200 = nvlink_datasheet("NVIDIA H200");
  ASSERT_TRUE(h200.has_value());
  EXPECT_DOUBLE_EQ(h200->per_direction_gb_per_s, 450);
  EXPECT_DOUBLE_EQ(h200->bidirectional_gb_per_s, 900);
  EXPECT_THAT(h200->link, HasSubstr("18 links"));
  EXPECT_TRUE(nvlink_datasheet("NVIDIA H100 80GB HBM3").has_value());
  // Not SXM, or not known: no figure rather than a wrong one.
  EXPECT_FALSE(nvlink_datasheet("NVIDIA H200 NVL").has_value());
  EXPECT_FALSE(nvlink_datasheet("NVIDIA H100 PCIe").has_value());
  EXPECT_FALSE(nvlink_datasheet("NVIDIA A100-SXM4-80GB").has_value());
}

TEST(MultiGpuText, MatrixIsRightAlignedWithDashesWhereNothingWasMeasured) {
  const std::vector<std::vector<std::optional<double>>> m{{std::nullopt, 389.21}, {389.5, std::nullopt}};
  EXPECT_EQ(render_pair_matrix(m, "src", "dst", 1),
            "src\\dst      0      1\n"
            "      0      —  389.2\n"
            "      1  389.5      —\n");
}

TEST(MultiGpuText, BytesInBinaryUnits) {
  EXPECT_EQ(format_bytes(8), "8 B");
  EXPECT_EQ(format_bytes(4096), "4 KiB");
  EXPECT_EQ(format_bytes(std::size_t{96} << 20), "96 MiB");
  EXPECT_EQ(format_bytes(std::size_t{1} << 30), "1 GiB");
  EXPECT_EQ(format_bytes(1000), "1000 B");
}

TEST(MultiGpuText, CurveTable) {
  const std::string t =
      render_curve({{8, 12.345, 0.00065, 0.00065, true}, {std::size_t{1} << 30, 5600.0, 191.7, 383.4, false}});
  EXPECT_THAT(t, HasSubstr("size"));
  EXPECT_THAT(t, HasSubstr("busbw GB/s"));
  EXPECT_THAT(t, HasSubstr("8 B"));
  EXPECT_THAT(t, HasSubstr("12.35"));
  EXPECT_THAT(t, HasSubstr("1 GiB"));
  EXPECT_THAT(t, HasSubstr("383.4"));
  EXPECT_THAT(t, HasSubstr("NO"));
}

TEST(MultiGpuRegistry, KeysAreStableAndComeLast) {
  // Baseline keys: never rename one.
  std::vector<std::string> keys;
  for (const Benchmark* b : registry().all()) keys.push_back(b->key());
  ASSERT_GE(keys.size(), 6u);
  const std::vector<std::string> tail(keys.end() - 6, keys.end());
  EXPECT_THAT(tail, ElementsAre("p2p.bandwidth", "p2p.bidirectional", "p2p.latency", "nccl.all_reduce",
                                "nccl.all_gather", "nccl.reduce_scatter"));
  auto sel = registry().select({"p2p", "nccl"});
  ASSERT_TRUE(sel.ok()) << sel.error().message();
  EXPECT_EQ(sel->size(), 6u);
}

TEST(MultiGpuRegistry, OneGpuWaivesP2pAndNcclWithTheReason) {
  Context ctx;
  ctx.cuda_built = true;
  ctx.gpu = cuda::DeviceInfo{};
  ctx.device_count = 1;
  ctx.peer_access = {{false}};
  for (const char* key : {"p2p.bandwidth", "p2p.bidirectional", "p2p.latency", "nccl.all_reduce", "nccl.all_gather",
                          "nccl.reduce_scatter"}) {
    const Benchmark* b = registry().find(key);
    ASSERT_NE(b, nullptr) << key;
    const auto why = b->applicable(ctx);
    ASSERT_TRUE(why.has_value()) << key;
    EXPECT_THAT(*why, ::testing::StartsWith("waived: needs 2 or more GPUs (1 visible)")) << key;
  }
}

TEST(MultiGpuRegistry, NoPeerAccessWaivesP2p) {
  Context ctx;
  ctx.cuda_built = true;
  ctx.gpu = cuda::DeviceInfo{};
  ctx.device_count = 2;
  ctx.peer_access = {{false, false}, {false, false}};
  const auto why = registry().find("p2p.bandwidth")->applicable(ctx);
  ASSERT_TRUE(why.has_value());
  EXPECT_THAT(*why, HasSubstr("no pair of the 2 GPUs has peer access"));
}

TEST(MultiGpuRegistry, WithoutGpuTheCommonWaiverComesFirst) {
  Context ctx;
  ctx.cuda_built = false;
  for (const char* key : {"p2p.latency", "nccl.all_reduce"}) {
    const auto why = registry().find(key)->applicable(ctx);
    ASSERT_TRUE(why.has_value());
    EXPECT_EQ(*why, "waived: built without CUDA");
  }
}

TEST(MultiGpuRegistry, ContextJsonListsEveryGpuAndPeerAccess) {
  Context ctx;
  ctx.cuda_built = true;
  ctx.gpu = cuda::DeviceInfo{};
  ctx.device_count = 2;
  ctx.gpus = {cuda::DeviceInfo{}, cuda::DeviceInfo{}};
  ctx.gpus[1].index = 1;
  ctx.peer_access = {{false, true}, {true, false}};
  const auto j = to_json(ctx);
  EXPECT_EQ(j["device_count"], 2);
  ASSERT_EQ(j["gpus"].size(), 2u);
  EXPECT_EQ(j["gpus"][1]["index"], 1);
  EXPECT_TRUE(j["peer_access"][0][1].get<bool>());
}

}  // namespace
}  // namespace gpudoc::bench
