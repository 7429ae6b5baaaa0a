// gemm/vendor_plan.h says what a plan is and why.
#include "gemm/vendor_plan.h"

#include <cuda_fp16.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <functional>
#include <map>
#include <thread>
#include <vector>

#include "cublas_api.h"
#include "cublas_layout.h"

namespace gemm {

namespace {

// A cuBLASLt handle with the matmul description and preferences step 0
// goes by: what cublasGemmEx works with (gemm.cpp), the context's
// workspace, and split-K partial sums kept in fp32 (CreateContext's math
// mode). One per thread that asks the heuristic, and one for the plan.
class LtSession {
 public:
  explicit LtSession(const detail::CublasLtApi& lt) : lt(lt) {}
  ~LtSession() {
    if (pref) lt.MatmulPreferenceDestroy(pref);
    if (desc) lt.MatmulDescDestroy(desc);
    if (handle) lt.Destroy(handle);
  }
  LtSession(const LtSession&) = delete;
  LtSession& operator=(const LtSession&) = delete;

  // "" or what failed.
  std::string Open(uint64_t workspace_bytes) {
    if (auto s = lt.Create(&handle); s != CUBLAS_STATUS_SUCCESS) return Error("cublasLtCreate", s);
    if (auto s = lt.MatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F); s != CUBLAS_STATUS_SUCCESS) {
      return Error("cublasLtMatmulDescCreate", s);
    }
    detail::SetTransposes(lt, desc, Layout::kKContiguous, Layout::kKContiguous);
    if (auto s = lt.MatmulPreferenceCreate(&pref); s != CUBLAS_STATUS_SUCCESS) {
      return Error("cublasLtMatmulPreferenceCreate", s);
    }
    lt.MatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
                                    sizeof(workspace_bytes));
    detail::KeepSplitKSumsInFp32(lt, pref);
    return "";
  }

  const detail::CublasLtApi& lt;
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;

 private:
  static std::string Error(const char* call, cublasStatus_t s) {
    return std::string(call) + " failed (cuBLAS status " + std::to_string(static_cast<int>(s)) + ")";
  }
};

}  // namespace

class VendorPlan {
 public:
  explicit VendorPlan(const detail::CublasLtApi& lt) : session(lt) {}
  // The pick for m×n×k: that of the grid shape at or above it, a dimension
  // beyond the grid taking its last size (a pick for 8192 suits larger);
  // nullptr where the heuristic had none.
  const cublasLtMatmulAlgo_t* PickFor(int64_t m, int64_t n, int64_t k) const {
    const int pick = cell_pick[Cell(Index(m_sizes, m), Index(nk_sizes, n), Index(nk_sizes, k))];
    return pick < 0 ? nullptr : &picks[static_cast<size_t>(pick)];
  }

  // The grid: m in 1, 2, 3, 4, 6, 8, 12, ... 6144, 8192 (each power of two
  // and the point between); n and k the same from 8 on, less 12: the
  // engine pads them to multiples of 8, so no request looks up the rest.
  size_t cells() const { return m_sizes.size() * nk_sizes.size() * nk_sizes.size(); }
  size_t Cell(size_t i, size_t j, size_t l) const { return (i * nk_sizes.size() + j) * nk_sizes.size() + l; }
  void ShapeOf(size_t cell, int64_t* m, int64_t* n, int64_t* k) const {
    const size_t nk = nk_sizes.size();
    *m = m_sizes[cell / (nk * nk)];
    *n = nk_sizes[cell / nk % nk];
    *k = nk_sizes[cell % nk];
  }

  LtSession session;                         // what step 0 runs through
  std::vector<int64_t> m_sizes, nk_sizes;    // ascending
  std::vector<cublasLtMatmulAlgo_t> picks;   // distinct
  std::vector<int> cell_pick;                // per grid shape (Cell): index into picks, or -1

 private:
  static size_t Index(const std::vector<int64_t>& sizes, int64_t x) {
    const auto it = std::lower_bound(sizes.begin(), sizes.end(), x);
    return std::min(static_cast<size_t>(it - sizes.begin()), sizes.size() - 1);
  }
};

