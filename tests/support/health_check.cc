#include "tests/support/health_check.h"

#include <chrono>
#include <future>
#include <vector>

#include <grpcpp/generic/generic_stub.h>

namespace skinning::testing {

grpc::Status HealthCheck(const std::shared_ptr<grpc::Channel>& channel,
                         std::string* response_bytes) {
  grpc::GenericStub stub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::Slice empty("", 0);
  grpc::ByteBuffer request(&empty, 1), response;
  std::promise<grpc::Status> done;
  stub.UnaryCall(&ctx, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request, &response,
                 [&](grpc::Status s) { done.set_value(s); });
  grpc::Status status = done.get_future().get();
  std::vector<grpc::Slice> slices;
  if (status.ok() && response.Dump(&slices).ok())
    for (auto& s : slices)
      response_bytes->append(reinterpret_cast<const char*>(s.begin()), s.size());
  return status;
}

}  // namespace skinning::testing
