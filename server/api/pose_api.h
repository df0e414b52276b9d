// PoseService's logic, transport-neutral: one frame, a clip, and interactive sessions. Every call
// opens its target once through the Poser (rig, tenant access, bake, deformer, PSD model).
#ifndef SKINNING_SERVER_API_POSE_API_H_
#define SKINNING_SERVER_API_POSE_API_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "server/api/call_context.h"
#include "server/pose/posing.h"
#include "skinning/v1/pose_service.pb.h"

namespace skinning {

class PoseApi {
 public:
  // One PoseSession stream: the transport reads a request, calls Step, writes the response, until
  // the client half-closes or Step fails (the error ends the stream).
  class Session {
   public:
    // One frame. The first request names the rig (and optionally the bake); later ones may
    // change the deformer and outputs. UNAVAILABLE once the server drains; NOT_FOUND (or
    // PERMISSION_DENIED) when the rig or bake was deleted while the session was open (asked
    // again at most once a second: SessionRecheck).
    absl::Status Step(const v1::PoseSessionRequest& req, v1::PoseSessionResponse* resp);
    // Whether Step(next) may ask the store: the first frame (it opens the rig and bake), one
    // whose recheck is due, or a PSD frame (the session's deformer, or the one `next` switches
    // to) whose examples' copy is stale. The transports run a quick frame on their socket
    // threads only when it will not.
    bool NeedsStore(const v1::PoseSessionRequest& next) const {
      return target_.rig == nullptr || recheck_.IsDue() || !poser_->Resident(ctx_.tenant(), target_, DeformerOf(next));
    }

   private:
    // The deformer `req` poses with: the one it names, else the session's of before.
    v1::Deformer DeformerOf(const v1::PoseSessionRequest& req) const {
      return req.deformer() != v1::DEFORMER_UNSPECIFIED ? req.deformer() : deformer_;
    }
    friend class PoseApi;
    Session(Poser* poser, CallContext ctx) : poser_(poser), ctx_(std::move(ctx)) {}
    Poser* poser_;
    const CallContext ctx_;
    PoseTarget target_;  // set by the first frame
    std::string rig_;
    std::string bake_;  // as the first message named it ("" = the rig's own weights)
    v1::Deformer deformer_ = v1::DEFORMER_UNSPECIFIED;
    v1::PoseOutputs outputs_;
    int64_t frames_ = 0;
    SessionRecheck recheck_;
    FrameMemory memory_;  // the deformer's state from the last frame (elastic: its warm start)
  };

  // `poser` must outlive this object and its sessions. A clip's answer may hold up to
  // `max_answer_bytes` (the transports' message limit; 0 = no limit).
  PoseApi(Poser* poser, int max_clip_frames, size_t max_answer_bytes = 0)
      : poser_(poser), max_clip_frames_(max_clip_frames), max_answer_bytes_(max_answer_bytes) {}

  absl::Status Pose(const CallContext& ctx, const v1::PoseRequest& req, v1::PoseResponse* resp);
  // What decides a Pose call's cost, hashed: the rig and bake (loaded or not, their size), the
  // deformer and the outputs. The doors run a call on their socket threads when the last one of
  // its kind (and tenant) was quick (QuickKinds).
  static uint64_t CostKey(const v1::PoseRequest& req);
  // Whether Pose would answer from memory now, asking the store nothing (Poser::Resident): the
  // doors run a quick call on their socket threads only then.
  bool Resident(const CallContext& ctx, const v1::PoseRequest& req) {
    return poser_->Resident(ctx.tenant(), req.rig(), req.bake(), req.deformer());
  }
  // RESOURCE_EXHAUSTED past the clip limit, and as soon as the frames made so far outgrow the
  // answer limit (before the rest are computed: a short request for many frames of a large rig
  // would otherwise build an answer of gigabytes only for the transport to refuse it); stops
  // between frames when the call is no longer wanted.
  absl::Status PoseClip(const CallContext& ctx, const v1::PoseClipRequest& req, v1::PoseClipResponse* resp);
  std::unique_ptr<Session> OpenSession(CallContext ctx) {
    return std::unique_ptr<Session>(new Session(poser_, std::move(ctx)));
  }

 private:
  Poser* poser_;
  const int max_clip_frames_;
  const size_t max_answer_bytes_;
};

}  // namespace skinning

#endif  // SKINNING_SERVER_API_POSE_API_H_
