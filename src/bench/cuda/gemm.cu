// Matrix-multiply throughput through cuBLASLt, behind cuda/gemm.hpp.
//
// cuBLASLt is loaded with dlopen: cublasLt.h is included for its types and enum values only, and
// each function gpudoc calls is declared once, in GPUDOC_CUBLASLT_FUNCTIONS, as a pointer of the
// header's own type (decltype), so a signature can never drift from the header. Nothing here
// references a cuBLASLt symbol at link time (the test `nm` check in docs/methodology.md: none).
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "bench/cuda/check.cuh"
#include "bench/cuda/gemm.hpp"
#include "bench/cuda/raii.cuh"
#include "core/dynamic_library.hpp"

namespace gpudoc::bench::cuda {
namespace {

#define GPUDOC_CUBLASLT_FUNCTIONS(X)      \
  X(cublasLtGetVersion)                   \
  X(cublasLtGetStatusName)                \
  X(cublasLtGetStatusString)              \
  X(cublasLtCreate)                       \
  X(cublasLtDestroy)                      \
  X(cublasLtMatmulDescCreate)             \
  X(cublasLtMatmulDescDestroy)            \
  X(cublasLtMatmulDescSetAttribute)       \
  X(cublasLtMatrixLayoutCreate)           \
  X(cublasLtMatrixLayoutDestroy)          \
  X(cublasLtMatmulPreferenceCreate)       \
  X(cublasLtMatmulPreferenceDestroy)      \
  X(cublasLtMatmulPreferenceSetAttribute) \
  X(cublasLtMatmulAlgoGetHeuristic)       \
  X(cublasLtMatmulAlgoConfigGetAttribute) \
  X(cublasLtMatmulAlgoConfigSetAttribute) \
  X(cublasLtMatmulAlgoCheck)              \
  X(cublasLtMatmul)

struct LtApi {
#define GPUDOC_X(fn) decltype(&::fn) fn = nullptr;
  GPUDOC_CUBLASLT_FUNCTIONS(GPUDOC_X)
#undef GPUDOC_X
};

struct Loaded {
  LtApi api;
  std::string description;  // "libcublasLt.so.13 (cuBLASLt 130100)"
  std::string error;        // non-empty: not loaded, and why
};

// Loads cuBLASLt and resolves every function in GPUDOC_CUBLASLT_FUNCTIONS (all required).
Loaded load() {
  Loaded l;
  // $GPUDOC_CUBLASLT names the one library to use; otherwise the loader's path, then the usual CUDA
  // folders (so a run works without LD_LIBRARY_PATH), CUDA 13 before 12.
  const core::LibrarySpec spec{
      "cuBLASLt",
      {"libcublasLt.so.13", "/usr/local/cuda-13.0/lib64/libcublasLt.so.13",
       "/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcublasLt.so.13", "/usr/local/cuda/lib64/libcublasLt.so.13",
       "libcublasLt.so.12", "/usr/local/cuda/lib64/libcublasLt.so.12"},
      "GPUDOC_CUBLASLT",
      "add the CUDA lib64 folder to LD_LIBRARY_PATH or set GPUDOC_CUBLASLT to the library"};
  auto opened = core::open_library(spec);
  if (!opened) {
    l.error = opened.error().message();
    return l;
  }
  core::SymbolResolver symbols(*opened);
#define GPUDOC_X(fn) symbols.resolve(core::Need::kRequired, #fn, l.api.fn);
  GPUDOC_CUBLASLT_FUNCTIONS(GPUDOC_X)
#undef GPUDOC_X
  if (auto st = symbols.status(); !st) {
    l.error = st.error().message();
    l.api = LtApi{};
    return l;
  }
  const std::size_t version = l.api.cublasLtGetVersion();
  if (version < 120000) {
    l.error =
        "cuBLASLt at " + opened->file() + " is version " + std::to_string(version) + "; gpudoc needs 12.0 or newer";
    l.api = LtApi{};
    return l;
  }
  l.description = opened->file() + " (cuBLASLt " + std::to_string(version) + ")";
  return l;
}

const Loaded& loaded() {
  static const Loaded state = load();
  return state;
}

// The one conversion of cuBLASLt statuses: "cublasLtMatmul: the requested functionality is not
// supported (CUBLAS_STATUS_NOT_SUPPORTED)".
core::Error lt_error(const char* call, cublasStatus_t s) {
  const LtApi& api = loaded().api;
  const std::string name =
      api.cublasLtGetStatusName != nullptr ? api.cublasLtGetStatusName(s) : std::to_string(static_cast<int>(s));
  const std::string text = api.cublasLtGetStatusString != nullptr ? api.cublasLtGetStatusString(s) : "cuBLASLt error";
  core::ErrorKind kind = core::ErrorKind::kInternal;
  switch (s) {
    case CUBLAS_STATUS_NOT_SUPPORTED:
    case CUBLAS_STATUS_ARCH_MISMATCH: kind = core::ErrorKind::kNotSupported; break;
    case CUBLAS_STATUS_NOT_INITIALIZED:
    case CUBLAS_STATUS_ALLOC_FAILED:
    case CUBLAS_STATUS_LICENSE_ERROR: kind = core::ErrorKind::kEnvironment; break;
    default: break;
  }
  return core::Error(kind, std::string(call) + ": " + text + " (" + name + ")");
}

#define GPUDOC_LT_TRY(call)                                                          \
  do {                                                                               \
    const cublasStatus_t gpudoc_lt_s_ = (call);                                      \
    if (gpudoc_lt_s_ != CUBLAS_STATUS_SUCCESS) return lt_error(#call, gpudoc_lt_s_); \
  } while (0)

// Owner of one cuBLASLt object, released with the loaded API's `Destroy` on every path.
template <class T, cublasStatus_t (*LtApi::*Destroy)(T)>
struct LtOwner {
  T v = nullptr;
  LtOwner() = default;
  LtOwner(const LtOwner&) = delete;
  LtOwner& operator=(const LtOwner&) = delete;
  ~LtOwner() {
    if (v != nullptr) (void)(loaded().api.*Destroy)(v);
  }
};
using LtHandle = LtOwner<cublasLtHandle_t, &LtApi::cublasLtDestroy>;
using MatmulDesc = LtOwner<cublasLtMatmulDesc_t, &LtApi::cublasLtMatmulDescDestroy>;
using Layout = LtOwner<cublasLtMatrixLayout_t, &LtApi::cublasLtMatrixLayoutDestroy>;
using Preference = LtOwner<cublasLtMatmulPreference_t, &LtApi::cublasLtMatmulPreferenceDestroy>;

// Per type: the storage types of A/B and C/D and the compute type.
struct TypeSpec {
  cudaDataType_t ab;
  cudaDataType_t cd;
  cublasComputeType_t compute;
};
TypeSpec spec(GemmType t) {
  switch (t) {
    case GemmType::kFp32: return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F};
    case GemmType::kTf32: return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32};
    case GemmType::kFp16: return {CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F};
    case GemmType::kBf16: return {CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F};
    case GemmType::kFp8E4m3: return {CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F};
  }
  return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F};
}

