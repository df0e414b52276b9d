#include "client/client.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"

namespace skinning {

absl::Status FromGrpcStatus(const grpc::Status& s) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
}

namespace {

// The bearer token (if any) in a call's metadata.
void AddToken(const std::string& token, grpc::ClientContext* context) {
  if (!token.empty()) context->AddMetadata("authorization", "Bearer " + token);
}

absl::StatusOr<std::string> ReadPemFile(const char* what, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(what, ": cannot read '", path, "'"));
  std::stringstream text;
  text << in.rdbuf();
  if (text.str().find("-----BEGIN ") == std::string::npos)
    return absl::InvalidArgumentError(absl::StrCat(what, ": '", path, "' is not a PEM file"));
  return text.str();
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> TlsChannelCredentials(
    const std::string& ca_file, const std::string& cert_file, const std::string& key_file) {
  if (cert_file.empty() != key_file.empty())
    return absl::InvalidArgumentError("a client certificate needs its key: give both or neither");
  grpc::SslCredentialsOptions options;
  if (!ca_file.empty()) {
    ASSIGN_OR_RETURN(options.pem_root_certs, ReadPemFile("TLS CA", ca_file));
  }
  if (!cert_file.empty()) {
    ASSIGN_OR_RETURN(options.pem_cert_chain, ReadPemFile("TLS client certificate", cert_file));
    ASSIGN_OR_RETURN(options.pem_private_key, ReadPemFile("TLS client key", key_file));
  }
  return grpc::SslCredentials(options);
}

Client::Client(ClientOptions options) : options_(std::move(options)) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(options_.max_message_bytes);
  args.SetMaxSendMessageSize(options_.max_message_bytes);
  if (options_.round_robin) args.SetLoadBalancingPolicyName("round_robin");
  if (options_.own_connection) args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  // The channel reconnects on the client's own backoff. gRPC's default (1 s growing to 120 s)
  // would fail every retry fast with UNAVAILABLE while the channel waits out its timer, so a
  // server that comes up after a few refused connections was seen only after the retries ran out.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, static_cast<int>(options_.initial_backoff.count()));
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, static_cast<int>(options_.max_backoff.count()));
  auto creds = options_.credentials ? options_.credentials : grpc::InsecureChannelCredentials();
  channel_ = grpc::CreateCustomChannel(options_.target, creds, args);
  rigs_ = v1::RigService::NewStub(channel_);
  poses_ = v1::PoseService::NewStub(channel_);
  bakes_ = v1::BakeService::NewStub(channel_);
  fast_ = v1::FastService::NewStub(channel_);
}

Client::~Client() = default;

void Client::Authorize(grpc::ClientContext* context) const { AddToken(options_.token, context); }

namespace {

// UNAVAILABLE, and CANCELLED that this client did not cause (it cancels only watches it stops,
// which are not retried): gRPC cancels the calls that reach a server in the last moments of its
// shutdown, after its drain has answered UNAVAILABLE to those before; the next attempt finds
// another replica, or the restarted one.
bool RetryableCode(absl::StatusCode code) {
  return code == absl::StatusCode::kUnavailable || code == absl::StatusCode::kCancelled;
}
bool RetryableStatus(const grpc::Status& s) { return RetryableCode(static_cast<absl::StatusCode>(s.error_code())); }

// The backoff after `backoff`: times the multiplier, at most max_backoff.
std::chrono::milliseconds NextBackoff(const ClientOptions& options, std::chrono::milliseconds backoff) {
  return std::min(options.max_backoff,
                  std::chrono::milliseconds(static_cast<int64_t>(backoff.count() * options.backoff_multiplier)));
}

// Waits out a retry's backoff on the channel instead of in a bare sleep. gRPC learns how a
// connection attempt ended only while some thread polls the channel, and a call fails fast while
// the channel is in TRANSIENT_FAILURE, so during a bare sleep nothing polled it: a server that had
// come up was seen only by gRPC's backup poller, every 5 s, and a retried call waited 5 to 10 s
// for a server that answered at once (or ran out of attempts first). Watching the channel's state
// polls it and asks it to connect; the wait still lasts the whole backoff, so a server that
// answers UNAVAILABLE on a live connection (it is draining) is not retried in a tight loop.
void WaitOnChannel(grpc::Channel& channel, std::chrono::milliseconds backoff) {
  const auto until = std::chrono::system_clock::now() + backoff;
  while (std::chrono::system_clock::now() < until) {
    channel.WaitForStateChange(channel.GetState(/*try_to_connect=*/true), until);
  }
}

}  // namespace

