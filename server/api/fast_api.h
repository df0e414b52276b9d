// FastService's logic, transport-neutral: one FAST solve, and interactive solve sessions that
// keep their warm start and factored constraint set. Needs the tenant's access to the bake's rig.
#ifndef SKINNING_SERVER_API_FAST_API_H_
#define SKINNING_SERVER_API_FAST_API_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "server/api/call_context.h"
#include "server/bake/bakes.h"
#include "server/fast/fast_solver.h"
#include "skinning/v1/fast_service.pb.h"

namespace skinning {

class FastApi {
 public:
  // One SolveSession stream, driven by the transport as PoseApi::Session.
  class Session {
   public:
    // One frame; the first names the bake. UNAVAILABLE once the server drains; errors name the
    // frame ("frame 3: constraints[0].joint = 17 ..."). NOT_FOUND (or PERMISSION_DENIED) when the
    // rig or bake was deleted while the session was open (asked again at most once a second).
    absl::Status Step(const v1::SolveSessionRequest& req, v1::SolveSessionResponse* resp);
    // Whether Step(next) may ask the store (as PoseApi::Session::NeedsStore): the first frame, or
    // one whose recheck is due; what the frame asks for does not matter.
    bool NeedsStore(const v1::SolveSessionRequest& /*next*/) const { return solver_ == nullptr || recheck_.IsDue(); }

   private:
    friend class FastApi;
    Session(FastApi* api, CallContext ctx) : api_(api), ctx_(std::move(ctx)) {}
    FastApi* api_;
    const CallContext ctx_;
    std::unique_ptr<FastFrameSolver> solver_;  // opened by the first frame
    int64_t frames_ = 0;
    SessionRecheck recheck_;
  };

  explicit FastApi(Bakes* bakes) : bakes_(bakes) {}

  // Stops after the constraint set is factored and between chunks of iterations when the call
  // is no longer wanted.
  absl::Status Solve(const CallContext& ctx, const v1::SolveRequest& req, v1::SolveResponse* resp);
  // Whether Solve would open the bake from memory now, asking the store nothing (Bakes::Resident).
  bool Resident(const CallContext& ctx, const v1::SolveRequest& req);
  std::unique_ptr<Session> OpenSession(CallContext ctx) {
    return std::unique_ptr<Session>(new Session(this, std::move(ctx)));
  }

 private:
  // The solver of the fast_model bake named `bake`, after the tenant's access check.
  absl::StatusOr<std::unique_ptr<FastFrameSolver>> Open(const CallContext& ctx, const std::string& bake);

  Bakes* bakes_;
};

}  // namespace skinning

#endif  // SKINNING_SERVER_API_FAST_API_H_
