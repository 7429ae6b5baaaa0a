// gemm-bench: every requested step against cuBLAS, in one process on one GPU.
// For each shape: fresh random inputs, a correctness check of each step
// against cuBLAS with D poisoned, warm-up, then timed runs interleaved step
// by step (cuBLAS too), each after an L2 flush (so no step finds the inputs
// the previous one left in L2), median of CUDA-event times. Prints a
// markdown table; writes CSV and markdown files when asked.
//
// --layout pitched stores every operand at a 128-byte pitch (lda = ldb = K
// and ldd = N rounded up to 64: gemm::LinePitch) and lets a TMA store
// write row tails there (d_tail_is_scratch), as the server does; dense (the default)
// leaves the TMA steps a pitched copy to make when K or N is not a
// multiple of 8. --sweep N runs N random shapes from --seed in four classes
// (shape_sweep.h) and reports, per class and overall, each step's median,
// 10th percentile and share >= 1 of its ratio to cuBLAS. --dtype bf16 runs
// A, B and D in bf16 (cuBLAS too); --a-layout mn stores A k×m and
// --b-layout mn B k×n (x @ W's W), cuBLAS reading them the same way;
// --beta B adds B·C (C random, of D's type; timed with C being D, in
// place) in the steps' epilogue and cuBLAS's, each step also timed
// without C between those runs (the "vs beta 0" column: what C costs, in
// one process), --alpha A scales the product. Those
// check each D against an fp64 product under the form's bound
// (gemm/form.h; pitched operands through dense copies for the reference);
// the autotuned column tunes cuBLASLt for the same form. --batch N times
// a strided batch of N entries of each shape (A, B, C and D stacked one
// entry after another; --shared-b gives every entry one B, stride 0),
// cuBLAS through its strided batched call; TFLOPS count every entry.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gemm/device_ops.h"
#include "gemm/form_ops.h"
#include "gemm/gemm.h"
#include "accuracy.h"
#include "back_to_back.h"
#include "diagnose_run.h"
#include "fast_check.h"
#include "vendor_padding.h"
#include "gemm/steps.h"
#include "gemm/vendor_plan.h"
#include "shape_sweep.h"

namespace {

#define CHECK_CUDA(expr)                                                                          \
  do {                                                                                            \
    cudaError_t e_ = (expr);                                                                      \
    if (e_ != cudaSuccess) {                                                                      \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #expr, cudaGetErrorString(e_)); \
      std::exit(1);                                                                               \
    }                                                                                             \
  } while (0)

struct Shape {
  int64_t m, n, k;
  std::string shape_class;  // sweeps only
};

// The shapes without their sweep classes, as the other modes take them.
std::vector<gemm::bench::BenchShape> Dims(const std::vector<Shape>& shapes) {
  std::vector<gemm::bench::BenchShape> dims;
  for (const Shape& s : shapes) dims.push_back({s.m, s.n, s.k});
  return dims;
}

// The autotuned cuBLASLt column (gemm/vendor_plan.h's AutotuneVendor), timed
// beside the steps as a step of its own.
constexpr int kAutotunedStep = -1;
constexpr const char* kAutotunedName = "cublaslt-autotuned";

std::string NameOf(int step) {
  if (step == kAutotunedStep) return kAutotunedName;
  return gemm::FindStep(step) ? std::string(gemm::FindStep(step)->name) : "?";
}

struct Options {
  std::vector<Shape> shapes{{4096, 4096, 4096}, {8192, 8192, 8192}};
  std::vector<int> steps{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  int warmup = -1, iters = -1;  // defaults: 5 and 30, or 2 and 10 in a sweep
  int device = 0;
  int sweep = 0;
  uint64_t seed = 1;
  bool pitched = false;
  int accuracy = 0;  // seeds per shape of --accuracy (accuracy.h); 0: time instead
  bool fast_check = false;  // --fast-check (fast_check.h)
  bool vendor_padding = false;  // --vendor-padding (vendor_padding.h)
  double back_to_back = 0;  // --back-to-back SECONDS (back_to_back.h); 0: off
  bool autotune = true;  // the autotuned cuBLASLt column (off in sweeps)
  bool diagnose = false;  // the pattern diagnostics (diagnose_run.h) instead of timing
  gemm::ElementType dtype = gemm::ElementType::kF16;  // A, B and D
  gemm::Layout a_layout = gemm::Layout::kKContiguous, b_layout = gemm::Layout::kKContiguous;
  float alpha = 1, beta = 0;  // D = alpha·A·B + beta·C
  int64_t batch = 1;  // entries of a strided batch
  bool shared_b = false;  // one B for every entry
  std::string csv, md;
};

struct Row {
  int step;
  Shape shape;
  bool ran = false;
  std::string status;  // "ok", "FAIL (n mismatches)", or why skipped
  double ms = 0, ms_min = 0, tflops = 0, ratio = 0;
  double ratio_to_autotuned = 0;  // autotuned cuBLASLt's time / this one's
  double ratio_to_beta0 = 0;      // with --beta: the same step's time without C / this one's
};

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, sep);)
    if (!item.empty()) out.push_back(item);
  return out;
}