// How a dropped stream (WatchBake, a session's Step) is opened again: with backoff, spent on the
// channel, until it has failed for the client's `deadline` in a row. A replica that restarts (a
// rolling update, a crash) takes seconds, more than max_attempts quick retries.
class StreamBackoff {
 public:
  explicit StreamBackoff(const ClientOptions& options) : options_(options) {}
  // The stream delivered something: the next failure begins a new run.
  void Delivered() { failing_ = false; }
  // After a failure: false when the failures, with the next backoff, outlast the deadline; else
  // waits out the backoff on `channel` and returns true.
  bool Wait(grpc::Channel& channel) {
    const auto now = std::chrono::steady_clock::now();
    if (!failing_) {
      failing_ = true;
      failing_since_ = now;
      backoff_ = options_.initial_backoff;
    }
    if (now - failing_since_ + backoff_ > options_.deadline) return false;
    WaitOnChannel(channel, backoff_);
    backoff_ = NextBackoff(options_, backoff_);
    return true;
  }

 private:
  const ClientOptions& options_;
  bool failing_ = false;  // since failing_since_
  std::chrono::steady_clock::time_point failing_since_;
  std::chrono::milliseconds backoff_{0};
};

template <typename Call>
absl::Status Client::WithRetry(const char* what, Call call) {
  const auto deadline = std::chrono::system_clock::now() + options_.deadline;
  auto backoff = options_.initial_backoff;
  thread_local std::mt19937 rng(std::random_device{}());
  grpc::Status status;
  for (int attempt = 1;; ++attempt) {
    grpc::ClientContext ctx;
    ctx.set_deadline(deadline);
    Authorize(&ctx);
    status = call(&ctx);
    if (!RetryableStatus(status) || attempt >= options_.max_attempts) break;
    // Full jitter: sleep uniformly in [backoff/2, backoff].
    std::uniform_int_distribution<int64_t> jitter(backoff.count() / 2, backoff.count());
    const auto sleep = std::chrono::milliseconds(jitter(rng));
    if (std::chrono::system_clock::now() + sleep >= deadline) break;
    WaitOnChannel(*channel_, sleep);
    backoff = NextBackoff(options_, backoff);
  }
  if (status.ok()) return absl::OkStatus();
  absl::Status s = FromGrpcStatus(status);
  return absl::Status(s.code(), absl::StrCat(what, ": ", s.message()));
}

template <typename Response, typename Rpc>
absl::StatusOr<Response> Client::Unary(const char* what, Rpc rpc) {
  Response resp;
  RETURN_IF_ERROR(WithRetry(what, [&](grpc::ClientContext* ctx) {
    resp.Clear();
    return rpc(ctx, &resp);
  }));
  return resp;
}

absl::StatusOr<v1::CreateRigResponse> Client::CreateRig(const v1::Rig& rig,
                                                        const std::vector<v1::AnimationClip>& animations) {
  v1::CreateRigRequest req;
  *req.mutable_rig() = rig;
  for (const v1::AnimationClip& clip : animations) *req.add_animations() = clip;
  return Unary<v1::CreateRigResponse>(
      "CreateRig", [&](grpc::ClientContext* ctx, v1::CreateRigResponse* resp) { return rigs_->CreateRig(ctx, req, resp); });
}