// FP8 per-tensor scales: powers of two, so the products stay exact, and not 1, so a scale cuBLASLt
// ignored shows in the verification (D = 0.5 * 0.25 * A^T B).
constexpr float kFp8ScaleA = 0.5f;
constexpr float kFp8ScaleB = 0.25f;

// Uniform in [-1, 1) from the element index (splitmix64): random operands, as real work has (zeros
// would draw less power and run at higher clocks), reproducible without a host copy.
__device__ float uniform_pm1(std::uint64_t i, std::uint64_t seed) {
  std::uint64_t z = i + seed * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

__device__ void store(float* p, float v) { *p = v; }
__device__ void store(__half* p, float v) { *p = __float2half_rn(v); }
__device__ void store(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }
__device__ void store(__nv_fp8_e4m3* p, float v) { *p = __nv_fp8_e4m3(v); }

template <typename T>
__global__ void fill_uniform(T* __restrict__ p, std::size_t n, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    store(p + i, uniform_pm1(i, seed));
}

template <typename T>
core::Status fill(void* p, std::size_t n, std::uint64_t seed, cudaStream_t s) {
  fill_uniform<T><<<1024, 256, 0, s>>>(static_cast<T*>(p), n, seed);
  GPUDOC_CUDA_TRY(cudaGetLastError());
  return core::ok_status();
}

core::Status fill_inputs(GemmType t, void* p, std::size_t n, std::uint64_t seed, cudaStream_t s) {
  switch (t) {
    case GemmType::kFp32:
    case GemmType::kTf32: return fill<float>(p, n, seed, s);
    case GemmType::kFp16: return fill<__half>(p, n, seed, s);
    case GemmType::kBf16: return fill<__nv_bfloat16>(p, n, seed, s);
    case GemmType::kFp8E4m3: return fill<__nv_fp8_e4m3>(p, n, seed, s);
  }
  return core::Error(core::ErrorKind::kInternal, "fill_inputs: unknown type");
}

// A stored element as a double, decoded on the host from its bytes.
double decode_input(GemmType t, const unsigned char* p) {
  switch (t) {
    case GemmType::kFp32:
    case GemmType::kTf32: {
      float f;
      std::memcpy(&f, p, sizeof f);
      return f;
    }
    case GemmType::kFp16: {
      std::uint16_t b;
      std::memcpy(&b, p, sizeof b);
      return fp16_to_float(b);
    }
    case GemmType::kBf16: {
      std::uint16_t b;
      std::memcpy(&b, p, sizeof b);
      return bf16_to_float(b);
    }
    case GemmType::kFp8E4m3: return fp8_e4m3_to_float(*p);
  }
  return 0;
}

// The output: as the input type, except fp8 GEMMs write bf16.
double decode_output(GemmType t, const unsigned char* p) {
  return decode_input(t == GemmType::kFp8E4m3 ? GemmType::kBf16 : t, p);
}

std::string shape(const GemmOptions& o) {
  return std::string(to_string(o.type)) + " " + std::to_string(o.m) + "x" + std::to_string(o.n) + "x" +
         std::to_string(o.k);
}

std::string layout_tag(bool a_transposed) { return a_transposed ? " (TN)" : " (NN)"; }

// The thread-block cluster shapes tried as variants of each layout's first pick.
struct ClusterShape {
  std::uint16_t id;  // cublasLtClusterShape_t
  const char* name;
};
constexpr ClusterShape kClusterShapes[] = {{CUBLASLT_CLUSTER_SHAPE_1x1x1, "1x1x1"},
                                           {CUBLASLT_CLUSTER_SHAPE_2x1x1, "2x1x1"},
                                           {CUBLASLT_CLUSTER_SHAPE_1x2x1, "1x2x1"},
                                           {CUBLASLT_CLUSTER_SHAPE_2x2x1, "2x2x1"}};

// What an algorithm is configured as (cublasLtMatmulAlgoConfigGetAttribute); -1 where unreadable.
struct AlgoConfig {
  std::int64_t id = -1, tile = -1, stages = -1, swizzle = -1, custom = -1, cluster = -1, inner = -1, split_k = -1,
               reduction = -1;
  auto tied() const { return std::tie(id, tile, stages, swizzle, custom, cluster, inner, split_k, reduction); }
  bool operator==(const AlgoConfig& o) const { return tied() == o.tied(); }
};

template <typename T>
std::int64_t config_value(const LtApi& lt, const cublasLtMatmulAlgo_t& a, cublasLtMatmulAlgoConfigAttributes_t attr) {
  T v{};
  std::size_t written = 0;
  if (lt.cublasLtMatmulAlgoConfigGetAttribute(&a, attr, &v, sizeof v, &written) != CUBLAS_STATUS_SUCCESS) return -1;
  return static_cast<std::int64_t>(v);
}

AlgoConfig algo_config(const LtApi& lt, const cublasLtMatmulAlgo_t& a) {
  AlgoConfig c;
  c.id = config_value<std::int32_t>(lt, a, CUBLASLT_ALGO_CONFIG_ID);
  c.tile = config_value<std::uint32_t>(lt, a, CUBLASLT_ALGO_CONFIG_TILE_ID);
  c.stages = config_value<std::uint32_t>(lt, a, CUBLASLT_ALGO_CONFIG_STAGES_ID);
  c.swizzle = config_value<std::uint32_t>(lt, a, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING);
  c.custom = config_value<std::uint32_t>(lt, a, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION);
  c.cluster = config_value<std::uint16_t>(lt, a, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID);
  c.inner = config_value<std::uint16_t>(lt, a, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID);
  c.split_k = config_value<std::int32_t>(lt, a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM);
  c.reduction = config_value<std::uint32_t>(lt, a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME);
  return c;
}

// "algo 43, tile id 23, stages id 34, cluster 2x1x1, CTA swizzling 1, custom option 0, split-K 1"
// (ids as cublasLt.h numbers them: cublasLtMatmulTile_t, cublasLtMatmulStages_t).
std::string describe(const AlgoConfig& c) {
  std::string cluster = "id " + std::to_string(c.cluster);
  if (c.cluster == CUBLASLT_CLUSTER_SHAPE_AUTO) cluster = "auto";
  for (const ClusterShape& shape : kClusterShapes)
    if (c.cluster == shape.id) cluster = shape.name;
  return "algo " + std::to_string(c.id) + ", tile id " + std::to_string(c.tile) + ", stages id " +
         std::to_string(c.stages) + ", cluster " + cluster + ", CTA swizzling " + std::to_string(c.swizzle) +
         ", custom option " + std::to_string(c.custom) + ", split-K " + std::to_string(c.split_k);
}

}  // namespace

