// skinning::Client — a thin C++ client of the skinning service.
//
// Every call has a deadline; calls that fail with UNAVAILABLE (a replica restarting, a network
// blip) are retried with exponential backoff and jitter until the deadline or the attempt limit.
// All calls are idempotent (rigs are content-addressed), so retrying is safe.
// This header includes neither Eigen nor the core library: only the generated API messages.
#ifndef SKINNING_CLIENT_CLIENT_H_
#define SKINNING_CLIENT_CLIENT_H_

#include <chrono>
#include <functional>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "skinning/v1/skinning.grpc.pb.h"

namespace grpc {
class Channel;
class ChannelCredentials;
class ClientContext;
}  // namespace grpc

namespace skinning {

struct ClientOptions {
  // gRPC target: "host:port", "dns:///name:port", or "ipv4:a:p1,b:p2" for several replicas.
  std::string target = "localhost:50051";
  std::chrono::milliseconds deadline{30000};  // per call, retries included
  int max_attempts = 5;                       // 1 = no retry
  std::chrono::milliseconds initial_backoff{50};
  std::chrono::milliseconds max_backoff{2000};
  double backoff_multiplier = 2.0;
  int max_message_bytes = 64 << 20;
  // Spread calls over every address the target resolves to (client-side round robin).
  bool round_robin = true;
  // A TCP connection of this Client's own. By default Clients (channels) with the same target and
  // options share one connection; a load generator or a busy process opens several for
  // throughput (gRPC's local subchannel pool).
  bool own_connection = false;
  // nullptr = plaintext. TlsChannelCredentials builds TLS (and mutual TLS) credentials.
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  // Bearer token for a server run with --auth_tokens, sent as `authorization: Bearer TOKEN` on
  // every call and stream; empty = none. Use TLS too, or the token travels in plaintext.
  std::string token;
};

// TLS channel credentials from PEM files: `ca_file` holds the CA certificate(s) that signed the
// server's certificate (empty = the system's roots); `cert_file` and `key_file` (both or
// neither) are the client's certificate and key for servers that require client certificates.
// INVALID_ARGUMENT naming a file that cannot be read.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> TlsChannelCredentials(
    const std::string& ca_file, const std::string& cert_file = "",
    const std::string& key_file = "");

class PoseSession;
class FastSession;

class Client {
 public:
  explicit Client(ClientOptions options);
  ~Client();

  absl::StatusOr<v1::RegisterRigResponse> RegisterRig(const v1::Rig& rig);
  absl::StatusOr<v1::GetRigResponse> GetRig(const std::string& rig_id, bool include_rig = false);
  // Every rig, following page tokens.
  absl::StatusOr<std::vector<v1::RigInfo>> ListRigs();
  absl::Status DeleteRig(const std::string& rig_id);

  // Pose space deformation examples of a rig (RigService.AddExample / ListExamples /
  // RemoveExample; pose with METHOD_PSD_*). An example is the full pose (request.example.pose,
  // or request.joints_by_name with the other joints at rest) and the #V*3 sculpted positions.
  // Examples are private to the caller's tenant. Retries are safe: a retried AddExample whose
  // first attempt was stored answers OK with created = false (for an unnamed example, with the
  // name the server gave it: the stored example with the same pose and positions). The same name
  // with another pose or shape is ALREADY_EXISTS; another shape at a stored pose is a duplicate
  // pose (INVALID_ARGUMENT).
  absl::StatusOr<v1::AddExampleResponse> AddExample(const v1::AddExampleRequest& request);
  // Names only, unless include_shapes (poses and positions too). Fetches every page (each below
  // the server's message limit); starts again when the examples change between pages (ABORTED
  // after 4 tries).
  absl::StatusOr<std::vector<v1::Example>> ListExamples(const std::string& rig_id, bool include_shapes = false);
  // NOT_FOUND for an unknown name.
  absl::StatusOr<v1::RemoveExampleResponse> RemoveExample(const std::string& rig_id, const std::string& name);

  absl::StatusOr<v1::PosedFrame> Pose(const v1::PoseRequest& request);
  absl::StatusOr<v1::PoseClipResponse> PoseClip(const v1::PoseClipRequest& request);