absl::StatusOr<v1::CreateRigResponse> Client::CreateRigFromGltf(std::string gltf_bytes,
                                                                const std::string& display_name,
                                                                bool skip_static_meshes, int scene) {
  v1::CreateRigRequest req;
  req.set_gltf(std::move(gltf_bytes));
  req.set_display_name(display_name);
  req.set_skip_static_meshes(skip_static_meshes);
  if (scene >= 0) req.set_scene(scene);
  return Unary<v1::CreateRigResponse>(
      "CreateRig", [&](grpc::ClientContext* ctx, v1::CreateRigResponse* resp) { return rigs_->CreateRig(ctx, req, resp); });
}

absl::StatusOr<v1::Rig> Client::GetRig(const std::string& name, v1::RigView view) {
  v1::GetRigRequest req;
  req.set_name(name);
  req.set_view(view);
  return Unary<v1::Rig>("GetRig",
                        [&](grpc::ClientContext* ctx, v1::Rig* resp) { return rigs_->GetRig(ctx, req, resp); });
}

absl::StatusOr<std::vector<v1::Rig>> Client::ListRigs() {
  std::vector<v1::Rig> all;
  v1::ListRigsRequest req;
  req.set_page_size(1000);
  while (true) {
    ASSIGN_OR_RETURN(v1::ListRigsResponse page,
                     Unary<v1::ListRigsResponse>("ListRigs", [&](grpc::ClientContext* ctx, v1::ListRigsResponse* out) {
                       return rigs_->ListRigs(ctx, req, out);
                     }));
    for (v1::Rig& rig : *page.mutable_rigs()) all.push_back(std::move(rig));
    if (page.next_page_token().empty()) return all;
    req.set_page_token(page.next_page_token());
  }
}

absl::Status Client::DeleteRig(const std::string& name) {
  v1::DeleteRigRequest req;
  req.set_name(name);
  return Unary<google::protobuf::Empty>("DeleteRig", [&](grpc::ClientContext* ctx, google::protobuf::Empty* resp) {
           return rigs_->DeleteRig(ctx, req, resp);
         }).status();
}

absl::StatusOr<v1::CreateExampleResponse> Client::CreateExample(const v1::CreateExampleRequest& req) {
  return Unary<v1::CreateExampleResponse>("CreateExample",
                                          [&](grpc::ClientContext* ctx, v1::CreateExampleResponse* resp) {
                                            return rigs_->CreateExample(ctx, req, resp);
                                          });
}

absl::StatusOr<v1::Example> Client::GetExample(const std::string& name) {
  v1::GetExampleRequest req;
  req.set_name(name);
  return Unary<v1::Example>(
      "GetExample", [&](grpc::ClientContext* ctx, v1::Example* resp) { return rigs_->GetExample(ctx, req, resp); });
}

absl::StatusOr<std::vector<v1::Example>> Client::ListExamples(const std::string& parent, v1::ExampleView view) {
  // Page by page; when the examples change between pages (ABORTED), start again, a few times.
  constexpr int kListAttempts = 4;
  absl::Status last;
  for (int attempt = 0; attempt < kListAttempts; ++attempt) {
    std::vector<v1::Example> out;
    v1::ListExamplesRequest req;
    req.set_parent(parent);
    req.set_view(view);
    for (;;) {
      absl::StatusOr<v1::ListExamplesResponse> page = Unary<v1::ListExamplesResponse>(
          "ListExamples",
          [&](grpc::ClientContext* ctx, v1::ListExamplesResponse* resp) { return rigs_->ListExamples(ctx, req, resp); });
      last = page.status();
      if (!page.ok()) break;
      for (v1::Example& e : *page->mutable_examples()) out.push_back(std::move(e));
      if (page->next_page_token().empty()) return out;
      req.set_page_token(page->next_page_token());
    }
    if (last.code() != absl::StatusCode::kAborted) return last;
  }
  return last;
}

absl::Status Client::DeleteExample(const std::string& name) {
  v1::DeleteExampleRequest req;
  req.set_name(name);
  return Unary<google::protobuf::Empty>("DeleteExample", [&](grpc::ClientContext* ctx, google::protobuf::Empty* resp) {
           return rigs_->DeleteExample(ctx, req, resp);
         }).status();
}

