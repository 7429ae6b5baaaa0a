#include "gemm/steps.h"

#include <array>
#include <sstream>

namespace gemm {
namespace {

// Steps 1 and 2 compute a single 128×128 output tile (the seed's first two
// kernels); from step 3 on, any shape is taken (TMA fills and clips edges).
constexpr std::array<StepInfo, kLastStep + 1> kSteps{{
    {0, "vendor", "vendor library: cuBLAS on GPUs, the BLAS on the CPU engine", 0, 0, 0},
    {1, "single-tile", "one 128x128x64 tile: synchronous loads to shared memory, one MMA", 128, 128, 64},
    {2, "k-loop", "one 128x128 output tile, K loop accumulating in place", 128, 128, 0},
    {3, "tiled", "2-D grid of CTAs, one 128x128 output tile each", 0, 0, 0},
    {4, "tma", "TMA loads completing on an mbarrier (expect_tx), TMA store of D", 0, 0, 0},
    {5, "pipelined", "2-stage software pipeline: load tile k+1 while multiplying tile k", 0, 0, 0},
    {6, "persistent", "persistent grid (only as many CTAs as fit at once), L2-friendly grouped tile order", 0, 0, 0},
    {7, "warp-specialized", "TMA producer warpgroup, MMA consumer warpgroup, full/empty barriers", 0, 0, 0},
    {8, "deep-pipeline", "warp specialization with a deeper pipeline: 3 stages per CTA, 2 CTAs per SM", 0, 0, 0},
    {9, "cluster", "2-CTA cluster: the shared operand tile is fetched once for both CTAs", 0, 0, 0},
    {10, "two-consumers", "two consumer warpgroups per CTA: the final kernel", 0, 0, 0},
}};

// Which families have each step: Hopper all ten, Blackwell 1-6 so far.
constexpr int kLastSm100Step = 6;

}  // namespace

std::span<const StepInfo> AllSteps() { return kSteps; }

std::string_view GpuFamilies(int step) {
  if (step < kFirstLadderStep || step > kLastStep) return {};
  return step <= kLastSm100Step ? "sm_90a or sm_100a" : "sm_90a";
}

const StepInfo* FindStep(int64_t step) {
  if (step < 0 || step > kLastStep) return nullptr;
  return &kSteps[static_cast<size_t>(step)];
}

std::string ShapeError(const StepInfo& info, int64_t m, int64_t n, int64_t k) {
  std::ostringstream out;
  auto check = [&](const char* dim, int64_t value, int64_t limit) {
    if (limit > 0 && value > limit && out.tellp() == 0) {
      out << "step " << info.step << " (" << info.name << ") takes " << dim << " <= " << limit
          << ", got " << dim << " = " << value;
    }
  };
  check("m", m, info.max_m);
  check("n", n, info.max_n);
  check("k", k, info.max_k);
  if (out.tellp() != 0) {
    out << "; it computes a single output tile, use step 3 or later for larger shapes";
  }
  return out.str();
}

}  // namespace gemm