core::Result<std::string> load_cublaslt() {
  const Loaded& l = loaded();
  if (!l.error.empty()) return core::Error(core::ErrorKind::kEnvironment, l.error);
  return l.description;
}

namespace {

core::Status check_options(const GemmOptions& o) {
  if (o.repetitions < 1 || o.m < 16 || o.n < 16 || o.k < 16 || o.m % 16 != 0 || o.n % 16 != 0 || o.k % 16 != 0 ||
      o.algo_candidates < 1 || o.verify_elements < 1)
    return core::Error(core::ErrorKind::kUsage,
                       "run_gemm: repetitions, candidates and checked elements must be >= 1; M, N, K multiples of 16");
  return core::ok_status();
}

// Each FP8 scale on its own 256-byte boundary, as if cudaMalloc'd alone (the NVIDIA samples do so).
constexpr std::size_t kScaleStride = 256 / sizeof(float);

// The operands and scratch of one GEMM, on the device. The A buffer holds M*K random values for
// either layout, read as the chosen layout says (also when verifying).
struct Operands {
  DeviceBuffer a;
  DeviceBuffer b;
  // FP8 only: a zeroed bf16 C apart from D, as NVIDIA's LtFp8Matmul sample has it (the first H200
  // run, with C == D in place, had every FP8 candidate refused).
  DeviceBuffer c;
  DeviceBuffer d;
  DeviceBuffer workspace;
  DeviceBuffer scales;

