// gemm/vendor_plan.h says what a plan is and why.
#include "gemm/vendor_plan.h"

#include <cuda_fp16.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <vector>

#include "cublas_api.h"

namespace gemm {

class VendorPlan {
 public:
  explicit VendorPlan(const detail::CublasLtApi& lt) : lt(lt) {}
  ~VendorPlan() {
    if (pref) lt.MatmulPreferenceDestroy(pref);
    if (desc) lt.MatmulDescDestroy(desc);
    if (handle) lt.Destroy(handle);
  }
  // The pick for m×n×k: that of the grid shape at or above it, a dimension
  // beyond the grid taking its last size (a pick for 8192 suits larger);
  // nullptr where the heuristic had none.
  const cublasLtMatmulAlgo_t* PickFor(int64_t m, int64_t n, int64_t k) const {
    const int i = Index(m), j = Index(n), l = Index(k);
    const int pick = cell_pick[(static_cast<size_t>(i) * sizes.size() + j) * sizes.size() + l];
    return pick < 0 ? nullptr : &picks[static_cast<size_t>(pick)];
  }

  const detail::CublasLtApi& lt;
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  std::vector<int64_t> sizes;                // the grid, per dimension, ascending
  std::vector<cublasLtMatmulAlgo_t> picks;   // distinct
  std::vector<int> cell_pick;                // per grid shape: index into picks, or -1

 private:
  int Index(int64_t x) const {
    const auto it = std::lower_bound(sizes.begin(), sizes.end(), x);
    return static_cast<int>(std::min(it - sizes.begin(), static_cast<std::ptrdiff_t>(sizes.size()) - 1));
  }
};

void VendorPlanDeleter::operator()(VendorPlan* plan) const { delete plan; }

namespace {

// 1, 2, 3, 4, 6, 8, 12, ... 6144, 8192: each power of two and the point between.
std::vector<int64_t> GridSizes() {
  std::vector<int64_t> sizes{1};
  for (int64_t p = 2; p <= 8192; p *= 2) {
    if (p >= 4) sizes.push_back(p * 3 / 4);
    sizes.push_back(p);
  }
  return sizes;
}

// Row-major D(m×n) = A(m×k)·B(n×k)ᵀ as cublasGemmEx gets it (gemm.cpp):
// column-major Dᵀ = op(B)·A, B read transposed, each at its pitch.
class Layouts {
 public:
  Layouts(const detail::CublasLtApi& lt, int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldd)
      : lt_(lt) {
    lt.MatrixLayoutCreate(&b, CUDA_R_16F, k, n, ldb);
    lt.MatrixLayoutCreate(&a, CUDA_R_16F, k, m, lda);
    lt.MatrixLayoutCreate(&d, CUDA_R_16F, n, m, ldd);
  }
  ~Layouts() {
    for (auto layout : {b, a, d}) {
      if (layout) lt_.MatrixLayoutDestroy(layout);
    }
  }
  Layouts(const Layouts&) = delete;
  Layouts& operator=(const Layouts&) = delete;
  bool ok() const { return b && a && d; }

  cublasLtMatrixLayout_t b = nullptr, a = nullptr, d = nullptr;

