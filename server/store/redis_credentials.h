// What the server sends Redis's AUTH on every new connection (Redis 6 ACL user and password, or
// the password alone of requirepass). Empty password: no AUTH.
#ifndef SKINNING_SERVER_STORE_REDIS_CREDENTIALS_H_
#define SKINNING_SERVER_STORE_REDIS_CREDENTIALS_H_

#include <string>

namespace skinning {

struct RedisCredentials {
  std::string user;      // empty: the default user (AUTH password)
  std::string password;  // empty: no AUTH
};

}  // namespace skinning

#endif  // SKINNING_SERVER_STORE_REDIS_CREDENTIALS_H_
