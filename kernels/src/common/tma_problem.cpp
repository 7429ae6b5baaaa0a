#include "common/tma_problem.h"

#include "common/batch.h"
#include "common/matrix_repitch.h"
#include "common/tensor_map_cache.h"

#include <cudaTypedefs.h>

#include <atomic>
#include <cstdint>
#include <mutex>

#include "gemm/test_hooks.h"


namespace gemm::common {
namespace {

// cuTensorMapEncodeTiled is a driver API call: fetched through the runtime,
// so nothing links libcuda.
PFN_cuTensorMapEncodeTiled_v12000 EncodeFn() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
  static std::once_flag once;
  std::call_once(once, [] {
    cudaDriverEntryPointQueryResult q{};
    void* p = nullptr;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q) == cudaSuccess &&
        q == cudaDriverEntryPointSuccess) {
      fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
    }
  });
  return fn;
}

std::atomic<bool> swizzle_fault{false};  // testing::PlantTmaSwizzleFault

// `entries` batch entries of rows×cols of `type`, rows `ld` elements apart
// and entries `stride` apart (one entry: any stride); columns past `cols`
// (up to the pitch and beyond) are outside the map: TMA zero-fills them on
// loads and drops them on stores. TMA converts nothing between these
// 16-bit types; the map names the real one all the same.
std::string Encode(CUtensorMap* map, ElementType type, const void* base, int64_t rows, int64_t cols, int64_t ld,
                   int64_t entries, int64_t stride, uint32_t box_cols, uint32_t box_rows) {
  if (entries == 1) stride = rows * ld;
  thread_local TensorMapCache<CUtensorMap> cache;
  const bool planted = swizzle_fault.load(std::memory_order_relaxed);
  const auto make = [&](CUtensorMap* fresh) -> std::string {
    auto encode = EncodeFn();
    if (encode == nullptr) return "cuTensorMapEncodeTiled is not available from the driver";
    const cuuint64_t dims[3] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows),
                                static_cast<cuuint64_t>(entries)};
    const cuuint64_t strides[2] = {static_cast<cuuint64_t>(ld) * 2, static_cast<cuuint64_t>(stride) * 2};
    const cuuint32_t box[3] = {box_cols, box_rows, 1};
    const cuuint32_t element_strides[3] = {1, 1, 1};
    const auto data_type =
        type == ElementType::kBF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    const CUresult r = encode(fresh, data_type, 3, const_cast<void*>(base), dims, strides, box,
                              element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                              planted ? CU_TENSOR_MAP_SWIZZLE_NONE : CU_TENSOR_MAP_SWIZZLE_128B,
                              CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    return r == CUDA_SUCCESS ? "" : "cuTensorMapEncodeTiled failed (" + std::to_string(r) + ")";
  };
  if (planted) return make(map);  // a planted map never enters the cache
  return cache.Get({base, rows, cols, ld, box_cols, box_rows, static_cast<int>(type), entries, stride}, map, make);
}

// Room for rows×cols at LinePitch(cols) (from the stream-ordered pool);
// with `src` (rows×cols at pitch `ld`), the copy into it, zeros past
// `cols`, added to `copies` for one launch with the other operand's.
std::string PitchedCopy(__half** out, int64_t* out_ld, const __half* src, int64_t rows, int64_t cols, int64_t ld,
                        cudaStream_t s, MatrixRepitch* copies = nullptr, int* count = nullptr) {
  *out_ld = LinePitch(cols);
  cudaError_t e = cudaMallocAsync(reinterpret_cast<void**>(out), static_cast<size_t>(rows) * *out_ld * 2, s);
  if (e != cudaSuccess) return std::string("staging a 16-byte-pitched copy: ") + cudaGetErrorString(e);
  if (src != nullptr) {
    MatrixRepitch& c = copies[(*count)++];
    c.from = src, c.from_ld = ld;
    c.to = *out, c.to_rows = rows, c.to_cols = *out_ld;
    c.rows = rows, c.cols = cols;
  }
  return "";
}

}  // namespace

TmaProblem::~TmaProblem() { Release(); }

void TmaProblem::Release() {
  for (__half* buf : {a_pad_, b_pad_, d_pad_}) {
    if (buf != nullptr) cudaFreeAsync(buf, stream_);
  }
  a_pad_ = b_pad_ = d_pad_ = nullptr;
}

