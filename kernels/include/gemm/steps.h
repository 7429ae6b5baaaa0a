// The kernel ladder's catalogue: what each step is and which shapes it takes.
// Shared by the server (ListKernels, validation) and the benchmark; no CUDA.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "gemm/form.h"

namespace gemm {

inline constexpr int kVendorStep = 0;
inline constexpr int kFirstLadderStep = 1;
inline constexpr int kLastStep = 10;

struct StepInfo {
  int step;
  std::string_view name;         // short, stable, used in metrics and logs
  std::string_view description;  // one line for ListKernels
  // 0 = no limit of the step's own (the server's limits still apply).
  int64_t max_m;
  int64_t max_n;
  int64_t max_k;
  // Shapes the step's design serves poorly (it still computes them right);
  // empty where nothing stands out. For ListKernels.
  std::string_view poor_fit = {};
};

// Steps 0..kLastStep, in order.
std::span<const StepInfo> AllSteps();

// nullptr when `step` is not a step of the ladder.
const StepInfo* FindStep(int64_t step);

// The GPU families that have a kernel for ladder step `step`, for messages
// ("sm_90a" or "sm_90a or sm_100a"); empty for step 0 and unknown steps.
// The kernel library's GPU test holds this to the kernels it really has.
std::string_view GpuFamilies(int step);

// Empty when the step takes an m×n×k problem; otherwise a sentence saying
// which limit the shape breaks.
std::string ShapeError(const StepInfo& info, int64_t m, int64_t n, int64_t k);

// What a step computes beyond gemmd's original fp16 A·Bᵀ (gemm/form.h):
// step 0, the vendor library, every form; the ladder's steps
// D = α·op(A)·op(B) + β·C with A and B of one 16-bit type (fp16 or bf16),
// D of either and C of D's type, each operand stored either way, and
// strided batches of them.
struct StepForms {
  bool every_form = false;
  bool bf16 = false;           // bf16 as well as fp16 operands and D
  bool mn_contiguous = false;  // A stored k×m, B stored k×n
  bool alpha_beta_c = false;   // α, and β·C with C of D's type
  bool batches = false;        // a strided batch (steps 1-3 run it entry by entry)
};
StepForms FormsOf(int step);

// Whether `form` is one the ladder's steps compute: GEMMs of 16-bit types,
// α·op(A)·op(B) + β·C with C (where read) of D's type, one or a batch.
bool IsLadderForm(const GemmForm& form);

// "" when `step` computes `form`; otherwise a sentence, as a predicate of
// "step N", saying what the request asks that the step lacks and which
// step has it.
std::string FormError(int step, const GemmForm& form);

// Leading dimensions (elements from one row to the next) of row-major A
// (m×k, or k×m stored MN-contiguous), B (n×k, or k×n) and D (m×n): 0 stands
// for dense, and is replaced by the row length (k, k and n, or m and n for
// MN-contiguous operands); anything else must be at least that row
// length. "" or what is wrong.
std::string LeadingDimensionError(int64_t m, int64_t n, int64_t k, int64_t* lda, int64_t* ldb, int64_t* ldd,
                                  Layout a_layout = Layout::kKContiguous, Layout b_layout = Layout::kKContiguous);

}  // namespace gemm
