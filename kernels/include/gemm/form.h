// The whole GEMM a request may ask for, beside the shape:
//
//   D[i] = α · op(A[i]) · op(B[i]) + β · C[i]     for each i of the batch
//
// op(A) is m×k and op(B) is k×n (numpy's a @ b), whatever the storage:
// - A is stored m×k (K contiguous) or k×m (M contiguous), row-major;
// - B is stored n×k (K contiguous, gemmd's original form) or k×n (N
//   contiguous, a weight matrix as x @ W stores it), row-major;
// - C and D are m×n row-major.
// Batch entry i of an operand starts i·stride elements after entry 0; a
// stride of 0 shares one matrix across the batch. D is always dense.
// fp8 operands carry a per-tensor scale: their stored value times the scale
// is what they mean (the scales multiply α). Every combination accumulates
// in fp32 (tf32 products where allow_tf32 says so) and computes α·acc + β·c
// in fp32 before D is rounded to its type.
// No CUDA here: the server, the CPU engine and the kernels all read it.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

#include "gemm/element_type.h"

namespace gemm {

enum class Layout : uint8_t { kKContiguous = 0, kMnContiguous = 1 };

inline const char* LayoutName(Layout l) { return l == Layout::kKContiguous ? "K-contiguous" : "MN-contiguous"; }

struct GemmForm {
  ElementType a = ElementType::kF16, b = ElementType::kF16;
  ElementType c = ElementType::kF16, d = ElementType::kF16;
  Layout a_layout = Layout::kKContiguous, b_layout = Layout::kKContiguous;
  bool has_c = false;
  double alpha = 1, beta = 0;
  double a_scale = 1, b_scale = 1;  // fp8 operands only
  bool allow_tf32 = false;          // fp32 operands only
  int64_t batch = 1;
  // Elements from one batch entry to the next; 0 shares the operand.
  // Validation sets them (dense stacking where the request gave none).
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;

  // Each operand's batch entries one after the other, for an m×n×k entry.
  void StackDensely(int64_t m, int64_t n, int64_t k) {
    stride_a = m * k;
    stride_b = n * k;
    stride_c = m * n;
  }

  // gemmd's original GEMM: fp16 in and out, K contiguous in both operands,
  // D = A·Bᵀ alone. The ladder's steps and the fast paths serve it.
  bool IsPlain() const {
    return a == ElementType::kF16 && b == ElementType::kF16 && d == ElementType::kF16 &&
           a_layout == Layout::kKContiguous && b_layout == Layout::kKContiguous && !has_c && alpha == 1 &&
           beta == 0 && batch == 1;
  }
  // What scales the product: α and the fp8 scales.
  GEMM_HOST_DEVICE double ProductScale() const {
    return alpha * (IsFp8(a) ? a_scale : 1) * (IsFp8(b) ? b_scale : 1);
  }
  GEMM_HOST_DEVICE bool ReadsC() const { return has_c && beta != 0; }
};

// An fp8 form over fp16 copies of its operands: every e4m3 and e5m2 value
// is an fp16 value (e5m2 is fp16's top byte; e4m3's exponents, 2^-9 to
// 2^8, lie within fp16's normal and subnormal range and its three mantissa
// bits within fp16's ten), so the same GEMM of the widened operands, the
// scales folded into α, has the same exact product. It lets a 16-bit
// tensor-core GEMM check an fp8 one (server/engine/cuda_forms.cpp).
inline GemmForm WidenedToF16(GemmForm f) {
  f.alpha = f.ProductScale();
  f.a_scale = f.b_scale = 1;
  f.a = f.b = ElementType::kF16;
  return f;
}

// Whether two forms compute the same function of their operands, batching
// aside: the types, storages, scalars and C. Single requests of one such
// form may be stacked into one batch (the server's batching).
inline bool SameComputation(const GemmForm& x, const GemmForm& y) {
  return x.a == y.a && x.b == y.b && x.d == y.d && x.a_layout == y.a_layout && x.b_layout == y.b_layout &&
         x.ReadsC() == y.ReadsC() && (!x.ReadsC() || (x.c == y.c && x.beta == y.beta)) && x.alpha == y.alpha &&
         x.a_scale == y.a_scale && x.b_scale == y.b_scale && x.allow_tf32 == y.allow_tf32;
}

// For logs: "bf16xbf16->bf16 b=KxN beta=0.5 batch=4"; only what differs
// from the plain form is named.
inline std::string FormSummary(const GemmForm& f) {
  std::string s = std::string(ElementName(f.a)) + "x" + ElementName(f.b) + "->" + ElementName(f.d);
  if (f.a_layout == Layout::kMnContiguous) s += " a=KxM";
  if (f.b_layout == Layout::kMnContiguous) s += " b=KxN";
  const auto number = [](double v) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", v);
    return std::string(text);
  };
  if (f.alpha != 1) s += " alpha=" + number(f.alpha);
  if (f.ReadsC()) s += " beta=" + number(f.beta) + " c=" + ElementName(f.c);
  if (f.allow_tf32) s += " tf32";
  if (f.batch != 1) s += " batch=" + std::to_string(f.batch);
  return s;
}

