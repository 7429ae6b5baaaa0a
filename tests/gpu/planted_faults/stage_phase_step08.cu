// Step 8 with the stage phase fault planted (planted_step.h says how).
#define GEMM_SM90_PLANTED_FAULT kStagePhase
#define sm90 sm90_stage_phase_step08
#include "sm90/step08_deep_pipeline.cu"
#include "planted_step.h"

gemm::testing::PlantedStep PlantedStagePhaseStep8() { return {"stage phase", 8, gemm::sm90::PrepareDeepPipeline, gemm::sm90::LaunchDeepPipeline}; }
