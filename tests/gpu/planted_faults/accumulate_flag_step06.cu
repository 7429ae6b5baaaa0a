// Step 6 with the accumulate flag fault planted (planted_step.h says how).
#define GEMM_SM90_PLANTED_FAULT kAccumulateFlag
#define sm90 sm90_accumulate_flag_step06
#include "sm90/step06_persistent.cu"
#include "planted_step.h"

gemm::testing::PlantedStep PlantedAccumulateFlagStep6() { return {"accumulate flag", 6, gemm::sm90::PreparePersistent, gemm::sm90::LaunchPersistent}; }
