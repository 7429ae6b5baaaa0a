// Step 10 with the accumulate flag fault planted (planted_step.h says how).
#define GEMM_SM90_PLANTED_FAULT kAccumulateFlag
#define sm90 sm90_accumulate_flag_step10
#include "sm90/step10_two_consumers.cu"
#include "planted_step.h"

gemm::testing::PlantedStep PlantedAccumulateFlagStep10() { return {"accumulate flag", 10, gemm::sm90::PrepareTwoConsumers, gemm::sm90::LaunchTwoConsumers}; }
