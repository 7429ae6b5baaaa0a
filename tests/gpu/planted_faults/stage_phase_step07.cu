// Step 7 with the stage phase fault planted (planted_step.h says how).
#define GEMM_SM90_PLANTED_FAULT kStagePhase
#define sm90 sm90_stage_phase_step07
#include "sm90/step07_warp_specialized.cu"
#include "planted_step.h"

gemm::testing::PlantedStep PlantedStagePhaseStep7() { return {"stage phase", 7, gemm::sm90::PrepareWarpSpecialized2, gemm::sm90::LaunchWarpSpecialized2}; }