[[noreturn]] void Usage(const char* msg) {
  std::fprintf(stderr,
               "%s\nusage: gemm-bench [--shapes MxNxK,... | --sweep N [--seed S]] [--layout dense|pitched] "
               "[--steps 1,2,...] [--dtype fp16|bf16] [--a-layout k|mn] [--b-layout k|mn] [--alpha A] [--beta B] "
               "[--batch N [--shared-b]] "
               "[--warmup N] [--iters N] [--device N] [--no-autotune] [--csv FILE] "
               "[--md FILE]\n"
               "       gemm-bench --accuracy SEEDS [--shapes ...] [--steps ...] [--seed S] [--csv FILE]: each step's "
               "error against the exact product, beside cuBLAS's\n"
               "       gemm-bench --diagnose [--steps ...]: each step on structured probes, and what a wrong D says\n"
               "       gemm-bench --fast-check [--shapes ...] [--dtype ...] [--a-layout ...] [--b-layout ...] [--beta B]: "
               "VERIFICATION_FAST's check beside cuBLAS's GEMM\n"
               "       gemm-bench --vendor-padding [--shapes ...] [--dtype ...] [--a-layout ...] [--b-layout ...] "
               "[--beta B] [--batch N [--shared-b]]: step 0's form on ragged shapes, dense and on padded copies\n"
               "       gemm-bench --back-to-back SECONDS [--shapes ...] [--steps ...]: TFLOPS of GEMMs run one after "
               "another, alone and with their inputs generated before each\n",
               msg);
  std::exit(2);
}

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Usage(("missing value for " + a).c_str());
      return argv[++i];
    };
    if (a == "--shapes") {
      o.shapes.clear();
      for (auto& s : Split(value(), ',')) {
        Shape sh{0, 0, 0, ""};
        if (std::sscanf(s.c_str(), "%ldx%ldx%ld", &sh.m, &sh.n, &sh.k) != 3 || sh.m < 1 || sh.n < 1 || sh.k < 1)
          Usage(("bad shape " + s).c_str());
        o.shapes.push_back(sh);
      }
    } else if (a == "--steps") {
      o.steps.clear();
      for (auto& s : Split(value(), ',')) o.steps.push_back(std::atoi(s.c_str()));
    } else if (a == "--warmup") {
      o.warmup = std::atoi(value().c_str());
    } else if (a == "--iters") {
      o.iters = std::max(1, std::atoi(value().c_str()));
    } else if (a == "--device") {
      o.device = std::atoi(value().c_str());
    } else if (a == "--sweep") {
      o.sweep = std::atoi(value().c_str());
      if (o.sweep < 1) Usage("--sweep takes a count of shapes >= 1");
    } else if (a == "--seed") {
      o.seed = std::strtoull(value().c_str(), nullptr, 10);
    } else if (a == "--layout") {
      const std::string layout = value();
      if (layout != "dense" && layout != "pitched") Usage("--layout is dense or pitched");
      o.pitched = layout == "pitched";
    } else if (a == "--dtype") {
      const std::string dtype = value();
      if (dtype != "fp16" && dtype != "bf16") Usage("--dtype is fp16 or bf16");
      o.dtype = dtype == "bf16" ? gemm::ElementType::kBF16 : gemm::ElementType::kF16;
    } else if (a == "--alpha") {
      o.alpha = std::strtof(value().c_str(), nullptr);
    } else if (a == "--beta") {
      o.beta = std::strtof(value().c_str(), nullptr);
    } else if (a == "--batch") {
      o.batch = std::atoll(value().c_str());
      if (o.batch < 1) Usage("--batch takes a count of entries >= 1");
    } else if (a == "--shared-b") {
      o.shared_b = true;
    } else if (a == "--a-layout" || a == "--b-layout") {
      const std::string layout = value();
      if (layout != "k" && layout != "mn") Usage((a + " is k (K contiguous) or mn (stored k x m or k x n)").c_str());
      (a == "--a-layout" ? o.a_layout : o.b_layout) =
          layout == "mn" ? gemm::Layout::kMnContiguous : gemm::Layout::kKContiguous;
    } else if (a == "--diagnose") {
      o.diagnose = true;
    } else if (a == "--fast-check") {
      o.fast_check = true;
    } else if (a == "--vendor-padding") {
      o.vendor_padding = true;
    } else if (a == "--back-to-back") {
      o.back_to_back = std::atof(value().c_str());
      if (!(o.back_to_back > 0)) Usage("--back-to-back takes a number of seconds > 0");
    } else if (a == "--no-autotune") {
      o.autotune = false;
    } else if (a == "--accuracy") {
      o.accuracy = std::atoi(value().c_str());
      if (o.accuracy < 1) Usage("--accuracy takes a count of seeds per shape >= 1");
    } else if (a == "--csv") {
      o.csv = value();
    } else if (a == "--md") {
      o.md = value();
    } else {
      Usage(("unknown argument " + a).c_str());
    }
  }
  if (o.sweep > 0) {
    o.autotune = false;
    o.shapes.clear();
    for (const auto& s : gemm::bench::SweepShapes(o.sweep, o.seed)) o.shapes.push_back({s.m, s.n, s.k, s.shape_class});
  }
  if (o.shared_b && o.batch == 1) Usage("--shared-b needs --batch N, N > 1");
  if (o.warmup < 0) o.warmup = o.sweep > 0 ? 2 : 5;
  if (o.iters < 0) o.iters = o.sweep > 0 ? 10 : 30;
  return o;
}

