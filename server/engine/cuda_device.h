// The CUDA engine's device state, shared by its files (cuda_engine.cpp,
// cuda_batch.cpp): a device's lanes (one per dispatcher worker) and the
// lease of one, a request's buffers, the pitched layout of matrices on the
// device and the staged copies through pinned memory.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/cuda_engine.h"
#include "engine/device_matrix_cache.h"
#include "engine/host_copier.h"
#include "gemm/device_ops.h"
#include "gemm/gemm.h"
#include "gemm/sketch_check_gpu.h"
#include "gemm/vendor_plan.h"

namespace gemmd {

using Clock = std::chrono::steady_clock;

inline double SecondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string ErrorText(cudaError_t e);

// Errors after which the context is unusable: the device serves no more.
bool IsSticky(cudaError_t e);

// Device memory each lane keeps for small requests: 1000x1000x1000 fits.
constexpr uint64_t kLaneScratchBytes = 8ull << 20;

// A request moving at most this many bytes between host and device (A and
// B sent, D returned) runs its whole path on the compute stream with one
// wait at the end. Waiting for its uploads on the copy stream first, and
// for D on it after, cost a 64^3 request two of its three waits (about 25
// us); the copy stream pays only where a big upload overlaps another
// lane's GEMM, and 1 MiB moves in about 40 us.
constexpr uint64_t kOneStreamBytes = 1ull << 20;

// The bytes of a job's operands that come from the host (not generated).
inline uint64_t HostInputBytes(const GemmJob& job) {
  auto host = [](const OperandView& op, int64_t rows, int64_t cols) {
    return op.kind == OperandView::Kind::kHost ? static_cast<uint64_t>(rows) * cols * 2 : 0;
  };
  return host(job.a, job.m, job.k) + host(job.b, job.n, job.k);
}

// One worker's private resources on a device: its own cuBLAS handle, streams,
// events and pinned staging, so several workers never share mutable state.
struct Lane {
  gemm::DeviceContext ctx;
  cudaStream_t copy = nullptr, compute = nullptr;
  // The staging is a ring of kStagingSlots chunks, each with the event of
  // its last copy: with 8 MiB chunks (of 64 MiB) the copy threads fill the
  // next chunk while the DMA moves the last, where two 32 MiB halves left a
  // whole half's DMA (0.6 ms) unoverlapped at each end of a 4096² operand.
  static constexpr int kStagingSlots = 8;
  cudaEvent_t staged[kStagingSlots] = {};
  cudaEvent_t inputs_ready = nullptr;
  // The verification's row norms, read on the copy stream beside the reference GEMM.
  cudaEvent_t norms_ready = nullptr;
  // Timed: inputs made or staged on the compute stream, the verification,
  // and a small D's copy down (see kOneStreamBytes).
  cudaEvent_t inputs_start = nullptr, inputs_done = nullptr, verified = nullptr, downloaded = nullptr;
  std::vector<cudaEvent_t> starts, stops;
  // The end of this lane's last ComputeTurn on the compute stream.
  cudaEvent_t turn_done = nullptr;
  char* staging = nullptr;  // pinned, kStagingSlots chunks used in turn
  char* scratch = nullptr;  // device, kLaneScratchBytes: a small request's A, B, D and reference
  uint64_t staging_bytes = 0;
  uint64_t slot_bytes() const { return staging_bytes / kStagingSlots; }
  // The ring's next slot. Consecutive copies, of one operand or of the next,
  // take different slots, so B's staging does not wait for A's DMA.
  uint32_t next_slot = 0;
  gemm::CompareResult* cmp = nullptr;       // device
  gemm::CompareResult* cmp_host = nullptr;  // pinned
  gemm::SketchResult* sketch = nullptr;       // device: VERIFICATION_FAST's result
  gemm::SketchResult* sketch_host = nullptr;  // pinned
  float* row_norms = nullptr;               // device: A's and B's largest row norms (gemm/tolerance.h)
  bool busy = false;
};

struct CudaEngine::Device {
  int ordinal = 0;
  DeviceDescription desc;
  cudaMemPool_t pool = nullptr;
  gemm::VendorPlanPtr vendor_plan;  // lanes' contexts point at it: declared first, destroyed after them
  std::vector<std::unique_ptr<Lane>> lanes;
  std::mutex lanes_mu;
  std::condition_variable lane_free;
  // Kernels and verification of one request at a time (ComputeTurn):
  // timings stay clean, while another lane's upload or download overlaps
  // them. last_turn_done (under compute_mu) is the latest turn's end.
  std::mutex compute_mu;
  cudaEvent_t last_turn_done = nullptr;
  gemm::L2Flush l2_flush;  // before benchmark-timed runs, under compute_mu
  std::unique_ptr<HostCopier> copier;  // staging copies of big inline operands and D
  // Stored matrices kept on the device (engine/device_matrix_cache.h);
  // after the lanes, so that it goes first.
  std::unique_ptr<DeviceMatrixCache> cache;
  std::atomic<int64_t> last_request_ns{0};  // steady clock, for the keep-warm
  cudaStream_t keep_warm_stream = nullptr;
  std::atomic<uint64_t> keep_warm_launches{0};
  __half* keep_warm_word = nullptr;
  mutable std::mutex state_mu;
  std::atomic<bool> healthy{true};
  std::string unhealthy_reason;
  std::vector<StepAvailability> steps;
  // Called with the message when a sticky error is met: it takes every
  // device of the engine out of service (see Fail).
  std::function<void(const std::string&)> on_sticky_error;

