#include "server/grpc/inflight.h"

namespace skinning {

class InflightInterceptor final : public grpc::experimental::Interceptor {
 public:
  explicit InflightInterceptor(InflightCalls* calls) : calls_(calls) { calls_->count_.fetch_add(1); }
  ~InflightInterceptor() override { calls_->count_.fetch_sub(1); }
  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override { methods->Proceed(); }

 private:
  InflightCalls* calls_;
};

namespace {

class InflightFactory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit InflightFactory(InflightCalls* calls) : calls_(calls) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(grpc::experimental::ServerRpcInfo*) override {
    return new InflightInterceptor(calls_);
  }

 private:
  InflightCalls* calls_;
};

}  // namespace

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> InflightCalls::NewInterceptorFactory() {
  return std::make_unique<InflightFactory>(this);
}

}  // namespace skinning
