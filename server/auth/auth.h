// Bearer-token authentication: a token file maps tokens to tenants; every call of the skinning
// services carries `authorization: Bearer TOKEN` (gRPC metadata, or an HTTP header) and runs as
// that token's tenant. Knows nothing of the transport.
#ifndef SKINNING_SERVER_AUTH_AUTH_H_
#define SKINNING_SERVER_AUTH_AUTH_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace skinning {

// The metadata key (gRPC lower-cases keys) and scheme of the bearer token.
inline constexpr char kAuthorizationMetadata[] = "authorization";
inline constexpr char kBearerScheme[] = "Bearer";

// Whether `tenant` is a valid tenant name: [A-Za-z0-9_.-]+, at most 64 characters, not starting
// with a dot (the name is a store key component, so "." and ".." must not be names).
absl::Status CheckTenantName(const std::string& tenant);

class Authenticator {
 public:
  // Authentication off: every call is accepted as the tenant "" (which sees every rig).
  Authenticator() = default;
  // A shared instance with authentication off.
  static const Authenticator& Off();

  // Parses a token file. One token per line: `TOKEN TENANT` separated by spaces or tabs; `#`
  // starts a comment line; blank lines are ignored. A token is printable ASCII without spaces
  // (it travels as gRPC metadata); a tenant name follows CheckTenantName. A token listed twice,
  // a line with other than two fields, or a file without tokens is an error naming `source`
  // and the line: "tokens.txt:3: expected 'TOKEN TENANT', found 3 fields".
  static absl::StatusOr<std::unique_ptr<Authenticator>> FromText(const std::string& text,
                                                                 const std::string& source);

  bool enabled() const { return enabled_; }
  // Number of distinct tenants in the token file.
  int tenant_count() const { return tenant_count_; }

  // The caller's tenant from the value of its `authorization` header (nullopt: none sent). With
  // authentication off, "". Otherwise it must be `Bearer TOKEN` (scheme case-insensitive) with a
  // listed token, else UNAUTHENTICATED: "missing bearer token (authorization metadata)",
  // "unknown bearer token", or a malformed header. Tokens are held as SHA-256 digests; lookups
  // compare digests, not the tokens.
  absl::StatusOr<std::string> Authenticate(std::optional<absl::string_view> authorization) const;

 private:
  bool enabled_ = false;
  int tenant_count_ = 0;
  absl::flat_hash_map<std::string, std::string> tenant_of_digest_;  // SHA-256(token) → tenant
};

}  // namespace skinning

#endif  // SKINNING_SERVER_AUTH_AUTH_H_
