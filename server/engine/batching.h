// Which Multiply requests may share one launch (the Dispatcher's batching):
// small step-0 GEMMs of one shape and one form (gemm::SameComputation: the
// types, layouts, alpha, beta and scales), which cuBLAS runs as one strided
// batched GEMM. A request that is a batch itself, or asks for the fast
// check (VERIFICATION_FAST), runs alone. The ladder's
// kernels take one problem each; benchmark timing and repeats time single
// launches: those requests always run alone.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>

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
  if (policy.max_batch < 2 || job.step != 0 || job.form.batch != 1 || job.repeats != 1 || job.benchmark ||
      job.verify_fast ||
      job.k > policy.max_k ||
      static_cast<double>(job.m) * job.n * job.k > policy.max_multiply_adds) {
    return 0;
  }
  auto mix = [](uint64_t x) {  // splitmix64's finalizer
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
  };
  auto bits = [](double v) {
    uint64_t b;
    std::memcpy(&b, &v, sizeof b);
    return b;
  };
  const gemm::GemmForm& f = job.form;
  uint64_t key = mix(mix(mix(static_cast<uint64_t>(job.m)) ^ static_cast<uint64_t>(job.n)) ^
                     static_cast<uint64_t>(job.k));
  if (!f.IsPlain()) {  // equal forms (SameComputation) give equal keys
    const uint64_t kinds = static_cast<uint64_t>(f.a) | static_cast<uint64_t>(f.b) << 8 |
                           static_cast<uint64_t>(f.d) << 16 | static_cast<uint64_t>(f.a_layout) << 24 |
                           static_cast<uint64_t>(f.b_layout) << 26 | uint64_t{f.allow_tf32} << 28 |
                           uint64_t{f.ReadsC()} << 29 | (f.ReadsC() ? static_cast<uint64_t>(f.c) << 32 : 0);
    key = mix(key ^ kinds);
    for (double v : {f.alpha, f.ReadsC() ? f.beta : 0.0, f.a_scale, f.b_scale}) key = mix(key ^ bits(v));
  }
  return key == 0 ? 1 : key;
}

}  // namespace gemmd