void VendorPlanDeleter::operator()(VendorPlan* plan) const { delete plan; }

namespace {

// 1, 2, 3, 4, 6, 8, 12, ... 6144, 8192: each power of two and the point
// between, from `first` on, keeping only multiples of `multiple`.
std::vector<int64_t> GridSizes(int64_t first, int64_t multiple) {
  std::vector<int64_t> sizes;
  for (int64_t p = 1; p <= 8192; p *= 2) {
    for (int64_t x : {p * 3 / 4, p}) {
      if (x >= first && x % multiple == 0 && (sizes.empty() || x > sizes.back())) sizes.push_back(x);
    }
  }
  return sizes;
}

// p's operands, C and D as the session's transposes read them
// (cublas_layout.h), each at its pitch, with K `k` and p's batch: B, A, C
// and D column-major. C is D's layout where beta is 0 (cuBLASLt reads none).
class Layouts {
 public:
  Layouts(const detail::CublasLtApi& lt, const Problem& p, int64_t k) : lt_(lt) {
    const bool a_k = p.a_layout == Layout::kKContiguous, b_k = p.b_layout == Layout::kKContiguous;
    const cudaDataType_t in = detail::CudaTypeOf(p.operands), out = detail::CudaTypeOf(p.result);
    ok_ = detail::CreateLtLayout(lt, &b, in, b_k ? k : p.n, b_k ? p.n : k, p.ldb, p.stride_b, p.batch) &&
          detail::CreateLtLayout(lt, &a, in, a_k ? k : p.m, a_k ? p.m : k, p.lda, p.stride_a, p.batch) &&
          detail::CreateLtLayout(lt, &d, out, p.n, p.m, p.ldd, p.stride_d, p.batch) &&
          (p.beta == 0.0f || detail::CreateLtLayout(lt, &c_, out, p.n, p.m, p.ldc, p.stride_c, p.batch));
  }
  ~Layouts() {
    for (auto layout : {b, a, d, c_}) {
      if (layout) lt_.MatrixLayoutDestroy(layout);
    }
  }
  Layouts(const Layouts&) = delete;
  Layouts& operator=(const Layouts&) = delete;
  bool ok() const { return ok_; }
  cublasLtMatrixLayout_t c() const { return c_ != nullptr ? c_ : d; }

  cublasLtMatrixLayout_t b = nullptr, a = nullptr, d = nullptr;

