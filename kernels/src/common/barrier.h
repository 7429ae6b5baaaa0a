// mbarriers in shared memory, through CCCL's <cuda/ptx> (the same hardware
// on sm_90a and sm_100a; tcgen05.commit arrives on them too): an arrival count
// plus expected transaction bytes; the phase bit flips when both reach zero,
// so one barrier serves every round of a loop (wait on the round's parity).
#pragma once

#include <cuda/ptx>

#include <cstdint>

namespace gemm::common {

__device__ inline void BarrierInit(uint64_t* bar, uint32_t arrivals) { cuda::ptx::mbarrier_init(bar, arrivals); }

// After initialising barriers, before any other thread or the TMA uses them.
__device__ inline void FenceBarrierInit() {
  cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
}

// One arrival that also tells the barrier how many bytes the TMA will land.
__device__ inline void ArriveExpectTx(uint64_t* bar, uint32_t bytes) {
  cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared, bar,
                                       bytes);
}

__device__ inline void Arrive(uint64_t* bar) { (void)cuda::ptx::mbarrier_arrive(bar); }

__device__ inline void Wait(uint64_t* bar, uint32_t parity) {
  while (!cuda::ptx::mbarrier_try_wait_parity(bar, parity)) {
  }
}

}  // namespace gemm::common
