#include "engine/cuda_device.h"

#include <algorithm>

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

DeviceMatrix Pitched(int64_t rows, int64_t cols, uint64_t staging_half) {
  const int64_t ld = (cols + 7) / 8 * 8;
  return {nullptr, rows, cols, static_cast<uint64_t>(ld) * 2 <= staging_half ? ld : cols};
}

cudaError_t StagedUpload(Lane& lane, HostCopier& copier, const DeviceMatrix& dst, const HostBytes& src) {
  const uint64_t half = lane.staging_bytes / 2, row = dst.row_bytes();
  const uint64_t bytes = row * dst.rows, chunk = dst.ld == dst.cols ? half : half / row * row;
  for (uint64_t off = 0, i = 0; off < bytes; off += chunk, ++i) {
    const uint64_t len = std::min(chunk, bytes - off);
    char* buf = lane.staging + (i % 2) * half;
    if (auto e = cudaEventSynchronize(lane.staged[i % 2]); e != cudaSuccess) return e;
    copier.Copy(buf, src, off, len);
    cudaError_t e = dst.ld == dst.cols
                        ? cudaMemcpyAsync(reinterpret_cast<char*>(dst.data) + off, buf, len, cudaMemcpyHostToDevice,
                                          lane.copy)
                        : cudaMemcpy2DAsync(dst.data + off / row * dst.ld, dst.ld * 2, buf, row, row, len / row,
                                            cudaMemcpyHostToDevice, lane.copy);
    if (e != cudaSuccess) return e;
    if (auto e = cudaEventRecord(lane.staged[i % 2], lane.copy); e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

cudaError_t StagedDownload(Lane& lane, HostCopier& copier, void* dst, const DeviceMatrix& src) {
  const uint64_t half = lane.staging_bytes / 2, row = src.row_bytes();
  const uint64_t bytes = row * src.rows, chunk = src.ld == src.cols ? half : half / row * row;
  const uint64_t chunks = (bytes + chunk - 1) / chunk;
  for (uint64_t i = 0; i <= chunks; ++i) {
    if (i < chunks) {
      const uint64_t off = i * chunk, len = std::min(chunk, bytes - off);
      char* buf = lane.staging + (i % 2) * half;
      cudaError_t e = src.ld == src.cols
                          ? cudaMemcpyAsync(buf, reinterpret_cast<const char*>(src.data) + off, len,
                                            cudaMemcpyDeviceToHost, lane.copy)
                          : cudaMemcpy2DAsync(buf, row, src.data + off / row * src.ld, src.ld * 2, row, len / row,
                                              cudaMemcpyDeviceToHost, lane.copy);
      if (e != cudaSuccess) return e;
      if (auto e = cudaEventRecord(lane.staged[i % 2], lane.copy); e != cudaSuccess) return e;
    }
    if (i > 0) {
      const uint64_t j = i - 1, off = j * chunk, len = std::min(chunk, bytes - off);
      if (auto e = cudaEventSynchronize(lane.staged[j % 2]); e != cudaSuccess) return e;
      copier.Copy(static_cast<char*>(dst) + off, lane.staging + (j % 2) * half, len);
    }
  }
  return cudaSuccess;
}
}  // namespace gemmd
