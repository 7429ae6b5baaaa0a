#include "api/caller_identity.h"

#include <grpc/grpc_security_constants.h>
#include <grpcpp/security/auth_context.h>

namespace gemmd {

absl::StatusOr<Caller> CallerIdentity::Identify(const grpc::ServerContextBase& ctx) const {
  auto name = tokens_.Check(ctx);
  if (!name.ok()) return name.status();
  Caller caller;
  caller.identity = std::move(*name);
  if (caller.identity.empty()) {
    // Only a certificate the client CA verified reaches here under mTLS.
    const auto auth = ctx.auth_context();
    if (auth != nullptr) {
      const auto subject = auth->FindPropertyValues(GRPC_X509_SUBJECT_PROPERTY_NAME);
      if (!subject.empty()) caller.identity.assign(subject.front().data(), subject.front().size());
    }
  }
  caller.sees_all = operators_.count(caller.identity) > 0;
  return caller;
}

}  // namespace gemmd
