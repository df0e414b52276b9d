#include "server/grpc/tls.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"

namespace skinning {
namespace {

absl::StatusOr<std::string> ReadPem(const std::string& flag, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return absl::InvalidArgumentError(absl::StrCat("--", flag, ": cannot read '", path, "'"));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

struct BioDeleter {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Deleter {
  void operator()(X509* x) const { X509_free(x); }
};
struct KeyDeleter {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};

std::unique_ptr<BIO, BioDeleter> MemoryBio(const std::string& pem) {
  return std::unique_ptr<BIO, BioDeleter>(
      BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

std::unique_ptr<X509, X509Deleter> FirstCertificate(const std::string& pem) {
  auto bio = MemoryBio(pem);
  return std::unique_ptr<X509, X509Deleter>(
      PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> TlsServerCredentials(
    const std::string& cert_file, const std::string& key_file, const std::string& client_ca_file) {
  if (cert_file.empty() != key_file.empty())
    return absl::InvalidArgumentError("--tls_cert and --tls_key go together: give both or neither");
  if (cert_file.empty())
    return absl::InvalidArgumentError(
        "--tls_client_ca needs --tls_cert and --tls_key (the server's own certificate)");
  ASSIGN_OR_RETURN(const std::string cert, ReadPem("tls_cert", cert_file));
  ASSIGN_OR_RETURN(const std::string key, ReadPem("tls_key", key_file));
  auto x509 = FirstCertificate(cert);
  if (!x509)
    return absl::InvalidArgumentError(
        absl::StrCat("--tls_cert: '", cert_file, "' holds no PEM certificate"));
  auto key_bio = MemoryBio(key);
  std::unique_ptr<EVP_PKEY, KeyDeleter> pkey(
      PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
  if (!pkey)
    return absl::InvalidArgumentError(
        absl::StrCat("--tls_key: '", key_file, "' holds no unencrypted PEM private key"));
  if (X509_check_private_key(x509.get(), pkey.get()) != 1)
    return absl::InvalidArgumentError(
        absl::StrCat("--tls_key: '", key_file, "' is not the private key of the certificate in '",
                     cert_file, "'"));
  grpc::SslServerCredentialsOptions options(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  options.pem_key_cert_pairs.push_back({key, cert});
  if (!client_ca_file.empty()) {
    ASSIGN_OR_RETURN(const std::string ca, ReadPem("tls_client_ca", client_ca_file));
    if (!FirstCertificate(ca))
      return absl::InvalidArgumentError(
          absl::StrCat("--tls_client_ca: '", client_ca_file, "' holds no PEM certificate"));
    options.pem_root_certs = ca;
    options.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(options);
}

}  // namespace skinning