  [[nodiscard]] const float* scale_a() const { return static_cast<const float*>(scales.ptr); }
  [[nodiscard]] const float* scale_b() const { return scale_a() + kScaleStride; }
};

// Allocates the operands and fills A and B with random values, C with zeros (FP8), the FP8 scales.
core::Status prepare_operands(const GemmOptions& o, cudaStream_t s, Operands& x) {
  const bool fp8 = o.type == GemmType::kFp8E4m3;
  const std::size_t in_bytes = gemm_input_bytes(o.type);
  const std::size_t out_bytes = gemm_output_bytes(o.type);
  GPUDOC_CUDA_TRY(cudaMalloc(&x.a.ptr, o.k * o.m * in_bytes));
  GPUDOC_CUDA_TRY(cudaMalloc(&x.b.ptr, o.k * o.n * in_bytes));
  GPUDOC_CUDA_TRY(cudaMalloc(&x.d.ptr, o.m * o.n * out_bytes));
  if (fp8) {
    GPUDOC_CUDA_TRY(cudaMalloc(&x.c.ptr, o.m * o.n * out_bytes));
    GPUDOC_CUDA_TRY(cudaMemsetAsync(x.c.ptr, 0, o.m * o.n * out_bytes, s));
  }
  GPUDOC_CUDA_TRY(cudaMalloc(&x.workspace.ptr, o.workspace_bytes));
  GPUDOC_CUDA_TRY(cudaMalloc(&x.scales.ptr, 2 * kScaleStride * sizeof(float)));
  if (auto st = fill_inputs(o.type, x.a.ptr, o.k * o.m, 1, s); !st) return st.error();
  if (auto st = fill_inputs(o.type, x.b.ptr, o.k * o.n, 2, s); !st) return st.error();
  GPUDOC_CUDA_TRY(cudaMemcpyAsync(x.scales.ptr, &kFp8ScaleA, sizeof(float), cudaMemcpyHostToDevice, s));
  GPUDOC_CUDA_TRY(cudaMemcpyAsync(static_cast<float*>(x.scales.ptr) + kScaleStride, &kFp8ScaleB, sizeof(float),
                                  cudaMemcpyHostToDevice, s));
  GPUDOC_CUDA_TRY(cudaStreamSynchronize(s));
  return core::ok_status();
}

// One layout of A: its matmul description and A's matrix layout.
struct LayoutCase {
  bool a_transposed = false;
  MatmulDesc desc;
  Layout la;
};

// What cuBLASLt is asked: the handle, each layout of A tried, B's and D's layouts, the preference.
struct Problem {
  LtHandle handle;
  std::vector<std::unique_ptr<LayoutCase>> layouts;
  Layout lb;
  Layout ld;
  Preference pref;
};

// A's layout `transposed` (stored K x M, lda = K) or not (stored M x K, lda = M), with the FP8 scales.
core::Result<std::unique_ptr<LayoutCase>> layout_case(const LtApi& lt, const GemmOptions& o, bool transposed,
                                                      const Operands& x) {
  const TypeSpec ts = spec(o.type);
  auto lc = std::make_unique<LayoutCase>();
  lc->a_transposed = transposed;
  GPUDOC_LT_TRY(lt.cublasLtMatmulDescCreate(&lc->desc.v, ts.compute, CUDA_R_32F));
  const cublasOperation_t trans_a = transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t trans_b = CUBLAS_OP_N;
  GPUDOC_LT_TRY(lt.cublasLtMatmulDescSetAttribute(lc->desc.v, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a, sizeof trans_a));
  GPUDOC_LT_TRY(lt.cublasLtMatmulDescSetAttribute(lc->desc.v, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b, sizeof trans_b));
  if (o.type == GemmType::kFp8E4m3) {
    const float* scale_a = x.scale_a();
    const float* scale_b = x.scale_b();
    GPUDOC_LT_TRY(
        lt.cublasLtMatmulDescSetAttribute(lc->desc.v, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &scale_a, sizeof scale_a));
    GPUDOC_LT_TRY(
        lt.cublasLtMatmulDescSetAttribute(lc->desc.v, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &scale_b, sizeof scale_b));
  }
  if (transposed)  // stored K x M, lda = K
    GPUDOC_LT_TRY(lt.cublasLtMatrixLayoutCreate(&lc->la.v, ts.ab, o.k, o.m, static_cast<std::int64_t>(o.k)));
  else  // stored M x K, lda = M
    GPUDOC_LT_TRY(lt.cublasLtMatrixLayoutCreate(&lc->la.v, ts.ab, o.m, o.k, static_cast<std::int64_t>(o.m)));
  // Spelled out: nvcc's C++17 front end does not move a returned local into Result's converting
  // constructor, and the host compiler calls a plain std::move redundant.
  return core::Result<std::unique_ptr<LayoutCase>>(std::move(lc));
}

// Layouts tried: "TN" (A stored K x M and transposed, B K x N: both operands K-major, the layout
// Hopper's tensor-core instructions read natively, and the only one FP8 accepts) and, except for
// FP8, "NN" (A stored M x K), the layout PyTorch's row-major `a @ b` reaches cuBLAS with (it
// computes b^T a^T column-major, both untransposed). The candidates of both compete.
core::Status describe_problem(const LtApi& lt, const GemmOptions& o, const Operands& x, Problem& p) {
  const TypeSpec ts = spec(o.type);
  GPUDOC_LT_TRY(lt.cublasLtCreate(&p.handle.v));
  for (const bool transposed : {true, false}) {
    if (!transposed && o.type == GemmType::kFp8E4m3) continue;
    auto lc = layout_case(lt, o, transposed, x);
    if (!lc) return lc.error();
    p.layouts.push_back(std::move(*lc));
  }
  GPUDOC_LT_TRY(lt.cublasLtMatrixLayoutCreate(&p.lb.v, ts.ab, o.k, o.n, static_cast<std::int64_t>(o.k)));
  GPUDOC_LT_TRY(lt.cublasLtMatrixLayoutCreate(&p.ld.v, ts.cd, o.m, o.n, static_cast<std::int64_t>(o.m)));
  GPUDOC_LT_TRY(lt.cublasLtMatmulPreferenceCreate(&p.pref.v));
  const std::uint64_t max_workspace = o.workspace_bytes;
  GPUDOC_LT_TRY(lt.cublasLtMatmulPreferenceSetAttribute(p.pref.v, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                        &max_workspace, sizeof max_workspace));
  return core::ok_status();
}

struct Candidate {
  const LayoutCase* layout;
  cublasLtMatmulHeuristicResult_t h;
  std::string origin;  // "heuristics #3 (NN)", "cluster 2x1x1 of heuristics #0 (TN)"
  AlgoConfig config;   // of h.algo, read once
};

// Every layout's candidates, in heuristic order, layout after layout (TN first). Errors:
// kNotSupported when the heuristics offer none.
core::Result<std::vector<Candidate>> heuristic_candidates(const LtApi& lt, const GemmOptions& o, const Problem& p) {
  std::vector<Candidate> candidates;
  for (const auto& lc : p.layouts) {
    std::vector<cublasLtMatmulHeuristicResult_t> found(static_cast<std::size_t>(o.algo_candidates));
    int n = 0;
    GPUDOC_LT_TRY(lt.cublasLtMatmulAlgoGetHeuristic(p.handle.v, lc->desc.v, lc->la.v, p.lb.v, p.ld.v, p.ld.v, p.pref.v,
                                                    o.algo_candidates, found.data(), &n));
    for (int i = 0; i < n; ++i) {
      const cublasLtMatmulHeuristicResult_t& h = found[static_cast<std::size_t>(i)];
      candidates.push_back({lc.get(), h,
                            "heuristics #" + std::to_string(candidates.size()) + layout_tag(lc->a_transposed),
                            algo_config(lt, h.algo)});
    }
  }
  if (candidates.empty())
    return core::Error(core::ErrorKind::kNotSupported, "cublasLtMatmulAlgoGetHeuristic: no algorithm for " + shape(o));
  return core::Result<std::vector<Candidate>>(std::move(candidates));
}

// Cluster-shape variants of each layout's first pick, appended to `candidates`; returns how many.
// The heuristics offer one thread-block cluster shape per kernel and tile; under the power cap
// another shape of the same kernel can be faster in the steady state, so the variants compete too
// (on the H200 a TF32 variant beats the offered shape: docs/results/bench-h200.md). A variant
// cuBLASLt's check refuses, or one with the configuration of a candidate already there, is left
// out; one that fails to run is skipped like any other candidate.
int add_cluster_variants(const LtApi& lt, const GemmOptions& o, const Problem& p, std::vector<Candidate>& candidates) {
  const int offered = static_cast<int>(candidates.size());
  int added = 0;
  for (const auto& lc : p.layouts) {
    int first = -1;
    for (int i = 0; i < offered && first < 0; ++i)
      if (candidates[static_cast<std::size_t>(i)].layout == lc.get() &&
          candidates[static_cast<std::size_t>(i)].h.state == CUBLAS_STATUS_SUCCESS)
        first = i;
    if (first < 0) continue;
    for (const ClusterShape& shape : kClusterShapes) {
      Candidate v = candidates[static_cast<std::size_t>(first)];
      if (lt.cublasLtMatmulAlgoConfigSetAttribute(&v.h.algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &shape.id,
                                                  sizeof shape.id) != CUBLAS_STATUS_SUCCESS)
        continue;
      cublasLtMatmulHeuristicResult_t checked{};
      if (lt.cublasLtMatmulAlgoCheck(p.handle.v, lc->desc.v, lc->la.v, p.lb.v, p.ld.v, p.ld.v, &v.h.algo, &checked) !=
              CUBLAS_STATUS_SUCCESS ||
          checked.workspaceSize > o.workspace_bytes)
        continue;
      v.config = algo_config(lt, v.h.algo);
      if (std::any_of(candidates.begin(), candidates.end(),
                      [&](const Candidate& c) { return c.layout == v.layout && c.config == v.config; }))
        continue;
      v.h.workspaceSize = checked.workspaceSize;
      v.h.wavesCount = checked.wavesCount;
      v.h.state = CUBLAS_STATUS_SUCCESS;
      v.origin = "cluster " + std::string(shape.name) + " of heuristics #" + std::to_string(first) +
                 layout_tag(lc->a_transposed);
      candidates.push_back(std::move(v));
      ++added;
    }
  }
  return added;
}

// Runs the candidates' matmuls on one stream and times them with one pair of events.
class Runner {
 public:
  Runner(const LtApi& lt, const GemmOptions& o, const Problem& p, const Operands& x, cudaStream_t s)
      : lt_(lt), o_(o), p_(p), x_(x), s_(s) {}