absl::StatusOr<std::vector<v1::AnimationClip>> Client::GetAnimations(const std::string& rig) {
  v1::GetAnimationsRequest req;
  req.set_rig(rig);
  ASSIGN_OR_RETURN(v1::GetAnimationsResponse resp,
                   Unary<v1::GetAnimationsResponse>("GetAnimations",
                                                    [&](grpc::ClientContext* ctx, v1::GetAnimationsResponse* out) {
                                                      return rigs_->GetAnimations(ctx, req, out);
                                                    }));
  return std::vector<v1::AnimationClip>(resp.animations().begin(), resp.animations().end());
}

absl::StatusOr<v1::PosedFrame> Client::Pose(const v1::PoseRequest& req) {
  ASSIGN_OR_RETURN(v1::PoseResponse resp,
                   Unary<v1::PoseResponse>("Pose", [&](grpc::ClientContext* ctx, v1::PoseResponse* out) {
                     return poses_->Pose(ctx, req, out);
                   }));
  return std::move(*resp.mutable_frame());
}

absl::StatusOr<v1::PoseClipResponse> Client::PoseClip(const v1::PoseClipRequest& req) {
  return Unary<v1::PoseClipResponse>(
      "PoseClip", [&](grpc::ClientContext* ctx, v1::PoseClipResponse* resp) { return poses_->PoseClip(ctx, req, resp); });
}

absl::StatusOr<v1::StartBakeResponse> Client::StartBake(const std::string& parent, const v1::BakeOptions& options) {
  v1::StartBakeRequest req;
  req.set_parent(parent);
  *req.mutable_options() = options;
  return Unary<v1::StartBakeResponse>("StartBake", [&](grpc::ClientContext* ctx, v1::StartBakeResponse* resp) {
    return bakes_->StartBake(ctx, req, resp);
  });
}

absl::StatusOr<v1::Bake> Client::GetBake(const std::string& name) {
  v1::GetBakeRequest req;
  req.set_name(name);
  return Unary<v1::Bake>("GetBake",
                         [&](grpc::ClientContext* ctx, v1::Bake* resp) { return bakes_->GetBake(ctx, req, resp); });
}

absl::StatusOr<v1::Bake> Client::CancelBake(const std::string& name) {
  v1::CancelBakeRequest req;
  req.set_name(name);
  return Unary<v1::Bake>("CancelBake",
                         [&](grpc::ClientContext* ctx, v1::Bake* resp) { return bakes_->CancelBake(ctx, req, resp); });
}

absl::StatusOr<v1::GetWeightsResponse> Client::GetWeights(const std::string& bake, v1::WeightsFormat format,
                                                          int influence_count) {
  v1::GetWeightsRequest req;
  req.set_bake(bake);
  req.set_format(format);
  req.set_influence_count(influence_count);
  return Unary<v1::GetWeightsResponse>("GetWeights", [&](grpc::ClientContext* ctx, v1::GetWeightsResponse* resp) {
    return bakes_->GetWeights(ctx, req, resp);
  });
}

absl::StatusOr<v1::Bake> Client::WatchBake(const std::string& name,
                                           const std::function<bool(const v1::Bake&)>& on_bake) {
  v1::WatchBakeRequest req;
  req.set_name(name);
  v1::Bake last;
  bool resumed = false;  // the stream was dropped and opened again
  StreamBackoff reconnect(options_);
  for (;;) {
    grpc::ClientContext ctx;
    Authorize(&ctx);
    std::unique_ptr<grpc::ClientReader<v1::Bake>> reader = bakes_->WatchBake(&ctx, req);
    v1::Bake bake;
    bool stopped = false, read = false;
    while (reader->Read(&bake)) {
      last = bake;
      read = true;
      if (!on_bake(bake)) {
        stopped = true;
        ctx.TryCancel();
        break;
      }
    }
    grpc::Status s = reader->Finish();
    if (stopped || s.ok()) return last;
    if (read) reconnect.Delivered();
    if (!RetryableStatus(s) || !reconnect.Wait(*channel_)) {
      absl::Status e = FromGrpcStatus(s);
      if (resumed && absl::IsNotFound(e))
        return absl::NotFoundError(absl::StrCat(
            "WatchBake: the bake is gone after the server went away and came back: the server answering now has no "
            "record of it (without --redis each replica keeps its queue in its own store); start it again (",
            e.message(), ")"));
      return absl::Status(e.code(), absl::StrCat("WatchBake: ", e.message(),
                                                 RetryableStatus(s) ? " (reconnecting for the call deadline)" : ""));
    }
    resumed = true;
  }
}

