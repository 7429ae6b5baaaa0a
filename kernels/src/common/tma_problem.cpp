#include "common/tma_problem.h"

#include <cudaTypedefs.h>

#include <cstdint>
#include <mutex>


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

std::string Encode(CUtensorMap* map, const void* base, int64_t rows, int64_t cols, uint32_t box_cols,
                   uint32_t box_rows) {
  auto encode = EncodeFn();
  if (encode == nullptr) return "cuTensorMapEncodeTiled is not available from the driver";
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(cols) * 2};
  const cuuint32_t box[2] = {box_cols, box_rows};
  const cuuint32_t element_strides[2] = {1, 1};
  const CUresult r = encode(map, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, const_cast<void*>(base), dims, strides, box,
                            element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS ? "" : "cuTensorMapEncodeTiled failed (" + std::to_string(r) + ")";
}

bool Aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }
int64_t RoundUp8(int64_t x) { return (x + 7) / 8 * 8; }

// rows×cols -> a zero-padded rows×cols_pad copy.
std::string PadCopy(__half** out, const __half* src, int64_t rows, int64_t cols, int64_t cols_pad, cudaStream_t s) {
  const size_t bytes = static_cast<size_t>(rows) * cols_pad * 2;
  cudaError_t e = cudaMallocAsync(reinterpret_cast<void**>(out), bytes, s);
  if (e == cudaSuccess) e = cudaMemsetAsync(*out, 0, bytes, s);
  if (e == cudaSuccess && src != nullptr) {
    e = cudaMemcpy2DAsync(*out, cols_pad * 2, src, cols * 2, cols * 2, rows, cudaMemcpyDeviceToDevice, s);
  }
  return e == cudaSuccess ? "" : std::string("staging a padded copy: ") + cudaGetErrorString(e);
}

}  // namespace

std::string TmaProblem::Prepare(const Problem& p, cudaStream_t stream, TmaBoxRows boxes) {
  p_ = p;
  const __half* a = p.a;
  const __half* b = p.b;
  int64_t k = p.k;
  if (p.k % 8 != 0 || !Aligned16(p.a) || !Aligned16(p.b)) {
    k = RoundUp8(p.k);
    if (auto err = PadCopy(&a_pad_, p.a, p.m, p.k, k, stream); !err.empty()) return err;
    if (auto err = PadCopy(&b_pad_, p.b, p.n, p.k, k, stream); !err.empty()) return err;
    a = a_pad_;
    b = b_pad_;
  }
  const __half* d = p.d;
  n_pad_ = p.n;
  if (p.n % 8 != 0 || !Aligned16(p.d)) {
    n_pad_ = RoundUp8(p.n);
    if (auto err = PadCopy(&d_pad_, nullptr, p.m, p.n, n_pad_, stream); !err.empty()) return err;
    d = d_pad_;
  }
  if (auto err = Encode(&a_, a, p.m, k, kTileK, boxes.a); !err.empty()) return err;
  if (auto err = Encode(&b_, b, p.n, k, kTileK, boxes.b); !err.empty()) return err;
  return Encode(&d_, d, p.m, n_pad_, kTileK, boxes.d);
}

std::string TmaProblem::Finish(cudaStream_t stream) {
  cudaError_t e = cudaSuccess;
  if (d_pad_ != nullptr) {
    e = cudaMemcpy2DAsync(p_.d, p_.n * 2, d_pad_, n_pad_ * 2, p_.n * 2, p_.m, cudaMemcpyDeviceToDevice, stream);
  }
  for (__half* buf : {a_pad_, b_pad_, d_pad_}) {
    if (buf != nullptr) cudaFreeAsync(buf, stream);
  }
  a_pad_ = b_pad_ = d_pad_ = nullptr;
  return e == cudaSuccess ? "" : std::string("copying D back from its padded copy: ") + cudaGetErrorString(e);
}

}  // namespace gemm::common