  core::Status create_events() {
    GPUDOC_CUDA_TRY(cudaEventCreate(&start_.e));
    GPUDOC_CUDA_TRY(cudaEventCreate(&stop_.e));
    return core::ok_status();
  }

  // One matmul, D = alpha * op(A) * B (+ beta * C, beta = 0).
  core::Status matmul(const Candidate& c) const {
    // C: same type and layout as D (bf16 for FP8), so ld serves both.
    void* const c_ptr = o_.type == GemmType::kFp8E4m3 ? x_.c.ptr : x_.d.ptr;
    GPUDOC_LT_TRY(lt_.cublasLtMatmul(p_.handle.v, c.layout->desc.v, &kAlpha, x_.a.ptr, c.layout->la.v, x_.b.ptr,
                                     p_.lb.v, &kBeta, c_ptr, p_.ld.v, x_.d.ptr, p_.ld.v, &c.h.algo, x_.workspace.ptr,
                                     o_.workspace_bytes, s_));
    return core::ok_status();
  }

  // `count` matmuls, untimed.
  core::Status untimed(const Candidate& c, int count) const {
    for (int i = 0; i < count; ++i)
      if (auto st = matmul(c); !st) return st;
    return core::ok_status();
  }

  // Seconds per matmul of `count` back-to-back matmuls with `c`, timed with the event pair.
  core::Result<double> time(const Candidate& c, int count) const {
    GPUDOC_CUDA_TRY(cudaEventRecord(start_.e, s_));
    if (auto st = untimed(c, count); !st) return st.error();
    GPUDOC_CUDA_TRY(cudaEventRecord(stop_.e, s_));
    GPUDOC_CUDA_TRY(cudaEventSynchronize(stop_.e));
    float ms = 0;
    GPUDOC_CUDA_TRY(cudaEventElapsedTime(&ms, start_.e, stop_.e));
    return static_cast<double>(ms) / 1e3 / count;
  }

  // One turn of a candidate: the first half untimed (the power controller settles on this kernel),
  // the second half timed; seconds per matmul. `per_matmul` sizes the halves.
  core::Result<double> turn(const Candidate& c, double per_matmul, double seconds) const {
    const int half = ops_per_sample(per_matmul, seconds / 2, 100000);
    if (auto st = untimed(c, half); !st) return st.error();
    return time(c, half);
  }

  // The event recorded before the last timed run began.
  [[nodiscard]] cudaEvent_t start_event() const { return start_.e; }
  [[nodiscard]] cudaStream_t stream() const { return s_; }