absl::StatusOr<std::unique_ptr<PoseSession>> Client::StartPoseSession(const std::string& rig, v1::Deformer deformer,
                                                                       const v1::PoseOutputs& outputs,
                                                                       const std::string& bake) {
  std::unique_ptr<PoseSession> session(new PoseSession());
  // A stub of the session's own: a session may outlive its Client.
  std::shared_ptr<v1::PoseService::Stub> stub = v1::PoseService::NewStub(channel_);
  RETURN_IF_ERROR(session->Start(
      channel_, options_, [stub](grpc::ClientContext* context) { return stub->PoseSession(context); }, "PoseSession"));
  session->rig_ = rig;
  session->bake_ = bake;
  session->deformer_ = deformer;
  session->outputs_ = outputs;
  return session;
}

absl::StatusOr<v1::FastSolution> Client::Solve(const v1::SolveRequest& req) {
  ASSIGN_OR_RETURN(v1::SolveResponse resp,
                   Unary<v1::SolveResponse>("Solve", [&](grpc::ClientContext* ctx, v1::SolveResponse* out) {
                     return fast_->Solve(ctx, req, out);
                   }));
  return std::move(*resp.mutable_solution());
}

absl::StatusOr<std::unique_ptr<SolveSession>> Client::StartSolveSession(const std::string& bake) {
  std::unique_ptr<SolveSession> session(new SolveSession());
  std::shared_ptr<v1::FastService::Stub> stub = v1::FastService::NewStub(channel_);
  RETURN_IF_ERROR(session->Start(
      channel_, options_, [stub](grpc::ClientContext* context) { return stub->SolveSession(context); },
      "SolveSession"));
  session->bake_ = bake;
  return session;
}

template <typename Request, typename Response>
BidiSession<Request, Response>::~BidiSession() {
  if (stream_ && !closed_) {
    context_->TryCancel();
    stream_->Finish().IgnoreError();
  }
}

template <typename Request, typename Response>
absl::Status BidiSession<Request, Response>::Write(const Request& request) {
  if (closed_) return absl::FailedPreconditionError("session: the session is closed");
  if (!stream_->Write(request)) return Finish();
  return absl::OkStatus();
}

template <typename Request, typename Response>
absl::StatusOr<Response> BidiSession<Request, Response>::Read() {
  if (closed_) return absl::FailedPreconditionError("session: the session is closed");
  Response resp;
  if (!stream_->Read(&resp)) {
    absl::Status s = Finish();
    if (s.ok()) return absl::OutOfRangeError("session: the server ended the session");
    return s;
  }
  return resp;
}

template <typename Request, typename Response>
absl::Status BidiSession<Request, Response>::Finish() {
  if (closed_) return absl::OkStatus();
  closed_ = true;
  absl::Status s = FromGrpcStatus(stream_->Finish());
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat("session: ", s.message()));
}

template <typename Request, typename Response>
absl::Status BidiSession<Request, Response>::Close() {
  if (closed_) return absl::OkStatus();
  stream_->WritesDone();
  Response drain;
  while (stream_->Read(&drain)) {
  }
  return Finish();
}