 private:
  const detail::CublasLtApi& lt_;
  cublasLtMatrixLayout_t c_ = nullptr;
  bool ok_ = false;
};

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

cublasStatus_t Run(const LtSession& lt, const cublasLtMatmulAlgo_t& algo, const Problem& p, int64_t k,
                   const DeviceContext& ctx, cudaStream_t stream) {
  const Layouts layouts(lt.lt, p, k);
  if (!layouts.ok()) return CUBLAS_STATUS_ALLOC_FAILED;
  const float alpha = p.alpha, beta = p.beta;
  const void* c = p.beta != 0.0f ? static_cast<const void*>(p.c) : p.d;
  return lt.lt.Matmul(lt.handle, lt.desc, &alpha, p.b, layouts.b, p.a, layouts.a, &beta, c, layouts.c(), p.d,
                      layouts.d, &algo, ctx.cublas_workspace, ctx.cublas_workspace_bytes, stream);
}

// The heuristic's pick for every grid shape, into plan->picks and
// cell_pick. About 130 µs of host time a shape, so threads share the grid's
// rows of m, each with its own session.
std::string AskHeuristic(VendorPlan* plan, uint64_t workspace_bytes, VendorPlanStats* stats) {
  const size_t cells = plan->cells();
  std::vector<cublasLtMatmulAlgo_t> answer(cells);
  std::vector<char> answered(cells, 0);
  const int threads = static_cast<int>(std::clamp(std::thread::hardware_concurrency() / 2, 1u, 8u));
  std::vector<std::string> errors(static_cast<size_t>(threads));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      LtSession session(plan->session.lt);
      if (errors[t] = session.Open(workspace_bytes); !errors[t].empty()) return;
      const size_t nk = plan->nk_sizes.size();
      for (size_t i = static_cast<size_t>(t); i < plan->m_sizes.size(); i += static_cast<size_t>(threads)) {
        for (size_t j = 0; j < nk; ++j) {
          for (size_t l = 0; l < nk; ++l) {
            const size_t cell = plan->Cell(i, j, l);
            int64_t m, n, k;
            plan->ShapeOf(cell, &m, &n, &k);
            const Layouts layouts(
                session.lt, Problem{m, n, k, nullptr, nullptr, nullptr, SixteenBytePitch(k), SixteenBytePitch(k),
                                    SixteenBytePitch(n)},
                k);
            if (!layouts.ok()) {
              errors[t] = "cublasLtMatrixLayoutCreate failed";
              return;
            }
            cublasLtMatmulHeuristicResult_t result{};
            int found = 0;
            if (session.lt.MatmulAlgoGetHeuristic(session.handle, session.desc, layouts.b, layouts.a, layouts.d,
                                                  layouts.d, session.pref, 1, &result, &found) ==
                    CUBLAS_STATUS_SUCCESS &&
                found > 0) {
              answer[cell] = result.algo;
              answered[cell] = 1;
            }
          }
        }
      }
    });
  }
  for (auto& thread : pool) thread.join();
  for (const auto& e : errors) {
    if (!e.empty()) return e;
  }
  stats->shapes = static_cast<int>(cells);
  static_assert(sizeof(cublasLtMatmulAlgo_t) == sizeof(std::array<uint64_t, 8>), "an algo is 8 words");
  std::map<std::array<uint64_t, 8>, int> index;  // distinct picks, by their bytes
  plan->cell_pick.assign(cells, -1);
  for (size_t cell = 0; cell < cells; ++cell) {
    if (!answered[cell]) continue;
    std::array<uint64_t, 8> key;
    std::memcpy(key.data(), &answer[cell], sizeof(key));
    auto [it, added] = index.emplace(key, static_cast<int>(plan->picks.size()));
    if (added) plan->picks.push_back(answer[cell]);
    plan->cell_pick[cell] = it->second;
  }
  stats->picks = static_cast<int>(plan->picks.size());
  return "";
}

