// Who a gemm.v1 call comes from, which decides whose stored matrices it
// sees: the bearer token's name; else, under mutual TLS, the client
// certificate's subject; else nobody in particular ("": a server without
// client authentication has one tenant). Operators see every matrix.
#pragma once

#include <grpcpp/server_context.h>

#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "api/bearer_auth.h"
#include "engine/matrix_store.h"

namespace gemmd {

class CallerIdentity {
 public:
  CallerIdentity() = default;
  CallerIdentity(BearerAuth tokens, std::vector<std::string> operators)
      : tokens_(std::move(tokens)), operators_(operators.begin(), operators.end()) {}

  // UNAUTHENTICATED when a token is required and missing or wrong.
  absl::StatusOr<Caller> Identify(const grpc::ServerContextBase& ctx) const;

 private:
  BearerAuth tokens_;
  std::set<std::string> operators_;
};

}  // namespace gemmd
