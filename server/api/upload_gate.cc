#include "server/api/upload_gate.h"

#include <chrono>

#include "absl/strings/str_format.h"

namespace skinning {

UploadGate::Turn::~Turn() {
  if (gate_ != nullptr) gate_->Leave();
}

absl::StatusOr<UploadGate::Turn> UploadGate::Enter(const CallContext& ctx) {
  std::unique_lock<std::mutex> lock(mu_);
  if (reading_ < readers_) {
    ++reading_;
    return Turn(this);
  }
  if (waiting_ >= waiting_limit_) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "glTF uploads: this replica reads %d at once and %d are waiting, its limits (--max_gltf_reads, "
        "--gltf_read_queue); retry later",
        reading_, waiting_));
  }
  ++waiting_;
  absl::Status wanted;
  while (reading_ >= readers_) {
    freed_.wait_for(lock, std::chrono::milliseconds(50));
    wanted = ctx.draining() ? DrainingError() : ctx.StillWanted();
    if (!wanted.ok()) break;
  }
  --waiting_;
  // A turn freed just as the call stopped being wanted is not taken; the other waiters see it
  // within 50 ms.
  if (!wanted.ok()) return wanted;
  ++reading_;
  return Turn(this);
}

void UploadGate::Leave() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    --reading_;
  }
  freed_.notify_one();
}

UploadGate::Counts UploadGate::counts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {reading_, waiting_};
}

}  // namespace skinning
