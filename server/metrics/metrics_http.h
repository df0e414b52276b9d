// A minimal HTTP/1.1 endpoint for Prometheus scrapes: GET /metrics answers the text exposition
// format; anything else is 404. One thread with the default stack (civetweb's fixed 100 KiB
// thread stacks overflow once OpenBLAS and METIS take their static TLS out of them).
#ifndef SKINNING_SERVER_METRICS_METRICS_HTTP_H_
#define SKINNING_SERVER_METRICS_METRICS_HTTP_H_

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"

namespace skinning {

class MetricsHttpServer {
 public:
  // Listens on `address` ("host:port", port 0 = any free port) and answers scrapes with
  // render(). UNAVAILABLE when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<MetricsHttpServer>> Start(const std::string& address,
                                                                  std::function<std::string()> render);
  ~MetricsHttpServer();  // stops accepting and joins the thread

  int port() const { return port_; }

 private:
  MetricsHttpServer() = default;
  void Loop();
  void Answer(int fd);

  std::function<std::string()> render_;
  int listen_fd_ = -1;
  int wake_fds_[2] = {-1, -1};  // a pipe that ends the accept loop
  int port_ = 0;
  std::thread thread_;
};

}  // namespace skinning

#endif  // SKINNING_SERVER_METRICS_METRICS_HTTP_H_
