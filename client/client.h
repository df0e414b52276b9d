// skinning::Client — a thin C++ client of the skinning service (proto/skinning/v1).
//
// Every call has a deadline; calls that fail with UNAVAILABLE (a replica restarting, a network
// blip), or are CANCELLED by the server (gRPC's answer to calls that arrive as a server finishes
// shutting down), are retried with exponential backoff and jitter until the deadline or the
// attempt limit.
// All calls are idempotent (rigs and bakes are content-addressed, retried creates answer
// created = false), so retrying is safe. Resources are addressed by name: "rigs/{rig}",
// "rigs/{rig}/bakes/{bake}", "rigs/{rig}/examples/{example}", as the server returns them.
// This header includes neither Eigen nor the core library: only the generated API messages.
#ifndef SKINNING_CLIENT_CLIENT_H_
#define SKINNING_CLIENT_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "skinning/v1/bake_service.grpc.pb.h"
#include "skinning/v1/fast_service.grpc.pb.h"
#include "skinning/v1/pose_service.grpc.pb.h"
#include "skinning/v1/rig_service.grpc.pb.h"

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
class StreamBackoff;  // client.cc: how a dropped stream is opened again
class SolveSession;

class Client {
 public:
  explicit Client(ClientOptions options);
  ~Client();

  // RigService. CreateRig answers the stored rig's summary (its `name` is what every other call
  // takes) and whether this call stored it for the caller's tenant; `animations` are stored with
  // it for the caller (GetAnimations).
  absl::StatusOr<v1::CreateRigResponse> CreateRig(const v1::Rig& rig,
                                                  const std::vector<v1::AnimationClip>& animations = {});
  // The same from a .glb (or a .gltf with embedded buffers) that the server reads; the response
  // carries the file's animations sampled as poses. `display_name` empty: the file's. With
  // `skip_static_meshes` the file's meshes that no skin or joint moves (a ground plane, scenery)
  // are left out and named in the response, instead of refusing the file. `scene` ≥ 0: of a file
  // with several scenes, that one (−1: the file's default scene); the response's `scene` says which.
  absl::StatusOr<v1::CreateRigResponse> CreateRigFromGltf(std::string gltf_bytes, const std::string& display_name = "",
                                                          bool skip_static_meshes = false, int scene = -1);
  // The summary by default; mesh, skeleton and weights too with RIG_VIEW_FULL.
  absl::StatusOr<v1::Rig> GetRig(const std::string& name, v1::RigView view = v1::RIG_VIEW_UNSPECIFIED);
  // Every rig of the caller (summaries), following page tokens.
  absl::StatusOr<std::vector<v1::Rig>> ListRigs();
  absl::Status DeleteRig(const std::string& name);

  // Example shapes for pose space deformation (pose with DEFORMER_PSD_*), private to the caller's
  // tenant. A retried CreateExample whose first attempt was stored answers OK with created =
  // false (without an example_id: the stored example with the same pose and positions, under the
  // id the server gave it). The same id with another pose or shape is ALREADY_EXISTS; another
  // shape at a stored pose is INVALID_ARGUMENT.
  absl::StatusOr<v1::CreateExampleResponse> CreateExample(const v1::CreateExampleRequest& request);
  absl::StatusOr<v1::Example> GetExample(const std::string& name);
  // Names only, unless EXAMPLE_VIEW_FULL (poses and positions too). Fetches every page (each
  // below the server's message limit); starts again when the examples change between pages
  // (ABORTED after 4 tries).
  absl::StatusOr<std::vector<v1::Example>> ListExamples(const std::string& parent,
                                                        v1::ExampleView view = v1::EXAMPLE_VIEW_UNSPECIFIED);
  // NOT_FOUND for an unknown example.
  absl::Status DeleteExample(const std::string& name);
  // The animations stored with the caller's rig (those of the files it was registered from),
  // those registered last first.
  absl::StatusOr<std::vector<v1::AnimationClip>> GetAnimations(const std::string& rig);

  // PoseService.
  absl::StatusOr<v1::PosedFrame> Pose(const v1::PoseRequest& request);
  absl::StatusOr<v1::PoseClipResponse> PoseClip(const v1::PoseClipRequest& request);

  // BakeService. StartBake returns at once (created = false when the bake was already queued,
  // running or stored).
  absl::StatusOr<v1::StartBakeResponse> StartBake(const std::string& parent, const v1::BakeOptions& options);
  absl::StatusOr<v1::Bake> GetBake(const std::string& name);
  absl::StatusOr<v1::Bake> CancelBake(const std::string& name);
  // Sparse top-k weights (influence_count 0: the bake's own k) or, with WEIGHTS_FORMAT_DENSE, the
  // exact dense weights.
  absl::StatusOr<v1::GetWeightsResponse> GetWeights(const std::string& bake,
                                                    v1::WeightsFormat format = v1::WEIGHTS_FORMAT_UNSPECIFIED,
                                                    int influence_count = 0);
  // Streams the bake's state to on_bake until it is done (returns its last state) or on_bake
  // returns false. No overall deadline; a dropped stream (UNAVAILABLE, or CANCELLED by the
  // server) is opened again with backoff until it has failed for `deadline` in a row (a replica
  // restarting). A bake that is gone after that (a server without --redis lost its queue) is
  // NOT_FOUND saying so.
  absl::StatusOr<v1::Bake> WatchBake(const std::string& name, const std::function<bool(const v1::Bake&)>& on_bake);

