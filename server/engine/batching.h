// Which Multiply requests may share one launch (the Dispatcher's batching):
// small step-0 GEMMs of one shape, which cuBLAS runs as one strided batched
// GEMM, in gemmd's original fp16 form (a request with its own batch, type or
// C runs alone). The ladder's kernels take one problem each; benchmark timing and
// repeats time single launches: those requests always run alone.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

#include "engine/engine.h"

namespace gemmd {

struct BatchPolicy {
  size_t max_batch = 1;                         // 1: no batching
  std::chrono::microseconds window{0};          // how long a worker waits to fill a batch
  double max_multiply_adds = double(1 << 27);   // m·n·k of a "small" GEMM: 512^3
  // Longer sums run alone: a batch's check leaves out the verification
  // bound's K-aware term (gemm/tolerance.h), which grows with √K.
  int64_t max_k = 4096;
};

// The dispatcher's batch key of `job`: equal for requests that may run
// together, 0 for one that runs alone. Different shapes can share a key
// (it is a hash); an engine checks the shapes before it batches.
inline uint64_t BatchKey(const GemmJob& job, const BatchPolicy& policy) {
  if (policy.max_batch < 2 || job.step != 0 || !job.form.IsPlain() || job.repeats != 1 || job.benchmark ||
      job.k > policy.max_k ||
      static_cast<double>(job.m) * job.n * job.k > policy.max_multiply_adds) {
    return 0;
  }
  auto mix = [](uint64_t x) {  // splitmix64's finalizer
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
  };
  const uint64_t key = mix(mix(mix(static_cast<uint64_t>(job.m)) ^ static_cast<uint64_t>(job.n)) ^
                           static_cast<uint64_t>(job.k));
  return key == 0 ? 1 : key;
}

}  // namespace gemmd
