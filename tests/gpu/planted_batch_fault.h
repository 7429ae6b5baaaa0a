// A batch run with step 0 planted to sum only half of K: every job that
// asked for verification must fail it, each on its own.
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "engine/engine.h"
#include "gemm/test_hooks.h"

namespace gemmd::testing {

inline void ExpectAPlantedFaultFailsEveryVerifiedJob(Engine& engine, const std::vector<const GemmJob*>& batch) {
  gemm::testing::PlantVendorFault(true);
  auto faulty = engine.RunBatch(0, batch);
  gemm::testing::PlantVendorFault(false);
  ASSERT_EQ(faulty.size(), batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    ASSERT_TRUE(faulty[i].ok()) << faulty[i].status();
    if (batch[i]->verify) EXPECT_FALSE(faulty[i]->verification.passed) << i;
  }
}

}  // namespace gemmd::testing
