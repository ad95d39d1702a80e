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
#include <memory>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <tuple>
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

const Loaded& loaded() {
  static const Loaded state = [] {
    Loaded l;
    // $GPUDOC_CUBLASLT names the one library to use; otherwise the loader's path, then the usual
    // CUDA folders (so a run works without LD_LIBRARY_PATH), CUDA 13 before 12.
    std::vector<std::string> candidates;
    const char* env = std::getenv("GPUDOC_CUBLASLT");
    const bool overridden = env != nullptr && *env != '\0';
    if (overridden) {
      candidates.emplace_back(env);
    } else {
      for (const char* c : {"libcublasLt.so.13", "/usr/local/cuda-13.0/lib64/libcublasLt.so.13",
                            "/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcublasLt.so.13",
                            "/usr/local/cuda/lib64/libcublasLt.so.13", "libcublasLt.so.12",
                            "/usr/local/cuda/lib64/libcublasLt.so.12"})
        candidates.emplace_back(c);
    }
    void* lib = nullptr;
    std::string unusual;  // a dlerror other than "not found" (wrong architecture, missing dependency)
    for (const std::string& c : candidates) {
      auto opened = core::open_library(c);
      if (opened) {
        lib = *opened;
        l.description = c;
        break;
      }
      const std::string& why = opened.error().message();
      if (unusual.empty() && why.find("No such file") == std::string::npos) unusual = why;
    }
    if (lib == nullptr) {
      if (overridden)
        l.error = "cuBLASLt not found: GPUDOC_CUBLASLT=" + candidates.front() + " cannot be loaded";
      else
        l.error = "cuBLASLt not found: libcublasLt.so.13 (or .so.12) is neither on the loader path nor in "
                  "/usr/local/cuda*/lib64; add the CUDA lib64 folder to LD_LIBRARY_PATH or set GPUDOC_CUBLASLT to the library";
      if (!unusual.empty()) l.error += " (" + unusual + ")";
      return l;
    }
    std::string missing;
#define GPUDOC_X(fn)                        \
  core::resolve_symbol(lib, #fn, l.api.fn); \
  if (l.api.fn == nullptr) missing += std::string(missing.empty() ? "" : ", ") + #fn;
    GPUDOC_CUBLASLT_FUNCTIONS(GPUDOC_X)
#undef GPUDOC_X
    if (!missing.empty()) {
      l.error = "cuBLASLt at " + l.description + " lacks " + missing;
      l.api = LtApi{};
      return l;  // the library stays loaded: unloading buys nothing and risks its destructors
    }
    const std::size_t version = l.api.cublasLtGetVersion();
    if (version < 120000) {
      l.error = "cuBLASLt at " + l.description + " is version " + std::to_string(version) + "; gpudoc needs 12.0 or newer";
      l.api = LtApi{};
      return l;
    }
    l.description += " (cuBLASLt " + std::to_string(version) + ")";
    return l;
  }();
  return state;
}

// The one conversion of cuBLASLt statuses: "cublasLtMatmul: the requested functionality is not
// supported (CUBLAS_STATUS_NOT_SUPPORTED)".
core::Error lt_error(const char* call, cublasStatus_t s) {
  const LtApi& api = loaded().api;
  const std::string name = api.cublasLtGetStatusName != nullptr ? api.cublasLtGetStatusName(s) : std::to_string(static_cast<int>(s));
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

#define GPUDOC_LT_TRY(call)                                               \
  do {                                                                    \
    const cublasStatus_t gpudoc_lt_s_ = (call);                           \
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
  return std::string(to_string(o.type)) + " " + std::to_string(o.m) + "x" + std::to_string(o.n) + "x" + std::to_string(o.k);
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

core::Result<GemmTiming> run_gemm(const GemmOptions& o) {
  if (o.repetitions < 1 || o.m < 16 || o.n < 16 || o.k < 16 || o.m % 16 != 0 || o.n % 16 != 0 || o.k % 16 != 0 ||
      o.algo_candidates < 1 || o.verify_elements < 1)
    return core::Error(core::ErrorKind::kUsage,
                       "run_gemm: repetitions, candidates and checked elements must be >= 1; M, N, K multiples of 16");
  auto lib = load_cublaslt();
  if (!lib) return lib.error();
  const LtApi& lt = loaded().api;
  const TypeSpec ts = spec(o.type);
  const std::size_t in_bytes = gemm_input_bytes(o.type);
  const std::size_t out_bytes = gemm_output_bytes(o.type);

  GPUDOC_CUDA_TRY(cudaSetDevice(o.device));
  GPUDOC_CUDA_TRY(cudaFree(nullptr));  // the primary context exists and is current before cuBLASLt looks for it
  Stream stream;
  GPUDOC_CUDA_TRY(cudaStreamCreateWithFlags(&stream.s, cudaStreamNonBlocking));
  const cudaStream_t s = stream.s;

  // Layouts tried: "TN" (A stored K x M and transposed, B K x N: both operands K-major, the layout
  // Hopper's tensor-core instructions read natively, and the only one FP8 accepts) and, except for
  // FP8, "NN" (A stored M x K), the layout PyTorch's row-major `a @ b` reaches cuBLAS with (it
  // computes b^T a^T column-major, both untransposed). The candidates of both compete; the A buffer
  // holds M*K random values either way, read as the chosen layout says (also when verifying).
  const bool fp8 = o.type == GemmType::kFp8E4m3;

  DeviceBuffer a;
  DeviceBuffer b;
  // FP8 only: a zeroed bf16 C apart from D, as NVIDIA's LtFp8Matmul sample has it (the first H200
  // run, with C == D in place, had every FP8 candidate refused).
  DeviceBuffer c;
  DeviceBuffer d;
  DeviceBuffer workspace;
  DeviceBuffer scales;
  GPUDOC_CUDA_TRY(cudaMalloc(&a.ptr, o.k * o.m * in_bytes));
  GPUDOC_CUDA_TRY(cudaMalloc(&b.ptr, o.k * o.n * in_bytes));
  GPUDOC_CUDA_TRY(cudaMalloc(&d.ptr, o.m * o.n * out_bytes));
  if (fp8) {
    GPUDOC_CUDA_TRY(cudaMalloc(&c.ptr, o.m * o.n * out_bytes));
    GPUDOC_CUDA_TRY(cudaMemsetAsync(c.ptr, 0, o.m * o.n * out_bytes, s));
  }
  GPUDOC_CUDA_TRY(cudaMalloc(&workspace.ptr, o.workspace_bytes));
  // Each scale on its own 256-byte boundary, as if cudaMalloc'd alone (the NVIDIA samples do so).
  constexpr std::size_t kScaleStride = 256 / sizeof(float);
  GPUDOC_CUDA_TRY(cudaMalloc(&scales.ptr, 2 * kScaleStride * sizeof(float)));
  if (auto st = fill_inputs(o.type, a.ptr, o.k * o.m, 1, s); !st) return st.error();
  if (auto st = fill_inputs(o.type, b.ptr, o.k * o.n, 2, s); !st) return st.error();
  GPUDOC_CUDA_TRY(cudaMemcpyAsync(scales.ptr, &kFp8ScaleA, sizeof(float), cudaMemcpyHostToDevice, s));
  GPUDOC_CUDA_TRY(cudaMemcpyAsync(static_cast<float*>(scales.ptr) + kScaleStride, &kFp8ScaleB, sizeof(float),
                                  cudaMemcpyHostToDevice, s));
  GPUDOC_CUDA_TRY(cudaStreamSynchronize(s));

  GemmTiming t;
  t.library = *lib;
  LtHandle handle;
  GPUDOC_LT_TRY(lt.cublasLtCreate(&handle.v));
  double output_scale = 1.0;
  const float* scale_a = static_cast<const float*>(scales.ptr);
  const float* scale_b = scale_a + kScaleStride;
  if (fp8) output_scale = static_cast<double>(kFp8ScaleA) * kFp8ScaleB;
  struct LayoutCase {
    bool a_transposed = false;
    MatmulDesc desc;
    Layout la;
  };
  std::vector<std::unique_ptr<LayoutCase>> layouts;
  for (const bool transposed : {true, false}) {
    if (!transposed && fp8) continue;
    auto lc = std::make_unique<LayoutCase>();
    lc->a_transposed = transposed;
    GPUDOC_LT_TRY(lt.cublasLtMatmulDescCreate(&lc->desc.v, ts.compute, CUDA_R_32F));
    const cublasOperation_t trans_a = transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t trans_b = CUBLAS_OP_N;
    GPUDOC_LT_TRY(lt.cublasLtMatmulDescSetAttribute(lc->desc.v, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a, sizeof trans_a));
    GPUDOC_LT_TRY(lt.cublasLtMatmulDescSetAttribute(lc->desc.v, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b, sizeof trans_b));
    if (fp8) {
      GPUDOC_LT_TRY(lt.cublasLtMatmulDescSetAttribute(lc->desc.v, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &scale_a,
                                                      sizeof scale_a));
      GPUDOC_LT_TRY(lt.cublasLtMatmulDescSetAttribute(lc->desc.v, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &scale_b,
                                                      sizeof scale_b));
    }
    if (transposed)  // stored K x M, lda = K
      GPUDOC_LT_TRY(lt.cublasLtMatrixLayoutCreate(&lc->la.v, ts.ab, o.k, o.m, static_cast<std::int64_t>(o.k)));
    else  // stored M x K, lda = M
      GPUDOC_LT_TRY(lt.cublasLtMatrixLayoutCreate(&lc->la.v, ts.ab, o.m, o.k, static_cast<std::int64_t>(o.m)));
    layouts.push_back(std::move(lc));
  }
  Layout lb;
  Layout ld;
  GPUDOC_LT_TRY(lt.cublasLtMatrixLayoutCreate(&lb.v, ts.ab, o.k, o.n, static_cast<std::int64_t>(o.k)));
  GPUDOC_LT_TRY(lt.cublasLtMatrixLayoutCreate(&ld.v, ts.cd, o.m, o.n, static_cast<std::int64_t>(o.m)));
  Preference pref;
  GPUDOC_LT_TRY(lt.cublasLtMatmulPreferenceCreate(&pref.v));
  const std::uint64_t max_workspace = o.workspace_bytes;
  GPUDOC_LT_TRY(lt.cublasLtMatmulPreferenceSetAttribute(pref.v, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_workspace,
                                                        sizeof max_workspace));
  // Every layout's candidates, in heuristic order, layout after layout (TN first), then the
  // cluster-shape variants.
  struct Candidate {
    const LayoutCase* layout;
    cublasLtMatmulHeuristicResult_t h;
    std::string origin;  // "heuristics #3 (NN)", "cluster 2x1x1 of heuristics #0 (TN)"
    AlgoConfig config;   // of h.algo, read once
  };
  std::vector<Candidate> candidates;
  for (const auto& lc : layouts) {
    std::vector<cublasLtMatmulHeuristicResult_t> found(static_cast<std::size_t>(o.algo_candidates));
    int n = 0;
    GPUDOC_LT_TRY(lt.cublasLtMatmulAlgoGetHeuristic(handle.v, lc->desc.v, lc->la.v, lb.v, ld.v, ld.v, pref.v,
                                                    o.algo_candidates, found.data(), &n));
    for (int i = 0; i < n; ++i) {
      const cublasLtMatmulHeuristicResult_t& h = found[static_cast<std::size_t>(i)];
      candidates.push_back({lc.get(), h, "heuristics #" + std::to_string(candidates.size()) + layout_tag(lc->a_transposed),
                            algo_config(lt, h.algo)});
    }
  }
  t.algos_returned = static_cast<int>(candidates.size());
  if (candidates.empty())
    return core::Error(core::ErrorKind::kNotSupported, "cublasLtMatmulAlgoGetHeuristic: no algorithm for " + shape(o));
  // Cluster-shape variants of each layout's first pick. The heuristics offer one thread-block
  // cluster shape per kernel and tile; under the power cap another shape of the same kernel can be
  // faster in the steady state (H200, TF32, TN 128x256 tile: 2x1x1 1.9 % ahead of the offered
  // 1x2x1, 2026-11-30, docs/results/bench-h200.md). A variant cuBLASLt's check refuses,
  // or one with the configuration of a candidate already there, is left out; one that fails to run
  // is skipped like any other candidate.
  const int offered = t.algos_returned;
  for (const auto& lc : layouts) {
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
      if (lt.cublasLtMatmulAlgoCheck(handle.v, lc->desc.v, lc->la.v, lb.v, ld.v, ld.v, &v.h.algo, &checked) !=
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
      ++t.algo_variants;
    }
  }
  const int count = static_cast<int>(candidates.size());
  for (const Candidate& c : candidates) t.algo_candidates.push_back(c.origin + ": " + describe(c.config));

  const float alpha = 1.0f;
  const float beta = 0.0f;
  void* const c_ptr = fp8 ? c.ptr : d.ptr;  // same type and layout as D (bf16 for FP8), so ld serves both
  auto matmul = [&](const Candidate& c) -> core::Status {
    GPUDOC_LT_TRY(lt.cublasLtMatmul(handle.v, c.layout->desc.v, &alpha, a.ptr, c.layout->la.v, b.ptr, lb.v, &beta, c_ptr,
                                    ld.v, d.ptr, ld.v, &c.h.algo, workspace.ptr, o.workspace_bytes, s));
    return core::ok_status();
  };
  Event start;
  Event stop;
  GPUDOC_CUDA_TRY(cudaEventCreate(&start.e));
  GPUDOC_CUDA_TRY(cudaEventCreate(&stop.e));
  // Seconds per matmul of `count` back-to-back matmuls with `algo`, timed with the event pair.
  auto time_matmuls = [&](const Candidate& algo, int count) -> core::Result<double> {
    GPUDOC_CUDA_TRY(cudaEventRecord(start.e, s));
    for (int i = 0; i < count; ++i)
      if (auto st = matmul(algo); !st) return st.error();
    GPUDOC_CUDA_TRY(cudaEventRecord(stop.e, s));
    GPUDOC_CUDA_TRY(cudaEventSynchronize(stop.e));
    float ms = 0;
    GPUDOC_CUDA_TRY(cudaEventElapsedTime(&ms, start.e, stop.e));
    return static_cast<double>(ms) / 1e3 / count;
  };

  // Algorithm choice, in four steps:
  //  1. each candidate (offered by the heuristics, or a cluster variant) runs once untimed (module
  //     loading, first touch) and once timed; a candidate that fails to run is skipped (its time
  //     stays 0), as cuBLASLt's own samples do, and the first refusal is kept, so that "none ran"
  //     says why;
  //  2. warm-up on the heuristics' first runnable pick: the clocks and the power limit settle;
  //  3. the probe: the candidates are compared in that settled state, round-robin over
  //     algo_probe_passes turns of algo_probe_seconds each, by their mean. Under a power cap the
  //     algorithm that is fastest at the idle GPU's boost clock is not always the fastest at the
  //     capped clock the samples run at, and one pass would favour whichever candidate ran while
  //     the GPU was coolest;
  //  4. the final: the fastest few (within algo_final_margin of the best, plus the heuristics' first
  //     pick of each layout; bench::gemm_finalists) run again, after one untimed lead-in turn, in
  //     turns of algo_final_seconds, algo_final_rounds each, the order reversed every round so a
  //     drift favours none; the lowest mean wins. The final's turns are long (1 s by default):
  //     kernels that differ only in their cluster shape separate only once the power controller has
  //     settled on each (H200, TF32 TN 128x256: 2x1x1 led 2x2x1 by 0.4 % on average in 0.3 s turns,
  //     by 0.9-2.0 % in every 1 s comparison; 0.3 s turns once put 2x1x1 1.2 % behind a kernel it beats,
  //     2026-11-30).
  //     Every turn, probe and final, is half untimed, so the power controller settles on that kernel,
  //     and half timed: a turn timed whole judges a kernel partly at the clock its predecessor left.
  //     On the H200 such a probe ranked the FP8 112x128 tile ahead of the heuristics' 144x128, which
  //     the steady state runs ~2 % faster, and a TF32 cluster variant (TN 128x256, 2x1x1) 4-6 %
  //     behind its first pick, which settled turns put it 1.9 % ahead of (2026-11-30).
  Event began;  // before the first matmul: seconds_before_samples is measured from here
  GPUDOC_CUDA_TRY(cudaEventCreate(&began.e));
  GPUDOC_CUDA_TRY(cudaEventRecord(began.e, s));
  std::string first_refusal;
  t.algo_seconds.assign(static_cast<std::size_t>(count), 0.0);
  std::vector<int> runnable;
  std::vector<double> single;  // one timed matmul per runnable candidate, to size its probe
  for (int i = 0; i < count; ++i) {
    const Candidate& cand = candidates[static_cast<std::size_t>(i)];
    const auto& h = cand.h;
    if (h.state != CUBLAS_STATUS_SUCCESS || h.workspaceSize > o.workspace_bytes) {
      if (first_refusal.empty())
        first_refusal = "candidate " + std::to_string(i) + ": " +
                        (h.state != CUBLAS_STATUS_SUCCESS ? lt_error("heuristic state", h.state).message()
                                                          : "needs " + std::to_string(h.workspaceSize) + " bytes of workspace");
      continue;
    }
    if (auto st = matmul(cand); !st) {
      if (first_refusal.empty()) first_refusal = "candidate " + std::to_string(i) + ": " + st.error().message();
      (void)cudaStreamSynchronize(s);
      continue;
    }
    auto one = time_matmuls(cand, 1);
    if (!one) return one.error();
    runnable.push_back(i);
    single.push_back(*one);
  }
  if (runnable.empty())
    return core::Error(core::ErrorKind::kNotSupported,
                       "cublasLtMatmul: none of the " + std::to_string(count) + " candidate algorithms for " + shape(o) +
                           " ran; first refusal: " + first_refusal);

  const Candidate& first = candidates[static_cast<std::size_t>(runnable.front())];
  t.warmup_matmuls = o.warmup_seconds > 0 ? ops_per_sample(single.front(), o.warmup_seconds, 100000) : 0;
  for (int i = 0; i < t.warmup_matmuls; ++i)
    if (auto st = matmul(first); !st) return st.error();
  GPUDOC_CUDA_TRY(cudaStreamSynchronize(s));

  // One turn of a candidate: the first half untimed (the power controller settles on this kernel),
  // the second half timed; seconds per matmul. `per_matmul` sizes the halves.
  auto turn = [&](const Candidate& cand, double per_matmul, double seconds) -> core::Result<double> {
    const int half = ops_per_sample(per_matmul, seconds / 2, 100000);
    for (int m = 0; m < half; ++m)
      if (auto st = matmul(cand); !st) return st.error();
    return time_matmuls(cand, half);
  };
  const int passes = runnable.size() > 1 ? std::max(1, o.algo_probe_passes) : 0;
  for (int pass = 0; pass < passes; ++pass) {
    for (std::size_t c = 0; c < runnable.size(); ++c) {
      const int i = runnable[c];
      auto probe = turn(candidates[static_cast<std::size_t>(i)], single[c], o.algo_probe_seconds);
      if (!probe) return probe.error();
      t.algo_seconds[static_cast<std::size_t>(i)] += *probe / passes;
    }
  }
  if (passes == 0) t.algo_seconds[static_cast<std::size_t>(runnable.front())] = single.front();
  t.algos_timed = static_cast<int>(runnable.size());
  t.algo_final_seconds.assign(static_cast<std::size_t>(count), 0.0);
  std::vector<int> first_picks;  // the first runnable candidate of each layout
  for (int i : runnable)
    if (std::none_of(first_picks.begin(), first_picks.end(), [&](int f) {
          return candidates[static_cast<std::size_t>(f)].layout == candidates[static_cast<std::size_t>(i)].layout;
        }))
      first_picks.push_back(i);
  const std::vector<int> finalists = gemm_finalists(t.algo_seconds, first_picks, o.algo_finalists, o.algo_final_margin);
  const int rounds = finalists.size() > 1 ? std::max(1, o.algo_final_rounds) : 0;
  if (rounds > 0) {  // a lead-in turn, untimed: the probes' mix of kernels leaves the clock where none of them would
    const int lead = finalists.front();
    const int n = ops_per_sample(t.algo_seconds[static_cast<std::size_t>(lead)], o.algo_final_seconds, 100000);
    for (int m = 0; m < n; ++m)
      if (auto st = matmul(candidates[static_cast<std::size_t>(lead)]); !st) return st.error();
  }
  for (int round = 0; round < rounds; ++round) {
    for (std::size_t f = 0; f < finalists.size(); ++f) {
      const int i = finalists[round % 2 == 0 ? f : finalists.size() - 1 - f];
      auto timed = turn(candidates[static_cast<std::size_t>(i)], t.algo_seconds[static_cast<std::size_t>(i)],
                        o.algo_final_seconds);
      if (!timed) return timed.error();
      t.algo_final_seconds[static_cast<std::size_t>(i)] += *timed / rounds;
    }
  }
  // The winner by the final's means; without a final (one finalist) that is the probe's fastest,
  // which gemm_finalists puts first. A tie goes to the earlier finalist.
  const std::vector<double>& judged = rounds > 0 ? t.algo_final_seconds : t.algo_seconds;
  int best = finalists.front();
  for (int i : finalists)
    if (judged[static_cast<std::size_t>(i)] < judged[static_cast<std::size_t>(best)]) best = i;
  const double best_seconds = judged[static_cast<std::size_t>(best)];
  const Candidate& algo = candidates[static_cast<std::size_t>(best)];
  const bool a_transposed = algo.layout->a_transposed;
  t.algo_rank = best;
  t.algo_origin = algo.origin;
  t.algo_id = static_cast<int>(algo.config.id);
  t.algo_config = describe(algo.config);
  t.algo_workspace_bytes = algo.h.workspaceSize;
  t.layout = a_transposed ? "TN" : "NN";
  // The probes ended on whichever candidate came last; under the power cap the clock swings for a
  // moment when the kernel changes (the first FP8 sample after the probes read ~5% low on the
  // H200). The chosen algorithm runs alone for a quarter of the warm-up (at least 0.2 s) first.
  const int settle = ops_per_sample(best_seconds, std::max(0.2, o.warmup_seconds / 4), 100000);
  for (int i = 0; i < settle; ++i)
    if (auto st = matmul(algo); !st) return st.error();
  t.warmup_matmuls += settle;

  t.matmuls_per_sample = ops_per_sample(best_seconds, o.sample_seconds, 100000);
  for (int r = 0; r < o.repetitions; ++r) {
    auto sec = time_matmuls(algo, t.matmuls_per_sample);
    if (!sec) return sec.error();
    t.seconds.push_back(*sec);
    if (r == 0) {
      float ms = 0;
      GPUDOC_CUDA_TRY(cudaEventElapsedTime(&ms, began.e, start.e));
      t.seconds_before_samples = static_cast<double>(ms) / 1e3;
    }
  }

  // Verification, outside the timed region: poison D (all bits set: NaN in every output type), run
  // the chosen algorithm once, and compare sampled elements with a double-precision dot product of
  // the stored inputs: D[i,j] = scale * sum_k op(A)[i,k] * B[k,j], op(A)[i,k] = A[k + i*K] when A is
  // stored transposed (K x M), A[i + k*M] otherwise (M x K); B stored K x N, D M x N.
  GPUDOC_CUDA_TRY(cudaMemsetAsync(d.ptr, 0xFF, o.m * o.n * out_bytes, s));
  if (auto st = matmul(algo); !st) return st.error();
  GPUDOC_CUDA_TRY(cudaStreamSynchronize(s));
  std::vector<unsigned char> col_a(o.k * in_bytes);
  std::vector<unsigned char> col_b(o.k * in_bytes);
  unsigned char out[8];
  std::uint64_t lcg = 0x2545F4914F6CDD1Dull;
  std::string worst;
  int failures = 0;
  for (int e = 0; e < o.verify_elements; ++e) {
    std::uint64_t i = 0;
    std::uint64_t j = 0;
    switch (e) {  // the four corners, then pseudo-random positions
      case 0: break;
      case 1: i = o.m - 1; j = o.n - 1; break;
      case 2: j = o.n - 1; break;
      case 3: i = o.m - 1; break;
      default:
        lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
        i = (lcg >> 33) % o.m;
        lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
        j = (lcg >> 33) % o.n;
    }
    const auto* base_b = static_cast<const unsigned char*>(b.ptr) + j * o.k * in_bytes;
    const auto* base_d = static_cast<const unsigned char*>(d.ptr) + (i + j * o.m) * out_bytes;
    if (a_transposed) {
      const auto* base_a = static_cast<const unsigned char*>(a.ptr) + i * o.k * in_bytes;
      GPUDOC_CUDA_TRY(cudaMemcpy(col_a.data(), base_a, col_a.size(), cudaMemcpyDeviceToHost));
    } else {  // row i of an M x K column-major matrix: K elements, M apart
      const auto* base_a = static_cast<const unsigned char*>(a.ptr) + i * in_bytes;
      GPUDOC_CUDA_TRY(cudaMemcpy2D(col_a.data(), in_bytes, base_a, o.m * in_bytes, in_bytes, o.k, cudaMemcpyDeviceToHost));
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
    const double reference = output_scale * sum;
    const double got = decode_output(o.type, out);
    const double bound = gemm_error_bound(o.type, output_scale * sum_abs, reference);
    const double err = std::fabs(got - reference);
    const double ratio = std::isfinite(got) ? err / bound : std::numeric_limits<double>::infinity();
    if (!(ratio <= 1.0)) ++failures;
    if (!(ratio <= t.worst_error_ratio)) {
      t.worst_error_ratio = ratio;
      worst = "D[" + std::to_string(i) + "," + std::to_string(j) + "] = " + std::to_string(got) + ", reference " +
              std::to_string(reference) + ", |error| " + std::to_string(err) + ", bound " + std::to_string(bound);
    }
  }
  t.verified = failures == 0;
  t.verify_detail = t.verified ? std::to_string(o.verify_elements) +
                                     " sampled output elements within the bound of a double-precision reference (worst at " +
                                     std::to_string(static_cast<int>(std::lround(t.worst_error_ratio * 100))) + "% of its bound)"
                               : std::to_string(failures) + " of " + std::to_string(o.verify_elements) +
                                     " sampled output elements outside the bound; worst " + worst;
  return t;
}

}  // namespace gpudoc::bench::cuda
