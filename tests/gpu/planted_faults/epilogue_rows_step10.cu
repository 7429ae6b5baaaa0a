// Step 10 with the epilogue rows fault planted (planted_step.h says how).
#define GEMM_SM90_PLANTED_FAULT kEpilogueRows
#define sm90 sm90_epilogue_rows_step10
#include "sm90/step10_two_consumers.cu"
#include "planted_step.h"

gemm::testing::PlantedStep PlantedEpilogueRowsStep10() { return {"epilogue rows", 10, gemm::sm90::PrepareTwoConsumers, gemm::sm90::LaunchTwoConsumers}; }