// Per class and overall, for each step but cuBLAS: shapes timed, median,
// 10th percentile and share >= 1 of the ratio to cuBLAS, and the shapes
// whose check failed (their ratios are left out).
std::string SweepSummary(const std::vector<Row>& rows, const std::vector<int>& steps) {
  std::ostringstream out;
  out << "| class | step | shapes | median | p10 | share >= 1 | failed checks |\n"
         "| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  std::vector<std::string> classes = gemm::bench::SweepClasses();
  classes.push_back("all");
  for (const auto& cls : classes) {
    for (int step : steps) {
      if (step == 0) continue;
      std::vector<double> ratios;
      int failed = 0;
      for (const Row& r : rows) {
        if (r.step != step || (cls != "all" && r.shape.shape_class != cls)) continue;
        if (r.ran && r.ratio > 0) ratios.push_back(r.ratio);
        failed += r.status.rfind("FAIL", 0) == 0;
      }
      const auto sum = gemm::bench::Summarize(ratios);
      char buf[200];
      std::snprintf(buf, sizeof buf, "| %s | %d | %d | %.3f | %.3f | %.0f%% | %d |\n", cls.c_str(), step, sum.count,
                    sum.median, sum.p10, 100 * sum.share_at_least_1, failed);
      out << buf;
    }
  }
  return out.str();
}

