// Thread-block clusters (sm_90 and sm_100 alike): CTAs of one cluster run at the same time on
// one GPC and can reach each other's shared memory, so a pair can share an
// operand tile that the TMA fetches once and multicasts to both.
#pragma once

#include <cuda/ptx>

#include <cstdint>

namespace gemm::common {

__device__ inline uint32_t ClusterRank() { return cuda::ptx::get_sreg_cluster_ctarank(); }

// Every thread of every CTA in the cluster: orders the barriers' init before
// peers use them. (Steps 9-10 need none at exit, ClusterPairTiles::Produce.)
__device__ inline void ClusterSync() {
  cuda::ptx::barrier_cluster_arrive(cuda::ptx::sem_release);
  cuda::ptx::barrier_cluster_wait(cuda::ptx::sem_acquire);
}

// One arrival on the mbarrier at `bar`'s offset in the shared memory of the
// cluster's CTA `rank` (this CTA's own included). Relaxed: the arriving
// consumer has already waited for its wgmma to finish reading the stage, so
// nothing else needs ordering, and a release at cluster scope costs a
// cluster-wide fence on every k-tile (measured on H100: steps 9 and 10 ran
// at a third of their speed with it).
__device__ inline void ArriveInCta(uint64_t* bar, uint32_t rank) {
  auto* remote = static_cast<uint64_t*>(__cluster_map_shared_rank(bar, rank));
  cuda::ptx::mbarrier_arrive(cuda::ptx::sem_relaxed, cuda::ptx::scope_cluster, cuda::ptx::space_cluster, remote);
}

// The same arrival with release semantics at cluster scope: for a thread
// whose earlier work (a TMEM read, on sm_100a) the waiter in the other CTA
// must see finished. Used once per tile, where the fence costs nothing.
__device__ inline void ArriveInCtaReleased(uint64_t* bar, uint32_t rank) {
  auto* remote = static_cast<uint64_t*>(__cluster_map_shared_rank(bar, rank));
  cuda::ptx::mbarrier_arrive(cuda::ptx::sem_release, cuda::ptx::scope_cluster, cuda::ptx::space_cluster, remote);
}

}  // namespace gemm::common
