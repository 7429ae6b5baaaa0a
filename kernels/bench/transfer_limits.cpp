// transfer-limits: the physical floors of gemmd's transfer path on this
// machine, measured beside it in scripts/gpu/run.sh: pinned host memory to
// the GPU and back (cudaMemcpyAsync, the DMA alone), and one thread's memcpy
// from pageable into pinned memory (what staging costs without help).
// Medians of --iters runs after one warm-up; one line of key=value pairs.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

bool Check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "transfer-limits: %s: %s\n", what, cudaGetErrorString(e));
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  size_t bytes = 96ull << 20;
  int iters = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--bytes") bytes = std::strtoull(argv[i + 1], nullptr, 10);
    if (flag == "--iters") iters = std::max(1, std::atoi(argv[i + 1]));
  }
  char *pinned = nullptr, *device = nullptr;
  std::vector<char> pageable(bytes, 1);  // touched: no first-use faults in the timing
  cudaStream_t stream;
  cudaEvent_t start, stop;
  if (!Check(cudaMallocHost(&pinned, bytes), "pinned allocation") || !Check(cudaMalloc(&device, bytes), "device allocation") ||
      !Check(cudaStreamCreate(&stream), "stream") || !Check(cudaEventCreate(&start), "event") ||
      !Check(cudaEventCreate(&stop), "event")) {
    return 1;
  }
  std::memset(pinned, 2, bytes);
  auto dma = [&](cudaMemcpyKind kind) {
    std::vector<double> s;
    for (int i = 0; i <= iters; ++i) {
      cudaEventRecord(start, stream);
      if (kind == cudaMemcpyHostToDevice) {
        cudaMemcpyAsync(device, pinned, bytes, kind, stream);
      } else {
        cudaMemcpyAsync(pinned, device, bytes, kind, stream);
      }
      cudaEventRecord(stop, stream);
      cudaEventSynchronize(stop);
      float ms = 0;
      cudaEventElapsedTime(&ms, start, stop);
      if (i > 0) s.push_back(ms * 1e-3);
    }
    return Median(s);
  };
  const double h2d = dma(cudaMemcpyHostToDevice), d2h = dma(cudaMemcpyDeviceToHost);
  std::vector<double> copies;
  for (int i = 0; i <= iters; ++i) {
    const auto t = std::chrono::steady_clock::now();
    std::memcpy(pinned, pageable.data(), bytes);
    if (i > 0) copies.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count());
  }
  const double copy = Median(copies);
  if (!Check(cudaGetLastError(), "copies")) return 1;
  std::printf("transfer_limits bytes=%zu h2d_gbps=%.1f d2h_gbps=%.1f memcpy_one_thread_ms=%.2f memcpy_gbps=%.1f\n",
              bytes, bytes / h2d / 1e9, bytes / d2h / 1e9, copy * 1e3, bytes / copy / 1e9);
  return 0;
}
