// grpc.health.v1.Health/Check for tests, by a generic call with the messages encoded by hand
// (Debian does not install the health protos as C++).
#ifndef SKINNING_TESTS_SUPPORT_HEALTH_CHECK_H_
#define SKINNING_TESTS_SUPPORT_HEALTH_CHECK_H_

#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

namespace skinning::testing {

// Calls Check with an empty request (the whole server); on OK, *response_bytes holds the
// serialized HealthCheckResponse ("\x08\x01" = SERVING).
grpc::Status HealthCheck(const std::shared_ptr<grpc::Channel>& channel, std::string* response_bytes);

}  // namespace skinning::testing

#endif  // SKINNING_TESTS_SUPPORT_HEALTH_CHECK_H_
