// cuda::explain_device_count_failure: without a driver the user reads "no NVIDIA driver is
// installed", not CUDA's "driver version is insufficient"; a real version mismatch names both
// versions; other failures keep CUDA's own words.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "bench/cuda/device.hpp"

namespace gpudoc::bench::cuda {
namespace {

const std::string kInsufficient =
    "cudaGetDeviceCount: CUDA driver version is insufficient for CUDA runtime version (cudaErrorInsufficientDriver)";
const std::string kNoDevice = "cudaGetDeviceCount: no CUDA-capable device is detected (cudaErrorNoDevice)";

DriverFacts no_driver() {
  DriverFacts f;
  f.libcuda_error =
      "cannot load the NVIDIA driver's CUDA library from libcuda.so.1 (libcuda.so.1: cannot open shared "
      "object file: No such file or directory)";
  f.runtime_version = 13000;
  return f;
}

DriverFacts driver(int version) {
  DriverFacts f;
  f.libcuda_loaded = true;
  f.driver_version = version;
  f.runtime_version = 13000;
  return f;
}

TEST(DeviceCountFailure, WithoutLibcudaSaysNoDriverInsteadOfInsufficientDriver) {
  const core::Error e =
      explain_device_count_failure(DeviceCountFailure::kInsufficientDriver, no_driver(), kInsufficient);
  EXPECT_EQ(e.kind(), core::ErrorKind::kEnvironment);
  EXPECT_EQ(e.message(), "no NVIDIA driver is installed (libcuda.so.1 not found)");
  // cudaErrorNoDevice without libcuda means the same.
  EXPECT_EQ(explain_device_count_failure(DeviceCountFailure::kNoDevice, no_driver(), kNoDevice).message(),
            "no NVIDIA driver is installed (libcuda.so.1 not found)");
}

TEST(DeviceCountFailure, ALibcudaThatCannotBeLoadedSaysWhy) {
  DriverFacts f = no_driver();
  f.libcuda_error = "libcuda.so.1: wrong ELF class: ELFCLASS32";
  const core::Error e = explain_device_count_failure(DeviceCountFailure::kInsufficientDriver, f, kInsufficient);
  EXPECT_EQ(e.kind(), core::ErrorKind::kEnvironment);
  EXPECT_EQ(e.message(),
            "the NVIDIA driver's libcuda.so.1 cannot be loaded: libcuda.so.1: wrong ELF class: ELFCLASS32");
}

TEST(DeviceCountFailure, ADriverOlderThanTheRuntimeNamesBothVersions) {
  const core::Error e =
      explain_device_count_failure(DeviceCountFailure::kInsufficientDriver, driver(12020), kInsufficient);
  EXPECT_EQ(e.kind(), core::ErrorKind::kEnvironment);
  EXPECT_EQ(e.message(),
            "the NVIDIA driver is older than gpudoc's CUDA runtime: the driver supports CUDA 12.2, the runtime is CUDA "
            "13.0; install a newer driver (" +
                kInsufficient + ")");
}

TEST(DeviceCountFailure, WithADriverCudasOwnWordsStay) {
  // Insufficient, yet the driver is new enough (e.g. a forward-compatibility package): CUDA's text.
  EXPECT_EQ(
      explain_device_count_failure(DeviceCountFailure::kInsufficientDriver, driver(13000), kInsufficient).message(),
      kInsufficient);
  EXPECT_EQ(explain_device_count_failure(DeviceCountFailure::kNoDevice, driver(13000), kNoDevice).message(),
            "no NVIDIA GPU is visible (" + kNoDevice + ")");
  const std::string other = "cudaGetDeviceCount: unknown error (cudaErrorUnknown)";
  EXPECT_EQ(explain_device_count_failure(DeviceCountFailure::kOther, no_driver(), other).message(), other);
}

TEST(DeviceCountFailure, VersionCodes) {
  EXPECT_EQ(cuda_version_string(13000), "13.0");
  EXPECT_EQ(cuda_version_string(12080), "12.8");
  EXPECT_EQ(cuda_version_string(0), "none");
}

}  // namespace
}  // namespace gpudoc::bench::cuda
