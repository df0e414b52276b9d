#include "server/store/redis_tls.h"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"

namespace skinning {
namespace {

// INVALID_ARGUMENT naming the flag unless `file` can be opened for reading.
absl::Status CheckReadable(const char* flag, const std::string& file) {
  if (std::ifstream(file)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("--", flag, ": cannot open ", file, ": ", strerror(errno)));
}

bool IsIpAddress(const std::string& name) {
  unsigned char address[16];
  return inet_pton(AF_INET, name.c_str(), address) == 1 || inet_pton(AF_INET6, name.c_str(), address) == 1;
}

}  // namespace

std::string TakeOpensslError() {
  const unsigned long first = ERR_get_error();
  ERR_clear_error();
  if (first == 0) return "";
  if (const char* reason = ERR_reason_error_string(first)) return reason;
  char text[256];
  ERR_error_string_n(first, text, sizeof text);
  return text;
}

void SslDeleter::operator()(SSL* ssl) const { SSL_free(ssl); }

absl::StatusOr<std::shared_ptr<const RedisTlsContext>> RedisTlsContext::Create(const RedisTlsOptions& options) {
  if (options.cert_file.empty() != options.key_file.empty())
    return absl::InvalidArgumentError(
        "--redis_tls_cert_file and --redis_tls_key_file go together (this server's certificate for Redis and its "
        "key), but only one is given");
  std::shared_ptr<RedisTlsContext> tls(new RedisTlsContext());
  tls->server_name_ = options.server_name;
  ERR_clear_error();
  SSL_CTX* ctx = tls->ctx_ = SSL_CTX_new(TLS_client_method());
  if (ctx == nullptr) return absl::InternalError(absl::StrCat("cannot make a TLS context: ", TakeOpensslError()));
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  // An encrypted key file fails to load instead of asking for a passphrase on the terminal.
  SSL_CTX_set_default_passwd_cb(ctx, [](char*, int, int, void*) { return 0; });
  if (options.ca_file.empty()) {
    if (SSL_CTX_set_default_verify_paths(ctx) != 1)
      return absl::InternalError(absl::StrCat("cannot load the system's trusted certificates: ", TakeOpensslError()));
  } else if (absl::Status readable = CheckReadable("redis_tls_ca_file", options.ca_file); !readable.ok()) {
    return readable;
  } else if (SSL_CTX_load_verify_locations(ctx, options.ca_file.c_str(), nullptr) != 1) {
    return absl::InvalidArgumentError(absl::StrCat("--redis_tls_ca_file: cannot read ", options.ca_file,
                                                   " as PEM CA certificates: ", TakeOpensslError()));
  }
  if (!options.cert_file.empty()) {
    RETURN_IF_ERROR(CheckReadable("redis_tls_cert_file", options.cert_file));
    RETURN_IF_ERROR(CheckReadable("redis_tls_key_file", options.key_file));
    if (SSL_CTX_use_certificate_chain_file(ctx, options.cert_file.c_str()) != 1)
      return absl::InvalidArgumentError(absl::StrCat("--redis_tls_cert_file: cannot read ", options.cert_file,
                                                     " as a PEM certificate chain: ", TakeOpensslError()));
    // Loading the key checks it against the certificate already.
    const bool loaded = SSL_CTX_use_PrivateKey_file(ctx, options.key_file.c_str(), SSL_FILETYPE_PEM) == 1;
    const std::string why = loaded ? "" : TakeOpensslError();
    if (!loaded && !absl::StrContains(why, "mismatch"))
      return absl::InvalidArgumentError(absl::StrCat("--redis_tls_key_file: cannot read ", options.key_file,
                                                     " as an unencrypted PEM private key: ", why));
    if (!loaded || SSL_CTX_check_private_key(ctx) != 1)
      return absl::InvalidArgumentError(absl::StrCat("--redis_tls_key_file: the key in ", options.key_file,
                                                     " does not belong to the certificate in ", options.cert_file));
  }
  return tls;
}

RedisTlsContext::~RedisTlsContext() { SSL_CTX_free(ctx_); }

SSL* RedisTlsContext::Handshake(int fd, const std::string& host, std::string* error, bool* untrusted) const {
  *untrusted = false;
  ERR_clear_error();
  SslPtr ssl(SSL_new(ctx_));
  if (ssl == nullptr || SSL_set_fd(ssl.get(), fd) != 1) {
    *error = absl::StrCat("cannot start TLS: ", TakeOpensslError());
    return nullptr;
  }
  const std::string& name = server_name_.empty() ? host : server_name_;
  if (IsIpAddress(name)) {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl.get()), name.c_str());
  } else {
    SSL_set_tlsext_host_name(ssl.get(), name.c_str());
    SSL_set1_host(ssl.get(), name.c_str());
  }
  errno = 0;
  const int r = SSL_connect(ssl.get());
  if (r == 1) return ssl.release();
  const int saved_errno = errno;
  const int kind = SSL_get_error(ssl.get(), r);
  const long verified = SSL_get_verify_result(ssl.get());
  const std::string reason = TakeOpensslError();
  if (verified != X509_V_OK) {
    *untrusted = true;
    *error = absl::StrCat("its TLS certificate is not trusted: ", X509_verify_cert_error_string(verified));
    if (verified == X509_V_ERR_HOSTNAME_MISMATCH || verified == X509_V_ERR_IP_ADDRESS_MISMATCH)
      absl::StrAppend(error, " (it is not for '", name, "'; see --redis_tls_server_name)");
    else
      absl::StrAppend(error, " (see --redis_tls_ca_file)");
  } else if (kind == SSL_ERROR_WANT_READ || kind == SSL_ERROR_WANT_WRITE ||
             (kind == SSL_ERROR_SYSCALL && (saved_errno == EAGAIN || saved_errno == EWOULDBLOCK))) {
    *error = "no answer to the TLS handshake in time (is it Redis's TLS port?)";
  } else if (kind == SSL_ERROR_SSL) {
    *untrusted = true;
    *error = absl::StrCat("the TLS handshake failed: ", reason.empty() ? "protocol error" : reason,
                          " (is it Redis's TLS port?)");
  } else {
    *error = saved_errno != 0 ? absl::StrCat("the connection failed during the TLS handshake: ", strerror(saved_errno))
                              : "Redis closed the connection during the TLS handshake";
  }
  return nullptr;
}

}  // namespace skinning