 private:
  const detail::CublasLtApi& lt_;
};

int64_t Pitch(int64_t row) { return (row + 7) / 8 * 8; }  // 16 bytes of fp16, as the engine stores rows

std::string LtError(const char* call, cublasStatus_t s) {
  return std::string(call) + " failed (cuBLAS status " + std::to_string(static_cast<int>(s)) + ")";
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

cublasStatus_t Run(const VendorPlan& plan, const cublasLtMatmulAlgo_t& algo, const Problem& p, int64_t k,
                   const DeviceContext& ctx, cudaStream_t stream) {
  const Layouts layouts(plan.lt, p.m, p.n, k, p.lda, p.ldb, p.ldd);
  if (!layouts.ok()) return CUBLAS_STATUS_ALLOC_FAILED;
  const float alpha = 1.0f, beta = 0.0f;
  return plan.lt.Matmul(plan.handle, plan.desc, &alpha, p.b, layouts.b, p.a, layouts.a, &beta, p.d, layouts.d, p.d,
                        layouts.d, &algo, ctx.cublas_workspace, ctx.cublas_workspace_bytes, stream);
}

// The heuristic's pick for every grid shape, into plan->picks and cell_pick.
std::string AskHeuristic(VendorPlan* plan, VendorPlanStats* stats) {
  const auto& lt = plan->lt;
  const size_t count = plan->sizes.size();
  plan->cell_pick.assign(count * count * count, -1);
  size_t cell = 0;
  for (int64_t m : plan->sizes) {
    for (int64_t n : plan->sizes) {
      for (int64_t k : plan->sizes) {
        const Layouts layouts(lt, m, n, k, Pitch(k), Pitch(k), Pitch(n));
        if (!layouts.ok()) return "cublasLtMatrixLayoutCreate failed";
        cublasLtMatmulHeuristicResult_t result{};
        int found = 0;
        ++stats->shapes;
        const auto s = lt.MatmulAlgoGetHeuristic(plan->handle, plan->desc, layouts.b, layouts.a, layouts.d, layouts.d,
                                                 plan->pref, 1, &result, &found);
        if (s == CUBLAS_STATUS_SUCCESS && found > 0) {
          auto same = [&](const cublasLtMatmulAlgo_t& a) { return std::memcmp(&a, &result.algo, sizeof(a)) == 0; };
          auto it = std::find_if(plan->picks.begin(), plan->picks.end(), same);
          if (it == plan->picks.end()) it = plan->picks.insert(plan->picks.end(), result.algo);
          plan->cell_pick[cell] = static_cast<int>(it - plan->picks.begin());
        }
        ++cell;
      }
    }
  }
  stats->picks = static_cast<int>(plan->picks.size());
  return "";
}

// Runs each pick once at the first grid shape that picked it: its kernel
// is then loaded. What the buffers hold does not matter.
std::string LoadPicks(const VendorPlan& plan, const DeviceContext& ctx, cudaStream_t stream, VendorPlanStats* stats) {
  const size_t count = plan.sizes.size();
  std::vector<Problem> first(plan.picks.size());
  int64_t a_elems = 1, b_elems = 1, d_elems = 1;
  for (size_t cell = 0; cell < plan.cell_pick.size(); ++cell) {
    const int pick = plan.cell_pick[cell];
    if (pick < 0 || first[static_cast<size_t>(pick)].m != 0) continue;
    Problem& p = first[static_cast<size_t>(pick)];
    p.m = plan.sizes[cell / (count * count)];
    p.n = plan.sizes[cell / count % count];
    p.k = plan.sizes[cell % count];
    p.lda = p.ldb = Pitch(p.k);
    p.ldd = Pitch(p.n);
    a_elems = std::max(a_elems, p.m * p.lda);
    b_elems = std::max(b_elems, p.n * p.ldb);
    d_elems = std::max(d_elems, p.m * p.ldd);
  }
  __half *a = nullptr, *b = nullptr, *d = nullptr;
  cudaError_t e = cudaMallocAsync(reinterpret_cast<void**>(&a), sizeof(__half) * a_elems, stream);
  if (e == cudaSuccess) e = cudaMallocAsync(reinterpret_cast<void**>(&b), sizeof(__half) * b_elems, stream);
  if (e == cudaSuccess) e = cudaMallocAsync(reinterpret_cast<void**>(&d), sizeof(__half) * d_elems, stream);
  if (e == cudaSuccess) e = cudaMemsetAsync(a, 0, sizeof(__half) * a_elems, stream);
  if (e == cudaSuccess) e = cudaMemsetAsync(b, 0, sizeof(__half) * b_elems, stream);
  std::string error = e == cudaSuccess ? "" : std::string("plan buffers: ") + cudaGetErrorString(e);
  for (size_t i = 0; i < first.size() && error.empty(); ++i) {
    Problem p = first[i];
    p.a = a;
    p.b = b;
    p.d = d;
    if (Run(plan, plan.picks[i], p, p.k, ctx, stream) == CUBLAS_STATUS_SUCCESS) ++stats->loaded;
  }
  for (__half* buffer : {a, b, d}) {
    if (buffer) cudaFreeAsync(buffer, stream);
  }
  if (e = cudaStreamSynchronize(stream); e != cudaSuccess && error.empty()) {
    error = std::string("loading the plan's kernels: ") + cudaGetErrorString(e);
  }
  return error;
}

}  // namespace

std::string BuildVendorPlan(const DeviceContext& ctx, cudaStream_t stream, VendorPlanPtr* out, VendorPlanStats* stats) {
  *stats = VendorPlanStats{};
  std::string load_error;
  const detail::CublasLtApi* lt = detail::CublasLt(&load_error);
  if (lt == nullptr) return load_error;
  VendorPlanPtr plan(new VendorPlan(*lt));
  if (auto s = lt->Create(&plan->handle); s != CUBLAS_STATUS_SUCCESS) return LtError("cublasLtCreate", s);
  if (auto s = lt->MatmulDescCreate(&plan->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F); s != CUBLAS_STATUS_SUCCESS) {
    return LtError("cublasLtMatmulDescCreate", s);
  }
  const cublasOperation_t transpose = CUBLAS_OP_T;
  lt->MatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSA, &transpose, sizeof(transpose));
  if (auto s = lt->MatmulPreferenceCreate(&plan->pref); s != CUBLAS_STATUS_SUCCESS) {
    return LtError("cublasLtMatmulPreferenceCreate", s);
  }
  // What cublasGemmEx works with: the context's workspace, and split-K
  // partial sums kept in fp32 (CreateContext's math mode).
  const uint64_t workspace = ctx.cublas_workspace_bytes;
  lt->MatmulPreferenceSetAttribute(plan->pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                   sizeof(workspace));
  const uint32_t reductions = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
  lt->MatmulPreferenceSetAttribute(plan->pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &reductions,
                                   sizeof(reductions));
  plan->sizes = GridSizes();

  auto start = std::chrono::steady_clock::now();
  if (auto err = AskHeuristic(plan.get(), stats); !err.empty()) return err;
  stats->heuristic_seconds = SecondsSince(start);
  start = std::chrono::steady_clock::now();
  if (auto err = LoadPicks(*plan, ctx, stream, stats); !err.empty()) return err;
  stats->load_seconds = SecondsSince(start);
  *out = std::move(plan);
  return "";
}

bool detail::LaunchPlanned(const VendorPlan& plan, const Problem& p, int k_used, const DeviceContext& ctx,
                           cudaStream_t stream) {
  const cublasLtMatmulAlgo_t* algo = plan.PickFor(p.m, p.n, p.k);
  return algo != nullptr && Run(plan, *algo, p, k_used, ctx, stream) == CUBLAS_STATUS_SUCCESS;
}

}  // namespace gemm