  void MarkUnhealthy(const std::string& why) {
    std::lock_guard lock(state_mu);
    if (healthy.exchange(false)) {
      unhealthy_reason = why;
      spdlog::error("device {} marked unhealthy: {}", desc.id, why);
    }
  }
  absl::Status Fail(const char* what, cudaError_t e) {
    if (e == cudaErrorMemoryAllocation) {
      return absl::ResourceExhaustedError(desc.id + ": " + what + ": out of device memory");
    }
    const std::string msg = desc.id + ": " + what + ": " + ErrorText(e);
    if (IsSticky(e)) {
      // The CUDA runtime makes a sticky error the whole process's: every
      // later call on every device returns it (seen on 2×H200: the other
      // GPU's next allocation failed the same way). So every device goes.
      MarkUnhealthy(msg);
      if (on_sticky_error) on_sticky_error(msg);
      return absl::InternalError(msg + " (the device's context is lost; this process serves no more requests "
                                       "and must be restarted)");
    }
    return absl::InternalError(msg);
  }
  // Waits for `stream`; a kernel still running after `timeout` is presumed
  // hung, and the device is taken out of service rather than the server.
  absl::Status Wait(cudaStream_t stream, double timeout) {
    const auto start = Clock::now();
    for (int spins = 0;; ++spins) {
      const cudaError_t e = cudaStreamQuery(stream);
      if (e == cudaSuccess) return absl::OkStatus();
      if (e != cudaErrorNotReady) return Fail("stream", e);
      if (SecondsSince(start) > timeout) {
        MarkUnhealthy("a kernel ran past " + std::to_string(timeout) + " s and is presumed hung");
        return absl::DeadlineExceededError(desc.id + ": a kernel ran past " + std::to_string(timeout) +
                                           " s; the device is out of service");
      }
      if (spins < 2000) {
        std::this_thread::yield();
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
    }
  }
};


// One request's kernels and checks in the device's order. compute_mu is
// held only while they are queued: the GPU runs them after the previous
// turn's (an event on this lane's compute stream, not a host wait), so
// another lane queues its GEMM while this one runs, and the device goes
// from one GEMM to the next without waiting for the host to wake. Wait for
// the lane's compute stream after the turn, not inside it.
class ComputeTurn {
 public:
  ComputeTurn(CudaEngine::Device& dev, Lane& lane) : lock_(dev.compute_mu), dev_(dev), lane_(lane) {
    if (dev.last_turn_done != nullptr) cudaStreamWaitEvent(lane.compute, dev.last_turn_done, 0);
  }
  ~ComputeTurn() {
    if (cudaEventRecord(lane_.turn_done, lane_.compute) == cudaSuccess) dev_.last_turn_done = lane_.turn_done;
  }
  ComputeTurn(const ComputeTurn&) = delete;
  ComputeTurn& operator=(const ComputeTurn&) = delete;

