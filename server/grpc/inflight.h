// Counts the calls in flight (every service, health checks included) with a server interceptor,
// so a graceful shutdown can end as soon as nothing is left instead of always waiting for the
// whole drain deadline (gRPC's Shutdown(deadline) waits for it while any client is connected).
#ifndef SKINNING_SERVER_GRPC_INFLIGHT_H_
#define SKINNING_SERVER_GRPC_INFLIGHT_H_

#include <atomic>
#include <memory>

#include <grpcpp/support/server_interceptor.h>

namespace skinning {

class InflightCalls {
 public:
  int count() const { return count_.load(); }
  // An interceptor factory whose interceptors live exactly as long as their call.
  std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> NewInterceptorFactory();

 private:
  friend class InflightInterceptor;
  std::atomic<int> count_{0};
};

}  // namespace skinning

#endif  // SKINNING_SERVER_GRPC_INFLIGHT_H_
