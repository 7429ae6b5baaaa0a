// The optional bearer-token check of every gemm.v1 call. Health and
// reflection stay open: Kubernetes probes and load balancers send no token.
// Each token names an identity, which owns the matrices it stores.
#pragma once

#include <grpcpp/server_context.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gemmd {

struct NamedToken {
  std::string token;
  std::string name;  // the identity calls with this token act as
};

// The identity of a token given without a name (GEMMD_AUTH_TOKEN, or a
// token file's line with a token alone).
inline constexpr const char* kDefaultIdentity = "default";

class BearerAuth {
 public:
  BearerAuth() = default;  // no token configured: every call passes
  explicit BearerAuth(std::vector<NamedToken> tokens) : tokens_(std::move(tokens)) {}

  bool enabled() const { return !tokens_.empty(); }

  // The name of the call's token ("" when no token is configured), or
  // UNAUTHENTICATED saying what is missing or wrong (never a token).
  absl::StatusOr<std::string> Check(const grpc::ServerContextBase& ctx) const;

 private:
  std::vector<NamedToken> tokens_;
};

// A token file, as Kubernetes mounts a Secret: one token a line, "TOKEN" or
// "TOKEN NAME" (a token alone is kDefaultIdentity); blank lines and lines
// starting with '#' are skipped. An error if the file is unreadable, holds
// no token, repeats a token or a name, or has a line of more than two fields.
absl::Status ReadTokenFile(const std::string& path, std::vector<NamedToken>* tokens);

}  // namespace gemmd
