// gpudoc::bench::nccl — the subset of NCCL that `gpudoc bench` uses, declared here instead of
// including nccl.h, the one list of every NCCL function gpudoc calls, and the loader.
//
// PRIVATE to gpudoc_bench and its tests: no public header includes this file.
//
// Why declare NCCL ourselves: NCCL is loaded with dlopen("libnccl.so.2") at run time, so the
// binary has no link-time dependency on it (the portable build runs where NCCL is absent; the
// nccl.* benchmarks are then waived), and the build machine need not have nccl.h. Every type,
// constant and signature below mirrors NVIDIA's nccl.h (checked against NCCL 2.28.9's nccl.h from
// the CUDA 13.0 toolkit); tests/unit/bench/nccl_abi_check.cpp re-checks them at compile time
// wherever nccl.h is installed. Names keep NCCL's spelling so each line can be diffed against
// nccl.h. C++17 (the .cu files include it); no third-party headers.
//
// One list, many expansions (as gpu/nvml/nvml_api.hpp):
//
//   #define X(need, name, ret, params, args) ret (*name) params = nullptr;
//   GPUDOC_NCCL_FUNCTIONS(X)     // -> the function table NcclApi below
//   #undef X
//
//   auto lib = nccl::load_nccl_library("");        // Result<unique_ptr<NcclLibrary>>
//   int v = 0; lib.value()->api().ncclGetVersion(&v);
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

// The CUDA runtime's stream type is `struct CUstream_st*` (cuda_runtime_api.h / driver_types.h);
// declaring the incomplete struct here makes our cudaStream_t the very same type as CUDA's.
struct CUstream_st;

namespace gpudoc::bench::nccl {

// ---- Types and constants (nccl.h) -----------------------------------------------------------

using cudaStream_t = ::CUstream_st*;

struct ncclComm;  // opaque
using ncclComm_t = ncclComm*;

// C enums in nccl.h; the fixed underlying type keeps them 4 bytes, as the C ABI has them.
enum ncclResult_t : int {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
};

enum ncclRedOp_t : int {
  ncclSum = 0,
};

enum ncclDataType_t : int {
  ncclFloat32 = 7,
};

static_assert(sizeof(ncclResult_t) == 4 && sizeof(ncclRedOp_t) == 4 && sizeof(ncclDataType_t) == 4);

// ---- The one list of NCCL functions gpudoc calls ----------------------------------------------
//   X(need, name, return type, (parameters), (argument names))
// need: kRequired — a library lacking it cannot run the benchmarks (load fails with
// kEnvironment); kOptional — a missing symbol only loses a nicety (a better error message).
#define GPUDOC_NCCL_FUNCTIONS(X)                                                                                       \
  X(kRequired, ncclGetVersion, ncclResult_t, (int* version), (version))                                                \
  X(kOptional, ncclGetErrorString, const char*, (ncclResult_t result), (result))                                       \
  X(kOptional, ncclGetLastError, const char*, (ncclComm_t comm), (comm))                                               \
  X(kRequired, ncclCommInitAll, ncclResult_t, (ncclComm_t * comm, int ndev, const int* devlist),                       \
    (comm, ndev, devlist))                                                                                             \
  X(kRequired, ncclCommDestroy, ncclResult_t, (ncclComm_t comm), (comm))                                               \
  X(kRequired, ncclCommAbort, ncclResult_t, (ncclComm_t comm), (comm))                                                 \
  X(kRequired, ncclCommGetAsyncError, ncclResult_t, (ncclComm_t comm, ncclResult_t * asyncError), (comm, asyncError))  \
  X(kRequired, ncclGroupStart, ncclResult_t, (), ())                                                                   \
  X(kRequired, ncclGroupEnd, ncclResult_t, (), ())                                                                     \
  X(kRequired, ncclAllReduce, ncclResult_t,                                                                            \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,     \
     cudaStream_t stream),                                                                                             \
    (sendbuff, recvbuff, count, datatype, op, comm, stream))                                                           \
  X(kRequired, ncclAllGather, ncclResult_t,                                                                            \
    (const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype, ncclComm_t comm,                 \
     cudaStream_t stream),                                                                                             \
    (sendbuff, recvbuff, sendcount, datatype, comm, stream))                                                           \
  X(kRequired, ncclReduceScatter, ncclResult_t,                                                                        \
    (const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, \
     cudaStream_t stream),                                                                                             \
    (sendbuff, recvbuff, recvcount, datatype, op, comm, stream))

