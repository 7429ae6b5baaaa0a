// Faults a test can plant in the kernel library, to prove that a check
// downstream catches them. Never set outside tests.
#pragma once

namespace gemm::testing {

// While on, step 0 (cuBLAS) multiplies over the first half of K only: a
// wrong result that a comparison with cuBLAS itself could never catch.
void PlantVendorFault(bool on);

}  // namespace gemm::testing
