// ListKernels' answer, built from the engine and the server's limits: each
// step with what it computes (its capabilities) and where it runs, the
// devices, and the limits a request meets. No gRPC call state: the service
// fills a response with it.
#pragma once

#include <cstdint>
#include <vector>

#include "api/request_validation.h"
#include "engine/engine.h"
#include "gemm/v1/gemm.pb.h"

namespace gemmd {

// The limits ListKernels reports beside the request limits.
struct ListedLimits {
  RequestLimits request;
  uint32_t queue_capacity = 0;
  uint64_t matrix_quota_bytes = 0;
  uint64_t max_matrices = 0;
};

// The types, layouts, C and batches `step` computes (gemm::FormsOf).
void DescribeCapabilities(int step, gemm::v1::StepCapabilities* caps);

// Every step, device and limit into `resp`.
void ListKernelsOf(const Engine& engine, const std::vector<DeviceDescription>& devices, const ListedLimits& limits,
                   gemm::v1::ListKernelsResponse* resp);

}  // namespace gemmd