// The function table. A null pointer means the loaded library lacks that symbol.
struct NcclApi {
#define GPUDOC_NCCL_X(need, name, ret, params, args) ret(*name) params = nullptr;
  GPUDOC_NCCL_FUNCTIONS(GPUDOC_NCCL_X)
#undef GPUDOC_NCCL_X
};

// How many functions the list has (for tests that walk it).
inline constexpr std::size_t kNcclFunctionCount = 0
#define GPUDOC_NCCL_X(need, name, ret, params, args) +1
    GPUDOC_NCCL_FUNCTIONS(GPUDOC_NCCL_X)
#undef GPUDOC_NCCL_X
    ;

// A dlopen'ed libnccl and the table resolved from it. Never closed (core/dynamic_library.hpp states
// why: NCCL's proxy threads and CUDA state would run unmapped code); the mapping lives until the
// process ends.
class NcclLibrary {
 public:
  NcclLibrary(const NcclLibrary&) = delete;
  NcclLibrary& operator=(const NcclLibrary&) = delete;
  ~NcclLibrary() = default;

  [[nodiscard]] const NcclApi& api() const { return api_; }
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  friend core::Result<std::unique_ptr<NcclLibrary>> load_nccl_library(const std::string& path);
  NcclLibrary() = default;
  NcclApi api_;
  std::string path_;
};

// The soname NCCL packages install (libnccl2 on Debian/Ubuntu, the nvidia-nccl wheels).
inline constexpr std::string_view kNcclLibraryName = "libnccl.so.2";
// Environment variable that names another library file to load instead (e.g. the NCCL that a
// PyTorch wheel ships: .../site-packages/nvidia/nccl/lib/libnccl.so.2).
inline constexpr const char* kNcclLibraryEnv = "GPUDOC_NCCL_LIBRARY";

// Loads `path` (empty: $GPUDOC_NCCL_LIBRARY if set, else kNcclLibraryName through the dynamic
// loader's search path) through core::open_library and resolves every symbol in
// GPUDOC_NCCL_FUNCTIONS. Errors: kEnvironment when the library cannot be loaded ("cannot load NCCL
// from <file> (<why>); ...") or a kRequired symbol is missing ("<file> lacks required NCCL
// functions (<names>); ..."). Thread-safe.
[[nodiscard]] core::Result<std::unique_ptr<NcclLibrary>> load_nccl_library(const std::string& path);

// The process-wide NCCL, loaded on first use by load_nccl_library("") and kept (success or the
// error) for the rest of the process. Thread-safe.
[[nodiscard]] const core::Result<std::unique_ptr<NcclLibrary>>& shared_nccl_library();

// The kRequired functions `api` lacks (null pointers), by name; empty when all are there.
[[nodiscard]] std::vector<std::string> missing_required(const NcclApi& api);

// THE conversion of an NCCL return code into a gpudoc error: "<what>: <ncclGetErrorString>
// (ncclResult_t <code>)" plus ncclGetLastError's detail when the library has it. Kinds:
// ncclUnhandledCudaError / ncclSystemError / ncclRemoteError -> kEnvironment (the machine:
// driver, shared memory, a peer); everything else -> kInternal (a misuse by gpudoc or an NCCL
// bug). Precondition: rc != ncclSuccess.
[[nodiscard]] core::Error nccl_error(const NcclApi& api, ncclResult_t rc, std::string_view what);

// "2.28.9" from ncclGetVersion's code (22809; codes before 2.9 were X*1000 + Y*100 + Z).
[[nodiscard]] std::string version_string(int code);

// NVLink SHARP (NVLS, NVLink multicast) must stay off on the shared machines gpudoc is measured
// on, and it changes which algorithm NCCL runs (so the figures would not compare across
// machines): before the first communicator is created, NCCL_NVLS_ENABLE is set to "0" unless the
// user set it. Returns what was decided, for the result's params. Not thread-safe (setenv); call
// before any NCCL thread exists.
struct NvlsSetting {
  std::string value;           // NCCL_NVLS_ENABLE as NCCL will read it
  bool set_by_gpudoc = false;  // false: the user's own value was kept
};
NvlsSetting ensure_nvls_disabled_unless_user_set();

}  // namespace gpudoc::bench::nccl
