// gemm/vendor_forms.h says what this is.
#include "gemm/vendor_forms.h"

#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cublas_api.h"
#include "cublas_layout.h"
#include "common/matrix_repitch.h"
#include "gemm/form_ops.h"
#include "gemm/test_hooks.h"
#include "vendor_form_padding.h"

namespace gemm {

// Per device context: the cuBLASLt handle step 0's forms run through; the
// plan (WarmVendorForms): per family of forms (types, layouts, tf32), the
// heuristic's pick at each cell of a grid of shapes, every one of them run
// once; and the heuristic's picks for the exact shapes the plan's could not
// run.
struct VendorForms {
  cublasLtHandle_t handle = nullptr;
  std::mutex mu;
  std::map<std::string, cublasLtMatmulAlgo_t> picks;
  std::map<std::string, std::vector<int>> plan;  // family -> per cell, an index into plan_algos or -1
  std::vector<cublasLtMatmulAlgo_t> plan_algos;
};

namespace detail {

std::string CreateVendorForms(VendorForms** out) {
  std::string error;
  const CublasLtApi* lt = CublasLt(&error);
  if (lt == nullptr) return error;
  auto forms = std::make_unique<VendorForms>();
  if (lt->Create(&forms->handle) != CUBLAS_STATUS_SUCCESS) return "cublasLtCreate failed";
  *out = forms.release();
  return "";
}

void DestroyVendorForms(VendorForms* forms) {
  if (forms == nullptr) return;
  if (forms->handle) CublasLt(nullptr)->Destroy(forms->handle);
  delete forms;
}

}  // namespace detail

namespace {

using detail::CublasLtApi;

using detail::CudaTypeOf;

// D is computed in fp32 into the scratch, then rounded: cuBLASLt takes C
// only in D's type, and a request may give an fp32 C for a 16-bit D.
bool DThroughScratch(const GemmForm& f) { return f.ReadsC() && f.c == ElementType::kF32 && f.d != ElementType::kF32; }

// The largest power of two up to 256 that divides `bytes` (0: 256): what a
// batch entry's start is aligned to, for the heuristic's alignment filter.
uint32_t AlignmentOf(uint64_t bytes) {
  uint32_t a = 256;
  while (a > 1 && bytes % a != 0) a /= 2;
  return a;
}

// Descriptors of one matmul, destroyed with this object.
class Matmul {
 public:
  // `k_used` below p.k only for a planted fault (gemm/test_hooks.h): the
  // operands keep their pitches, the sums stop halfway.
  Matmul(const CublasLtApi& lt, const FormProblem& p, int64_t k_used) : lt_(lt) {
    const GemmForm& f = p.form;
    const bool scratch = DThroughScratch(f);
    d_type_ = scratch ? CUDA_R_32F : CudaTypeOf(f.d);
    c_type_ = f.ReadsC() ? CudaTypeOf(f.c) : d_type_;
    const cublasComputeType_t compute = f.allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    ok_ = lt.MatmulDescCreate(&desc_, compute, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS;
    // cuBLASLt's "A" is our B and its "B" our A (cublas_layout.h).
    const bool b_k = f.b_layout == Layout::kKContiguous, a_k = f.a_layout == Layout::kKContiguous;
    if (ok_) detail::SetTransposes(lt, desc_, f.a_layout, f.b_layout);
    const int64_t k = k_used;
    ok_ = ok_ &&
          detail::CreateLtLayout(lt, &a_, CudaTypeOf(f.b), b_k ? k : p.n, b_k ? p.n : k, b_k ? p.k : p.n, f.stride_b,
                                 f.batch) &&
          detail::CreateLtLayout(lt, &b_, CudaTypeOf(f.a), a_k ? k : p.m, a_k ? p.m : k, a_k ? p.k : p.m, f.stride_a,
                                 f.batch) &&
          detail::CreateLtLayout(lt, &c_, c_type_, p.n, p.m, p.n, f.ReadsC() ? f.stride_c : p.m * p.n, f.batch) &&
          detail::CreateLtLayout(lt, &d_, d_type_, p.n, p.m, p.n, p.m * p.n, f.batch);
  }
  ~Matmul() {
    for (auto l : {a_, b_, c_, d_}) {
      if (l) lt_.MatrixLayoutDestroy(l);
    }
    if (desc_) lt_.MatmulDescDestroy(desc_);
  }
  Matmul(const Matmul&) = delete;
  Matmul& operator=(const Matmul&) = delete;

  bool ok() const { return ok_; }
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, c_ = nullptr, d_ = nullptr;
  cudaDataType c_type_, d_type_;

 private:
  const CublasLtApi& lt_;
  bool ok_ = false;
};

// The plan's grid: each dimension's size at or above a request's (the
// last for any larger), as step 0's fp16 plan looks up its picks.
constexpr int64_t kPlanSizes[] = {128, 256, 512, 1024, 2048, 4096, 8192};
constexpr size_t kPlanN = sizeof kPlanSizes / sizeof kPlanSizes[0];

size_t PlanIndex(int64_t x) {
  size_t i = 0;
  while (i + 1 < kPlanN && kPlanSizes[i] < x) ++i;
  return i;
}
size_t PlanCell(int64_t m, int64_t n, int64_t k) {
  return (PlanIndex(m) * kPlanN + PlanIndex(n)) * kPlanN + PlanIndex(k);
}

std::string FamilyKey(const GemmForm& f) {
  return std::to_string(static_cast<int>(f.a)) + "," + std::to_string(static_cast<int>(f.b)) + "," +
         std::to_string(static_cast<int>(f.d)) + "," + std::to_string(static_cast<int>(f.a_layout)) + "," +
         std::to_string(static_cast<int>(f.b_layout)) + "," + std::to_string(f.allow_tf32);
}

std::string Key(const FormProblem& p, const uint32_t (&align)[4]) {
  const GemmForm& f = p.form;
  std::string key;
  for (int64_t v : {static_cast<int64_t>(f.a), static_cast<int64_t>(f.b), static_cast<int64_t>(f.c),
                    static_cast<int64_t>(f.d), static_cast<int64_t>(f.a_layout), static_cast<int64_t>(f.b_layout),
                    static_cast<int64_t>(f.ReadsC()), static_cast<int64_t>(f.allow_tf32), f.batch, f.stride_a,
                    f.stride_b, f.stride_c, p.m, p.n, p.k, detail::VendorKUsed(p.k), static_cast<int64_t>(align[0]),
                    static_cast<int64_t>(align[1]), static_cast<int64_t>(align[2]),
                    static_cast<int64_t>(align[3])}) {
    key += std::to_string(v);
    key += ',';
  }
  return key;
}

}  // namespace

std::string VendorFormError(const FormProblem& p, const DeviceContext& ctx) {
  const GemmForm& f = p.form;
  if (IsFp8(f.a)) {
    if (ctx.cc_major * 10 + ctx.cc_minor < 89) {
      return "fp8 operands need an sm_89 or later GPU (Ada, Hopper, Blackwell); this one is sm_" +
             std::to_string(ctx.cc_major) + std::to_string(ctx.cc_minor);
    }
    if (f.a_layout != Layout::kKContiguous || f.b_layout != Layout::kKContiguous) {
      return "fp8 operands on a GPU are taken with K contiguous only (A stored m x k, B stored n x k: "
             "LAYOUT_K_CONTIGUOUS for both), the one form cuBLASLt's fp8 matmul has";
    }
    if (p.k % 16 != 0) {
      return "fp8 operands on a GPU need k a multiple of 16 (cuBLASLt's fp8 matmul reads whole 16-byte rows), "
             "got k = " + std::to_string(p.k);
    }
  }
  return "";
}

namespace {
std::atomic<uint64_t> pad_forms_from{detail::kPadFormsFrom};  // testing::SetVendorFormPadding
detail::PaddedForm PaddedOf(const FormProblem& p) { return detail::PaddedFormOf(p, pad_forms_from.load()); }

// One operand's batch of entries, stored at `from` as `stored` says, into
// `to`, stored as `padded` says, zeros in the rest. A shared operand
// (stride 0) is one copy, as in vendor_form_padding.h.
common::MatrixRepitch RepitchOf(const void* from, const OperandStorage& stored, const void* to,
                                const OperandStorage& padded, int64_t batch) {
  const bool one = batch == 1 || stored.stride == 0;
  common::MatrixRepitch c;
  c.from = from, c.from_ld = stored.cols, c.from_stride = one ? 0 : stored.stride;
  c.to = const_cast<void*>(to), c.to_rows = padded.rows, c.to_cols = padded.cols;
  c.rows = stored.rows, c.cols = stored.cols;
  c.entries = one ? 1 : batch;
  c.element_bytes = static_cast<uint32_t>(ElementBytes(stored.type));
  return c;
}

// p's A, B and C into the padded problem q's buffers, zeros in K's padding
// (the products there add nothing): one launch for those of one element size.
cudaError_t CopyIntoPadded(const FormProblem& p, const FormProblem& q, cudaStream_t stream) {
  const GemmForm &f = p.form, &g = q.form;
  common::MatrixRepitch copies[3] = {
      RepitchOf(p.a, StorageOfA(f, p.m, p.k), q.a, StorageOfA(g, q.m, q.k), f.batch),
      RepitchOf(p.b, StorageOfB(f, p.n, p.k), q.b, StorageOfB(g, q.n, q.k), f.batch)};
  int count = 2;
  if (f.ReadsC()) copies[count++] = RepitchOf(p.c, StorageOfC(f, p.m, p.n), q.c, StorageOfC(g, q.m, q.n), f.batch);
  return common::CopyRepitched(copies, count, stream);
}

// D out of the padded problem q's D into p's.
cudaError_t CopyOutOfPadded(const FormProblem& q, const FormProblem& p, cudaStream_t stream) {
  common::MatrixRepitch c;
  c.from = q.d, c.from_ld = q.n, c.from_stride = q.m * q.n;
  c.to = p.d, c.to_rows = p.m, c.to_cols = p.n;
  c.rows = p.m, c.cols = p.n;
  c.entries = p.form.batch;
  c.element_bytes = static_cast<uint32_t>(ElementBytes(p.form.d));
  return common::CopyRepitched(c, stream);
}
}  // namespace

void testing::SetVendorFormPadding(VendorFormPadding padding) {
  pad_forms_from = padding == VendorFormPadding::kEveryRagged ? 0
                   : padding == VendorFormPadding::kNever     ? UINT64_MAX
                                                              : detail::kPadFormsFrom;
}

uint64_t VendorFormScratchBytes(const FormProblem& p) {
  // Where p runs on padded copies: the copies, then the padded problem's own.
  if (const detail::PaddedForm padded = PaddedOf(p); padded.pads) {
    return padded.bytes() + VendorFormScratchBytes(padded.q);
  }
  return DThroughScratch(p.form) ? static_cast<uint64_t>(p.form.batch) * p.m * p.n * 4 : 0;
}

namespace {

// The plan's pick for p's family at the cell covering p's shape, if the
// plan has one (a C's and a batch's problems take the same picks).
bool PlannedPick(const FormProblem& p, const DeviceContext& ctx, cublasLtMatmulAlgo_t* algo) {
  VendorForms& forms = *ctx.vendor_forms;
  std::lock_guard lock(forms.mu);
  const auto it = forms.plan.find(FamilyKey(p.form));
  if (it == forms.plan.end()) return false;
  const int pick = it->second[PlanCell(p.m, p.n, p.k)];
  if (pick < 0) return false;
  *algo = forms.plan_algos[static_cast<size_t>(pick)];
  return true;
}

uint32_t Alignments(const FormProblem& p, int i) {
  const GemmForm& f = p.form;
  switch (i) {
    case 0: return AlignmentOf((f.batch > 1 ? f.stride_b : 0) * ElementBytes(f.b));
    case 1: return AlignmentOf((f.batch > 1 ? f.stride_a : 0) * ElementBytes(f.a));
    case 2: return AlignmentOf((f.batch > 1 && f.ReadsC() ? f.stride_c : 0) * (f.ReadsC() ? ElementBytes(f.c) : 4));
    default: return AlignmentOf(f.batch > 1 ? static_cast<uint64_t>(p.m) * p.n * ElementBytes(f.d) : 0);
  }
}

// The heuristic's first pick for p; "" or why there is none.
std::string AskHeuristic(const FormProblem& p, const DeviceContext& ctx, const Matmul& mm, cublasLtMatmulAlgo_t* algo) {
  const CublasLtApi& lt = *detail::CublasLt(nullptr);
  cublasLtMatmulPreference_t pref = nullptr;
  if (lt.MatmulPreferenceCreate(&pref) != CUBLAS_STATUS_SUCCESS) return "cublasLtMatmulPreferenceCreate failed";
  const uint64_t workspace = ctx.cublas_workspace_bytes;
  lt.MatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof workspace);
  detail::KeepSplitKSumsInFp32(lt, pref);
  const cublasLtMatmulPreferenceAttributes_t which[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  for (int i = 0; i < 4; ++i) {
    const uint32_t align = Alignments(p, i);
    lt.MatmulPreferenceSetAttribute(pref, which[i], &align, sizeof align);
  }
  cublasLtMatmulHeuristicResult_t result{};
  int count = 0;
  const cublasStatus_t s = lt.MatmulAlgoGetHeuristic(ctx.vendor_forms->handle, mm.desc_, mm.a_, mm.b_, mm.c_, mm.d_,
                                                     pref, 1, &result, &count);
  lt.MatmulPreferenceDestroy(pref);
  if (s != CUBLAS_STATUS_SUCCESS || count == 0) {
    return "cuBLASLt has no kernel on this GPU for " + FormSummary(p.form) + " at " + std::to_string(p.m) + "x" +
           std::to_string(p.n) + "x" + std::to_string(p.k) + " (heuristic status " +
           std::to_string(static_cast<int>(s)) + ")";
  }
  *algo = result.algo;
  return "";
}

// The heuristic's pick for p, asked once per form and shape and kept.
std::string FindPick(const FormProblem& p, const DeviceContext& ctx, const Matmul& mm, cublasLtMatmulAlgo_t* algo) {
  const uint32_t align[4] = {Alignments(p, 0), Alignments(p, 1), Alignments(p, 2), Alignments(p, 3)};
  VendorForms& forms = *ctx.vendor_forms;
  const std::string key = Key(p, align);
  {
    std::lock_guard lock(forms.mu);
    if (auto it = forms.picks.find(key); it != forms.picks.end()) {
      *algo = it->second;
      return "";
    }
  }
  if (auto why = AskHeuristic(p, ctx, mm, algo); !why.empty()) return why;
  std::lock_guard lock(forms.mu);
  forms.picks[key] = *algo;
  return "";
}

// p through `algo` on `stream`, D into `scratch` where the form needs it.
cublasStatus_t RunMatmul(const FormProblem& p, const DeviceContext& ctx, const Matmul& mm,
                         const cublasLtMatmulAlgo_t& algo, void* scratch, cudaStream_t stream) {
  const GemmForm& f = p.form;
  const float alpha = static_cast<float>(f.ProductScale());
  const float beta = f.ReadsC() ? static_cast<float>(f.beta) : 0.0f;
  void* d = DThroughScratch(f) ? scratch : p.d;
  const void* c = f.ReadsC() ? p.c : d;
  return detail::CublasLt(nullptr)->Matmul(ctx.vendor_forms->handle, mm.desc_, &alpha, p.b, mm.a_, p.a, mm.b_, &beta,
                                           c, mm.c_, d, mm.d_, &algo, ctx.cublas_workspace,
                                           ctx.cublas_workspace_bytes, stream);
}

}  // namespace

std::string PrepareVendorForm(const FormProblem& p, const DeviceContext& ctx) {
  if (auto why = VendorFormError(p, ctx); !why.empty()) return why;
  if (ctx.vendor_forms == nullptr) return "this device context has no cuBLASLt handle";
  if (const detail::PaddedForm padded = PaddedOf(p); padded.pads) return PrepareVendorForm(padded.q, ctx);
  cublasLtMatmulAlgo_t algo;
  if (PlannedPick(p, ctx, &algo)) return "";
  Matmul mm(*detail::CublasLt(nullptr), p, detail::VendorKUsed(p.k));
  if (!mm.ok()) return "cuBLASLt refused the matrix descriptions of this form";
  return FindPick(p, ctx, mm, &algo);
}

std::string LaunchVendorForm(const FormProblem& p, const DeviceContext& ctx, void* scratch, cudaStream_t stream) {
  if (auto why = VendorFormError(p, ctx); !why.empty()) return why;
  if (ctx.vendor_forms == nullptr) return "this device context has no cuBLASLt handle";
  if (const detail::PaddedForm padded = PaddedOf(p); padded.pads) {  // vendor_form_padding.h
    const FormProblem q = padded.Place(scratch);
    if (const cudaError_t e = CopyIntoPadded(p, q, stream); e != cudaSuccess) {
      return std::string("padding the operands: ") + cudaGetErrorString(e);
    }
    if (auto err = LaunchVendorForm(q, ctx, static_cast<char*>(scratch) + padded.bytes(), stream); !err.empty()) {
      return err;
    }
    const cudaError_t e = CopyOutOfPadded(q, p, stream);
    return e == cudaSuccess ? "" : std::string("copying D out of its padding: ") + cudaGetErrorString(e);
  }
  const CublasLtApi& lt = *detail::CublasLt(nullptr);
  const GemmForm& f = p.form;
  Matmul mm(lt, p, detail::VendorKUsed(p.k));
  if (!mm.ok()) return "cuBLASLt refused the matrix descriptions of this form";
  const auto matmul = [&](const cublasLtMatmulAlgo_t& algo) { return RunMatmul(p, ctx, mm, algo, scratch, stream); };
  // The plan's pick, loaded at start-up, where it takes this problem
  // (cuBLASLt checks before it launches anything); else the heuristic's.
  cublasLtMatmulAlgo_t algo{};
  cublasStatus_t s = CUBLAS_STATUS_NOT_SUPPORTED;
  if (PlannedPick(p, ctx, &algo)) s = matmul(algo);
  if (s != CUBLAS_STATUS_SUCCESS) {
    if (auto why = FindPick(p, ctx, mm, &algo); !why.empty()) return why;
    s = matmul(algo);
  }
  if (s != CUBLAS_STATUS_SUCCESS) return "cublasLtMatmul failed (status " + std::to_string(static_cast<int>(s)) + ")";
  if (DThroughScratch(f)) {
    const cudaError_t e = ConvertFromFloat(static_cast<const float*>(scratch), f.d, p.d,
                                           static_cast<uint64_t>(f.batch) * p.m * p.n, stream);
    if (e != cudaSuccess) return std::string("rounding D to its type: ") + cudaGetErrorString(e);
  }
  return "";
}

namespace {

// The plan of one family of forms (types, layouts, tf32): the heuristic's
// pick at every cell of the grid, run once at every cell it holds, which
// loads its kernels. Once per pick is not enough: a pick run first at
// another cell still loaded something the first time it ran at its own
// (bf16 x @ W at 256x1024x8192, a split-K pick that another cell had run:
// ×9-11 of steady on its first request, ×1.17 once run at its cell;
// bench/results/h100_2026-11-27_plan_every_cell_summary.txt).
// `buffers` hold the largest cell's operands.
std::string PlanFamily(const GemmForm& family, const DeviceContext& ctx, void* const (&buffers)[5], cudaStream_t stream,
                       int* runs) {
  const CublasLtApi& lt = *detail::CublasLt(nullptr);
  VendorForms& forms = *ctx.vendor_forms;
  std::vector<int> cells(kPlanN * kPlanN * kPlanN, -1);
  for (int64_t m : kPlanSizes) {
    for (int64_t n : kPlanSizes) {
      for (int64_t k : kPlanSizes) {
        FormProblem p{m, n, k, family, buffers[0], buffers[1], buffers[2], buffers[3]};
        p.form.StackDensely(m, n, k);
        if (!VendorFormError(p, ctx).empty()) continue;
        Matmul mm(lt, p, k);
        cublasLtMatmulAlgo_t algo;
        if (!mm.ok() || !AskHeuristic(p, ctx, mm, &algo).empty()) continue;
        int index = -1;
        {
          std::lock_guard lock(forms.mu);
          for (size_t i = 0; i < forms.plan_algos.size() && index < 0; ++i) {
            if (std::memcmp(&forms.plan_algos[i], &algo, sizeof algo) == 0) index = static_cast<int>(i);
          }
          if (index < 0) {
            index = static_cast<int>(forms.plan_algos.size());
            forms.plan_algos.push_back(algo);
          }
        }
        if (RunMatmul(p, ctx, mm, algo, buffers[4], stream) != CUBLAS_STATUS_SUCCESS) continue;
        ++*runs;
        if (static_cast<size_t>(index) + 1 == forms.plan_algos.size()) {  // a pick not run yet
          // cuBLASLt launches another kernel of a pick for rows whose
          // bytes are less aligned than the grid's (seen: a 13 ms first
          // request at 2500x1500x800 whose grid pick had run, 0.4 ms with
          // these): once at each alignment of the rows up to 16 bytes, on
          // a small shape.
          for (int64_t off : {1, 2, 4, 8}) {
            FormProblem q{256 - off, 256 - off, 256 - off, family, buffers[0], buffers[1], buffers[2], buffers[3]};
            q.form.StackDensely(q.m, q.n, q.k);
            if (!VendorFormError(q, ctx).empty()) continue;
            Matmul small(lt, q, q.k);
            if (small.ok() && RunMatmul(q, ctx, small, algo, buffers[4], stream) == CUBLAS_STATUS_SUCCESS) ++*runs;
          }
        }
        cells[PlanCell(m, n, k)] = index;
      }
    }
  }
  std::lock_guard lock(forms.mu);
  forms.plan[FamilyKey(family)] = std::move(cells);
  return "";
}

}  // namespace

std::string WarmVendorForms(const DeviceContext& ctx, cudaStream_t stream, int* forms) {
  constexpr int64_t kLargest = kPlanSizes[kPlanN - 1];
  constexpr uint64_t kBytes = uint64_t{kLargest} * kLargest * 4;  // the largest fp32 operand, C or D
  void* buffers[5] = {};
  std::string error;
  for (void*& b : buffers) {
    if (error.empty() && cudaMallocAsync(&b, kBytes, stream) != cudaSuccess) error = "no device memory to warm with";
    if (error.empty()) cudaMemsetAsync(b, 0, kBytes, stream);
  }
  *forms = 0;
  for (const TypeCombination& t : kTypeCombinations) {
    for (int layouts = 0; layouts < 4 && error.empty(); ++layouts) {
      GemmForm family;
      family.a = t.a, family.b = t.b, family.d = family.c = t.d;
      family.allow_tf32 = t.tf32;
      family.a_layout = layouts & 1 ? Layout::kMnContiguous : Layout::kKContiguous;
      family.b_layout = layouts & 2 ? Layout::kMnContiguous : Layout::kKContiguous;
      if (IsFp8(family.a) && layouts != 0) continue;
      error = PlanFamily(family, ctx, buffers, stream, forms);
      // Then at 1024³ and 4096³ alone, with C and as a batch, which may
      // launch other kernels of a pick than the plan's runs did.
      for (int64_t size : {int64_t{1024}, int64_t{4096}}) {
        for (int extra = 0; extra < 3 && error.empty(); ++extra) {  // none, C, a batch of 8 sharing B
          if (extra == 2 && size != 1024) continue;
          FormProblem p{extra == 2 ? 512 : size, size, size, family, buffers[0], buffers[1], buffers[2], buffers[3]};
          p.form.has_c = extra == 1;
          p.form.beta = extra == 1 ? 1 : 0;
          p.form.batch = extra == 2 ? 8 : 1;
          p.form.StackDensely(p.m, p.n, p.k);
          if (extra == 2) p.form.stride_b = 0;
          if (p.form.IsPlain()) continue;                    // the vendor plan's
          if (!PrepareVendorForm(p, ctx).empty()) continue;  // a form this GPU refuses: nothing to load
          if (auto err = LaunchVendorForm(p, ctx, buffers[4], stream); !err.empty()) error = err;
          ++*forms;
        }
      }
    }
  }
  if (const cudaError_t e = cudaStreamSynchronize(stream); e != cudaSuccess && error.empty()) {
    error = cudaGetErrorString(e);
  }
  for (void* b : buffers) {
    if (b) cudaFreeAsync(b, stream);
  }
  cudaStreamSynchronize(stream);
  return error;
}

}  // namespace gemm
