#include "gemm/steps.h"

#include <array>
#include <sstream>

namespace gemm {
namespace {

// Steps 1 and 2 compute a single 128×128 output tile (the seed's first two
// kernels); from step 3 on, any shape is taken (TMA fills and clips edges).
// poor_fit says where a step's one idea leaves the GPU idle; issue 19's
// sweep measures it (gemm-bench --sweep). Tiles are those of the Hopper
// family (sm_100a: kernels/README).
constexpr std::string_view kFewTiles =
    "M*N of fewer output tiles than SMs leaves SMs idle, and long K with small M*N has no split-K: one CTA walks "
    "all of K";
constexpr std::array<StepInfo, kLastStep + 1> kSteps{{
    {0, "vendor", "vendor library: cuBLAS on GPUs, the BLAS on the CPU engine", 0, 0, 0},
    {1, "single-tile", "one 128x128x64 tile: synchronous loads to shared memory, one MMA", 128, 128, 64},
    {2, "k-loop", "one 128x128 output tile, K loop accumulating in place", 128, 128, 0},
    {3, "tiled", "2-D grid of CTAs, one 128x128 output tile each", 0, 0, 0,
     "large problems: every load is synchronous, so the tensor cores wait on memory"},
    {4, "tma", "TMA loads completing on an mbarrier (expect_tx), TMA store of D", 0, 0, 0,
     "large problems: one tile per CTA and no overlap of loads with MMAs"},
    {5, "pipelined", "2-stage software pipeline: load tile k+1 while multiplying tile k", 0, 0, 0, kFewTiles},
    {6, "persistent", "persistent grid (only as many CTAs as fit at once), L2-friendly grouped tile order", 0, 0, 0,
     kFewTiles},
    {7, "warp-specialized", "TMA producer and MMA consumer on full/empty barriers (sm_100a: a writeback warpgroup reads TMEM)", 0, 0, 0, kFewTiles},
    {8, "deep-pipeline", "warp specialization with a deeper pipeline (sm_90a: 3 stages, 2 CTAs per SM; sm_100a: 4 stages)", 0, 0, 0, kFewTiles},
    {9, "cluster", "2-CTA cluster sharing the B tile (sm_90a: TMA multicast; sm_100a: the pair MMA, cta_group::2)", 0, 0, 0,
     "M*N of fewer 2-CTA cluster tiles than SM pairs leaves SMs idle, and long K with small M*N has no split-K"},
    {10, "two-consumers", "two MMA consumers per CTA: the final kernel", 0, 0, 0,
     "M*N of fewer 256x256 cluster tiles than SM pairs (below about 4M elements of D on an H100) leaves SMs idle "
     "when K is short; sm_90a then takes a 128x64 tile without a cluster if those tiles fit the SMs at once (up "
     "to about 1M elements of D), and with K of 2048 or more it splits K over the idle pairs (sm_100a does "
     "neither yet); between 1M and 4M elements with short K, SMs still idle"},
}};

}  // namespace

std::span<const StepInfo> AllSteps() { return kSteps; }

std::string_view GpuFamilies(int step) {
  if (step < kFirstLadderStep || step > kLastStep) return {};
  return "sm_90a or sm_100a";  // both families have every step
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

StepForms FormsOf(int step) {
  if (step == kVendorStep) return StepForms{true, true, true, true, true};
  const bool ladder = FindStep(step) != nullptr;
  return StepForms{false, ladder, ladder, ladder, ladder};
}

namespace {
bool SixteenBit(ElementType t) { return t == ElementType::kF16 || t == ElementType::kBF16; }
}  // namespace

bool IsLadderForm(const GemmForm& f) {
  GemmForm as_plain = f;
  as_plain.a = as_plain.b = as_plain.d = ElementType::kF16;
  as_plain.a_layout = as_plain.b_layout = Layout::kKContiguous;
  as_plain.alpha = 1;
  as_plain.has_c = false;
  as_plain.beta = 0;
  as_plain.batch = 1;
  return f.a == f.b && SixteenBit(f.a) && SixteenBit(f.d) && (!f.ReadsC() || f.c == f.d) && as_plain.IsPlain();
}

std::string FormError(int step, const GemmForm& f) {
  const StepForms takes = FormsOf(step);
  if (takes.every_form || f.IsPlain() ||
      (takes.bf16 && takes.mn_contiguous && takes.alpha_beta_c && takes.batches && IsLadderForm(f))) {
    return "";
  }
  std::string asked;
  const auto add = [&asked](const std::string& what) { asked += (asked.empty() ? "" : ", ") + what; };
  if (f.a != f.b || !SixteenBit(f.a)) add(std::string(ElementName(f.a)) + " x " + ElementName(f.b) + " operands");
  if (!SixteenBit(f.d)) add(std::string(ElementName(f.d)) + " D");
  if (!takes.mn_contiguous && f.a_layout != Layout::kKContiguous) add("A stored k x m");
  if (!takes.mn_contiguous && f.b_layout != Layout::kKContiguous) add("B stored k x n");
  if (!takes.alpha_beta_c && (f.has_c || f.beta != 0)) add("C with beta");
  if (!takes.alpha_beta_c && f.alpha != 1) add("alpha");
  if (f.ReadsC() && f.c != f.d) {
    add(std::string("C in ") + ElementName(f.c) + " (D's type is " + ElementName(f.d) + ")");
  }
  if (!takes.batches && f.batch != 1) add("a batch");
  return "computes D = alpha·op(A)·op(B) + beta·C only (fp16 or bf16 operands of one type, each stored either way, "
         "an fp16 or bf16 D, C in D's type, one or a batch), and this request asks for " + asked +
         "; step 0 computes every form";
}

std::string LeadingDimensionError(int64_t m, int64_t n, int64_t k, int64_t* lda, int64_t* ldb, int64_t* ldd,
                                  Layout a_layout, Layout b_layout) {
  struct Operand {
    const char* name;
    int64_t* ld;
    int64_t row;
    const char* row_name;
  };
  const bool a_k = a_layout == Layout::kKContiguous, b_k = b_layout == Layout::kKContiguous;
  for (const Operand& o : {Operand{"lda", lda, StoredShapeOf(a_layout, m, k).cols,
                                   a_k ? "k (A is m x k)" : "m (A is stored k x m)"},
                           Operand{"ldb", ldb, StoredShapeOf(b_layout, n, k).cols,
                                   b_k ? "k (B is n x k)" : "n (B is stored k x n)"},
                           Operand{"ldd", ldd, n, "n (D is m x n)"}}) {
    if (*o.ld == 0) *o.ld = o.row;
    if (*o.ld < o.row) {
      return std::string(o.name) + " = " + std::to_string(*o.ld) + " is less than the row length " +
             std::to_string(o.row) + ": a leading dimension counts the elements from one row to the next, at " +
             "least " + o.row_name + ", or 0 for dense rows";
    }
  }
  return "";
}

}  // namespace gemm
