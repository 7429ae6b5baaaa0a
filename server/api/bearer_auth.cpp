#include "api/bearer_auth.h"

#include <fstream>
#include <set>
#include <sstream>
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

absl::StatusOr<std::string> BearerAuth::Check(const grpc::ServerContextBase& ctx) const {
  if (tokens_.empty()) return std::string();
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
  const std::string_view presented = value.substr(kScheme.size());
  const NamedToken* match = nullptr;
  for (const NamedToken& t : tokens_) {  // every token compared: the time says nothing of which matched
    if (SameSecret(presented, t.token)) match = &t;
  }
  if (match == nullptr) return absl::UnauthenticatedError("invalid bearer token");
  return match->name;
}

absl::Status ReadTokenFile(const std::string& path, std::vector<NamedToken>* tokens) {
  std::ifstream in(path);
  if (!in) return absl::InvalidArgumentError("cannot read the token file " + path);
  tokens->clear();
  std::set<std::string> seen_tokens, seen_names;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const absl::string_view text = absl::StripAsciiWhitespace(line);
    if (text.empty() || text.front() == '#') continue;
    std::istringstream fields{std::string(text)};
    NamedToken t;
    std::string extra;
    fields >> t.token >> t.name >> extra;
    const std::string where = "the token file " + path + ", line " + std::to_string(number);
    if (!extra.empty()) return absl::InvalidArgumentError(where + ": expected 'TOKEN' or 'TOKEN NAME'");
    if (t.name.empty()) t.name = kDefaultIdentity;
    if (!seen_tokens.insert(t.token).second) return absl::InvalidArgumentError(where + ": a token given twice");
    if (!seen_names.insert(t.name).second) {
      return absl::InvalidArgumentError(where + ": the name '" + t.name + "' is given twice");
    }
    tokens->push_back(std::move(t));
  }
  if (tokens->empty()) return absl::InvalidArgumentError("the token file " + path + " is empty");
  return absl::OkStatus();
}

}  // namespace gemmd
