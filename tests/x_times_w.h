// The example request through a real server, on any engine:
// y = x @ W + 0.5·r in bf16, W stored K×N, uploaded once by handle and
// shared by a batch, x and r inline; y checked against an fp64 product
// computed here, not by gemmd's verification.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "form_cases.h"
#include "gemm_client.h"

namespace gemmd::testing {

struct XTimesW {
  int64_t batch, m, n, k;
  std::string x, w, r;  // bf16 bytes
  XTimesW(int64_t batch, int64_t m, int64_t n, int64_t k, uint32_t seed = 1)
      : batch(batch), m(m), n(n), k(k),
        x(RandomBytes(gemm::ElementType::kBF16, batch * m * k, seed)),
        w(RandomBytes(gemm::ElementType::kBF16, k * n, seed + 1)),
        r(RandomBytes(gemm::ElementType::kBF16, batch * m * n, seed + 2)) {}

  // Uploads W and returns the request that multiplies by it.
  gemm::v1::MultiplyRequest Request(gemmc::GemmClient& client) const {
    gemm::v1::MatrixHeader header;
    header.set_rows(k);
    header.set_cols(n);
    header.set_type(gemm::v1::BF16);
    gemm::v1::MatrixInfo w_info;
    EXPECT_TRUE(client.Upload(header, w, &w_info).ok());
    EXPECT_EQ(w_info.type(), gemm::v1::BF16);
    EXPECT_EQ(w_info.bytes(), w.size());
    gemm::v1::MultiplyRequest req;
    req.mutable_shape()->set_m(m);
    req.mutable_shape()->set_n(n);
    req.mutable_shape()->set_k(k);
    req.set_a_type(gemm::v1::BF16);
    req.set_b_type(gemm::v1::BF16);
    req.set_b_layout(gemm::v1::LAYOUT_MN_CONTIGUOUS);
    req.mutable_a()->set_data(x);
    req.mutable_b()->set_handle(w_info.handle());
    req.set_beta(0.5);
    req.mutable_c()->set_data(r);
    req.mutable_batch()->set_count(static_cast<uint32_t>(batch));
    req.mutable_batch()->set_stride_b(0);
    req.set_output(gemm::v1::OUTPUT_INLINE);
    return req;
  }

  // Elements of y (every `row_step`-th row) off by more than bf16's
  // rounding of D (2^-8 relative) and fp32 sums of k terms allow.
  int Mismatches(const std::string& y, int64_t row_step = 1) const {
    const gemm::ElementType bf16 = gemm::ElementType::kBF16;
    int wrong = 0;
    for (int64_t e = 0; e < batch; ++e) {
      for (int64_t i = 0; i < m; i += row_step) {
        for (int64_t j = 0; j < n; ++j) {
          double want = 0, magnitude = 0;
          for (int64_t kk = 0; kk < k; ++kk) {
            const double p = double{gemm::LoadElement(bf16, x.data(), (e * m + i) * k + kk)} *
                             gemm::LoadElement(bf16, w.data(), kk * n + j);
            want += p;
            magnitude += std::fabs(p);
          }
          const double c = gemm::LoadElement(bf16, r.data(), (e * m + i) * n + j);
          want += 0.5 * c;
          const double got = gemm::LoadElement(bf16, y.data(), (e * m + i) * n + j);
          if (std::fabs(got - want) > 0x1p-8 * std::fabs(want) + (k + 8) * 0x1p-23 * (magnitude + std::fabs(c))) {
            ++wrong;
          }
        }
      }
    }
    return wrong;
  }
};

}  // namespace gemmd::testing
