// Step 9 with the pair loads fault planted (planted_step.h says how).
#define GEMM_SM90_PLANTED_FAULT kPairLoads
#define sm90 sm90_pair_loads_step09
#include "sm90/step09_cluster_multicast.cu"
#include "planted_step.h"

gemm::testing::PlantedStep PlantedPairLoadsStep9() { return {"pair loads", 9, gemm::sm90::PrepareClusterMulticast, gemm::sm90::LaunchClusterMulticast}; }
