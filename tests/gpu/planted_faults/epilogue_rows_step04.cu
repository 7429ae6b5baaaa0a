// Step 4 with the epilogue rows fault planted (planted_step.h says how).
#define GEMM_SM90_PLANTED_FAULT kEpilogueRows
#define sm90 sm90_epilogue_rows_step04
#include "sm90/step04_tma.cu"
#include "planted_step.h"

gemm::testing::PlantedStep PlantedEpilogueRowsStep4() { return {"epilogue rows", 4, gemm::sm90::PrepareTma, gemm::sm90::LaunchTma}; }
