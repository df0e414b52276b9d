// How the server is let in by Redis: TLS when Redis asks for it (the connection's security, set up
// before anything is sent), then AUTH on every new connection (Redis 6 ACL user and password, or
// the password alone of requirepass).
#ifndef SKINNING_SERVER_STORE_REDIS_CREDENTIALS_H_
#define SKINNING_SERVER_STORE_REDIS_CREDENTIALS_H_

#include <memory>
#include <string>

namespace skinning {

class RedisTlsContext;  // server/store/redis_tls.h

struct RedisCredentials {
  std::string user;      // empty: the default user (AUTH password)
  std::string password;  // empty: no AUTH
  // TLS to Redis (--redis_tls); null: plain TCP.
  std::shared_ptr<const RedisTlsContext> tls;
};

}  // namespace skinning

#endif  // SKINNING_SERVER_STORE_REDIS_CREDENTIALS_H_
