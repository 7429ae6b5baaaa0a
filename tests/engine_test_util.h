// GemmJobs for the engine tests (CPU and CUDA alike).
#pragma once

#include <string>

#include "engine/engine.h"

namespace gemmd::testing {

// A job on server-generated inputs from `seed`, D not returned.
inline GemmJob SeededJob(int64_t m, int64_t n, int64_t k, uint64_t seed) {
  GemmJob job;
  job.m = m;
  job.n = n;
  job.k = k;
  job.a = {OperandView::Kind::kRandom, {}, seed};
  job.b = {OperandView::Kind::kRandom, {}, seed};
  return job;
}

// A job on host fp16 bytes (a: m·k, b: n·k), D written into `d` (m·n·2 bytes).
inline GemmJob HostJob(int64_t m, int64_t n, int64_t k, const std::string& a, const std::string& b, std::string& d) {
  GemmJob job;
  job.m = m;
  job.n = n;
  job.k = k;
  job.a = {OperandView::Kind::kHost, HostBytes(a.data(), a.size()), 0};
  job.b = {OperandView::Kind::kHost, HostBytes(b.data(), b.size()), 0};
  job.d = reinterpret_cast<uint16_t*>(d.data());
  return job;
}

}  // namespace gemmd::testing