// A form's problem on a device: A, B and C each batch entry `stride`
// elements after the one before (form.stride_*), D dense batch·m·n. C is
// read only when form.ReadsC().
struct FormProblem {
  int64_t m = 0, n = 0, k = 0;
  GemmForm form;
  const void* a = nullptr;
  const void* b = nullptr;
  const void* c = nullptr;
  void* d = nullptr;
};

// One operand's storage: each batch entry is rows×cols row-major.
struct OperandStorage {
  int64_t rows = 0, cols = 0;
  int64_t stride = 0;  // elements between batch entries (0: shared)
  ElementType type = ElementType::kF16;
  uint64_t EntryElements() const { return static_cast<uint64_t>(rows) * static_cast<uint64_t>(cols); }
  // The rows of `cols` elements the whole batch spans, as one stored
  // matrix holds them; 0 where the strides are not whole rows.
  int64_t StoredRows(int64_t batch) const {
    const uint64_t elements = Footprint(batch);
    return elements % static_cast<uint64_t>(cols) == 0 ? static_cast<int64_t>(elements / static_cast<uint64_t>(cols))
                                                        : 0;
  }
  // Elements the whole batch spans; 0 on overflow.
  uint64_t Footprint(int64_t batch) const {
    uint64_t span = 0, total = 0;
    if (__builtin_mul_overflow(static_cast<uint64_t>(stride), static_cast<uint64_t>(batch - 1), &span) ||
        __builtin_add_overflow(span, EntryElements(), &total)) {
      return 0;
    }
    return total;
  }
};

// The rows and columns an operand of `mn` rows (M or N) by K is stored as:
// mn × k K-contiguous, k × mn MN-contiguous. A row is `cols` long, the
// least leading dimension.
struct StoredShape {
  int64_t rows = 0, cols = 0;
};
inline StoredShape StoredShapeOf(Layout layout, int64_t mn, int64_t k) {
  return layout == Layout::kKContiguous ? StoredShape{mn, k} : StoredShape{k, mn};
}

inline OperandStorage StorageOfA(const GemmForm& f, int64_t m, int64_t k) {
  const StoredShape s = StoredShapeOf(f.a_layout, m, k);
  return OperandStorage{s.rows, s.cols, f.stride_a, f.a};
}
inline OperandStorage StorageOfB(const GemmForm& f, int64_t n, int64_t k) {
  const StoredShape s = StoredShapeOf(f.b_layout, n, k);
  return OperandStorage{s.rows, s.cols, f.stride_b, f.b};
}
inline OperandStorage StorageOfC(const GemmForm& f, int64_t m, int64_t n) { return {m, n, f.stride_c, f.c}; }