template <typename Request, typename Response>
absl::Status BidiSession<Request, Response>::Start(std::shared_ptr<grpc::Channel> channel, const ClientOptions& options,
                                                   Opener open, const char* what) {
  channel_ = std::move(channel);
  options_ = options;
  open_ = std::move(open);
  OpenStream();
  if (!stream_) return absl::UnavailableError(absl::StrCat(what, ": cannot open the stream"));
  return absl::OkStatus();
}

template <typename Request, typename Response>
void BidiSession<Request, Response>::OpenStream() {
  stream_.reset();  // before its context, as the destructor does
  context_ = std::make_unique<grpc::ClientContext>();
  AddToken(options_.token, context_.get());
  stream_ = open_(context_.get());
}

template <typename Request, typename Response>
absl::Status BidiSession<Request, Response>::Reopen(const absl::Status& failure, StreamBackoff* backoff) {
  if (!RetryableCode(failure.code())) return failure;
  if (!closed_) {  // a Read that failed has finished the stream; a Write that failed too
    context_->TryCancel();
    stream_->Finish().IgnoreError();
    closed_ = true;
  }
  if (!backoff->Wait(*channel_))
    return absl::Status(failure.code(), absl::StrCat(failure.message(), " (reopening the session for the call deadline)"));
  OpenStream();
  if (!stream_) return absl::UnavailableError("session: cannot open the stream again");
  closed_ = false;
  first_ = true;
  return absl::OkStatus();
}

template <typename Request, typename Response>
template <typename Result, typename Once>
absl::StatusOr<Result> BidiSession<Request, Response>::WithReopen(Once once) {
  StreamBackoff backoff(options_);
  for (;;) {
    absl::StatusOr<Result> result = once();
    if (result.ok()) return result;
    RETURN_IF_ERROR(Reopen(result.status(), &backoff));
  }
}

template class BidiSession<v1::PoseSessionRequest, v1::PoseSessionResponse>;
template class BidiSession<v1::SolveSessionRequest, v1::SolveSessionResponse>;

absl::Status PoseSession::Send(const v1::Pose& pose, int64_t sequence) {
  v1::PoseSessionRequest req;
  if (first_) {
    req.set_rig(rig_);
    req.set_bake(bake_);
    req.set_deformer(deformer_);
    *req.mutable_outputs() = outputs_;
  }
  req.set_sequence(sequence);
  *req.mutable_pose() = pose;
  RETURN_IF_ERROR(Write(req));
  first_ = false;
  return absl::OkStatus();
}

absl::StatusOr<v1::PosedFrame> PoseSession::Step(const v1::Pose& pose) {
  return WithReopen<v1::PosedFrame>([&] { return StepOnce(pose); });
}

absl::StatusOr<v1::PosedFrame> PoseSession::StepOnce(const v1::Pose& pose) {
  const int64_t seq = next_sequence_++;
  RETURN_IF_ERROR(Send(pose, seq));
  ASSIGN_OR_RETURN(v1::PoseSessionResponse resp, Read());
  if (resp.sequence() != seq)
    return absl::InternalError(absl::StrCat("PoseSession: answer ", resp.sequence(), " for frame ", seq));
  return std::move(*resp.mutable_frame());
}

absl::StatusOr<v1::FastSolution> SolveSession::Step(v1::SolveSessionRequest frame) {
  return WithReopen<v1::FastSolution>([&] { return StepOnce(frame); });
}

absl::StatusOr<v1::FastSolution> SolveSession::StepOnce(v1::SolveSessionRequest frame) {
  const int64_t seq = next_sequence_++;
  if (first_) frame.set_bake(bake_);
  frame.set_sequence(seq);
  RETURN_IF_ERROR(Write(frame));
  first_ = false;
  ASSIGN_OR_RETURN(v1::SolveSessionResponse resp, Read());
  if (resp.sequence() != seq)
    return absl::InternalError(absl::StrCat("SolveSession: answer ", resp.sequence(), " for frame ", seq));
  return std::move(*resp.mutable_solution());
}

}  // namespace skinning
