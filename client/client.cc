#include "client/client.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"

namespace skinning {

absl::Status FromGrpcStatus(const grpc::Status& s) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
}

namespace {

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
    absl::StatusOr<std::string> ca = ReadPemFile("TLS CA", ca_file);
    if (!ca.ok()) return ca.status();
    options.pem_root_certs = *std::move(ca);
  }
  if (!cert_file.empty()) {
    absl::StatusOr<std::string> cert = ReadPemFile("TLS client certificate", cert_file);
    if (!cert.ok()) return cert.status();
    absl::StatusOr<std::string> key = ReadPemFile("TLS client key", key_file);
    if (!key.ok()) return key.status();
    options.pem_cert_chain = *std::move(cert);
    options.pem_private_key = *std::move(key);
  }
  return grpc::SslCredentials(options);
}

Client::Client(ClientOptions options) : options_(std::move(options)) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(options_.max_message_bytes);
  args.SetMaxSendMessageSize(options_.max_message_bytes);
  if (options_.round_robin) args.SetLoadBalancingPolicyName("round_robin");
  if (options_.own_connection) args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  auto creds = options_.credentials ? options_.credentials : grpc::InsecureChannelCredentials();
  channel_ = grpc::CreateCustomChannel(options_.target, creds, args);
  rigs_ = v1::RigService::NewStub(channel_);
  poses_ = v1::PoseService::NewStub(channel_);
  bakes_ = v1::BakeService::NewStub(channel_);
  fast_ = v1::FastService::NewStub(channel_);
}

Client::~Client() = default;

void Client::Authorize(grpc::ClientContext* context) const {
  if (!options_.token.empty()) context->AddMetadata("authorization", "Bearer " + options_.token);
}

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
    if (status.error_code() != grpc::StatusCode::UNAVAILABLE || attempt >= options_.max_attempts) break;
    // Full jitter: sleep uniformly in [backoff/2, backoff].
    std::uniform_int_distribution<int64_t> jitter(backoff.count() / 2, backoff.count());
    const auto sleep = std::chrono::milliseconds(jitter(rng));
    if (std::chrono::system_clock::now() + sleep >= deadline) break;
    std::this_thread::sleep_for(sleep);
    backoff = std::min(options_.max_backoff,
                       std::chrono::milliseconds(static_cast<int64_t>(backoff.count() * options_.backoff_multiplier)));
  }
  if (status.ok()) return absl::OkStatus();
  absl::Status s = FromGrpcStatus(status);
  return absl::Status(s.code(), absl::StrCat(what, ": ", s.message()));
}

absl::StatusOr<v1::RegisterRigResponse> Client::RegisterRig(const v1::Rig& rig) {
  v1::RegisterRigRequest req;
  *req.mutable_rig() = rig;
  v1::RegisterRigResponse resp;
  absl::Status s = WithRetry("RegisterRig", [&](grpc::ClientContext* ctx) {
    resp.Clear();
    return rigs_->RegisterRig(ctx, req, &resp);
  });
  if (!s.ok()) return s;
  return resp;
}

absl::StatusOr<v1::GetRigResponse> Client::GetRig(const std::string& rig_id, bool include_rig) {
  v1::GetRigRequest req;
  req.set_rig_id(rig_id);
  req.set_include_rig(include_rig);
  v1::GetRigResponse resp;
  absl::Status s = WithRetry("GetRig", [&](grpc::ClientContext* ctx) {
    resp.Clear();
    return rigs_->GetRig(ctx, req, &resp);
  });
  if (!s.ok()) return s;
  return resp;
}

absl::StatusOr<std::vector<v1::RigInfo>> Client::ListRigs() {
  std::vector<v1::RigInfo> all;
  v1::ListRigsRequest req;
  req.set_page_size(1000);
  while (true) {
    v1::ListRigsResponse resp;
    absl::Status s = WithRetry("ListRigs", [&](grpc::ClientContext* ctx) {
      resp.Clear();
      return rigs_->ListRigs(ctx, req, &resp);
    });
    if (!s.ok()) return s;
    for (auto& info : *resp.mutable_rigs()) all.push_back(std::move(info));
    if (resp.next_page_token().empty()) break;
    req.set_page_token(resp.next_page_token());
  }
  return all;
}

absl::Status Client::DeleteRig(const std::string& rig_id) {
  v1::DeleteRigRequest req;
  req.set_rig_id(rig_id);
  v1::DeleteRigResponse resp;
  return WithRetry("DeleteRig", [&](grpc::ClientContext* ctx) { return rigs_->DeleteRig(ctx, req, &resp); });
}