// What each operand's stored rows and columns are, in the API's words.
inline const char* StoredDimsOfA(const GemmForm& f) { return f.a_layout == Layout::kKContiguous ? "m x k" : "k x m"; }
inline const char* StoredDimsOfB(const GemmForm& f) { return f.b_layout == Layout::kKContiguous ? "n x k" : "k x n"; }
inline const char* StoredDimsOfC() { return "m x n"; }

// Where element (row i of op(A), k index kk) lies within A's batch entry,
// and (kk, column j) of op(B) within B's.
GEMM_HOST_DEVICE inline uint64_t IndexInA(const GemmForm& f, int64_t m, int64_t k, int64_t i, int64_t kk) {
  return f.a_layout == Layout::kKContiguous ? static_cast<uint64_t>(i) * k + kk : static_cast<uint64_t>(kk) * m + i;
}
GEMM_HOST_DEVICE inline uint64_t IndexInB(const GemmForm& f, int64_t n, int64_t k, int64_t kk, int64_t j) {
  return f.b_layout == Layout::kKContiguous ? static_cast<uint64_t>(j) * k + kk : static_cast<uint64_t>(kk) * n + j;
}

// "" when the element types combine, else why not, for a person. The
// combinations are those cuBLASLt's matmul takes on sm_90 (cuBLAS
// documentation, cublasLtMatmul's table of supported types):
//   fp16 × fp16 -> fp16 or fp32;  bf16 × bf16 -> bf16 or fp32;
//   fp32 × fp32 -> fp32;  fp8 × fp8 (not e5m2 × e5m2) -> bf16 or fp16;
//   C in D's type or fp32.
inline std::string CombinationError(const GemmForm& f) {
  const std::string pair = std::string(ElementName(f.a)) + " x " + ElementName(f.b);
  if (IsFp8(f.a) || IsFp8(f.b)) {
    if (!IsFp8(f.a) || !IsFp8(f.b)) return pair + ": an fp8 operand needs an fp8 partner";
    if (f.a == ElementType::kF8E5M2 && f.b == ElementType::kF8E5M2) {
      return pair + " has no tensor-core form; one operand must be fp8_e4m3";
    }
    if (f.d != ElementType::kBF16 && f.d != ElementType::kF16) {
      return pair + " writes D as bf16 or fp16, not " + ElementName(f.d);
    }
  } else {
    if (f.a != f.b) return pair + ": both operands must have one type (fp8 aside)";
    if (f.a == ElementType::kF32 && f.d != ElementType::kF32) return "fp32 operands write D as fp32";
    if (f.a != ElementType::kF32 && f.d != f.a && f.d != ElementType::kF32) {
      return pair + " writes D as " + ElementName(f.a) + " or fp32, not " + ElementName(f.d);
    }
  }
  if (f.has_c && f.c != f.d && f.c != ElementType::kF32) {
    return std::string("C is ") + ElementName(f.c) + "; it must be D's type (" + ElementName(f.d) + ") or fp32";
  }
  if (f.allow_tf32 && f.a != ElementType::kF32) return "allow_tf32 applies to fp32 operands, not " + pair;
  return "";
}

// Every combination CombinationError takes (C aside), tf32 counted as one:
// what the start-up warm-up loads and the tests run.
struct TypeCombination {
  ElementType a, b, d;
  bool tf32;
};
inline constexpr TypeCombination kTypeCombinations[] = {
    {ElementType::kF16, ElementType::kF16, ElementType::kF16, false},
    {ElementType::kF16, ElementType::kF16, ElementType::kF32, false},
    {ElementType::kBF16, ElementType::kBF16, ElementType::kBF16, false},
    {ElementType::kBF16, ElementType::kBF16, ElementType::kF32, false},
    {ElementType::kF32, ElementType::kF32, ElementType::kF32, false},
    {ElementType::kF32, ElementType::kF32, ElementType::kF32, true},
    {ElementType::kF8E4M3, ElementType::kF8E4M3, ElementType::kBF16, false},
    {ElementType::kF8E4M3, ElementType::kF8E4M3, ElementType::kF16, false},
    {ElementType::kF8E4M3, ElementType::kF8E5M2, ElementType::kF16, false},
    {ElementType::kF8E4M3, ElementType::kF8E5M2, ElementType::kBF16, false},
    {ElementType::kF8E5M2, ElementType::kF8E4M3, ElementType::kBF16, false},
    {ElementType::kF8E5M2, ElementType::kF8E4M3, ElementType::kF16, false},
};

