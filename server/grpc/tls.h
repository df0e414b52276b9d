// TLS server credentials from PEM files, checked before gRPC sees them so that a bad file gives
// a message naming it (gRPC itself would only fail to listen).
#ifndef SKINNING_SERVER_GRPC_TLS_H_
#define SKINNING_SERVER_GRPC_TLS_H_

#include <memory>
#include <string>

#include <grpcpp/security/server_credentials.h>

#include "absl/status/statusor.h"

namespace skinning {

// TLS with the certificate chain in `cert_file` and its private key in `key_file` (PEM). With
// `client_ca_file` (PEM, one or more CA certificates) clients must present a certificate that
// chains to one of them (GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY); empty =
// no client certificates asked for. INVALID_ARGUMENT naming the flag and file when a file
// cannot be read, holds no PEM certificate/key, or the key does not belong to the certificate.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> TlsServerCredentials(
    const std::string& cert_file, const std::string& key_file, const std::string& client_ca_file);

}  // namespace skinning

#endif  // SKINNING_SERVER_GRPC_TLS_H_