absl::StatusOr<v1::AddExampleResponse> Client::AddExample(const v1::AddExampleRequest& req) {
  v1::AddExampleResponse resp;
  absl::Status s = WithRetry("AddExample", [&](grpc::ClientContext* ctx) {
    resp.Clear();
    return rigs_->AddExample(ctx, req, &resp);
  });
  if (!s.ok()) return s;
  return resp;
}

absl::StatusOr<std::vector<v1::Example>> Client::ListExamples(const std::string& rig_id, bool include_shapes) {
  // Page by page; when the examples change between pages (ABORTED), start again, a few times.
  constexpr int kListAttempts = 4;
  absl::Status last;
  for (int attempt = 0; attempt < kListAttempts; ++attempt) {
    std::vector<v1::Example> out;
    v1::ListExamplesRequest req;
    req.set_rig_id(rig_id);
    req.set_include_shapes(include_shapes);
    for (;;) {
      v1::ListExamplesResponse resp;
      last = WithRetry("ListExamples", [&](grpc::ClientContext* ctx) {
        resp.Clear();
        return rigs_->ListExamples(ctx, req, &resp);
      });
      if (!last.ok()) break;
      for (v1::Example& e : *resp.mutable_examples()) out.push_back(std::move(e));
      if (resp.next_page_token().empty()) return out;
      req.set_page_token(resp.next_page_token());
    }
    if (last.code() != absl::StatusCode::kAborted) return last;
  }
  return last;
}

absl::StatusOr<v1::RemoveExampleResponse> Client::RemoveExample(const std::string& rig_id, const std::string& name) {
  v1::RemoveExampleRequest req;
  req.set_rig_id(rig_id);
  req.set_name(name);
  v1::RemoveExampleResponse resp;
  absl::Status s = WithRetry("RemoveExample", [&](grpc::ClientContext* ctx) {
    resp.Clear();
    return rigs_->RemoveExample(ctx, req, &resp);
  });
  if (!s.ok()) return s;
  return resp;
}

absl::StatusOr<v1::PosedFrame> Client::Pose(const v1::PoseRequest& req) {
  v1::PoseResponse resp;
  absl::Status s = WithRetry("Pose", [&](grpc::ClientContext* ctx) {
    resp.Clear();
    return poses_->Pose(ctx, req, &resp);
  });
  if (!s.ok()) return s;
  return std::move(*resp.mutable_frame());
}

absl::StatusOr<v1::PoseClipResponse> Client::PoseClip(const v1::PoseClipRequest& req) {
  v1::PoseClipResponse resp;
  absl::Status s = WithRetry("PoseClip", [&](grpc::ClientContext* ctx) {
    resp.Clear();
    return poses_->PoseClip(ctx, req, &resp);
  });
  if (!s.ok()) return s;
  return resp;
}

absl::StatusOr<v1::BakeStatus> Client::StartBake(const std::string& rig_id, const v1::BakeOptions& options) {
  v1::StartBakeRequest req;
  req.set_rig_id(rig_id);
  *req.mutable_options() = options;
  v1::BakeStatus resp;
  absl::Status s = WithRetry("StartBake", [&](grpc::ClientContext* ctx) {
    resp.Clear();
    return bakes_->StartBake(ctx, req, &resp);
  });
  if (!s.ok()) return s;
  return resp;
}

absl::StatusOr<v1::BakeStatus> Client::GetBake(const std::string& bake_id) {
  v1::GetBakeRequest req;
  req.set_bake_id(bake_id);
  v1::BakeStatus resp;
  absl::Status s = WithRetry("GetBake", [&](grpc::ClientContext* ctx) {
    resp.Clear();
    return bakes_->GetBake(ctx, req, &resp);
  });
  if (!s.ok()) return s;
  return resp;
}

absl::StatusOr<v1::BakeStatus> Client::CancelBake(const std::string& bake_id) {
  v1::CancelBakeRequest req;
  req.set_bake_id(bake_id);
  v1::BakeStatus resp;
  absl::Status s = WithRetry("CancelBake", [&](grpc::ClientContext* ctx) {
    resp.Clear();
    return bakes_->CancelBake(ctx, req, &resp);
  });
  if (!s.ok()) return s;
  return resp;
}

absl::StatusOr<v1::GetWeightsResponse> Client::GetWeights(const std::string& bake_id, bool dense, uint32_t influences) {
  v1::GetWeightsRequest req;
  req.set_bake_id(bake_id);
  req.set_dense(dense);
  req.set_influences(influences);
  v1::GetWeightsResponse resp;
  absl::Status s = WithRetry("GetWeights", [&](grpc::ClientContext* ctx) {
    resp.Clear();
    return bakes_->GetWeights(ctx, req, &resp);
  });
  if (!s.ok()) return s;
  return resp;
}

