// Checks the NCCL mirror (bench/nccl_api.hpp) against NVIDIA's own nccl.h, at compile time: every
// function in GPUDOC_NCCL_FUNCTIONS must have exactly NCCL's prototype and every mirrored constant
// the same value. Built only where nccl.h is installed (it is in the CUDA 13.0 toolkit of the
// build machine); elsewhere it is skipped. If this fails to compile, the mirror is wrong for that
// NCCL: fix nccl_api.hpp, never this file.
#include <gtest/gtest.h>
#include <nccl.h>

#include <type_traits>

#include "bench/nccl_api.hpp"

namespace my = gpudoc::bench::nccl;

// Expanded at global scope, the type names in the list (ncclResult_t, ncclComm_t, cudaStream_t...)
// resolve to NCCL's and CUDA's declarations, not our mirror's.
#define X(need, name, ret, params, args) \
  static_assert(std::is_same_v<decltype(&::name), ret(*) params>, "prototype differs: " #name);
GPUDOC_NCCL_FUNCTIONS(X)
#undef X

// Our function table's types, expanded inside the mirror, are layout-identical to NCCL's: the
// same enum sizes and the same stream type.
static_assert(std::is_same_v<my::cudaStream_t, ::cudaStream_t>);
static_assert(sizeof(my::ncclResult_t) == sizeof(::ncclResult_t));
static_assert(sizeof(my::ncclDataType_t) == sizeof(::ncclDataType_t));
static_assert(sizeof(my::ncclRedOp_t) == sizeof(::ncclRedOp_t));
static_assert(sizeof(my::ncclComm_t) == sizeof(::ncclComm_t));

#define SAME_VALUE(n) static_assert(static_cast<long long>(my::n) == static_cast<long long>(::n), #n)
SAME_VALUE(ncclSuccess);
SAME_VALUE(ncclUnhandledCudaError);
SAME_VALUE(ncclSystemError);
SAME_VALUE(ncclInternalError);
SAME_VALUE(ncclInvalidArgument);
SAME_VALUE(ncclInvalidUsage);
SAME_VALUE(ncclRemoteError);
SAME_VALUE(ncclInProgress);
SAME_VALUE(ncclSum);
SAME_VALUE(ncclFloat32);
#undef SAME_VALUE

TEST(NcclAbi, MirrorMatchesNcclHeader) {
  SUCCEED() << "checked at compile time against NCCL " << NCCL_MAJOR << "." << NCCL_MINOR << "." << NCCL_PATCH;
}
