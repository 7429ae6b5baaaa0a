// Step 10 with the pair loads fault planted (planted_step.h says how).
#define GEMM_SM90_PLANTED_FAULT kPairLoads
#define sm90 sm90_pair_loads_step10
#include "sm90/step10_two_consumers.cu"
#include "planted_step.h"

gemm::testing::PlantedStep PlantedPairLoadsStep10() { return {"pair loads", 10, gemm::sm90::PrepareTwoConsumers, gemm::sm90::LaunchTwoConsumers}; }
