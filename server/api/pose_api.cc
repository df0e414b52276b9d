#include "server/api/pose_api.h"

#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/util/status_macros.h"

namespace skinning {

uint64_t PoseApi::CostKey(const v1::PoseRequest& req) {
  return absl::HashOf(req.rig(), req.bake(), static_cast<int>(req.deformer()), req.outputs().vertices(),
                      req.outputs().normals(), req.outputs().transforms());
}

absl::Status PoseApi::Pose(const CallContext& ctx, const v1::PoseRequest& req, v1::PoseResponse* resp) {
  // A call that waited for a thread past its deadline is not worked on (the clock only: one
  // frame is too short to be worth polling for cancellation).
  RETURN_IF_ERROR(ctx.DeadlinePassed());
  ASSIGN_OR_RETURN(PoseTarget target, poser_->Open(ctx.tenant(), req.rig(), req.bake()));
  ASSIGN_OR_RETURN(const Deformer* deformer, poser_->Use(req.deformer(), ctx.tenant(), &target));
  return poser_->Frame(target, *deformer, req.pose(), req.outputs(), resp->mutable_frame());
}

absl::Status PoseApi::PoseClip(const CallContext& ctx, const v1::PoseClipRequest& req, v1::PoseClipResponse* resp) {
  if (req.poses_size() > max_clip_frames_)
    return absl::ResourceExhaustedError(absl::StrFormat("poses: %d frames exceed the server limit of %d per clip",
                                                        req.poses_size(), max_clip_frames_));
  ASSIGN_OR_RETURN(PoseTarget target, poser_->Open(ctx.tenant(), req.rig(), req.bake()));
  ASSIGN_OR_RETURN(const Deformer* deformer, poser_->Use(req.deformer(), ctx.tenant(), &target));
  FrameMemory memory;  // consecutive frames: the elastic solve starts from the last one
  size_t answer_bytes = 0;
  for (int f = 0; f < req.poses_size(); ++f) {
    if (absl::Status s = ctx.StillWanted(); !s.ok())
      return absl::Status(s.code(), absl::StrFormat("poses[%d] of %d: %s", f, req.poses_size(), s.message()));
    const std::string field = absl::StrFormat("poses[%d]", f);
    v1::PosedFrame* frame = resp->add_frames();
    RETURN_IF_ERROR(poser_->Frame(target, *deformer, req.poses(f), req.outputs(), frame, field.c_str(), &memory));
    answer_bytes += frame->ByteSizeLong() + 6;  // the frame and its field tag and length
    if (max_answer_bytes_ > 0 && answer_bytes > max_answer_bytes_)
      return absl::ResourceExhaustedError(absl::StrFormat(
          "poses: the answer outgrows the server's message limit of %d MiB (--max_message_mb) at frame %d of %d "
          "(about %d bytes a frame); ask for fewer frames a call, or fewer outputs",
          max_answer_bytes_ >> 20, f + 1, req.poses_size(), answer_bytes / (f + 1)));
  }
  return absl::OkStatus();
}

absl::Status PoseApi::Session::Step(const v1::PoseSessionRequest& req, v1::PoseSessionResponse* resp) {
  if (ctx_.draining()) return DrainingSessionError();
  if (target_.rig == nullptr) {
    if (req.rig().empty()) return absl::InvalidArgumentError("rig is required in the first message of a session");
    ASSIGN_OR_RETURN(target_, poser_->Open(ctx_.tenant(), req.rig(), req.bake()));
    rig_ = req.rig();
    bake_ = req.bake();
    recheck_.Restart();
  } else if (!req.rig().empty() && req.rig() != rig_) {
    return absl::InvalidArgumentError(
        absl::StrCat("rig '", req.rig(), "' differs from the session's rig '", rig_, "'"));
  } else if (!req.bake().empty() && req.bake() != bake_) {
    // The bake is chosen by the first message; a later one was ignored, and the frame answered
    // with the weights of before. Refused like another rig, so a client cannot mistake the two.
    return absl::InvalidArgumentError(absl::StrCat(
        "bake '", req.bake(), "' differs from the session's ",
        bake_.empty() ? std::string("(none: the rig's own weights)") : absl::StrCat("bake '", bake_, "'"),
        "; the first message chooses the bake: open a new session to pose with another"));
  }
  if (recheck_.Due()) {
    if (absl::Status s = poser_->StillStored(target_, ctx_.tenant()); !s.ok()) return SessionTargetGone(frames_ + 1, s);
  }
  deformer_ = DeformerOf(req);
  if (req.has_outputs()) outputs_ = req.outputs();
  resp->Clear();
  resp->set_sequence(req.sequence());
  // PSD: the model of the caller's current examples (a cache lookup after the first frame).
  ASSIGN_OR_RETURN(const Deformer* deformer, poser_->Use(deformer_, ctx_.tenant(), &target_));
  // Frames count from 1, as the front door's transport counts them.
  const std::string field = absl::StrFormat("frame %d: pose", frames_ + 1);
  RETURN_IF_ERROR(
      poser_->Frame(target_, *deformer, req.pose(), outputs_, resp->mutable_frame(), field.c_str(), &memory_));
  ++frames_;
  return absl::OkStatus();
}

}  // namespace skinning
