#include "server/auth/auth.h"

#include <openssl/sha.h>

#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace skinning {
namespace {

std::string Digest(absl::string_view token) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), digest);
  return std::string(reinterpret_cast<const char*>(digest), sizeof digest);
}

bool IsTokenChar(char c) { return c > ' ' && c < 0x7f; }

}  // namespace

absl::Status CheckTenantName(const std::string& tenant) {
  bool ok = !tenant.empty() && tenant.size() <= 64 && tenant.front() != '.';
  for (char c : tenant)
    ok = ok &&
         (absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-');
  if (!ok)
    return absl::InvalidArgumentError(absl::StrCat(
        "tenant '", tenant.substr(0, 80),
        "' is not a tenant name (1 to 64 of A-Z a-z 0-9 _ . -, not starting with a dot)"));
  return absl::OkStatus();
}

const Authenticator& Authenticator::Off() {
  static const Authenticator* off = new Authenticator();
  return *off;
}

absl::StatusOr<std::unique_ptr<Authenticator>> Authenticator::FromText(const std::string& text,
                                                                       const std::string& source) {
  auto auth = std::make_unique<Authenticator>();
  auth->enabled_ = true;
  absl::flat_hash_set<std::string> tenants;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    const std::string where = absl::StrFormat("%s:%d", source, line_number);
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line.front() == '#') continue;
    std::vector<std::string> fields =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (fields.size() != 2)
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: expected 'TOKEN TENANT', found %d fields", where, fields.size()));
    const std::string& token = fields[0];
    const std::string& tenant = fields[1];
    for (char c : token)
      if (!IsTokenChar(c))
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": the token has a character that is not printable ASCII"));
    if (auto s = CheckTenantName(tenant); !s.ok())
      return absl::InvalidArgumentError(absl::StrCat(where, ": ", s.message()));
    if (!auth->tenant_of_digest_.emplace(Digest(token), tenant).second)
      return absl::InvalidArgumentError(absl::StrCat(where, ": this token is listed twice"));
    tenants.insert(tenant);
  }
  if (auth->tenant_of_digest_.empty())
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": no tokens (expected lines 'TOKEN TENANT')"));
  auth->tenant_count_ = static_cast<int>(tenants.size());
  return auth;
}

absl::StatusOr<std::string> Authenticator::Authenticate(std::optional<absl::string_view> authorization) const {
  if (!enabled_) return std::string();
  if (!authorization.has_value())
    return absl::UnauthenticatedError("missing bearer token (authorization metadata)");
  const absl::string_view value = *authorization;
  const size_t scheme_length = sizeof(kBearerScheme) - 1;
  if (value.size() <= scheme_length + 1 ||
      !absl::EqualsIgnoreCase(value.substr(0, scheme_length), kBearerScheme) ||
      value[scheme_length] != ' ')
    return absl::UnauthenticatedError("authorization metadata is not 'Bearer TOKEN'");
  const absl::string_view token = absl::StripAsciiWhitespace(value.substr(scheme_length + 1));
  auto found = tenant_of_digest_.find(Digest(token));
  if (found == tenant_of_digest_.end()) return absl::UnauthenticatedError("unknown bearer token");
  return found->second;
}

}  // namespace skinning