 private:
  static constexpr float kAlpha = 1.0f;
  static constexpr float kBeta = 0.0f;
  const LtApi& lt_;
  const GemmOptions& o_;
  const Problem& p_;
  const Operands& x_;
  cudaStream_t s_;
  Event start_;
  Event stop_;
};

// Step 1 of the algorithm choice: each candidate runs once untimed (module loading, first touch)
// and once timed.
struct FirstRuns {
  std::vector<int> runnable;   // candidates that ran, in order
  std::vector<double> single;  // one timed matmul of each, to size its probe
};

// A candidate that fails to run is skipped (its time stays 0), as cuBLASLt's own samples do, and
// the first refusal is kept, so that "none ran" says why. Errors: kNotSupported when none ran.
core::Result<FirstRuns> run_each_once(const Runner& run, const std::vector<Candidate>& candidates,
                                      const GemmOptions& o) {
  FirstRuns f;
  std::string first_refusal;
  const int count = static_cast<int>(candidates.size());
  for (int i = 0; i < count; ++i) {
    const Candidate& cand = candidates[static_cast<std::size_t>(i)];
    const auto& h = cand.h;
    if (h.state != CUBLAS_STATUS_SUCCESS || h.workspaceSize > o.workspace_bytes) {
      if (first_refusal.empty())
        first_refusal =
            "candidate " + std::to_string(i) + ": " +
            (h.state != CUBLAS_STATUS_SUCCESS ? lt_error("heuristic state", h.state).message()
                                              : "needs " + std::to_string(h.workspaceSize) + " bytes of workspace");
      continue;
    }
    if (auto st = run.matmul(cand); !st) {
      if (first_refusal.empty()) first_refusal = "candidate " + std::to_string(i) + ": " + st.error().message();
      (void)cudaStreamSynchronize(run.stream());
      continue;
    }
    auto one = run.time(cand, 1);
    if (!one) return one.error();
    f.runnable.push_back(i);
    f.single.push_back(*one);
  }
  if (f.runnable.empty())
    return core::Error(core::ErrorKind::kNotSupported, "cublasLtMatmul: none of the " + std::to_string(count) +
                                                           " candidate algorithms for " + shape(o) +
                                                           " ran; first refusal: " + first_refusal);
  return core::Result<FirstRuns>(std::move(f));
}

// Step 3: the candidates compared in the settled state, round-robin over algo_probe_passes turns
// of algo_probe_seconds each, by their mean (t.algo_seconds, t.algos_timed).
core::Status probe(const Runner& run, const std::vector<Candidate>& candidates, const FirstRuns& f,
                   const GemmOptions& o, GemmTiming& t) {
  const int passes = f.runnable.size() > 1 ? std::max(1, o.algo_probe_passes) : 0;
  for (int pass = 0; pass < passes; ++pass) {
    for (std::size_t c = 0; c < f.runnable.size(); ++c) {
      const int i = f.runnable[c];
      auto turn = run.turn(candidates[static_cast<std::size_t>(i)], f.single[c], o.algo_probe_seconds);
      if (!turn) return turn.error();
      t.algo_seconds[static_cast<std::size_t>(i)] += *turn / passes;
    }
  }
  if (passes == 0) t.algo_seconds[static_cast<std::size_t>(f.runnable.front())] = f.single.front();
  t.algos_timed = static_cast<int>(f.runnable.size());
  return core::ok_status();
}

// The winner of the algorithm choice and its seconds per matmul in the round that chose it.
struct Choice {
  int index = -1;
  double seconds = 0;
};

// Step 4: the final (t.algo_final_seconds); returns the winner. The finalists (gemm_finalists: the
// probe's fastest few and each layout's first runnable pick) run again, after one untimed lead-in
// turn, in turns of algo_final_seconds, algo_final_rounds each, the order reversed every round so a
// drift favours none; the lowest mean wins. Without a final (one finalist) the winner is the
// probe's fastest, which gemm_finalists puts first. A tie goes to the earlier finalist.
core::Result<Choice> final_round(const Runner& run, const std::vector<Candidate>& candidates, const FirstRuns& f,
                                 const GemmOptions& o, GemmTiming& t) {
  const int count = static_cast<int>(candidates.size());
  t.algo_final_seconds.assign(static_cast<std::size_t>(count), 0.0);
  std::vector<int> first_picks;  // the first runnable candidate of each layout
  for (int i : f.runnable)
    if (std::none_of(first_picks.begin(), first_picks.end(), [&](int p) {
          return candidates[static_cast<std::size_t>(p)].layout == candidates[static_cast<std::size_t>(i)].layout;
        }))
      first_picks.push_back(i);
  const std::vector<int> finalists = gemm_finalists(t.algo_seconds, first_picks, o.algo_finalists, o.algo_final_margin);
  const int rounds = finalists.size() > 1 ? std::max(1, o.algo_final_rounds) : 0;
  if (rounds > 0) {  // a lead-in turn, untimed: the probes' mix of kernels leaves the clock where none of them would
    const int lead = finalists.front();
    const int n = ops_per_sample(t.algo_seconds[static_cast<std::size_t>(lead)], o.algo_final_seconds, 100000);
    if (auto st = run.untimed(candidates[static_cast<std::size_t>(lead)], n); !st) return st.error();
  }
  for (int round = 0; round < rounds; ++round) {
    for (std::size_t k = 0; k < finalists.size(); ++k) {
      const int i = finalists[round % 2 == 0 ? k : finalists.size() - 1 - k];
      auto timed = run.turn(candidates[static_cast<std::size_t>(i)], t.algo_seconds[static_cast<std::size_t>(i)],
                            o.algo_final_seconds);
      if (!timed) return timed.error();
      t.algo_final_seconds[static_cast<std::size_t>(i)] += *timed / rounds;
    }
  }
  const std::vector<double>& judged = rounds > 0 ? t.algo_final_seconds : t.algo_seconds;
  int best = finalists.front();
  for (int i : finalists)
    if (judged[static_cast<std::size_t>(i)] < judged[static_cast<std::size_t>(best)]) best = i;
  return Choice{best, judged[static_cast<std::size_t>(best)]};
}

// Algorithm choice, in four steps (docs/methodology.md, gemm):
//  1. each candidate (offered by the heuristics, or a cluster variant) runs once untimed and once
//     timed (run_each_once);
//  2. warm-up on the heuristics' first runnable pick: the clocks and the power limit settle;
//  3. the probe: the candidates are compared in that settled state (probe). Under a power cap the
//     algorithm that is fastest at the idle GPU's boost clock is not always the fastest at the
//     capped clock the samples run at, and one pass would favour whichever candidate ran while
//     the GPU was coolest;
//  4. the final: the fastest few run again in long turns (final_round). The final's turns are long
//     (1 s by default): kernels that differ only in their cluster shape separate only once the power
//     controller has settled on each; in short turns they swap places from turn to turn, and a
//     short final can rank a kernel behind one it beats (docs/methodology.md, gemm; the figures:
//     docs/results/bench-h200.md).
// Every turn, probe and final, is half untimed, so the power controller settles on that kernel, and
// half timed: a turn timed whole judges a kernel partly at the clock its predecessor left, and
// ranks kernels in an order the steady state reverses (docs/methodology.md, gemm). Returns the
// chosen candidate.
core::Result<Choice> choose_algorithm(const Runner& run, const std::vector<Candidate>& candidates, const GemmOptions& o,
                                      GemmTiming& t) {
  t.algo_seconds.assign(candidates.size(), 0.0);
  auto first = run_each_once(run, candidates, o);
  if (!first) return first.error();
  const Candidate& warm = candidates[static_cast<std::size_t>(first->runnable.front())];
  t.warmup_matmuls = o.warmup_seconds > 0 ? ops_per_sample(first->single.front(), o.warmup_seconds, 100000) : 0;
  if (auto st = run.untimed(warm, t.warmup_matmuls); !st) return st.error();
  GPUDOC_CUDA_TRY(cudaStreamSynchronize(run.stream()));
  if (auto st = probe(run, candidates, *first, o, t); !st) return st.error();
  return final_round(run, candidates, *first, o, t);
}

// The samples: t.repetitions timings of matmuls_per_sample matmuls each with the chosen algorithm.
// The probes ended on whichever candidate came last; under the power cap the clock swings for a
// moment when the kernel changes (the first FP8 sample after the probes read ~5% low on the H200).
// The chosen algorithm runs alone for a quarter of the warm-up (at least 0.2 s) first.
core::Status take_samples(const Runner& run, const Candidate& algo, double best_seconds, const GemmOptions& o,
                          cudaEvent_t began, GemmTiming& t) {
  const int settle = ops_per_sample(best_seconds, std::max(0.2, o.warmup_seconds / 4), 100000);
  if (auto st = run.untimed(algo, settle); !st) return st;
  t.warmup_matmuls += settle;
  t.matmuls_per_sample = ops_per_sample(best_seconds, o.sample_seconds, 100000);
  for (int r = 0; r < o.repetitions; ++r) {
    auto sec = run.time(algo, t.matmuls_per_sample);
    if (!sec) return sec.error();
    t.seconds.push_back(*sec);
    if (r == 0) {
      float ms = 0;
      GPUDOC_CUDA_TRY(cudaEventElapsedTime(&ms, began, run.start_event()));
      t.seconds_before_samples = static_cast<double>(ms) / 1e3;
    }
  }
  return core::ok_status();
}

// The verification's element e: the four corners, then pseudo-random positions from `lcg`.
std::pair<std::uint64_t, std::uint64_t> verified_element(int e, const GemmOptions& o, std::uint64_t& lcg) {
  switch (e) {
    case 0: return {0, 0};
    case 1: return {o.m - 1, o.n - 1};
    case 2: return {0, o.n - 1};
    case 3: return {o.m - 1, 0};
    default: {
      lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
      const std::uint64_t i = (lcg >> 33) % o.m;
      lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
      return {i, (lcg >> 33) % o.n};
    }
  }
}

// D[i,j] as computed on the GPU and its double-precision reference from the stored inputs.
struct ElementCheck {
  double got = 0;
  double reference = 0;
  double sum_abs = 0;  // sum of |products|, scaled as the reference
};

core::Result<ElementCheck> check_element(const GemmOptions& o, const Operands& x, bool a_transposed,
                                         double output_scale, std::uint64_t i, std::uint64_t j) {
  const std::size_t in_bytes = gemm_input_bytes(o.type);
  const std::size_t out_bytes = gemm_output_bytes(o.type);
  std::vector<unsigned char> col_a(o.k * in_bytes);
  std::vector<unsigned char> col_b(o.k * in_bytes);
  unsigned char out[8];
  const auto* base_b = static_cast<const unsigned char*>(x.b.ptr) + j * o.k * in_bytes;
  const auto* base_d = static_cast<const unsigned char*>(x.d.ptr) + (i + j * o.m) * out_bytes;
  if (a_transposed) {
    const auto* base_a = static_cast<const unsigned char*>(x.a.ptr) + i * o.k * in_bytes;
    GPUDOC_CUDA_TRY(cudaMemcpy(col_a.data(), base_a, col_a.size(), cudaMemcpyDeviceToHost));
  } else {  // row i of an M x K column-major matrix: K elements, M apart
    const auto* base_a = static_cast<const unsigned char*>(x.a.ptr) + i * in_bytes;
    GPUDOC_CUDA_TRY(
        cudaMemcpy2D(col_a.data(), in_bytes, base_a, o.m * in_bytes, in_bytes, o.k, cudaMemcpyDeviceToHost));
  }
  GPUDOC_CUDA_TRY(cudaMemcpy(col_b.data(), base_b, col_b.size(), cudaMemcpyDeviceToHost));
  GPUDOC_CUDA_TRY(cudaMemcpy(out, base_d, out_bytes, cudaMemcpyDeviceToHost));
  double sum = 0;
  double sum_abs = 0;
  for (std::uint64_t kk = 0; kk < o.k; ++kk) {
    const double p = decode_input(o.type, &col_a[kk * in_bytes]) * decode_input(o.type, &col_b[kk * in_bytes]);
    sum += p;
    sum_abs += std::fabs(p);
  }
  return ElementCheck{decode_output(o.type, out), output_scale * sum, output_scale * sum_abs};
}

// Verification, outside the timed region: poison D (all bits set: NaN in every output type), run
// the chosen algorithm once, and compare sampled elements with a double-precision dot product of
// the stored inputs: D[i,j] = scale * sum_k op(A)[i,k] * B[k,j], op(A)[i,k] = A[k + i*K] when A is
// stored transposed (K x M), A[i + k*M] otherwise (M x K); B stored K x N, D M x N.
core::Status verify(const Runner& run, const Candidate& algo, const GemmOptions& o, const Operands& x, GemmTiming& t) {
  const double output_scale = o.type == GemmType::kFp8E4m3 ? static_cast<double>(kFp8ScaleA) * kFp8ScaleB : 1.0;
  GPUDOC_CUDA_TRY(cudaMemsetAsync(x.d.ptr, 0xFF, o.m * o.n * gemm_output_bytes(o.type), run.stream()));
  if (auto st = run.matmul(algo); !st) return st;
  GPUDOC_CUDA_TRY(cudaStreamSynchronize(run.stream()));
  std::uint64_t lcg = 0x2545F4914F6CDD1Dull;
  std::string worst;
  int failures = 0;
  for (int e = 0; e < o.verify_elements; ++e) {
    const auto [i, j] = verified_element(e, o, lcg);
    auto c = check_element(o, x, algo.layout->a_transposed, output_scale, i, j);
    if (!c) return c.error();
    const double bound = gemm_error_bound(o.type, c->sum_abs, c->reference);
    const double err = std::fabs(c->got - c->reference);
    const double ratio = std::isfinite(c->got) ? err / bound : std::numeric_limits<double>::infinity();
    if (!(ratio <= 1.0)) ++failures;
    if (!(ratio <= t.worst_error_ratio)) {
      t.worst_error_ratio = ratio;
      worst = "D[" + std::to_string(i) + "," + std::to_string(j) + "] = " + std::to_string(c->got) + ", reference " +
              std::to_string(c->reference) + ", |error| " + std::to_string(err) + ", bound " + std::to_string(bound);
    }
  }
  t.verified = failures == 0;
  t.verify_detail =
      t.verified ? std::to_string(o.verify_elements) +
                       " sampled output elements within the bound of a double-precision reference (worst at " +
                       std::to_string(static_cast<int>(std::lround(t.worst_error_ratio * 100))) + "% of its bound)"
                 : std::to_string(failures) + " of " + std::to_string(o.verify_elements) +
                       " sampled output elements outside the bound; worst " + worst;
  return core::ok_status();
}

}  // namespace

