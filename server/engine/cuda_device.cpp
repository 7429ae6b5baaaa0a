#include "engine/cuda_device.h"

#include <vector>

#include "engine/median.h"

#include <algorithm>

#include "gemm/steps.h"

namespace gemmd {

std::string ErrorText(cudaError_t e) { return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e); }

bool IsSticky(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorECCUncorrectable:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
      return true;
    default:
      return false;
  }
}

DeviceMatrix Pitched(int64_t rows, int64_t cols, uint64_t slot_bytes) {
  const int64_t ld = gemm::LinePitch(cols);
  return {nullptr, rows, cols, static_cast<uint64_t>(ld) * 2 <= slot_bytes ? ld : cols};
}

bool PaddedForVendor(const DeviceMatrix& a, const DeviceMatrix& b, const DeviceMatrix& d) {
  const bool pitched = a.ld == b.ld && a.ld == gemm::LinePitch(a.cols) && d.ld == gemm::LinePitch(d.cols);
  return pitched && (a.cols % 8 != 0 || d.cols % 8 != 0);
}

DeviceMatrix VendorB(const DeviceMatrix& b) {
  return {b.data, gemm::SixteenBytePitch(b.rows), b.cols, b.ld};
}

cudaError_t ZeroVendorPadding(const DeviceMatrix& a, const DeviceMatrix& b, cudaStream_t stream, bool zero_a,
                              bool zero_b) {
  // VendorProblem reads K' = SixteenBytePitch(k) columns of both operands
  // and N' = SixteenBytePitch(n) rows of B: only those gaps are zeroed.
  const int64_t k_read = gemm::SixteenBytePitch(a.cols), n_read = gemm::SixteenBytePitch(b.rows);
  cudaError_t e = cudaSuccess;
  if (k_read > a.cols) {  // the gap columns of A and of B's n rows
    if (zero_a) e = cudaMemset2DAsync(a.data + a.cols, a.ld * 2, 0, (k_read - a.cols) * 2, a.rows, stream);
    if (e == cudaSuccess && zero_b) {
      e = cudaMemset2DAsync(b.data + b.cols, b.ld * 2, 0, (k_read - b.cols) * 2, b.rows, stream);
    }
  }
  if (e == cudaSuccess && zero_b && n_read > b.rows) {  // B's rows from n up to N', whole
    e = cudaMemsetAsync(b.data + b.rows * b.ld, 0, (n_read - b.rows) * b.ld * 2, stream);
  }
  return e;
}

uint64_t CachedMatrixBytes(const DeviceMatrix& m) {
  return static_cast<uint64_t>(gemm::SixteenBytePitch(m.rows)) * m.ld * 2;
}

gemm::Problem VendorProblem(const DeviceMatrix& a, const DeviceMatrix& b, __half* d, int64_t ldd) {
  return {a.rows, gemm::SixteenBytePitch(b.rows), gemm::SixteenBytePitch(a.cols), a.data, b.data, d, a.ld, b.ld, ldd,
          true};
}

namespace {

// The bytes one staging slot carries of `m`: whole rows, unless the matrix
// is dense on the device (then any bytes).
uint64_t ChunkBytes(const Lane& lane, const DeviceMatrix& m) {
  const uint64_t slot = lane.slot_bytes(), row = m.row_bytes();
  return m.ld == m.cols ? slot : slot / row * row;
}

}  // namespace

