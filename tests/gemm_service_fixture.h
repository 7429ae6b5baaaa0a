// What the end-to-end tests of the service share (gemm_service_test.cpp,
// gemm_service_refusals_test.cpp, gemm_service_disruption_test.cpp):
// requests of each kind, the check of a refusal's code and message, and a
// fixture serving on a loopback port.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "server_fixture.h"
#include "test_util.h"

namespace gemmd::testing {

// Well formed, and never made by the server (its handles are random).
inline constexpr char kUnknownHandle[] = "m-00000000000000000000000000000000";

inline gemm::v1::MultiplyRequest InlineRequest(int64_t m, int64_t n, int64_t k, uint32_t seed) {
  gemm::v1::MultiplyRequest req;
  req.mutable_shape()->set_m(m);
  req.mutable_shape()->set_n(n);
  req.mutable_shape()->set_k(k);
  req.mutable_a()->set_data(RandomHalfBytes(m, k, seed));
  req.mutable_b()->set_data(RandomHalfBytes(n, k, seed + 1));
  req.set_output(gemm::v1::OUTPUT_INLINE);
  return req;
}

// A and B by handle, D stored to a handle.
inline gemm::v1::MultiplyRequest HandleRequest(int64_t m, int64_t n, int64_t k, const std::string& a, const std::string& b) {
  gemm::v1::MultiplyRequest req;
  req.mutable_shape()->set_m(m);
  req.mutable_shape()->set_n(n);
  req.mutable_shape()->set_k(k);
  req.mutable_a()->set_handle(a);
  req.mutable_b()->set_handle(b);
  req.set_output(gemm::v1::OUTPUT_HANDLE);
  return req;
}

// A and B from the same seed (they differ: the operand is part of the stream).
inline gemm::v1::MultiplyRequest RandomRequest(int64_t m, int64_t n, int64_t k, uint64_t seed) {
  return SeededRequest(m, n, k, seed, seed);
}

inline void ExpectError(const grpc::Status& st, grpc::StatusCode code, const std::string& text) {
  EXPECT_EQ(st.error_code(), code) << gemmc::CodeName(st.error_code()) << ": " << st.error_message();
  EXPECT_THAT(st.error_message(), ::testing::HasSubstr(text));
}

class GemmServiceTest : public ServerFixture {
 protected:
  void SetUp() override { StartServer(); }

  grpc::Status Send(const gemm::v1::MultiplyRequest& req, gemm::v1::MultiplyResponse* resp = nullptr) {
    gemm::v1::MultiplyResponse local;
    return client().Multiply(req, resp ? resp : &local);
  }
};

}  // namespace gemmd::testing
