// The Blackwell steps' entry points, one per file, listed in ladder_sm100.cpp.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "gemm/gemm.h"

namespace gemm::sm100 {

std::string LaunchSingleTile(const Problem& p, const DeviceContext& ctx, cudaStream_t stream);  // step 1
std::string LaunchKLoop(const Problem& p, const DeviceContext& ctx, cudaStream_t stream);       // step 2
std::string LaunchTiled(const Problem& p, const DeviceContext& ctx, cudaStream_t stream);       // step 3
std::string LaunchTma(const Problem& p, const DeviceContext& ctx, cudaStream_t stream);         // step 4
std::string LaunchPipelined(const Problem& p, const DeviceContext& ctx, cudaStream_t stream);   // step 5
std::string LaunchPersistent(const Problem& p, const DeviceContext& ctx, cudaStream_t stream);  // step 6
cudaError_t PrepareSingleTile();
cudaError_t PrepareKLoop();
cudaError_t PrepareTiled();
cudaError_t PrepareTma();
cudaError_t PreparePipelined();
cudaError_t PreparePersistent();

}  // namespace gemm::sm100