double Median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

}  // namespace

int main(int argc, char** argv) {
  const Options opt = Parse(argc, argv);
  if (opt.diagnose) return gemm::bench::RunDiagnostics(opt.steps, opt.device);
  if (opt.fast_check) {
    const gemm::bench::FastCheckForm form{opt.dtype, opt.a_layout, opt.b_layout, opt.beta};
    return gemm::bench::RunFastCheck(Dims(opt.shapes), form, opt.device);
  }
  if (opt.vendor_padding) {
    const gemm::bench::VendorPaddingForm form{opt.dtype, opt.a_layout, opt.b_layout, opt.beta, opt.batch, opt.shared_b};
    return gemm::bench::RunVendorPadding(Dims(opt.shapes), form, opt.device);
  }
  if (opt.back_to_back > 0) {
    return gemm::bench::RunBackToBack(Dims(opt.shapes), opt.steps, opt.back_to_back, opt.device);
  }
  if (opt.accuracy > 0) {
    return gemm::bench::RunAccuracy(Dims(opt.shapes), opt.steps, opt.device, opt.accuracy, opt.seed, opt.csv);
  }
  gemm::DeviceContext ctx;
  if (auto err = gemm::CreateContext(opt.device, &ctx); !err.empty()) {
    std::fprintf(stderr, "gemm-bench: %s\n", err.c_str());
    return 1;
  }
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, opt.device));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  gemm::CompareResult* cmp = nullptr;
  CHECK_CUDA(cudaMalloc(&cmp, sizeof(*cmp)));
  gemm::L2Flush l2_flush;
  CHECK_CUDA(l2_flush.Init(opt.device));

  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  std::fprintf(stderr, "gemm-bench on %s (%d SMs, %d MB L2), %s\n", prop.name, prop.multiProcessorCount,
               prop.l2CacheSize >> 20, date);

  std::vector<Row> rows;
  for (size_t shape_index = 0; shape_index < opt.shapes.size(); ++shape_index) {
    const Shape& s = opt.shapes[shape_index];
    const bool a_k = opt.a_layout == gemm::Layout::kKContiguous, b_k = opt.b_layout == gemm::Layout::kKContiguous;
    // Each operand's storage: rows x cols at its pitch (a row of the storage
    // is K long, or M or N long for an MN-contiguous operand).
    const auto [a_rows, a_cols] = gemm::StoredShapeOf(opt.a_layout, s.m, s.k);
    const auto [b_rows, b_cols] = gemm::StoredShapeOf(opt.b_layout, s.n, s.k);
    const int64_t lda = opt.pitched ? gemm::LinePitch(a_cols) : a_cols;
    const int64_t ldb = opt.pitched ? gemm::LinePitch(b_cols) : b_cols;
    const int64_t ldd = opt.pitched ? gemm::LinePitch(s.n) : s.n;
    // A batch's entries one after another; a shared B is one entry.
    const int64_t entries = opt.batch, b_entries = opt.shared_b ? 1 : entries;
    const uint64_t a_elems = a_rows * lda * entries, b_elems = b_rows * ldb * b_entries, d_elems = s.m * ldd * entries;
    __half *a = nullptr, *b = nullptr, *d = nullptr, *ref = nullptr;
    CHECK_CUDA(cudaMalloc(&a, a_elems * 2));
    CHECK_CUDA(cudaMalloc(&b, b_elems * 2));
    const uint64_t seed = static_cast<uint64_t>(now) * 1000 + rows.size();  // fresh every run and shape
    // The plain fp16 GEMM checks against cuBLAS; every other form against fp64.
    const bool fp16 = opt.dtype == gemm::ElementType::kF16 && a_k && b_k && opt.alpha == 1 && opt.beta == 0;
    if (fp16) {
      CHECK_CUDA(gemm::FillRandom(a, s.m * entries, s.k, lda, seed, gemm::OperandId::kA, stream));
      CHECK_CUDA(gemm::FillRandom(b, s.n * b_entries, s.k, ldb, seed, gemm::OperandId::kB, stream));
    } else {
      CHECK_CUDA(gemm::FillRandom(a, opt.dtype, a_elems, seed, gemm::OperandId::kA, stream));
      CHECK_CUDA(gemm::FillRandom(b, opt.dtype, b_elems, seed, gemm::OperandId::kB, stream));
    }
    CHECK_CUDA(cudaMalloc(&d, d_elems * 2));
    CHECK_CUDA(cudaMalloc(&ref, d_elems * 2));
    // bf16: every D against an fp64 product, under the form's bound.
    gemm::FormProblem exact{s.m, s.n, s.k};
    exact.form.a = exact.form.b = exact.form.d = opt.dtype;
    exact.form.a_layout = opt.a_layout;
    exact.form.b_layout = opt.b_layout;
    exact.form.has_c = opt.beta != 0;
    exact.form.alpha = opt.alpha;
    exact.form.beta = opt.beta;
    exact.form.c = opt.dtype;
    exact.form.batch = entries;
    exact.form.StackDensely(s.m, s.n, s.k);
    if (opt.shared_b) exact.form.stride_b = 0;
    exact.a = a, exact.b = b;
    // C, dense m x n of D's type per entry, where beta is not 0.
    __half* c = nullptr;
    if (opt.beta != 0) {
      CHECK_CUDA(cudaMalloc(&c, s.m * s.n * entries * 2));
      CHECK_CUDA(gemm::FillRandom(c, opt.dtype, s.m * s.n * entries, seed, gemm::OperandId::kC, stream));
      exact.c = c;
    }
    double* exact_d = nullptr;
    float* bound = nullptr;
    // The fp64 product reads dense operands and compares a dense D: pitched
    // ones go through dense copies.
    void *a_dense = nullptr, *b_dense = nullptr, *d_dense = nullptr;
    if (!fp16 && opt.pitched) {
      CHECK_CUDA(cudaMalloc(&a_dense, a_rows * a_cols * entries * 2));
      CHECK_CUDA(cudaMalloc(&b_dense, b_rows * b_cols * b_entries * 2));
      CHECK_CUDA(cudaMalloc(&d_dense, s.m * s.n * entries * 2));
      CHECK_CUDA(cudaMemcpy2DAsync(a_dense, a_cols * 2, a, lda * 2, a_cols * 2, a_rows * entries,
                                   cudaMemcpyDeviceToDevice, stream));
      CHECK_CUDA(cudaMemcpy2DAsync(b_dense, b_cols * 2, b, ldb * 2, b_cols * 2, b_rows * b_entries,
                                   cudaMemcpyDeviceToDevice, stream));
      exact.a = a_dense, exact.b = b_dense;
    }
    if (!fp16) {
      CHECK_CUDA(cudaMalloc(&exact_d, s.m * s.n * entries * sizeof(double)));
      CHECK_CUDA(cudaMalloc(&bound, 3 * sizeof(float)));
      CHECK_CUDA(gemm::ReferenceFormGemm(exact, exact_d, stream));
      CHECK_CUDA(gemm::FormBoundInputs(exact, bound, stream));
    }
    const gemm::FormTolerance tolerance = gemm::ToleranceOf(exact.form);
    const auto compare = [&](const __half* x) {
      if (fp16) return gemm::Compare(x, ref, s.m * entries, s.n, ldd, 1e-3f, 1e-2f, cmp, stream);
      const void* dense = x;
      if (opt.pitched) {
        if (auto e = cudaMemcpy2DAsync(d_dense, s.n * 2, x, ldd * 2, s.n * 2, s.m * entries,
                                       cudaMemcpyDeviceToDevice, stream);
            e != cudaSuccess) {
          return e;
        }
        dense = d_dense;
      }
      return gemm::CompareForm(dense, opt.dtype, exact_d, s.m * s.n * entries, tolerance.rtol, tolerance.atol,
                               {bound, gemm::ProductTermPerNorms(tolerance, s.k, exact.form.ProductScale()),
                                gemm::CTermPerValue(exact.form.ReadsC(), opt.beta)},
                               cmp, stream);
    };
    // Poisoned like every D: an element the reference leaves unwritten is a
    // NaN that fails every comparison, not stale memory (which is also what
    // compute-sanitizer's initcheck saw read at 256^3, 65,536 reads per
    // comparison: cuBLAS's store there is one initcheck does not track).
    CHECK_CUDA(gemm::Poison(ref, d_elems, stream));
    // The shape's problem into `out`, C read from `c_from` at pitch `ldc`.
    const auto problem = [&](__half* out, const __half* c_from, int64_t ldc) {
      gemm::Problem q{s.m, s.n, s.k, a, b, out, lda, ldb, ldd, opt.pitched && out == d};
      q.operands = q.result = opt.dtype;
      q.a_layout = opt.a_layout;
      q.b_layout = opt.b_layout;
      q.alpha = opt.alpha;
      q.beta = opt.beta;
      q.c = c_from;
      q.ldc = ldc;
      q.batch = entries;
      q.stride_a = a_rows * lda;
      q.stride_b = opt.shared_b ? 0 : b_rows * ldb;
      q.stride_c = s.m * ldc;
      q.stride_d = s.m * ldd;
      return q;
    };
    if (auto err = gemm::Launch(0, problem(ref, c, s.n), ctx, stream); !err.empty()) {
      std::fprintf(stderr, "cuBLAS reference failed: %s\n", err.c_str());
      return 1;
    }

    std::vector<int> steps{0};
    gemm::VendorAutotunePtr tuned;
    if (opt.autotune) {
      const gemm::Problem tune = problem(ref, c, s.n);
      if (auto err = gemm::AutotuneVendor(tune, ctx, stream, [&](cudaStream_t st) { return l2_flush.Run(st); }, &tuned);
          !err.empty()) {
        std::fprintf(stderr, "%ldx%ldx%ld: no autotuned cuBLASLt: %s\n", s.m, s.n, s.k, err.c_str());
      } else {
        const auto& st = gemm::AutotuneStats(*tuned);
        std::fprintf(stderr, "%ldx%ldx%ld: cuBLASLt's candidate %d of %d (%d ran) is the fastest\n", s.m, s.n, s.k,
                     st.best_index, st.candidates, st.timed);
        steps.push_back(kAutotunedStep);
      }
    }
    for (int st : opt.steps)
      if (st != 0) steps.push_back(st);
    // Run `step` (the autotuned column too) on q.
    const auto launch = [&](int step, const gemm::Problem& q) {
      return step == kAutotunedStep ? gemm::LaunchAutotuned(*tuned, q, ctx, stream) : gemm::Launch(step, q, ctx, stream);
    };
    std::vector<Row> shape_rows;
    for (int st : steps) {
      Row r{st, s};
      const gemm::StepSupport sup = st == kAutotunedStep ? gemm::StepSupport{true, ""} : gemm::Supports(st, ctx);
      const gemm::StepInfo* info = gemm::FindStep(st);
      std::string shape_err =
          st == kAutotunedStep ? "" : info ? gemm::ShapeError(*info, s.m, s.n, s.k) : "unknown step";
      if (!sup.supported) {
        r.status = "skipped: step " + std::to_string(st) + " " + sup.reason;
      } else if (!shape_err.empty()) {
        r.status = "skipped: shape";
      } else {
        CHECK_CUDA(gemm::Poison(d, d_elems, stream));
        if (auto err = launch(st, problem(d, c, s.n)); !err.empty()) {
          r.status = "FAIL: " + err;
        } else {
          CHECK_CUDA(compare(d));
          gemm::CompareResult host{};
          CHECK_CUDA(cudaMemcpyAsync(&host, cmp, sizeof host, cudaMemcpyDeviceToHost, stream));
          CHECK_CUDA(cudaStreamSynchronize(stream));
          if (host.mismatches == 0) {
            r.ran = true;
            r.status = "ok";
          } else {
            r.status = "FAIL: " + std::to_string(host.mismatches) + " mismatches";
          }
        }
      }
      shape_rows.push_back(r);
    }

    // Warm-up, then interleaved timing: every step sees the same conditions.
    // With --beta, each step (the autotuned pick aside, chosen for C) also
    // runs without C between its runs with C, so that what C costs is a
    // ratio of one process and one stretch of clocks.
    std::vector<std::vector<float>> times(shape_rows.size()), times_beta0(shape_rows.size());
    const auto time_one = [&](Row& r, const gemm::Problem& q, std::vector<float>* out, bool keep) {
      CHECK_CUDA(l2_flush.Run(stream));
      CHECK_CUDA(cudaEventRecord(start, stream));
      if (auto err = launch(r.step, q); !err.empty()) {
        r.ran = false;
        r.status = "FAIL: timed run: " + err;
      }
      CHECK_CUDA(cudaEventRecord(stop, stream));
      CHECK_CUDA(cudaEventSynchronize(stop));
      float ms = 0;
      CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
      if (keep) out->push_back(ms);
      return 0;
    };
    for (int it = -opt.warmup; it < opt.iters; ++it) {
      for (size_t i = 0; i < shape_rows.size(); ++i) {
        if (!shape_rows[i].ran) continue;
        // Timed in place, C being D (D += A·B): cuBLAS reads C from D's own
        // memory, and a C elsewhere would time its copy there too.
        if (time_one(shape_rows[i], problem(d, d, ldd), &times[i], it >= 0) != 0) return 1;
        if (opt.beta != 0 && shape_rows[i].step != kAutotunedStep && shape_rows[i].ran) {
          gemm::Problem plain = problem(d, d, ldd);
          plain.beta = 0;
          plain.c = nullptr;
          if (time_one(shape_rows[i], plain, &times_beta0[i], it >= 0) != 0) return 1;
        }
      }
    }
    CHECK_CUDA(cudaGetLastError());
    const double flops = 2.0 * s.m * s.n * s.k * entries;
    double cublas_ms = 0;
    for (size_t i = 0; i < shape_rows.size(); ++i) {
      Row& r = shape_rows[i];
      if (!r.ran) continue;
      r.ms = Median(times[i]);
      r.ms_min = *std::min_element(times[i].begin(), times[i].end());
      r.tflops = flops / (r.ms * 1e-3) / 1e12;
      if (r.step == 0) cublas_ms = r.ms;
      r.ratio = cublas_ms > 0 ? cublas_ms / r.ms : 0;
      if (!times_beta0[i].empty()) r.ratio_to_beta0 = Median(times_beta0[i]) / r.ms;
    }
    for (Row& r : shape_rows) {
      for (const Row& t : shape_rows) {
        if (t.step == kAutotunedStep && t.ran && r.ran) r.ratio_to_autotuned = t.ms / r.ms;
      }
    }
    rows.insert(rows.end(), shape_rows.begin(), shape_rows.end());
    for (__half* buf : {a, b, d, ref}) cudaFree(buf);
    for (void* buf : {a_dense, b_dense, d_dense, static_cast<void*>(c)}) cudaFree(buf);
    cudaFree(exact_d);
    cudaFree(bound);
    if (opt.sweep > 0) {
      std::fprintf(stderr, "\rsweep: %zu of %d shapes", shape_index + 1, opt.sweep);
    }
  }
  if (opt.sweep > 0) std::fprintf(stderr, "\n");

  const char* layout = opt.pitched ? "pitched" : "dense";
  std::ostringstream md;
  md << "GPU: " << prop.name << ", " << date << ", median of " << opt.iters << " runs after " << opt.warmup
     << " warm-ups, fresh random inputs, L2 flushed before every run, " << layout << " "
     << gemm::ElementName(opt.dtype) << " operands and D, A " << gemm::LayoutName(opt.a_layout) << ", B "
     << gemm::LayoutName(opt.b_layout) << (opt.alpha != 1 ? ", alpha " + std::to_string(opt.alpha) : "")
     << (opt.beta != 0 ? ", plus beta·C, beta " + std::to_string(opt.beta) +
                             " (vs beta 0: the same step without C, timed between its runs with C)"
                       : "")
     << (opt.batch > 1 ? ", batches of " + std::to_string(opt.batch) + (opt.shared_b ? " sharing B" : "") : "")
     << "\n\n";
  if (opt.sweep > 0) {
    md << "Sweep: " << opt.sweep << " shapes from seed " << opt.seed << "; ratio = cuBLAS time / step time\n\n"
       << SweepSummary(rows, opt.steps) << "\n";
  }
  const bool with_c = opt.beta != 0;
  md << "| shape | class | step | name | ms | TFLOPS | vs cuBLAS | vs autotuned cuBLASLt |"
     << (with_c ? " vs beta 0 |" : "") << " check |\n"
     << "| --- | --- | ---: | --- | ---: | ---: | ---: | ---: |" << (with_c ? " ---: |" : "") << " --- |\n";
  for (const Row& r : rows) {
    char buf[320];
    const std::string shape = std::to_string(r.shape.m) + "x" + std::to_string(r.shape.n) + "x" + std::to_string(r.shape.k);
    const std::string name = NameOf(r.step);
    const std::string vs_tuned = r.ratio_to_autotuned > 0 ? std::to_string(r.ratio_to_autotuned).substr(0, 5) : "-";
    const std::string vs_beta0 =
        !with_c ? "" : r.ratio_to_beta0 > 0 ? " " + std::to_string(r.ratio_to_beta0).substr(0, 5) + " |" : " - |";
    if (r.ran) {
      std::snprintf(buf, sizeof buf, "| %s | %s | %d | %s | %.4f | %.1f | %.3f | %s |%s %s |\n", shape.c_str(),
                    r.shape.shape_class.c_str(), r.step, name.c_str(), r.ms, r.tflops, r.ratio, vs_tuned.c_str(),
                    vs_beta0.c_str(), r.status.c_str());
    } else {
      std::snprintf(buf, sizeof buf, "| %s | %s | %d | %s | - | - | - | - |%s %s |\n", shape.c_str(),
                    r.shape.shape_class.c_str(), r.step, name.c_str(), with_c ? " - |" : "", r.status.c_str());
    }
    md << buf;
  }
  // A sweep's per-shape table is long: the terminal gets the summary only.
  const std::string text = md.str();
  std::printf("%s", opt.sweep > 0 ? text.substr(0, text.find("| shape |")).c_str() : text.c_str());
  if (!opt.md.empty()) std::ofstream(opt.md) << text;
  if (!opt.csv.empty()) {
    std::ofstream f(opt.csv);
    f << "gpu,date,step,name,m,n,k,ms_median,ms_min,tflops,ratio_to_cublas,status,class,layout,"
         "ratio_to_autotuned,dtype,a_layout,b_layout,beta,batch,shared_b,alpha,ratio_to_beta0\n";
    for (const Row& r : rows) {
      f << '"' << prop.name << "\"," << date << ',' << r.step << ',' << NameOf(r.step) << ',' << r.shape.m << ','
        << r.shape.n << ',' << r.shape.k << ',' << r.ms << ',' << r.ms_min << ',' << r.tflops << ',' << r.ratio
        << ",\"" << r.status << "\"," << r.shape.shape_class << ',' << layout << ',' << r.ratio_to_autotuned << ','
        << gemm::ElementName(opt.dtype) << ',' << gemm::LayoutName(opt.a_layout) << ','
        << gemm::LayoutName(opt.b_layout) << ',' << opt.beta << ',' << opt.batch << ',' << opt.shared_b << ','
        << opt.alpha << ',' << r.ratio_to_beta0 << "\n";
    }
  }
  bool failed = false;
  for (const Row& r : rows) failed |= r.status.rfind("FAIL", 0) == 0;
  gemm::DestroyContext(&ctx);
  return failed ? 1 : 0;
}
