// Test helpers for fresh memory faulted in ahead (hostmem/populate_pages.h):
// how many whole pages of a range are resident, by mincore, and whether
// this kernel has MADV_POPULATE_WRITE at all.
#pragma once

#include <sys/mman.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "hostmem/populate_pages.h"

namespace gemm::testing {

// Whole pages of [p, p + bytes) that are resident, and how many there are.
inline std::pair<size_t, size_t> ResidentPages(const void* p, size_t bytes) {
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + 4095) / 4096 * 4096;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + bytes) / 4096 * 4096;
  if (end <= begin) return {0, 0};
  std::vector<unsigned char> in((end - begin) / 4096);
  if (mincore(reinterpret_cast<void*>(begin), end - begin, in.data()) != 0) return {0, in.size()};
  size_t n = 0;
  for (unsigned char v : in) n += v & 1;
  return {n, in.size()};
}

inline bool KernelPopulates() {
  void* probe = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  const bool ok = gemm::hostmem::PopulatePages(probe, 4096) || errno != EINVAL;
  munmap(probe, 4096);
  return ok;
}

}  // namespace gemm::testing
