// TLS to Redis (managed Redis services ask for it: Azure Cache for Redis serves only TLS by
// default, ElastiCache and Memorystore with in-transit encryption). hiredis 0.14 has no TLS, so
// the pool (redis_pool.cc) lets hiredis connect the socket, runs TLS (OpenSSL) over it itself,
// and uses hiredis only to format commands and to parse replies.
#ifndef SKINNING_SERVER_STORE_REDIS_TLS_H_
#define SKINNING_SERVER_STORE_REDIS_TLS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;

namespace skinning {

// The server's flags --redis_tls_* (README "Shared store").
struct RedisTlsOptions {
  // PEM CA certificates that may sign Redis's certificate; empty = the system's trust store.
  std::string ca_file;
  // This server's certificate chain and private key (PEM), for a Redis that asks clients for one
  // (its tls-auth-clients, yes by default); both or neither.
  std::string cert_file;
  std::string key_file;
  // The name (DNS name or IP address) Redis's certificate must carry, also sent as SNI for a DNS
  // name; empty = the host of --redis.
  std::string server_name;
};

// The client side of TLS to one Redis: the files read once, shared by every connection.
class RedisTlsContext {
 public:
  // INVALID_ARGUMENT naming the flag and the file when a file cannot be read or holds no PEM
  // certificate or key, when the key does not belong to the certificate, or when only one of
  // cert_file and key_file is given.
  static absl::StatusOr<std::shared_ptr<const RedisTlsContext>> Create(const RedisTlsOptions& options);
  ~RedisTlsContext();
  RedisTlsContext(const RedisTlsContext&) = delete;
  RedisTlsContext& operator=(const RedisTlsContext&) = delete;

  // A TLS session over the connected socket `fd` (owned by the caller, which must keep it open
  // until SSL_free), handshaken, with Redis's certificate checked against the trusted CAs and the
  // name (options.server_name, else `host`). The socket's receive and send timeouts bound each
  // step. On failure: null and *error says why; *untrusted when Redis answered but the
  // handshake failed (a certificate not trusted or not for this name, a Redis not speaking TLS
  // there, or no client certificate when it asks for one): the operator's to mend, not a Redis
  // that is down.
  SSL* Handshake(int fd, const std::string& host, std::string* error, bool* untrusted) const;

 private:
  RedisTlsContext() = default;
  SSL_CTX* ctx_ = nullptr;
  std::string server_name_;
};

// Deletes an SSL session (after which the caller closes the socket).
struct SslDeleter {
  void operator()(SSL* ssl) const;
};
using SslPtr = std::unique_ptr<SSL, SslDeleter>;

// The last OpenSSL error of this thread as text ("" when none), and the queue cleared.
std::string TakeOpensslError();

}  // namespace skinning

#endif  // SKINNING_SERVER_STORE_REDIS_TLS_H_