std::string TmaProblem::Prepare(const Problem& p, cudaStream_t stream, TmaBoxRows boxes, bool d_map, bool c_map) {
  p_ = p;
  c_mapped_ = false;
  stream_ = stream;
  // A batch arrives ready for its maps (gemm::Launch runs any other entry by entry).
  if (p.batch > 1) {
    if (auto why = OneLaunchBatchError(p); !why.empty()) return "a batch the TMA steps cannot take at once: " + why;
  }
  // An operand the batch shares is a map of one entry (common/batch.h).
  const BatchArgs batch = BatchOf(p);
  const int64_t a_entries = batch.a_moves ? p.batch : 1, b_entries = batch.b_moves ? p.batch : 1;
  const __half* a = p.a;
  const __half* b = p.b;
  int64_t lda = p.lda, ldb = p.ldb;
  ldd_pad_ = p.ldd;
  // An operand's storage: rows × cols at its pitch. K-contiguous, (M or N)
  // × K, a box of the step's rows × one k-tile; MN-contiguous, K × (M or N),
  // boxes of 64 × 64 (common/tile_layout.h, TmaLoadTile).
  const bool a_k = p.a_layout == Layout::kKContiguous, b_k = p.b_layout == Layout::kKContiguous;
  const StoredShape a_stored = StoredShapeOf(p.a_layout, p.m, p.k), b_stored = StoredShapeOf(p.b_layout, p.n, p.k);
  MatrixRepitch copies[2];
  int count = 0;
  if (!Vectorizable(p.a, p.lda)) {
    if (auto err = PitchedCopy(&a_pad_, &lda, p.a, a_stored.rows, a_stored.cols, p.lda, stream, copies, &count);
        !err.empty()) {
      return err;
    }
    a = a_pad_;
  }
  if (!Vectorizable(p.b, p.ldb)) {
    if (auto err = PitchedCopy(&b_pad_, &ldb, p.b, b_stored.rows, b_stored.cols, p.ldb, stream, copies, &count);
        !err.empty()) {
      return err;
    }
    b = b_pad_;
  }
  if (cudaError_t e = CopyRepitched(copies, count, stream); e != cudaSuccess) {
    return std::string("copying operands to a 16-byte pitch: ") + cudaGetErrorString(e);
  }
  if (auto err = Encode(&a_, p.operands, a, a_stored.rows, a_stored.cols, lda, a_entries, p.stride_a,
                        a_k ? kTileK : kMnBlockRows,
                        a_k ? boxes.a : kTileK);
      !err.empty()) {
    return err;
  }
  if (auto err = Encode(&b_, p.operands, b, b_stored.rows, b_stored.cols, ldb, b_entries, p.stride_b,
                        b_k ? kTileK : kMnBlockRows,
                        b_k ? boxes.b : kTileK);
      !err.empty()) {
    return err;
  }
  if (!d_map) return "";
  __half* d = p.d;
  // A TMA store writes a row's tail up to the next 16 bytes (gemm.h).
  const bool tail_overwritten = p.n % 8 != 0 && !p.d_tail_is_scratch;
  if (!Vectorizable(p.d, p.ldd) || tail_overwritten) {
    if (auto err = PitchedCopy(&d_pad_, &ldd_pad_, nullptr, p.m, p.n, p.ldd, stream); !err.empty()) return err;
    d = d_pad_;
  }
  if (auto err = Encode(&d_, p.result, d, p.m, p.n, ldd_pad_, p.batch, p.stride_d, kTileK, boxes.d); !err.empty()) {
    return err;
  }
  // C is never copied: where TMA cannot take it in place, the kernel loads
  // it itself. A C the batch shares is a map of one entry.
  const int64_t c_entries = p.stride_c != 0 ? p.batch : 1;
  if (!c_map || p.beta == 0.0f || p.c == nullptr || !Vectorizable(p.c, p.ldc) ||
      (c_entries > 1 && p.stride_c % 8 != 0)) {
    return "";
  }
  if (auto err = Encode(&c_, p.result, p.c, p.m, p.n, p.ldc, c_entries, p.stride_c, kTileK, boxes.d); !err.empty()) {
    return err;
  }
  c_mapped_ = true;
  return "";
}

std::string TmaProblem::Finish(cudaStream_t stream) {
  cudaError_t e = cudaSuccess;
  if (d_pad_ != nullptr) {
    MatrixRepitch c;
    c.from = d_pad_, c.from_ld = ldd_pad_;
    c.to = p_.d, c.to_rows = p_.m, c.to_cols = p_.n, c.to_ld = p_.ldd;
    c.rows = p_.m, c.cols = p_.n;
    e = CopyRepitched(c, stream);
  }
  stream_ = stream;
  Release();
  return e == cudaSuccess ? "" : std::string("copying D back from its pitched copy: ") + cudaGetErrorString(e);
}

}  // namespace gemm::common

namespace gemm {
void testing::PlantTmaSwizzleFault(bool on) { common::swizzle_fault = on; }
}  // namespace gemm