// Runs each pick once at the first grid shape that picked it: its kernel
// is then loaded. What the buffers hold does not matter.
std::string LoadPicks(const VendorPlan& plan, const DeviceContext& ctx, cudaStream_t stream, VendorPlanStats* stats) {
  std::vector<Problem> first(plan.picks.size());
  int64_t a_elems = 1, b_elems = 1, d_elems = 1;
  for (size_t cell = 0; cell < plan.cell_pick.size(); ++cell) {
    const int pick = plan.cell_pick[cell];
    if (pick < 0 || first[static_cast<size_t>(pick)].m != 0) continue;
    Problem& p = first[static_cast<size_t>(pick)];
    plan.ShapeOf(cell, &p.m, &p.n, &p.k);
    p.lda = p.ldb = SixteenBytePitch(p.k);
    p.ldd = SixteenBytePitch(p.n);
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
    if (Run(plan.session, plan.picks[i], p, p.k, ctx, stream) == CUBLAS_STATUS_SUCCESS) ++stats->loaded;
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
  if (auto err = plan->session.Open(ctx.cublas_workspace_bytes); !err.empty()) return err;
  plan->m_sizes = GridSizes(1, 1);
  plan->nk_sizes = GridSizes(8, 8);

  auto start = std::chrono::steady_clock::now();
  if (auto err = AskHeuristic(plan.get(), ctx.cublas_workspace_bytes, stats); !err.empty()) return err;
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
  return algo != nullptr && Run(plan.session, *algo, p, k_used, ctx, stream) == CUBLAS_STATUS_SUCCESS;
}

class VendorAutotune {
 public:
  explicit VendorAutotune(const detail::CublasLtApi& lt) : session(lt) {}
  LtSession session;
  cublasLtMatmulAlgo_t algo{};
  VendorAutotuneStats stats;
};

void VendorAutotuneDeleter::operator()(VendorAutotune* tuned) const { delete tuned; }

std::string AutotuneVendor(const Problem& problem, const DeviceContext& ctx, cudaStream_t stream,
                           const std::function<cudaError_t(cudaStream_t)>& before_each, VendorAutotunePtr* out,
                           int max_candidates, int iters) {
  Problem p;
  if (auto err = ExplicitProblem(problem, &p); !err.empty()) return err;
  std::string load_error;
  const detail::CublasLtApi* lt = detail::CublasLt(&load_error);
  if (lt == nullptr) return load_error;
  VendorAutotunePtr tuned(new VendorAutotune(*lt));
  if (auto err = tuned->session.Open(ctx.cublas_workspace_bytes); !err.empty()) return err;
  detail::SetTransposes(*lt, tuned->session.desc, p.a_layout, p.b_layout);
  const LtSession& s = tuned->session;
  const Layouts layouts(s.lt, p, p.k);
  if (!layouts.ok()) return "cublasLtMatrixLayoutCreate failed";
  std::vector<cublasLtMatmulHeuristicResult_t> results(static_cast<size_t>(max_candidates));
  int found = 0;
  if (s.lt.MatmulAlgoGetHeuristic(s.handle, s.desc, layouts.b, layouts.a, layouts.c(), layouts.d, s.pref,
                                  max_candidates, results.data(), &found) != CUBLAS_STATUS_SUCCESS ||
      found == 0) {
    return "cuBLASLt's heuristic offers no algorithm for this problem";
  }
  cudaEvent_t start = nullptr, stop = nullptr;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  double best = 0;
  std::string error;
  for (int c = 0; c < found && error.empty(); ++c) {
    std::vector<float> ms;
    for (int i = 0; i < iters + 1; ++i) {  // the first run loads the kernel: not timed
      if (before_each) {
        if (cudaError_t e = before_each(stream); e != cudaSuccess) error = cudaGetErrorString(e);
      }
      cudaEventRecord(start, stream);
      const cublasStatus_t status = Run(s, results[static_cast<size_t>(c)].algo, p, p.k, ctx, stream);
      cudaEventRecord(stop, stream);
      if (cudaError_t e = cudaEventSynchronize(stop); e != cudaSuccess) error = cudaGetErrorString(e);
      if (status != CUBLAS_STATUS_SUCCESS || !error.empty()) break;
      float t = 0;
      cudaEventElapsedTime(&t, start, stop);
      if (i > 0) ms.push_back(t);
    }
    if (ms.size() != static_cast<size_t>(iters)) continue;  // this candidate refused the problem
    std::sort(ms.begin(), ms.end());
    const double median = ms[ms.size() / 2];
    ++tuned->stats.timed;
    if (best == 0 || median < best) {
      best = median;
      tuned->algo = results[static_cast<size_t>(c)].algo;
      tuned->stats.best_index = c;
    }
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  if (!error.empty()) return "autotuning cuBLASLt: " + error;
  if (best == 0) return "none of cuBLASLt's candidates ran this problem";
  tuned->stats.candidates = found;
  tuned->stats.best_ms = best;
  *out = std::move(tuned);
  return "";
}

const VendorAutotuneStats& AutotuneStats(const VendorAutotune& tuned) { return tuned.stats; }

std::string LaunchAutotuned(const VendorAutotune& tuned, const Problem& problem, const DeviceContext& ctx,
                            cudaStream_t stream) {
  Problem p;
  if (auto err = ExplicitProblem(problem, &p); !err.empty()) return err;
  const cublasStatus_t status = Run(tuned.session, tuned.algo, p, p.k, ctx, stream);
  return status == CUBLAS_STATUS_SUCCESS ? "" : "cublasLtMatmul failed (status " + std::to_string(status) + ")";
}

}  // namespace gemm