 private:
  std::lock_guard<std::mutex> lock_;
  CudaEngine::Device& dev_;
  Lane& lane_;
};

// Borrows a free lane of a device for one request.
class LaneLease {
 public:
  explicit LaneLease(CudaEngine::Device& dev) : dev_(dev) {
    std::unique_lock lock(dev.lanes_mu);
    dev.lane_free.wait(lock, [&] {
      for (auto& l : dev.lanes)
        if (!l->busy) return true;
      return false;
    });
    for (auto& l : dev.lanes) {
      if (!l->busy) {
        lane_ = l.get();
        lane_->busy = true;
        break;
      }
    }
  }
  ~LaneLease() {
    std::lock_guard lock(dev_.lanes_mu);
    lane_->busy = false;
    dev_.lane_free.notify_one();
  }
  Lane& operator*() { return *lane_; }
  Lane* operator->() { return lane_; }

 private:
  CudaEngine::Device& dev_;
  Lane* lane_ = nullptr;
};

// A request's device buffers: carved from the lane's scratch while they fit
// (small requests then make no allocator calls at all), else stream-ordered
// allocations from the device's pool, freed on `free_stream` after
// everything queued there.
class PoolBuffers {
 public:
  PoolBuffers(cudaMemPool_t pool, cudaStream_t alloc_stream, cudaStream_t free_stream, char* scratch,
              uint64_t scratch_bytes)
      : pool_(pool), alloc_(alloc_stream), free_(free_stream), scratch_(scratch), scratch_left_(scratch_bytes) {}
  ~PoolBuffers() {
    cudaStreamSynchronize(alloc_);  // idle already on success; on an error path, nothing may still read
    if (free_ != alloc_) cudaStreamSynchronize(free_);  // nor write the scratch the lane's next request gets
    for (void* p : ptrs_) cudaFreeAsync(p, free_);
  }
  cudaError_t Allocate(__half** out, uint64_t elements) {
    void* p = nullptr;
    const cudaError_t e = AllocateBytes(&p, elements * sizeof(__half));
    *out = static_cast<__half*>(p);
    return e;
  }
  // 256-byte aligned, as cuBLASLt's fastest kernels want.
  cudaError_t AllocateBytes(void** out, uint64_t bytes) {
    bytes = (std::max<uint64_t>(bytes, 1) + 255) / 256 * 256;
    if (bytes <= scratch_left_) {
      *out = scratch_;
      scratch_ += bytes;
      scratch_left_ -= bytes;
      return cudaSuccess;
    }
    void* p = nullptr;
    cudaError_t e = cudaMallocFromPoolAsync(&p, bytes, pool_, alloc_);
    if (e == cudaSuccess) ptrs_.push_back(p);
    *out = p;
    return e;
  }

