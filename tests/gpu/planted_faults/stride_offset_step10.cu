// Step 10 with the stride byte offset fault planted (planted_step.h says how).
#define GEMM_SM90_PLANTED_FAULT kStrideOffset
#define sm90 sm90_stride_offset_step10
#include "sm90/step10_two_consumers.cu"
#include "planted_step.h"

gemm::testing::PlantedStep PlantedStrideOffsetStep10() { return {"stride byte offset", 10, gemm::sm90::PrepareTwoConsumers, gemm::sm90::LaunchTwoConsumers}; }
