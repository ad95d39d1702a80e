// Limits as people type them: binary and decimal units, percentages, rates; and the reasons
// given for what cannot be a limit.
#include <gtest/gtest.h>

#include "slice/slice.hpp"

namespace gpudoc::slice {
namespace {

TEST(SliceParse, SizesInBinaryAndDecimalUnits) {
  EXPECT_EQ(parse_size("40G", "--mem").value(), 40ULL << 30);
  EXPECT_EQ(parse_size("40GiB", "--mem").value(), 40ULL << 30);
  EXPECT_EQ(parse_size("512Mi", "--mem").value(), 512ULL << 20);
  EXPECT_EQ(parse_size("1.5T", "--mem").value(), 3ULL << 39);
  EXPECT_EQ(parse_size("8GB", "--mem").value(), 8'000'000'000ULL);
  EXPECT_EQ(parse_size("64k", "--mem").value(), 64ULL << 10);
  EXPECT_EQ(parse_size("4096", "--mem").value(), 4096ULL);
}

TEST(SliceParse, WhatCannotBeASizeSaysWhy) {
  const struct {
    const char* text;
    const char* says;
  } cases[] = {{"0", "must be more than zero"},
               {"-4G", "must be more than zero"},
               {"0.1", "must be more than zero"},
               {"", "not a size"},
               {"G", "not a size"},
               {"4Q", "unknown unit"},
               {"4 G", "unknown unit"},
               {"9e30", "larger than any GPU"}};
  for (const auto& c : cases) {
    const auto r = parse_size(c.text, "--mem");
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.error().kind(), core::ErrorKind::kBadInput);
    EXPECT_NE(r.error().message().find(std::string("--mem ") + c.text + ": "), std::string::npos)
        << r.error().message();
    EXPECT_NE(r.error().message().find(c.says), std::string::npos) << c.text << ": " << r.error().message();
  }
}

TEST(SliceParse, PercentagesAndRates) {
  EXPECT_EQ(parse_percent("30", "--sm").value(), 30U);
  EXPECT_EQ(parse_percent("80%", "--sm").value(), 80U);
  EXPECT_EQ(parse_percent("100", "--sm").value(), 100U);
  EXPECT_FALSE(parse_percent("0", "--sm").ok());
  EXPECT_FALSE(parse_percent("101%", "--sm").ok());
  EXPECT_FALSE(parse_percent("30x", "--sm").ok());
  EXPECT_FALSE(parse_percent("%", "--sm").ok());
  EXPECT_EQ(parse_rate("12G", "--pcie").value(), 12ULL << 30);
  EXPECT_EQ(parse_rate("12GB/s", "--pcie").value(), 12'000'000'000ULL);
  EXPECT_EQ(parse_rate("800M/s", "--pcie").value(), 800ULL << 20);
  EXPECT_NE(parse_rate("fast", "--pcie").error().message().find("not a rate"), std::string::npos);
}

TEST(SliceParse, MpsClientLimitsAreWholeMebibytesNeverRoundedUp) {
  Limits limits;
  limits.memory_bytes = (8ULL << 30) + 12345;
  limits.sm_percent = 30;
  const auto env = mps_environment(limits);
  ASSERT_EQ(env.size(), 2U);
  EXPECT_EQ(env[0], "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=30");
  EXPECT_EQ(env[1], "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=8192MB");
}

// Each new --sm slice's window goes where it overlaps least the parts the running slices hold (in
// 1/10000 of the gate period, a circle): the first free gap wide enough, else the least overlap.
TEST(SliceComputeOffset, NewSlicesGoWhereThePeriodIsFree) {
  EXPECT_EQ(choose_compute_offset(30, {}), 0U);
  EXPECT_EQ(choose_compute_offset(60, {{0, 3000}}), 3000U);                // after a 30 % slice
  EXPECT_EQ(choose_compute_offset(10, {{0, 3000}, {3000, 6000}}), 9000U);  // the last 10 %
  EXPECT_EQ(choose_compute_offset(20, {{3000, 6000}}), 0U);                // the gap before the part taken
  EXPECT_EQ(choose_compute_offset(40, {{0, 2000}, {5000, 1000}}), 6000U);  // [2000,5000) is too narrow
  // A part that wraps past the period's end ([8000, 10000) and [0, 1000)): the next starts at 1000.
  EXPECT_EQ(choose_compute_offset(50, {{8000, 3000}}), 1000U);
  // Over 100 % in all: the least overlap. 70 % and 60 % taken as [0, 7000) and [7000, 13000) (the
  // second wraps to 3000): from 0 a 30 % window overlaps both (6000), from 3000 or 7000 one (3000).
  EXPECT_EQ(choose_compute_offset(30, {{0, 7000}, {7000, 6000}}), 3000U);
  EXPECT_EQ(choose_compute_offset(50, {{0, 5000}, {0, 5000}}), 5000U);  // two at the start: the other half
}

}  // namespace
}  // namespace gpudoc::slice