  // Bakes (see BakeService in skinning.proto).
  absl::StatusOr<v1::BakeStatus> StartBake(const std::string& rig_id, const v1::BakeOptions& options);
  absl::StatusOr<v1::BakeStatus> GetBake(const std::string& bake_id);
  absl::StatusOr<v1::BakeStatus> CancelBake(const std::string& bake_id);
  absl::StatusOr<v1::GetWeightsResponse> GetWeights(const std::string& bake_id, bool dense,
                                                    uint32_t influences = 0);
  // Streams the bake's status to on_status until the bake ends (returns its last status) or
  // on_status returns false. No overall deadline; a dropped stream (UNAVAILABLE) is resumed
  // with backoff up to max_attempts times.
  absl::StatusOr<v1::BakeStatus> WatchBake(const std::string& bake_id,
                                           const std::function<bool(const v1::BakeStatus&)>& on_status);

  // Opens an interactive pose session on one rig (one stream, one replica). Frames are sent
  // and answered in order. The session has no overall deadline.
  absl::StatusOr<std::unique_ptr<PoseSession>> StartPoseSession(const std::string& rig_id,
                                                                v1::Method method,
                                                                const v1::PoseOutputs& outputs,
                                                                const std::string& bake_id = "");

  // Fast automatic skinning transformations with a BAKE_METHOD_FAST_MODEL bake.
  absl::StatusOr<v1::FastSolveResponse> FastSolve(const v1::FastSolveRequest& request);
  absl::StatusOr<std::unique_ptr<FastSession>> StartFastSession(const std::string& bake_id);

  const ClientOptions& options() const { return options_; }

 private:
  template <typename Call>
  absl::Status WithRetry(const char* what, Call call);
  // Adds the bearer token (if any) to a call's metadata.
  void Authorize(grpc::ClientContext* context) const;

  ClientOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::RigService::Stub> rigs_;
  std::unique_ptr<v1::PoseService::Stub> poses_;
  std::unique_ptr<v1::BakeService::Stub> bakes_;
  std::unique_ptr<v1::FastService::Stub> fast_;
};

// A bidirectional stream of one session (one HTTP/2 stream, one replica). Not thread-safe: one
// thread sends and receives. Explicitly instantiated for the two session types below.
template <typename Request, typename Response>
class BidiSession {
 public:
  virtual ~BidiSession();
  absl::Status Write(const Request& request);
  // The next answer, in order; the stream's final status when the server ended it.
  absl::StatusOr<Response> Read();
  // Half-closes and returns the stream's final status.
  absl::Status Close();

 protected:
  BidiSession() = default;
  absl::Status Finish();

 private:
  friend class Client;
  std::unique_ptr<grpc::ClientContext> context_;
  std::unique_ptr<grpc::ClientReaderWriter<Request, Response>> stream_;
  bool closed_ = false;
};

// Interactive posing.
class PoseSession : public BidiSession<v1::PoseSessionRequest, v1::PoseSessionResponse> {
 public:
  // Sends one frame (the sequence number is echoed back); the first carries rig and method.
  absl::Status Send(const v1::Pose& pose, uint64_t sequence);
  absl::StatusOr<v1::PoseSessionResponse> Receive() { return Read(); }
  // Send then Receive.
  absl::StatusOr<v1::PosedFrame> Step(const v1::Pose& pose);

 private:
  friend class Client;
  std::string rig_id_;
  std::string bake_id_;
  v1::Method method_ = v1::METHOD_UNSPECIFIED;
  v1::PoseOutputs outputs_;
  bool first_ = true;
  uint64_t next_sequence_ = 0;
};

// Interactive FAST solves: each frame warm-starts from the previous one on the server.
class FastSession : public BidiSession<v1::FastSolveRequest, v1::FastSolveResponse> {
 public:
  // Sends `frame` (bake_id filled in on the first) and returns its answer.
  absl::StatusOr<v1::FastSolveResponse> Step(v1::FastSolveRequest frame);

 private:
  friend class Client;
  std::string bake_id_;
  bool first_ = true;
  uint64_t next_sequence_ = 0;
};

// gRPC status → absl status (same code numbering, message kept).
absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace skinning

#endif  // SKINNING_CLIENT_CLIENT_H_