// What "verified" allows for a form: |d - ref| <= atol + rtol·|ref| + the
// K-aware term, with
//   term = unit·√K·|α'|·max‖a_i‖₂·max‖b_j‖₂ + input·|α'|·max‖a_i‖₂·max‖b_j‖₂
//          + 2^-23·|β|·max|c|
// (α' = α·scales; ‖·‖ over op(A)'s rows and op(B)'s columns, stored values).
// rtol and atol are D's type's:
//   fp16: 1e-3, 1e-2, the seed's (shared/design/ladder.md);
//   bf16: 1.6e-2, 1e-5, and fp32: 1.3e-6, 1e-5: torch.testing.assert_close's
//         defaults for torch.bfloat16 and torch.float32 (PyTorch docs,
//         "torch.testing").
// unit: fp32 sums on both sides drift apart by about 2^-23·√K·Σ|a·b|
// (gemm/tolerance.h). fp8 on Hopper's tensor cores keeps about 14 bits
// while it accumulates before cuBLASLt promotes to fp32 (DeepSeek-V3
// technical report, arXiv:2412.19437, §3.3.2): unit 2^-13 for fp8.
// input: tf32 keeps 10 of fp32's 23 mantissa bits (NVIDIA A100 whitepaper),
// so each product may be off by 2·2^-11 relative: 2^-10·Σ|a·b| in all, not
// growing with K.
struct FormTolerance {
  double rtol = 1e-3, atol = 1e-2;
  double unit = 0x1p-23;
  double input = 0;
  const char* source = "seed fp16 tolerances (rtol 1e-3, atol 1e-2)";
};

inline FormTolerance ToleranceOf(const GemmForm& f) {
  FormTolerance t;
  if (f.d == ElementType::kBF16) {
    t.rtol = 1.6e-2;
    t.atol = 1e-5;
    t.source = "torch.testing defaults for bfloat16 (rtol 1.6e-2, atol 1e-5)";
  } else if (f.d == ElementType::kF32) {
    t.rtol = 1.3e-6;
    t.atol = 1e-5;
    t.source = "torch.testing defaults for float32 (rtol 1.3e-6, atol 1e-5)";
  }
  if (IsFp8(f.a)) t.unit = 0x1p-13;
  if (f.allow_tf32) t.input = 0x1p-10;
  return t;
}

// The bound's K-aware term per unit of ‖a_i‖₂·‖b_j‖₂, (unit·√K + input)·|α'|,
// and C's per unit of |c|, 2^-23·|β| where C is read.
GEMM_HOST_DEVICE inline double ProductTermPerNorms(const FormTolerance& t, int64_t k, double product_scale) {
  return (t.unit * sqrt(static_cast<double>(k)) + t.input) * fabs(product_scale);
}
GEMM_HOST_DEVICE inline double CTermPerValue(bool reads_c, double beta) { return reads_c ? 0x1p-23 * fabs(beta) : 0.0; }

inline double FormAccumulationAtol(const GemmForm& f, int64_t k, double max_a_norm, double max_b_norm,
                                   double max_abs_c) {
  return ProductTermPerNorms(ToleranceOf(f), k, f.ProductScale()) * max_a_norm * max_b_norm +
         CTermPerValue(f.ReadsC(), f.beta) * max_abs_c;
}

}  // namespace gemm