 private:
  cudaMemPool_t pool_;
  cudaStream_t alloc_, free_;
  char* scratch_;
  uint64_t scratch_left_;
  std::vector<void*> ptrs_;
};

// A row-major rows×cols matrix on the device, its rows `ld` elements apart.
// The engine stores operands and D at a 128-byte pitch (K or N rounded up
// to 64, gemm::LinePitch), so that the TMA steps read and write them in
// place instead of making a padded copy, every row starting a line of L2:
// the host's dense rows are spread to that pitch by the copy engine on the
// way up (cudaMemcpy2D) and gathered on the way down, and server-generated
// inputs are born at it. Rows too long for one staging
// slot stay dense (the kernel library copies them if it must).
struct DeviceMatrix {
  __half* data = nullptr;
  int64_t rows = 0, cols = 0, ld = 0;
  // fp16 but for the forms' operands (cuda_forms.cpp), which are dense.
  uint32_t element_bytes = 2;
  uint64_t elements() const { return static_cast<uint64_t>(rows) * ld; }
  uint64_t row_bytes() const { return static_cast<uint64_t>(cols) * element_bytes; }
};

// The layout the engine stores a rows×cols matrix in (see DeviceMatrix).
DeviceMatrix Pitched(int64_t rows, int64_t cols, uint64_t slot_bytes);

// Step 0 with a cuBLAS plan (gemm/vendor_plan.h) runs a ragged K or N on
// the pitched operands as if K and N were rounded up to 8: the plan's
// picks come from a grid of multiples of 8 and cuBLAS refuses them for a
// ragged K or N, which would send the request to cublasGemmEx's first-use
// heuristic and kernel load. A's and B's gap columns up to K rounded up to
// 8, and B's rows up to N rounded up to 8, are zeros, so the extra products
// add exact zeros; D's extra columns are the engine's own padding (its
// pitch, rounded up to 64, is wider than N rounded up to 8).
// PaddedForVendor says whether a job's matrices can (pitched, and ragged),
// VendorB the B to allocate, ZeroVendorPadding writes the zeros, and
// VendorProblem is the padded problem.
bool PaddedForVendor(const DeviceMatrix& a, const DeviceMatrix& b, const DeviceMatrix& d);
DeviceMatrix VendorB(const DeviceMatrix& b);
// `zero_a`, `zero_b`: false for an operand whose padding is zero already
// (a cached copy, zeroed whole when it was filled).
cudaError_t ZeroVendorPadding(const DeviceMatrix& a, const DeviceMatrix& b, cudaStream_t stream, bool zero_a = true,
                              bool zero_b = true);
// The bytes of a device copy of a stored matrix laid out as `m`: its rows
// at m.ld, and rows up to a multiple of 8, so that the same copy serves as
// A, or as B with the vendor plan's padding rows (VendorB).
uint64_t CachedMatrixBytes(const DeviceMatrix& m);
gemm::Problem VendorProblem(const DeviceMatrix& a, const DeviceMatrix& b, __half* d, int64_t ldd);

// Step 0's reference into `check.d` on the lane's compute stream:
// `reference_step` (CudaEngine::VendorReferenceStep: a ladder step, never
// cuBLAS's own path) or, for kVendorStep, our SIMT kernel. Run and RunBatch
// both call it, so a batch is checked as a lone request is.
absl::Status LaunchVendorReference(CudaEngine::Device& dev, Lane& lane, int reference_step,
                                   const gemm::Problem& check);
// Its name in VerificationResult::reference.
std::string VendorReferenceName(int reference_step);

// Seconds from one recorded event to another on the device's clock (0 if
// either has not completed).
inline double SecondsBetween(cudaEvent_t from, cudaEvent_t to) {
  float ms = 0;
  return cudaEventElapsedTime(&ms, from, to) == cudaSuccess ? ms * 1e-3 : 0.0;
}

// A start and a stop event for each of `repeats` timed runs, made once
// and kept by the lane.
cudaError_t EnsureRepeatEvents(Lane& lane, uint32_t repeats);

// What the forms beyond fp16 A·Bᵀ add to a stored operand's cache key:
// their copies are dense where fp16's are pitched. A part of a key that is
// not a handle, so a delete still finds every copy of the handle.
inline constexpr char kDenseCopy[] = ",dense";

// The median of the lane's `repeats` timed runs (its start and stop
// events), once the stream has passed them.
cudaError_t MedianRepeatSeconds(const Lane& lane, uint32_t repeats, double* median);

// The lane's comparison result, read back into cmp_host, as a report of
// `elements` checked under `tolerance` against `reference`.
VerificationResult LaneVerification(const Lane& lane, uint64_t elements, const gemm::FormTolerance& tolerance,
                                    std::string reference);
// The same from any comparison result read back.
VerificationResult VerificationOf(const gemm::CompareResult& compared, uint64_t elements,
                                  const gemm::FormTolerance& tolerance, std::string reference);

// Whether `jobs` (two or more) can run as one batched matmul of the forms
// (CudaEngine::RunForms): single-entry step-0 requests of one form and
// shape beyond the plain one, whose comparison results fit `staging_bytes`.
bool FormsShareOneLaunch(const std::vector<const GemmJob*>& jobs, uint64_t staging_bytes);

// Host -> device through the lane's pinned staging, one slot per chunk, the
// slots in turn, the DMA on `stream`; `copier` moves each chunk into pinned
// memory on several threads. Whole rows per chunk, unless the matrix is
// dense (any bytes).
cudaError_t StagedUpload(Lane& lane, HostCopier& copier, const DeviceMatrix& dst, const HostBytes& src,
                         cudaStream_t stream);

// Device -> host the same way on the copy stream: chunk i copies while
// chunk i-1 is unpacked.
cudaError_t StagedDownload(Lane& lane, HostCopier& copier, void* dst, const DeviceMatrix& src);

// A matrix of at most one slot, queued down into the staging on `stream`
// (dense rows) without waiting; *staged is where it lands once the stream
// is done.
cudaError_t QueueSmallDownload(Lane& lane, const DeviceMatrix& src, cudaStream_t stream, const char** staged);

}  // namespace gemmd
