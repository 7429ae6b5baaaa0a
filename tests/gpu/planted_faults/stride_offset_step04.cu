// Step 4 with the stride byte offset fault planted (planted_step.h says how).
#define GEMM_SM90_PLANTED_FAULT kStrideOffset
#define sm90 sm90_stride_offset_step04
#include "sm90/step04_tma.cu"
#include "planted_step.h"

gemm::testing::PlantedStep PlantedStrideOffsetStep4() { return {"stride byte offset", 4, gemm::sm90::PrepareTma, gemm::sm90::LaunchTma}; }
