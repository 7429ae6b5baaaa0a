#include "api/bearer_auth.h"

#include <fstream>
#include <string_view>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"

namespace gemmd {
namespace {

// Compares in time that depends on the lengths only, not on where the
// first difference is.
bool SameSecret(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

absl::Status BearerAuth::Check(const grpc::ServerContextBase& ctx) const {
  if (token_.empty()) return absl::OkStatus();
  const auto& md = ctx.client_metadata();
  const auto it = md.find("authorization");
  if (it == md.end()) {
    return absl::UnauthenticatedError("this server requires a bearer token: send metadata 'authorization: Bearer <token>'");
  }
  const std::string_view value(it->second.data(), it->second.size());
  constexpr std::string_view kScheme = "Bearer ";
  const std::string scheme(value.substr(0, kScheme.size()));
  if (!absl::EqualsIgnoreCase(scheme, kScheme.data())) {
    return absl::UnauthenticatedError("the authorization metadata must be 'Bearer <token>'");
  }
  if (!SameSecret(value.substr(kScheme.size()), token_)) return absl::UnauthenticatedError("invalid bearer token");
  return absl::OkStatus();
}

absl::Status ReadTokenFile(const std::string& path, std::string* token) {
  std::ifstream in(path);
  if (!in) return absl::InvalidArgumentError("cannot read the token file " + path);
  std::string line;
  std::getline(in, line);
  *token = std::string(absl::StripAsciiWhitespace(line));
  if (token->empty()) return absl::InvalidArgumentError("the token file " + path + " is empty");
  return absl::OkStatus();
}

}  // namespace gemmd
