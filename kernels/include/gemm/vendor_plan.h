// Step 0 with no first-use cost. cuBLAS loads each of its kernels at that
// kernel's first launch, whatever CUDA_MODULE_LOADING says, and asks its
// heuristic at the first call of each shape: the first request of a shape
// took ×12-14 of steady on an H100 (2.7-20 ms against 0.06 ms of kernel),
// and a warm-up over 146 chosen shapes missed 3000x2000x1000's kernel.
//
// A plan asks cuBLASLt's heuristic (the one cublasGemmEx consults) once per
// shape of a grid, m in {1, 2, 3, 4, 6, 8, 12, ... 8192} and n and k in its
// multiples of 8 (10,400 shapes), and runs each distinct pick once, which
// loads its kernel. Step 0 then runs,
// for m×n×k, the pick of the grid shape at or above it in every dimension
// (a dimension beyond the grid takes its last size): no heuristic and no
// load on the request's path. A pick cuBLASLt refuses for the actual shape
// (it does for a ragged K or N: the grid's are multiples of 8, which is
// why the engine pads them, and why the grid has no others) goes to
// cublasGemmEx.
#pragma once

#include <cuda_runtime.h>

#include <functional>
#include <memory>
#include <string>

#include "gemm/gemm.h"

namespace gemm {

struct VendorPlanStats {
  int shapes = 0;   // grid shapes asked about
  int picks = 0;    // distinct picks among their answers
  int loaded = 0;   // of those, run once without error
  double heuristic_seconds = 0, load_seconds = 0;
};

struct VendorPlanDeleter {
  void operator()(VendorPlan* plan) const;
};
using VendorPlanPtr = std::unique_ptr<VendorPlan, VendorPlanDeleter>;

// Builds the plan for ctx's device and runs each pick once on `stream`
// (then waits). Uses ctx's cuBLAS workspace; a context that runs the plan
// needs that same workspace size. "" or what failed.
std::string BuildVendorPlan(const DeviceContext& ctx, cudaStream_t stream, VendorPlanPtr* plan,
                            VendorPlanStats* stats);

// cuBLASLt at its best for one problem, the strongest vendor anchor: every
// algorithm its heuristic offers (up to `max_candidates`), each run `iters`
// times after `before_each` (gemm-bench flushes L2 there), the fastest
// median kept. cublasGemmEx takes the heuristic's first answer, which is
// not always the fastest (issue "The ladder beyond fp16 TN": 10-20% on
// several shapes of an H100). Any problem Launch takes: both 16-bit types,
// either layout of each operand, alpha and beta·C, a strided batch.
class VendorAutotune;
struct VendorAutotuneDeleter {
  void operator()(VendorAutotune* tuned) const;
};
using VendorAutotunePtr = std::unique_ptr<VendorAutotune, VendorAutotuneDeleter>;
struct VendorAutotuneStats {
  int candidates = 0;   // the heuristic offered
  int timed = 0;        // of those, ran the problem
  int best_index = -1;  // the fastest's place in the heuristic's order (0: cublasGemmEx's pick)
  double best_ms = 0;
};
std::string AutotuneVendor(const Problem& p, const DeviceContext& ctx, cudaStream_t stream,
                           const std::function<cudaError_t(cudaStream_t)>& before_each, VendorAutotunePtr* tuned,
                           int max_candidates = 16, int iters = 5);
const VendorAutotuneStats& AutotuneStats(const VendorAutotune& tuned);
// D of `p` (same shape and pitches as tuned) by the kept algorithm.
std::string LaunchAutotuned(const VendorAutotune& tuned, const Problem& p, const DeviceContext& ctx,
                            cudaStream_t stream);

namespace detail {
// Step 0 through `plan` with K `k_used` on `stream`: true when it launched,
// false (nothing launched) when cuBLASLt refuses the pick for the shape,
// so that the caller runs cublasGemmEx instead.
bool LaunchPlanned(const VendorPlan& plan, const Problem& p, int k_used, const DeviceContext& ctx,
                   cudaStream_t stream);
}  // namespace detail

}  // namespace gemm
