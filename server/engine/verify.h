// Host-side comparison of D with a reference, under gemm/tolerance.h's
// bound: |d - ref| <= atol + rtol·|ref| + the accumulation term, every
// element finite.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/engine.h"
#include "gemm/form.h"
#include "gemm/sketch_check.h"
#include "gemm/tolerance.h"

namespace gemmd {

using gemm::kAtol;
using gemm::kRtol;

// `d` is fp16, `ref` is the reference in fp64; both have `count` elements.
// `accumulation_atol`: the bound's K-aware term for this GEMM.
VerificationResult CompareWithReference(const uint16_t* d, const double* ref, size_t count,
                                        double accumulation_atol = 0);

// Any form's D (`count` elements of `type`) against an fp64 reference,
// under that form's tolerance (gemm/form.h) plus `accumulation_atol`.
VerificationResult CompareWithReference(const void* d, gemm::ElementType type, const double* ref, size_t count,
                                        const gemm::FormTolerance& tolerance, double accumulation_atol);

// VERIFICATION_FAST's report from the sketch's result.
VerificationResult FastVerification(const gemm::SketchResult& sketch, const gemm::FormTolerance& tolerance,
                                    std::string reference);

// The sketch's problem for `job`'s operands as the CPU engine holds them:
// A, B and C widened to fp32 in their stored layouts, D in its type.
gemm::SketchProblem HostSketchProblem(const GemmJob& job, const float* a, const float* b, const float* c,
                                      const void* d);

// A new seed for the sketch's vectors and samples: a computation cannot
// know them in advance.
uint64_t FreshSketchSeed();

// The largest ‖row‖₂ of a rows×cols row-major matrix.
double MaxRowNorm(const float* x, size_t rows, size_t cols);

// The largest ‖v‖₂ over `vectors` vectors of length k: the rows of x when
// k is contiguous (x is vectors×k), else its columns (x is k×vectors).
// op(A)'s rows and op(B)'s columns, as the verification bound wants them.
double MaxOperandNorm(const float* x, int64_t vectors, int64_t k, bool k_contiguous);

}  // namespace gemmd