core::Result<GemmTiming> run_gemm(const GemmOptions& o) {
  if (auto st = check_options(o); !st) return st.error();
  auto lib = load_cublaslt();
  if (!lib) return lib.error();
  const LtApi& lt = loaded().api;

  GPUDOC_CUDA_TRY(cudaSetDevice(o.device));
  GPUDOC_CUDA_TRY(cudaFree(nullptr));  // the primary context exists and is current before cuBLASLt looks for it
  Stream stream;
  GPUDOC_CUDA_TRY(cudaStreamCreateWithFlags(&stream.s, cudaStreamNonBlocking));
  Operands x;
  if (auto st = prepare_operands(o, stream.s, x); !st) return st.error();

  GemmTiming t;
  t.library = *lib;
  Problem problem;
  if (auto st = describe_problem(lt, o, x, problem); !st) return st.error();
  // The candidates: the heuristics' picks of every layout, then the cluster-shape variants.
  auto found = heuristic_candidates(lt, o, problem);
  if (!found) return found.error();
  std::vector<Candidate> candidates = std::move(*found);
  t.algos_returned = static_cast<int>(candidates.size());
  t.algo_variants = add_cluster_variants(lt, o, problem, candidates);
  for (const Candidate& c : candidates) t.algo_candidates.push_back(c.origin + ": " + describe(c.config));

  Runner run(lt, o, problem, x, stream.s);
  if (auto st = run.create_events(); !st) return st.error();
  Event began;  // before the first matmul: seconds_before_samples is measured from here
  GPUDOC_CUDA_TRY(cudaEventCreate(&began.e));
  GPUDOC_CUDA_TRY(cudaEventRecord(began.e, stream.s));
  auto best = choose_algorithm(run, candidates, o, t);
  if (!best) return best.error();
  const Candidate& algo = candidates[static_cast<std::size_t>(best->index)];
  t.algo_rank = best->index;
  t.algo_origin = algo.origin;
  t.algo_id = static_cast<int>(algo.config.id);
  t.algo_config = describe(algo.config);
  t.algo_workspace_bytes = algo.h.workspaceSize;
  t.layout = algo.layout->a_transposed ? "TN" : "NN";
  if (auto st = take_samples(run, algo, best->seconds, o, began.e, t); !st) return st.error();
  if (auto st = verify(run, algo, o, x, t); !st) return st.error();
  return t;
}

}  // namespace gpudoc::bench::cuda
