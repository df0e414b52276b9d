#include "server/services.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/convert.h"
#include "server/grpc_status.h"
#include "server/posing.h"

namespace skinning {

grpc::Status RigServiceImpl::RegisterRig(grpc::ServerContext*, const v1::RegisterRigRequest* req,
                                         v1::RegisterRigResponse* resp) {
  if (!req->has_rig()) return ToGrpcStatus(absl::InvalidArgumentError("rig is required"));
  absl::StatusOr<RegisterResult> r = store_->Register(req->rig());
  if (!r.ok()) return ToGrpcStatus(r.status());
  resp->set_rig_id(r->rig_id);
  resp->set_created(r->created);
  *resp->mutable_info() = r->info;
  return grpc::Status::OK;
}

grpc::Status RigServiceImpl::GetRig(grpc::ServerContext*, const v1::GetRigRequest* req,
                                    v1::GetRigResponse* resp) {
  absl::StatusOr<std::shared_ptr<const LoadedRig>> rig = store_->Get(req->rig_id());
  if (!rig.ok()) return ToGrpcStatus(rig.status());
  *resp->mutable_info() = (*rig)->info;
  if (req->include_rig()) *resp->mutable_rig() = RigToProto((*rig)->rig);
  return grpc::Status::OK;
}

grpc::Status RigServiceImpl::ListRigs(grpc::ServerContext*, const v1::ListRigsRequest* req,
                                      v1::ListRigsResponse* resp) {
  if (req->page_size() > 1000)
    return ToGrpcStatus(absl::InvalidArgumentError(
        absl::StrFormat("page_size %u exceeds 1000", req->page_size())));
  const size_t page = req->page_size() == 0 ? 100 : req->page_size();
  absl::StatusOr<std::vector<v1::RigInfo>> all = store_->List();
  if (!all.ok()) return ToGrpcStatus(all.status());
  // The page token is the last id of the previous page; ids are sorted.
  auto it = all->begin();
  if (!req->page_token().empty()) {
    it = std::upper_bound(all->begin(), all->end(), req->page_token(),
                          [](const std::string& token, const v1::RigInfo& info) { return token < info.rig_id(); });
  }
  for (; it != all->end() && static_cast<size_t>(resp->rigs_size()) < page; ++it) *resp->add_rigs() = *it;
  if (it != all->end() && resp->rigs_size() > 0)
    resp->set_next_page_token(resp->rigs(resp->rigs_size() - 1).rig_id());
  return grpc::Status::OK;
}

grpc::Status RigServiceImpl::DeleteRig(grpc::ServerContext*, const v1::DeleteRigRequest* req,
                                       v1::DeleteRigResponse* resp) {
  absl::StatusOr<bool> deleted = store_->Delete(req->rig_id());
  if (!deleted.ok()) return ToGrpcStatus(deleted.status());
  if (!*deleted) return ToGrpcStatus(absl::NotFoundError(absl::StrCat("rig '", req->rig_id(), "' not found")));
  resp->set_deleted(true);
  return grpc::Status::OK;
}

grpc::Status PoseServiceImpl::Pose(grpc::ServerContext*, const v1::PoseRequest* req,
                                   v1::PoseResponse* resp) {
  absl::StatusOr<std::shared_ptr<const LoadedRig>> rig = store_->Get(req->rig_id());
  if (!rig.ok()) return ToGrpcStatus(rig.status());
  return ToGrpcStatus(PoseFrame(**rig, req->pose(), req->method(), req->outputs(), resp->mutable_frame()));
}

grpc::Status PoseServiceImpl::PoseClip(grpc::ServerContext* ctx, const v1::PoseClipRequest* req,
                                       v1::PoseClipResponse* resp) {
  if (req->frames_size() > max_clip_frames_)
    return ToGrpcStatus(absl::ResourceExhaustedError(absl::StrFormat(
        "frames: %d frames exceed the server limit of %d per clip", req->frames_size(), max_clip_frames_)));
  absl::StatusOr<std::shared_ptr<const LoadedRig>> rig = store_->Get(req->rig_id());
  if (!rig.ok()) return ToGrpcStatus(rig.status());
  for (int f = 0; f < req->frames_size(); ++f) {
    if (ctx->IsCancelled()) return grpc::Status(grpc::StatusCode::CANCELLED, "client cancelled");
    const std::string field = absl::StrFormat("frames[%d]", f);
    if (auto s = PoseFrame(**rig, req->frames(f), req->method(), req->outputs(), resp->add_frames(), field.c_str());
        !s.ok())
      return ToGrpcStatus(s);
  }
  return grpc::Status::OK;
}

grpc::Status PoseServiceImpl::PoseSession(
    grpc::ServerContext* ctx,
    grpc::ServerReaderWriter<v1::PoseSessionResponse, v1::PoseSessionRequest>* stream) {
  v1::PoseSessionRequest req;
  std::shared_ptr<const LoadedRig> rig;
  v1::Method method = v1::METHOD_UNSPECIFIED;
  v1::PoseOutputs outputs;
  v1::PoseSessionResponse resp;
  uint64_t frames = 0;
  while (stream->Read(&req)) {
    if (draining_->load())
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "server is shutting down; reconnect to continue the session");
    if (!rig) {
      if (req.rig_id().empty())
        return ToGrpcStatus(absl::InvalidArgumentError("rig_id is required in the first message of a session"));
      absl::StatusOr<std::shared_ptr<const LoadedRig>> loaded = store_->Get(req.rig_id());
      if (!loaded.ok()) return ToGrpcStatus(loaded.status());
      rig = *std::move(loaded);
    } else if (!req.rig_id().empty() && req.rig_id() != rig->id) {
      return ToGrpcStatus(absl::InvalidArgumentError(absl::StrCat(
          "rig_id '", req.rig_id(), "' differs from the session's rig '", rig->id, "'")));
    }
    if (req.method() != v1::METHOD_UNSPECIFIED) method = req.method();
    if (req.has_outputs()) outputs = req.outputs();
    resp.Clear();
    resp.set_sequence(req.sequence());
    const std::string field = absl::StrFormat("frame %d: pose", frames);
    if (auto s = PoseFrame(*rig, req.pose(), method, outputs, resp.mutable_frame(), field.c_str()); !s.ok())
      return ToGrpcStatus(s);
    if (!stream->Write(resp)) break;  // the client went away
    ++frames;
  }
  if (ctx->IsCancelled()) return grpc::Status(grpc::StatusCode::CANCELLED, "session cancelled");
  return grpc::Status::OK;
}

}  // namespace skinning
