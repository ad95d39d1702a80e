// What a person asks of a slice: limits from the flags' texts, and the notes on what the chosen
// mechanism enforces of them.
#include <gtest/gtest.h>
#include <stdlib.h>

#include "slice/slice.hpp"

namespace gpudoc::slice {
namespace {

// A cap above the GPU's memory would never bind: refused, naming the flag, its text and the GPU's size.
TEST(SliceRequest, MemoryBeyondTheGpuIsRefused) {
  const std::uint64_t h200 = 143771ull << 20;
  EXPECT_TRUE(check_memory_fits(*limits_from_text("140G", "", ""), "140G", h200).ok());
  EXPECT_TRUE(check_memory_fits(*limits_from_text("", "30", ""), "", h200).ok());  // no memory cap
  Limits all;
  all.memory_bytes = h200;
  EXPECT_TRUE(check_memory_fits(all, "150754820096", h200).ok());  // the whole GPU
  const auto over = check_memory_fits(*limits_from_text("200G", "", ""), "200G", h200);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().kind(), core::ErrorKind::kBadInput);
  EXPECT_EQ(over.error().message(), "--mem 200G: more than the GPU's 140.4 GiB (150754820096 bytes)");
}

TEST(SliceRequest, LimitsFromTheFlagsTexts) {
  auto all = limits_from_text("40G", "30", "12G");
  ASSERT_TRUE(all.ok()) << all.error().message();
  EXPECT_EQ(all->memory_bytes, 40ull << 30);
  EXPECT_EQ(all->sm_percent, 30u);
  EXPECT_EQ(all->pcie_bytes_per_second, 12ull << 30);
  auto mem_only = limits_from_text("512MiB", "", "");
  ASSERT_TRUE(mem_only.ok());
  EXPECT_EQ(mem_only->sm_percent, 0u);
  EXPECT_EQ(mem_only->pcie_bytes_per_second, 0u);

  auto none = limits_from_text("", "", "");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().kind(), core::ErrorKind::kUsage);
  EXPECT_EQ(none.error().message(),
            "give a limit: --mem SIZE (e.g. --mem 40G), --sm PERCENT (e.g. --sm 30) and/or --pcie RATE (e.g. --pcie "
            "12G)");
  auto bad = limits_from_text("40G", "130", "");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("--sm"), std::string::npos) << bad.error().message();
}

TEST(SliceRequest, NotesSayWhatEachMechanismEnforces) {
  Placement interception;
  interception.mechanism = Mechanism::kInterception;
  Placement mps;
  mps.mechanism = Mechanism::kMps;
  EXPECT_EQ(enforcement_notes({.memory_bytes = 1 << 30}, interception), "");
  const std::string sm = enforcement_notes({.sm_percent = 30}, interception);
  EXPECT_EQ(sm.rfind("gpudoc slice: --sm without MPS: ", 0), 0u) << sm;
  EXPECT_EQ(enforcement_notes({.sm_percent = 30}, mps), "");
  const std::string pcie = enforcement_notes({.pcie_bytes_per_second = 1 << 30}, interception);
  EXPECT_EQ(pcie.rfind("gpudoc slice: --pcie: host<->device copies are held back", 0), 0u) << pcie;
  EXPECT_EQ(enforcement_notes({.pcie_bytes_per_second = 1 << 30}, mps),
            "gpudoc slice: warning: --pcie is not enforced under MPS (the interception library is not loaded)\n");
}

// The plan checks the limits before it looks for a driver, and names the command when no CUDA
// driver can be loaded.
TEST(SlicePlan, LimitsFirstThenTheDriver) {
  auto none = plan({.command = {"python3"}}, "");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().kind(), core::ErrorKind::kUsage);
  auto bad = plan({.mem = "lots", .command = {"python3"}}, "");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("--mem"), std::string::npos) << bad.error().message();
  ::setenv("GPUDOC_SLICE_LIBRARY", "/bin/sh", 1);  // any file: the library is only found, not loaded
  ::setenv("GPUDOC_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
  ::setenv("CUDA_MPS_PIPE_DIRECTORY", "/nonexistent", 1);
  auto no_driver = plan({.mem = "1G", .command = {"/usr/bin/python3", "x.py"}}, "");
  ::unsetenv("GPUDOC_SLICE_LIBRARY");
  ::unsetenv("GPUDOC_CUDA_DRIVER");
  ::unsetenv("CUDA_MPS_PIPE_DIRECTORY");
  ASSERT_FALSE(no_driver.ok());
  EXPECT_EQ(no_driver.error().kind(), core::ErrorKind::kEnvironment) << no_driver.error().message();
  EXPECT_NE(no_driver.error().message().find("gpudoc slice"), std::string::npos) << no_driver.error().message();
}

}  // namespace
}  // namespace gpudoc::slice
