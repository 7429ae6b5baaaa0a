// How big a persistent grid is: as many CTAs (or whole clusters) as the GPU
// holds at once, so no CTA waits for a second wave and every CTA walks the
// tile list from the start. Asked once per device for each kernel.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <atomic>

namespace gemm::common {

class ResidentGrid {
 public:
  // `cluster`: the kernel's compile-time cluster size (1 for none).
  ResidentGrid(const void* kernel, int threads, int smem_bytes, int cluster = 1)
      : kernel_(kernel), threads_(threads), smem_bytes_(smem_bytes), cluster_(cluster) {}

  // CTAs for the current device (`device`, with `sm_count` SMs): a multiple
  // of the cluster size. If the occupancy query fails, one CTA per SM.
  int Ctas(int device, int sm_count) {
    const bool cached = device >= 0 && device < static_cast<int>(cache_.size());
    int ctas = cached ? cache_[device].load(std::memory_order_relaxed) : 0;
    if (ctas == 0) {
      ctas = Query(sm_count);
      if (cached) cache_[device].store(ctas, std::memory_order_relaxed);
    }
    return ctas;
  }

 private:
  int Query(int sm_count) const {
    int resident = 0;
    if (cluster_ == 1) {
      int per_sm = 0;
      if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel_, threads_, smem_bytes_) == cudaSuccess) {
        resident = per_sm * sm_count;
      }
    } else {
      cudaLaunchConfig_t config{};
      config.gridDim = dim3(static_cast<unsigned>(sm_count / cluster_ * cluster_));
      config.blockDim = dim3(static_cast<unsigned>(threads_));
      config.dynamicSmemBytes = static_cast<size_t>(smem_bytes_);
      int clusters = 0;  // the cluster size comes from the kernel's __cluster_dims__
      if (cudaOccupancyMaxActiveClusters(&clusters, kernel_, &config) == cudaSuccess) resident = clusters * cluster_;
    }
    (void)cudaGetLastError();  // a failed query must not poison the next launch's error check
    return resident > 0 ? resident : std::max(cluster_, sm_count / cluster_ * cluster_);
  }

  const void* kernel_;
  int threads_, smem_bytes_, cluster_;
  std::array<std::atomic<int>, 64> cache_{};
};

}  // namespace gemm::common
