// What a service handler knows of the call it serves, whichever door the call came through
// (gRPC today; HTTP/JSON or WebSocket later): the caller's tenant, the deadline, whether the
// caller gave up, whether the server is draining. CallGate admits calls in the first place.
#ifndef SKINNING_SERVER_API_CALL_CONTEXT_H_
#define SKINNING_SERVER_API_CALL_CONTEXT_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/auth/token_file.h"

namespace skinning {

class CallContext {
 public:
  // A context of tenant "" without deadline that is never cancelled (tests, internal calls).
  CallContext() = default;
  // `cancelled` (may be empty: never) is asked from the handler's thread; `draining` may be null.
  CallContext(std::string tenant, std::chrono::system_clock::time_point deadline, std::function<bool()> cancelled,
              const std::atomic<bool>* draining)
      : tenant_(std::move(tenant)), deadline_(deadline), cancelled_(std::move(cancelled)), draining_(draining) {}

  // The caller's tenant ("" with authentication off).
  const std::string& tenant() const { return tenant_; }
  std::chrono::system_clock::time_point deadline() const { return deadline_; }
  // The client cancelled the call or went away.
  bool cancelled() const { return cancelled_ && cancelled_(); }
  // The server is shutting down: sessions and watches end so clients reconnect elsewhere.
  bool draining() const { return draining_ != nullptr && draining_->load(); }

  // DEADLINE_EXCEEDED once the deadline has passed, else OK. Cheap (reads the clock).
  absl::Status DeadlinePassed() const;
  // DeadlinePassed, then CANCELLED once the client cancelled, else OK. Long unary work (PoseClip
  // frames, FAST iterations, the stages of CreateRig) checks it between steps and stops, so a
  // server under load does not finish answers nobody waits for. Bakes are jobs, not calls: they
  // run on whatever happens to the StartBake call.
  absl::Status StillWanted() const;

 private:
  std::string tenant_;
  std::chrono::system_clock::time_point deadline_ = std::chrono::system_clock::time_point::max();
  std::function<bool()> cancelled_;
  const std::atomic<bool>* draining_ = nullptr;
};

// Admits calls: UNAVAILABLE while the server drains (the client retries on another replica),
// UNAUTHENTICATED without a valid bearer token, else the call's context.
class CallGate {
 public:
  // Both must outlive this object. `tokens` null: authentication off.
  CallGate(const TokenFile* tokens, const std::atomic<bool>* draining) : tokens_(tokens), draining_(draining) {}

  // `authorization`: the value of the call's authorization header or metadata, if any.
  absl::StatusOr<CallContext> Admit(std::optional<absl::string_view> authorization,
                                    std::chrono::system_clock::time_point deadline,
                                    std::function<bool()> cancelled) const;

 private:
  const TokenFile* tokens_;
  const std::atomic<bool>* draining_;
};

// When an open session asks the store again whether its rig and bake are still there
// (Bakes::StillStored): at a frame at least kInterval after the last time, so a deleted rig ends
// the session within about a second of frames, at one or two store lookups a second, none per
// frame.
class SessionRecheck {
 public:
  static constexpr std::chrono::seconds kInterval{1};
  // True (and the clock restarts) when a frame now should check.
  bool Due() {
    const auto now = std::chrono::steady_clock::now();
    if (now < next_) return false;
    next_ = now + kInterval;
    return true;
  }
  // Whether a frame now would check (Due without restarting the clock).
  bool IsDue() const { return std::chrono::steady_clock::now() >= next_; }
  // The check just made by opening: the next one is due after kInterval.
  void Restart() { next_ = std::chrono::steady_clock::now() + kInterval; }

 private:
  std::chrono::steady_clock::time_point next_{};
};

// The error that ends a session whose rig or bake is gone: the code of `gone`, naming the frame.
absl::Status SessionTargetGone(int64_t frame, const absl::Status& gone);

// The answers of a draining server, the same through every door.
absl::Status DrainingError();         // a new call: retry on another replica
absl::Status DrainingSessionError();  // a session's next frame: reconnect to continue
absl::Status DrainingWatchError();    // a watch: watch again elsewhere

}  // namespace skinning

#endif  // SKINNING_SERVER_API_CALL_CONTEXT_H_
