#include "server/api/call_context.h"

#include "absl/strings/str_format.h"
#include "core/util/status_macros.h"

namespace skinning {

absl::Status CallContext::DeadlinePassed() const {
  if (std::chrono::system_clock::now() < deadline_) return absl::OkStatus();
  return absl::DeadlineExceededError("the call's deadline passed before the work was done; the work was stopped");
}

absl::Status CallContext::StillWanted() const {
  RETURN_IF_ERROR(DeadlinePassed());
  if (cancelled()) return absl::CancelledError("the client cancelled the call; the work was stopped");
  return absl::OkStatus();
}

absl::StatusOr<CallContext> CallGate::Admit(std::optional<absl::string_view> authorization,
                                            std::chrono::system_clock::time_point deadline,
                                            std::function<bool()> cancelled) const {
  if (draining_->load()) return DrainingError();
  std::string tenant;
  if (tokens_ != nullptr) {
    ASSIGN_OR_RETURN(tenant, tokens_->Current()->Authenticate(authorization));
  }
  return CallContext(std::move(tenant), deadline, std::move(cancelled), draining_);
}

absl::Status DrainingError() {
  return absl::UnavailableError("server is shutting down; retry on another replica");
}

absl::Status SessionTargetGone(int64_t frame, const absl::Status& gone) {
  return absl::Status(gone.code(), absl::StrFormat("frame %d: %s; the session ends",
                                                   frame, gone.message()));
}

absl::Status DrainingSessionError() {
  return absl::UnavailableError("server is shutting down; reconnect to continue the session");
}

absl::Status DrainingWatchError() {
  return absl::UnavailableError("server is shutting down; watch again elsewhere");
}

}  // namespace skinning