cudaError_t StagedUpload(Lane& lane, HostCopier& copier, const DeviceMatrix& dst, const HostBytes& src,
                         cudaStream_t stream) {
  const uint64_t slot = lane.slot_bytes(), row = dst.row_bytes();
  const uint64_t bytes = row * dst.rows, chunk = ChunkBytes(lane, dst);
  for (uint64_t off = 0; off < bytes; off += chunk) {
    const uint64_t len = std::min(chunk, bytes - off);
    const uint32_t s = lane.next_slot++ % Lane::kStagingSlots;
    char* buf = lane.staging + s * slot;
    if (auto e = cudaEventSynchronize(lane.staged[s]); e != cudaSuccess) return e;
    copier.Copy(buf, src, off, len);
    cudaError_t e = dst.ld == dst.cols
                        ? cudaMemcpyAsync(reinterpret_cast<char*>(dst.data) + off, buf, len, cudaMemcpyHostToDevice,
                                          stream)
                        : cudaMemcpy2DAsync(reinterpret_cast<char*>(dst.data) + off / row * dst.ld * dst.element_bytes,
                                            dst.ld * dst.element_bytes, buf, row, row, len / row,
                                            cudaMemcpyHostToDevice, stream);
    if (e != cudaSuccess) return e;
    if (auto e = cudaEventRecord(lane.staged[s], stream); e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

cudaError_t StagedDownload(Lane& lane, HostCopier& copier, void* dst, const DeviceMatrix& src) {
  constexpr int kSlots = Lane::kStagingSlots;
  const uint64_t slot = lane.slot_bytes(), row = src.row_bytes();
  const uint64_t bytes = row * src.rows, chunk = ChunkBytes(lane, src);
  const uint64_t chunks = (bytes + chunk - 1) / chunk;
  const uint32_t first = lane.next_slot;
  lane.next_slot += static_cast<uint32_t>(chunks);
  auto slot_of = [first](uint64_t i) { return static_cast<uint32_t>((first + i) % kSlots); };
  // The DMA runs up to kSlots - 1 chunks ahead of the copy threads.
  for (uint64_t i = 0; i < chunks + kSlots - 1; ++i) {
    if (i < chunks) {
      const uint64_t off = i * chunk, len = std::min(chunk, bytes - off);
      char* buf = lane.staging + slot_of(i) * slot;
      // An earlier upload's DMA may still read this slot (the ring goes on
      // from where the last copy left it).
      if (auto e = cudaEventSynchronize(lane.staged[slot_of(i)]); e != cudaSuccess) return e;
      cudaError_t e = src.ld == src.cols
                          ? cudaMemcpyAsync(buf, reinterpret_cast<const char*>(src.data) + off, len,
                                            cudaMemcpyDeviceToHost, lane.copy)
                          : cudaMemcpy2DAsync(buf, row,
                                              reinterpret_cast<const char*>(src.data) +
                                                  off / row * src.ld * src.element_bytes,
                                              src.ld * src.element_bytes, row, len / row, cudaMemcpyDeviceToHost,
                                              lane.copy);
      if (e != cudaSuccess) return e;
      if (auto e = cudaEventRecord(lane.staged[slot_of(i)], lane.copy); e != cudaSuccess) return e;
    }
    if (i >= kSlots - 1 && i - (kSlots - 1) < chunks) {
      const uint64_t j = i - (kSlots - 1), off = j * chunk, len = std::min(chunk, bytes - off);
      if (auto e = cudaEventSynchronize(lane.staged[slot_of(j)]); e != cudaSuccess) return e;
      copier.Copy(static_cast<char*>(dst) + off, lane.staging + slot_of(j) * slot, len);
    }
  }
  return cudaSuccess;
}

cudaError_t QueueSmallDownload(Lane& lane, const DeviceMatrix& src, cudaStream_t stream, const char** staged) {
  const uint32_t s = lane.next_slot++ % Lane::kStagingSlots;
  char* buf = lane.staging + s * lane.slot_bytes();
  if (auto e = cudaEventSynchronize(lane.staged[s]); e != cudaSuccess) return e;
  const uint64_t row = src.row_bytes();
  cudaError_t e =
      cudaMemcpy2DAsync(buf, row, src.data, src.ld * src.element_bytes, row, src.rows, cudaMemcpyDeviceToHost, stream);
  if (e == cudaSuccess) e = cudaEventRecord(lane.staged[s], stream);
  *staged = buf;
  return e;
}

absl::Status LaunchVendorReference(CudaEngine::Device& dev, Lane& lane, int reference_step,
                                   const gemm::Problem& check) {
  if (reference_step == gemm::kVendorStep) {
    const cudaError_t e = gemm::ReferenceGemm(check.m, check.n, check.k, check.a, check.lda, check.b, check.ldb,
                                              check.d, check.ldd, lane.compute);
    return e == cudaSuccess ? absl::OkStatus() : dev.Fail("SIMT reference", e);
  }
  if (auto err = gemm::Launch(reference_step, check, lane.ctx, lane.compute); !err.empty()) {
    const std::string what = "step " + std::to_string(reference_step) + " reference";
    if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return dev.Fail(what.c_str(), e);
    return absl::InternalError(dev.desc.id + ": " + what + ": " + err);
  }
  return absl::OkStatus();
}

cudaError_t EnsureRepeatEvents(Lane& lane, uint32_t repeats) {
  while (lane.starts.size() < repeats) {
    cudaEvent_t start, stop;
    if (auto e = cudaEventCreate(&start); e != cudaSuccess) return e;
    if (auto e = cudaEventCreate(&stop); e != cudaSuccess) {
      cudaEventDestroy(start);
      return e;
    }
    lane.starts.push_back(start);
    lane.stops.push_back(stop);
  }
  return cudaSuccess;
}

cudaError_t MedianRepeatSeconds(const Lane& lane, uint32_t repeats, double* median) {
  std::vector<double> seconds;
  for (uint32_t r = 0; r < repeats; ++r) {
    float ms = 0;
    if (auto e = cudaEventElapsedTime(&ms, lane.starts[r], lane.stops[r]); e != cudaSuccess) return e;
    seconds.push_back(ms * 1e-3);
  }
  *median = Median(seconds);
  return cudaSuccess;
}

VerificationResult LaneVerification(const Lane& lane, uint64_t elements, const gemm::FormTolerance& tolerance,
                                    std::string reference) {
  return VerificationOf(*lane.cmp_host, elements, tolerance, std::move(reference));
}

VerificationResult VerificationOf(const gemm::CompareResult& compared, uint64_t elements,
                                  const gemm::FormTolerance& tolerance, std::string reference) {
  VerificationResult v;
  v.performed = true;
  v.mismatches = compared.mismatches;
  v.non_finite = compared.non_finite;
  v.max_abs_error = compared.max_abs_error;
  v.accumulation_atol = compared.accumulation_atol;
  v.elements = elements;
  v.rtol = tolerance.rtol;
  v.atol = tolerance.atol;
  v.tolerance_source = tolerance.source;
  v.reference = std::move(reference);
  v.passed = v.mismatches == 0;
  return v;
}

std::string VendorReferenceName(int reference_step) {
  return reference_step == gemm::kVendorStep ? "gpu-simt-fp32" : "ladder-step-" + std::to_string(reference_step);
}

}  // namespace gemmd
