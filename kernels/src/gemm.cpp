#include "gemm/gemm.h"

#include <algorithm>
#include <atomic>
#include <string>

#include "common/batch.h"
#include "common/split_k.h"
#include "common/step_form.h"
#include "cublas_api.h"
#include "cublas_layout.h"
#include "gemm/vendor_forms.h"
#include "gemm/vendor_plan.h"
#include "gemm/steps.h"
#include "gemm/test_hooks.h"
#include "ladder.h"

namespace gemm {
namespace {

constexpr size_t kCublasWorkspaceBytes = 32u << 20;  // what cuBLAS asks for on Hopper

std::string CudaError(const char* what, cudaError_t e) {
  return std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
}

std::string CublasError(const char* what, cublasStatus_t s) {
  const detail::CublasApi* api = detail::Cublas(nullptr);
  return std::string(what) + ": " + api->GetStatusName(s) + " (" + api->GetStatusString(s) + ")";
}

// Whether `k` loads on this device: sm_90a code on compute capability 9.0,
// sm_100a on 10.0. Arch-specific ("a") code runs on exactly that compute
// capability: a 10.3 part (B300) cannot load sm_100a kernels.
bool LoadsOn(const detail::LadderKernel& k, const DeviceContext& ctx) {
  return k.cc_major == ctx.cc_major && ctx.cc_minor == 0;
}

// The kernel of `step` for this device's family.
const detail::LadderKernel* FindLadderKernel(int step, const DeviceContext& ctx) {
  for (auto family : {detail::Sm90Kernels(), detail::Sm100Kernels()}) {
    for (const auto& k : family) {
      if (k.step == step && LoadsOn(k, ctx)) return &k;
    }
  }
  return nullptr;
}

// D row-major m×n = A·Bᵀ is, in cuBLAS's column-major terms, the n×m matrix
// Dᵀ = Bᵀᵀ·Aᵀ = op(B)·A with B read transposed: no copies needed, and each
// row-major leading dimension is cuBLAS's column-major one.
std::atomic<bool> vendor_fault{false};  // testing::PlantVendorFault

// What both cuBLAS launches do first: check that the sizes fit its 32-bit
// ints, bind the stream, and give the K to pass (halved by a planted vendor
// fault). "" on success.
std::string PrepareCublas(const Problem& p, const DeviceContext& ctx, cudaStream_t stream, int* k_used) {
  if (p.m > INT32_MAX || p.n > INT32_MAX || p.k > INT32_MAX || p.lda > INT32_MAX || p.ldb > INT32_MAX ||
      p.ldd > INT32_MAX) {
    return "cuBLAS takes dimensions and leading dimensions below 2^31";
  }
  const detail::CublasApi& cublas = *detail::Cublas(nullptr);  // loaded by CreateContext
  if (auto s = cublas.SetStream(ctx.cublas, stream); s != CUBLAS_STATUS_SUCCESS) return CublasError("cublasSetStream", s);
  const int k = static_cast<int>(p.k);
  *k_used = vendor_fault.load(std::memory_order_relaxed) ? std::max(k / 2, 1) : k;
  return "";
}

// The vendor plan's picks are for the plain GEMM: fp16, K contiguous in
// both operands, D = A·Bᵀ alone.
bool PlanCovers(const Problem& p) {
  return p.batch == 1 && p.operands == ElementType::kF16 && p.result == ElementType::kF16 &&
         p.a_layout == Layout::kKContiguous && p.b_layout == Layout::kKContiguous && !common::IsFused(p);
}

std::string LaunchCublas(const Problem& p, const DeviceContext& ctx, cudaStream_t stream) {
  if (p.operands != p.result) {
    return "cublasGemmEx takes a D of A and B's type; gemm/vendor_forms.h (cuBLASLt) computes every form";
  }
  int k_used = 0;
  if (auto err = PrepareCublas(p, ctx, stream, &k_used); !err.empty()) return err;
  if (ctx.vendor_plan != nullptr && PlanCovers(p) && detail::LaunchPlanned(*ctx.vendor_plan, p, k_used, ctx, stream)) {
    return "";
  }
  // cuBLAS reads C from D's own memory: a C elsewhere is copied there first.
  if (p.beta != 0.0f && p.c != p.d) {
    for (int64_t i = 0; i < p.batch; ++i) {
      const cudaError_t e = cudaMemcpy2DAsync(p.d + i * p.stride_d, p.ldd * 2, p.c + i * p.stride_c, p.ldc * 2,
                                              p.n * 2, p.m, cudaMemcpyDeviceToDevice, stream);
      if (e != cudaSuccess) return CudaError("copying C into D", e);
    }
  }
  const float alpha = p.alpha, beta = p.beta;
  const int m = static_cast<int>(p.m), n = static_cast<int>(p.n);
  const cudaDataType_t in = detail::CudaTypeOf(p.operands), out = detail::CudaTypeOf(p.result);
  const cublasOperation_t op_b = detail::OpOfB(p.b_layout), op_a = detail::OpOfA(p.a_layout);
  if (p.batch > 1) {
    if (p.batch > INT32_MAX) return "cuBLAS takes a batch below 2^31";
    auto s = detail::Cublas(nullptr)->GemmStridedBatchedEx(
        ctx.cublas, op_b, op_a, n, m, k_used, &alpha, p.b, in, static_cast<int>(p.ldb), p.stride_b, p.a, in,
        static_cast<int>(p.lda), p.stride_a, &beta, p.d, out, static_cast<int>(p.ldd), p.stride_d,
        static_cast<int>(p.batch), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    return s == CUBLAS_STATUS_SUCCESS ? "" : CublasError("cublasGemmStridedBatchedEx", s);
  }
  auto s = detail::Cublas(nullptr)->GemmEx(ctx.cublas, op_b, op_a, n, m, k_used, &alpha, p.b, in,
                                           static_cast<int>(p.ldb), p.a, in, static_cast<int>(p.lda), &beta, p.d,
                                           out, static_cast<int>(p.ldd), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  return s == CUBLAS_STATUS_SUCCESS ? "" : CublasError("cublasGemmEx", s);
}

}  // namespace

void testing::PlantVendorFault(bool on) { vendor_fault = on; }

int64_t detail::VendorKUsed(int64_t k) {
  return vendor_fault.load(std::memory_order_relaxed) ? std::max<int64_t>(k / 2, 1) : k;
}

namespace {
std::atomic<int> planted_step{-1};                                  // testing::PlantStepFault
std::atomic<testing::StepFault> planted_fault{testing::StepFault::kNone};
}  // namespace

void testing::PlantStepFault(int step, StepFault fault) {
  planted_fault = fault;
  planted_step = fault == StepFault::kNone ? -1 : step;
}

std::string LaunchVendorBatch(const Problem& first, int count, int64_t stride_a, int64_t stride_b, int64_t stride_d,
                              const DeviceContext& ctx, cudaStream_t stream) {
  if (first.m < 1 || first.n < 1 || first.k < 1 || count < 1) return "m, n, k and the count must be >= 1";
  if (auto err = ProblemTypesError(first); !err.empty()) return err;
  Problem p = first;
  if (auto err = LeadingDimensionError(p.m, p.n, p.k, &p.lda, &p.ldb, &p.ldd, p.a_layout, p.b_layout);
      !err.empty()) return err;
  const int64_t a_rows = StoredShapeOf(p.a_layout, p.m, p.k).rows, b_rows = StoredShapeOf(p.b_layout, p.n, p.k).rows;
  if (stride_a < a_rows * p.lda || stride_b < b_rows * p.ldb || stride_d < p.m * p.ldd) {
    return "batch strides must keep the problems apart (at least the rows of A, B and D times their leading "
           "dimensions)";
  }
  if (common::IsFused(p)) return "a batch of Problems takes no alpha, beta or C";
  int k_used = 0;
  if (auto err = PrepareCublas(p, ctx, stream, &k_used); !err.empty()) return err;
  const float alpha = 1.0f, beta = 0.0f;
  // As in LaunchCublas: row-major D = A·Bᵀ is column-major Dᵀ = op(B)·A.
  auto s = detail::Cublas(nullptr)->GemmStridedBatchedEx(
      ctx.cublas, detail::OpOfB(p.b_layout), detail::OpOfA(p.a_layout), static_cast<int>(p.n), static_cast<int>(p.m),
      k_used, &alpha, p.b, detail::CudaTypeOf(p.operands), static_cast<int>(p.ldb), stride_b, p.a,
      detail::CudaTypeOf(p.operands), static_cast<int>(p.lda), stride_a, &beta, p.d, detail::CudaTypeOf(p.result),
      static_cast<int>(p.ldd), stride_d, count, CUBLAS_COMPUTE_32F,
      CUBLAS_GEMM_DEFAULT);
  return s == CUBLAS_STATUS_SUCCESS ? "" : CublasError("cublasGemmStridedBatchedEx", s);
}

std::string CreateContext(int device, DeviceContext* ctx) {
  *ctx = DeviceContext{};
  ctx->device = device;
  if (auto e = cudaSetDevice(device); e != cudaSuccess) return CudaError("cudaSetDevice", e);
  cudaDeviceProp prop{};
  if (auto e = cudaGetDeviceProperties(&prop, device); e != cudaSuccess) return CudaError("cudaGetDeviceProperties", e);
  ctx->sm_count = prop.multiProcessorCount;
  ctx->cc_major = prop.major;
  ctx->cc_minor = prop.minor;
  ctx->smem_optin = prop.sharedMemPerBlockOptin;
  std::string load_error;
  const detail::CublasApi* cublas = detail::Cublas(&load_error);
  if (cublas == nullptr) return load_error;
  if (auto s = cublas->Create(&ctx->cublas); s != CUBLAS_STATUS_SUCCESS) return CublasError("cublasCreate", s);
  if (auto e = cudaMalloc(&ctx->cublas_workspace, kCublasWorkspaceBytes); e != cudaSuccess) {
    return CudaError("cudaMalloc (cuBLAS workspace)", e);
  }
  ctx->cublas_workspace_bytes = kCublasWorkspaceBytes;
  if (auto s = cublas->SetWorkspace(ctx->cublas, ctx->cublas_workspace, kCublasWorkspaceBytes);
      s != CUBLAS_STATUS_SUCCESS) {
    return CublasError("cublasSetWorkspace", s);
  }
  // With an fp16 output, cuBLAS may reduce split-K partial sums in fp16, which
  // misses ladder.md's bound on tall-K shapes (seen: 33 of 330,000 elements
  // of 1100x300x2000 off against fp64). Keep every reduction in fp32.
  if (auto s = cublas->SetMathMode(ctx->cublas, static_cast<cublasMath_t>(
                                                     CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION));
      s != CUBLAS_STATUS_SUCCESS) {
    return CublasError("cublasSetMathMode", s);
  }
  if (auto err = detail::CreateVendorForms(&ctx->vendor_forms); !err.empty()) return err;
  // Split-K's workspace and the padded copies come from the stream-ordered
  // pool, which by default hands its memory back at every synchronize, so
  // that each launch maps pages again: split-K launches took 40 µs or more
  // on an H100 for 5 µs of work. Keep at least the split-K workspace's cap,
  // and never lower what the process keeps: the pool is the device's, and
  // gemmd keeps all it grows to (setting the cap here undid that for every
  // context made after gemmd set it).
  cudaMemPool_t pool = nullptr;
  if (auto e = cudaDeviceGetDefaultMemPool(&pool, device); e != cudaSuccess) return CudaError("memory pool", e);
  uint64_t keep = 0;
  if (auto e = cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep); e != cudaSuccess) {
    return CudaError("memory pool release threshold", e);
  }
  if (keep < static_cast<uint64_t>(common::kMaxSplitWorkspaceBytes)) {
    keep = static_cast<uint64_t>(common::kMaxSplitWorkspaceBytes);
    if (auto e = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep); e != cudaSuccess) {
      return CudaError("memory pool release threshold", e);
    }
  }
  for (auto family : {detail::Sm90Kernels(), detail::Sm100Kernels()}) {
    for (const auto& k : family) {
      if (!LoadsOn(k, *ctx) || k.prepare == nullptr) continue;
      if (auto e = k.prepare(); e != cudaSuccess) return CudaError("kernel attribute", e);
    }
  }
  return "";
}

void DestroyContext(DeviceContext* ctx) {
  detail::DestroyVendorForms(ctx->vendor_forms);
  if (ctx->cublas) detail::Cublas(nullptr)->Destroy(ctx->cublas);
  if (ctx->cublas_workspace) cudaFree(ctx->cublas_workspace);
  *ctx = DeviceContext{};
}

StepSupport Supports(int step, const DeviceContext& ctx) {
  if (step == kVendorStep) return {true, ""};
  if (FindStep(step) == nullptr) return {false, "is not a step of the ladder"};
  if (ctx.cc_major != 9 && ctx.cc_major != 10) {
    return {false, "runs on NVIDIA " + std::string(GpuFamilies(step)) + " GPUs; this one is sm_" +
                       std::to_string(ctx.cc_major) + std::to_string(ctx.cc_minor)};
  }
  if (ctx.cc_minor != 0) {
    return {false, "runs on NVIDIA " + std::string(GpuFamilies(step)) + " GPUs (compute capability 9.0 or 10.0); "
                   "this one is sm_" + std::to_string(ctx.cc_major) + std::to_string(ctx.cc_minor) + ", which cannot "
                   "load those arch-specific kernels", ""};
  }
  const std::string family = "sm_" + std::to_string(ctx.cc_major) + "0a";
  if (FindLadderKernel(step, ctx) == nullptr) return {false, "has no " + family + " kernel in this build yet", ""};
  return {true, "", family};
}

std::string ProblemTypesError(const Problem& p) {
  const auto sixteen_bit = [](ElementType t) { return t == ElementType::kF16 || t == ElementType::kBF16; };
  if (sixteen_bit(p.operands) && sixteen_bit(p.result)) return "";
  return std::string("a Problem's A and B are fp16 or bf16 and its D fp16 or bf16, not ") + ElementName(p.operands) +
         " operands and " + ElementName(p.result) + " D; gemm/vendor_forms.h computes every type";
}

namespace {

// "" when p's batch fields make sense (filling in a dense stride_d);
// otherwise what is wrong with them.
std::string BatchError(Problem* p) {
  if (p->batch < 1) return "batch = " + std::to_string(p->batch) + " must be >= 1";
  if (p->batch == 1) return "";
  if (p->stride_a < 0 || p->stride_b < 0 || p->stride_c < 0 || p->stride_d < 0) return "batch strides must be >= 0";
  if (p->stride_d == 0) p->stride_d = p->m * p->ldd;
  if (p->stride_d < p->m * p->ldd) {
    return "stride_d = " + std::to_string(p->stride_d) + " makes D's batch entries overlap (m * ldd = " +
           std::to_string(p->m * p->ldd) + ")";
  }
  if (p->beta != 0.0f && p->c == p->d && p->stride_c != p->stride_d) {
    return "C may be D itself only entry for entry: stride_c must equal stride_d";
  }
  return "";
}

// A batch a step cannot walk in one launch, one entry at a time: steps 1-3
// (no TMA), and what the TMA steps' maps cannot take (common/batch.h).
std::string LaunchEntryByEntry(const detail::LadderKernel& kernel, const Problem& p, const DeviceContext& ctx,
                               cudaStream_t stream) {
  for (int64_t i = 0; i < p.batch; ++i) {
    Problem entry = p;
    entry.batch = 1;
    entry.a = p.a + i * p.stride_a;
    entry.b = p.b + i * p.stride_b;
    entry.c = p.c == nullptr ? nullptr : p.c + i * p.stride_c;
    entry.d = p.d + i * p.stride_d;
    if (auto err = kernel.launch(entry, ctx, stream); !err.empty()) {
      return "batch entry " + std::to_string(i) + ": " + err;
    }
  }
  return "";
}

bool WalksBatchInOneLaunch(int step, const Problem& p) {
  if (step < 4) return false;
  if (step <= 5 && p.batch > 65535) return false;  // the tile grid's z
  return common::OneLaunchBatchError(p).empty();
}

}  // namespace

std::string ExplicitProblem(const Problem& problem, Problem* out) {
  if (problem.m < 1 || problem.n < 1 || problem.k < 1) return "m, n and k must be >= 1";
  if (auto err = ProblemTypesError(problem); !err.empty()) return err;
  Problem& p = *out;
  p = problem;
  if (p.beta != 0.0f) {
    if (p.c == nullptr) return "beta is not 0 but there is no C";
    if (p.ldc == 0) p.ldc = p.n;
    if (p.ldc < p.n) {
      return "ldc = " + std::to_string(p.ldc) + " is less than the row length n = " + std::to_string(p.n);
    }
  }
  if (auto err = LeadingDimensionError(p.m, p.n, p.k, &p.lda, &p.ldb, &p.ldd, p.a_layout, p.b_layout);
      !err.empty()) return err;
  return BatchError(&p);
}

std::string Launch(int step, const Problem& problem, const DeviceContext& ctx, cudaStream_t stream) {
  Problem p;  // every kernel sees explicit leading dimensions and strides
  if (auto err = ExplicitProblem(problem, &p); !err.empty()) return err;
  if (step == kVendorStep) return LaunchCublas(p, ctx, stream);
  const StepInfo* info = FindStep(step);
  if (info == nullptr) return "unknown step " + std::to_string(step);
  if (auto err = ShapeError(*info, p.m, p.n, p.k); !err.empty()) return err;
  const detail::LadderKernel* k = FindLadderKernel(step, ctx);
  if (k == nullptr) return "step " + std::to_string(step) + " " + Supports(step, ctx).reason;
  if (planted_step.load(std::memory_order_relaxed) == step) {
    // The kernel runs on a problem narrower in N, or shorter in K, than the
    // caller's: what a wrong descriptor N, or a K loop that stops early, does.
    if (planted_fault == testing::StepFault::kNarrowN && p.n > 1) p.n /= 2;
    if (planted_fault == testing::StepFault::kShortK && p.k > 1) p.k /= 2;
  }
  if (p.batch > 1 && !WalksBatchInOneLaunch(step, p)) return LaunchEntryByEntry(*k, p, ctx, stream);
  return k->launch(p, ctx, stream);
}

}  // namespace gemm
