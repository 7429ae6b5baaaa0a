// The optional bearer-token check of every gemm.v1 call. Health and
// reflection stay open: Kubernetes probes and load balancers send no token.
#pragma once

#include <grpcpp/server_context.h>

#include <string>

#include "absl/status/status.h"

namespace gemmd {

class BearerAuth {
 public:
  BearerAuth() = default;                 // no token configured: every call passes
  explicit BearerAuth(std::string token) : token_(std::move(token)) {}

  bool enabled() const { return !token_.empty(); }

  // OK, or UNAUTHENTICATED saying what is missing or wrong (never the token).
  absl::Status Check(const grpc::ServerContextBase& ctx) const;

 private:
  std::string token_;
};

// The token from a file's first line (surrounding whitespace dropped), as
// Kubernetes mounts a Secret; an error if the file is unreadable or empty.
absl::Status ReadTokenFile(const std::string& path, std::string* token);

}  // namespace gemmd