absl::StatusOr<v1::BakeStatus> Client::WatchBake(const std::string& bake_id,
                                                 const std::function<bool(const v1::BakeStatus&)>& on_status) {
  v1::WatchBakeRequest req;
  req.set_bake_id(bake_id);
  auto backoff = options_.initial_backoff;
  v1::BakeStatus last;
  for (int attempt = 1;; ++attempt) {
    grpc::ClientContext ctx;
    Authorize(&ctx);
    std::unique_ptr<grpc::ClientReader<v1::BakeStatus>> reader = bakes_->WatchBake(&ctx, req);
    v1::BakeStatus status;
    bool stopped = false;
    while (reader->Read(&status)) {
      last = status;
      if (!on_status(status)) {
        stopped = true;
        ctx.TryCancel();
        break;
      }
    }
    grpc::Status s = reader->Finish();
    if (stopped) return last;
    if (s.ok()) return last;
    if (s.error_code() != grpc::StatusCode::UNAVAILABLE || attempt >= options_.max_attempts) {
      absl::Status e = FromGrpcStatus(s);
      return absl::Status(e.code(), absl::StrCat("WatchBake: ", e.message()));
    }
    std::this_thread::sleep_for(backoff);
    backoff = std::min(options_.max_backoff,
                       std::chrono::milliseconds(static_cast<int64_t>(backoff.count() * options_.backoff_multiplier)));
  }
}

absl::StatusOr<std::unique_ptr<PoseSession>> Client::StartPoseSession(const std::string& rig_id,
                                                                       v1::Method method,
                                                                       const v1::PoseOutputs& outputs,
                                                                       const std::string& bake_id) {
  std::unique_ptr<PoseSession> session(new PoseSession());
  session->context_ = std::make_unique<grpc::ClientContext>();
  Authorize(session->context_.get());
  session->stream_ = poses_->PoseSession(session->context_.get());
  if (!session->stream_) return absl::UnavailableError("PoseSession: cannot open the stream");
  session->rig_id_ = rig_id;
  session->bake_id_ = bake_id;
  session->method_ = method;
  session->outputs_ = outputs;
  return session;
}

absl::StatusOr<v1::FastSolveResponse> Client::FastSolve(const v1::FastSolveRequest& req) {
  v1::FastSolveResponse resp;
  absl::Status s = WithRetry("FastSolve", [&](grpc::ClientContext* ctx) {
    resp.Clear();
    return fast_->Solve(ctx, req, &resp);
  });
  if (!s.ok()) return s;
  return resp;
}

absl::StatusOr<std::unique_ptr<FastSession>> Client::StartFastSession(const std::string& bake_id) {
  std::unique_ptr<FastSession> session(new FastSession());
  session->context_ = std::make_unique<grpc::ClientContext>();
  Authorize(session->context_.get());
  session->stream_ = fast_->Session(session->context_.get());
  if (!session->stream_) return absl::UnavailableError("FastSession: cannot open the stream");
  session->bake_id_ = bake_id;
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

template class BidiSession<v1::PoseSessionRequest, v1::PoseSessionResponse>;
template class BidiSession<v1::FastSolveRequest, v1::FastSolveResponse>;

absl::Status PoseSession::Send(const v1::Pose& pose, uint64_t sequence) {
  v1::PoseSessionRequest req;
  if (first_) {
    req.set_rig_id(rig_id_);
    req.set_bake_id(bake_id_);
    req.set_method(method_);
    *req.mutable_outputs() = outputs_;
  }
  req.set_sequence(sequence);
  *req.mutable_pose() = pose;
  if (absl::Status s = Write(req); !s.ok()) return s;
  first_ = false;
  return absl::OkStatus();
}

absl::StatusOr<v1::PosedFrame> PoseSession::Step(const v1::Pose& pose) {
  const uint64_t seq = next_sequence_++;
  if (absl::Status s = Send(pose, seq); !s.ok()) return s;
  absl::StatusOr<v1::PoseSessionResponse> resp = Read();
  if (!resp.ok()) return resp.status();
  if (resp->sequence() != seq)
    return absl::InternalError(absl::StrCat("PoseSession: answer ", resp->sequence(), " for frame ", seq));
  return std::move(*resp->mutable_frame());
}

absl::StatusOr<v1::FastSolveResponse> FastSession::Step(v1::FastSolveRequest frame) {
  const uint64_t seq = next_sequence_++;
  if (first_) frame.set_bake_id(bake_id_);
  frame.set_sequence(seq);
  if (absl::Status s = Write(frame); !s.ok()) return s;
  first_ = false;
  absl::StatusOr<v1::FastSolveResponse> resp = Read();
  if (!resp.ok()) return resp.status();
  if (resp->sequence() != seq)
    return absl::InternalError(absl::StrCat("FastSession: answer ", resp->sequence(), " for frame ", seq));
  return resp;
}

}  // namespace skinning
