// Step 4 with the K16 advance fault planted (planted_step.h says how).
#define GEMM_SM90_PLANTED_FAULT kKAdvance
#define sm90 sm90_k_advance_step04
#include "sm90/step04_tma.cu"
#include "planted_step.h"

gemm::testing::PlantedStep PlantedKAdvanceStep4() { return {"K16 advance", 4, gemm::sm90::PrepareTma, gemm::sm90::LaunchTma}; }
