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
std::string LaunchWarpSpecialized(const Problem& p, const DeviceContext& ctx, cudaStream_t stream);  // step 7
std::string LaunchDeepPipeline(const Problem& p, const DeviceContext& ctx, cudaStream_t stream);     // step 8
std::string LaunchCtaPair(const Problem& p, const DeviceContext& ctx, cudaStream_t stream);          // step 9
std::string LaunchTwoConsumers(const Problem& p, const DeviceContext& ctx, cudaStream_t stream);     // step 10
cudaError_t PrepareSingleTile();
cudaError_t PrepareKLoop();
cudaError_t PrepareTiled();
cudaError_t PrepareTma();
cudaError_t PreparePipelined();
cudaError_t PreparePersistent();
cudaError_t PrepareWarpSpecialized();
cudaError_t PrepareDeepPipeline();
cudaError_t PrepareCtaPair();
cudaError_t PrepareTwoConsumers();

}  // namespace gemm::sm100
