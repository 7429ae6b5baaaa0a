// Step 10 with the K16 advance fault planted (planted_step.h says how).
#define GEMM_SM90_PLANTED_FAULT kKAdvance
#define sm90 sm90_k_advance_step10
#include "sm90/step10_two_consumers.cu"
#include "planted_step.h"

gemm::testing::PlantedStep PlantedKAdvanceStep10() { return {"K16 advance", 10, gemm::sm90::PrepareTwoConsumers, gemm::sm90::LaunchTwoConsumers}; }