  // Opens an interactive pose session on one rig (one stream, one replica). Frames are sent
  // and answered in order. The session has no overall deadline. A session's Step outlives the
  // server going away (see BidiSession).
  absl::StatusOr<std::unique_ptr<PoseSession>> StartPoseSession(const std::string& rig, v1::Deformer deformer,
                                                                const v1::PoseOutputs& outputs,
                                                                const std::string& bake = "");

  // FastService, with a bake whose options set `fast_model`.
  absl::StatusOr<v1::FastSolution> Solve(const v1::SolveRequest& request);
  absl::StatusOr<std::unique_ptr<SolveSession>> StartSolveSession(const std::string& bake);

  const ClientOptions& options() const { return options_; }
  // This Client's channel, for services the library does not wrap (bench/load's echo baseline
  // calls it so that the baseline shares the Pose calls' connection and channel settings).
  std::shared_ptr<grpc::Channel> channel() const { return channel_; }

 private:
  template <typename Call>
  absl::Status WithRetry(const char* what, Call call);
  // One unary call with retries: `rpc(context, response)` issues it.
  template <typename Response, typename Rpc>
  absl::StatusOr<Response> Unary(const char* what, Rpc rpc);
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
//
// Step (of either session) outlives the server going away: when the stream ends UNAVAILABLE (a
// server draining closes its sessions so, as in a rolling update, or none answers) or CANCELLED by
// a server shutting down, the session opens a new stream (another replica, or the restarted one),
// with the client's backoff, sends the first frame's settings again with the frame that failed,
// and returns its answer, until it has failed for the client's `deadline` in a row. A FAST
// session's next frame then starts cold (the warm start lived on the old replica). Write, Read,
// Send and Receive do not reopen: a caller that pipelines frames handles the end itself.
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
  // After `failure` of a Step: OK once a new stream is open (the caller sends its frame again,
  // with the first frame's settings), else `failure` (not a server going away, or failing for
  // longer than the deadline since the Step's first failure, which `backoff` keeps).
  absl::Status Reopen(const absl::Status& failure, StreamBackoff* backoff);
  // `once()` (one frame sent and answered), run again on a reopened stream while Reopen allows.
  template <typename Result, typename Once>
  absl::StatusOr<Result> WithReopen(Once once);

  bool first_ = true;  // the next frame is the stream's first (it carries the settings)
  int64_t next_sequence_ = 0;

 private:
  friend class Client;
  using Opener = std::function<std::unique_ptr<grpc::ClientReaderWriter<Request, Response>>(grpc::ClientContext*)>;
  // Keeps what Reopen needs (`open` issues the session's call on a context) and opens the first
  // stream; UNAVAILABLE "<what>: cannot open the stream" when gRPC gives none.
  absl::Status Start(std::shared_ptr<grpc::Channel> channel, const ClientOptions& options, Opener open,
                     const char* what);
  // A new context (with the client's token) and the stream on it.
  void OpenStream();
  Opener open_;
  std::shared_ptr<grpc::Channel> channel_;
  ClientOptions options_;
  std::unique_ptr<grpc::ClientContext> context_;
  std::unique_ptr<grpc::ClientReaderWriter<Request, Response>> stream_;
  bool closed_ = false;
};

// Interactive posing.
class PoseSession : public BidiSession<v1::PoseSessionRequest, v1::PoseSessionResponse> {
 public:
  // Sends one frame (the sequence number is echoed back); the first carries rig, deformer,
  // outputs and bake.
  absl::Status Send(const v1::Pose& pose, int64_t sequence);
  absl::StatusOr<v1::PoseSessionResponse> Receive() { return Read(); }
  // Send then Receive; reopens the stream when the server went away (BidiSession).
  absl::StatusOr<v1::PosedFrame> Step(const v1::Pose& pose);

 private:
  absl::StatusOr<v1::PosedFrame> StepOnce(const v1::Pose& pose);
  friend class Client;
  std::string rig_;
  std::string bake_;
  v1::Deformer deformer_ = v1::DEFORMER_UNSPECIFIED;
  v1::PoseOutputs outputs_;
};

// Interactive FAST solves: each frame warm-starts from the previous one on the server.
class SolveSession : public BidiSession<v1::SolveSessionRequest, v1::SolveSessionResponse> {
 public:
  // Sends `frame` (bake filled in on the first, sequence numbered) and returns its answer;
  // reopens the stream when the server went away (BidiSession).
  absl::StatusOr<v1::FastSolution> Step(v1::SolveSessionRequest frame);

 private:
  absl::StatusOr<v1::FastSolution> StepOnce(v1::SolveSessionRequest frame);
  friend class Client;
  std::string bake_;
};

// gRPC status → absl status (same code numbering, message kept).
absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace skinning

#endif  // SKINNING_CLIENT_CLIENT_H_
