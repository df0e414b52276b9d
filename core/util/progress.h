// Progress reporting and cancellation for long computations (bakes).
#ifndef SKINNING_CORE_UTIL_PROGRESS_H_
#define SKINNING_CORE_UTIL_PROGRESS_H_

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"

namespace skinning {

// Passed by const reference into long computations. Report() maps a stage-local fraction in
// [0, 1] into the caller's range; Sub() narrows the range for a sub-step. Cancelled() polls a
// flag the caller may set from another thread; computations check it at least every ~50 ms of
// work and then return absl::CancelledError (see CheckCancelled). A default Progress reports
// nowhere and is never cancelled.
class Progress {
 public:
  using Callback = std::function<void(const std::string& stage, double fraction)>;

  Progress() = default;
  Progress(Callback callback, const std::atomic<bool>* cancel)
      : callback_(std::make_shared<Callback>(std::move(callback))), cancel_(cancel) {}

  // `fraction` of this range's work is done, in stage `stage` (e.g. "voxelize", "factorize",
  // "solve handle 3/20").
  void Report(const std::string& stage, double fraction) const {
    if (callback_ && *callback_) {
      const double f = fraction < 0 ? 0 : fraction > 1 ? 1 : fraction;
      (*callback_)(stage, begin_ + (end_ - begin_) * f);
    }
  }
  bool Cancelled() const {
    return (cancel_ != nullptr && cancel_->load(std::memory_order_relaxed)) ||
           (also_cancel_ != nullptr && also_cancel_->load(std::memory_order_relaxed));
  }
  // CANCELLED when cancelled, OK otherwise.
  absl::Status CheckCancelled() const {
    return Cancelled() ? absl::CancelledError("cancelled") : absl::OkStatus();
  }
  // This progress, also cancelled once *flag is set (by a watcher of whether the work is still
  // wanted). Every copy shares the flag, so one that outlives its caller stays valid.
  Progress AlsoCancelledBy(std::shared_ptr<const std::atomic<bool>> flag) const {
    Progress p = *this;
    p.also_cancel_ = std::move(flag);
    return p;
  }
  // The sub-range [begin, end) of this range (fractions of this range).
  Progress Sub(double begin, double end) const {
    Progress p = *this;
    p.begin_ = begin_ + (end_ - begin_) * begin;
    p.end_ = begin_ + (end_ - begin_) * end;
    return p;
  }

 private:
  std::shared_ptr<Callback> callback_;
  const std::atomic<bool>* cancel_ = nullptr;
  std::shared_ptr<const std::atomic<bool>> also_cancel_;
  double begin_ = 0.0, end_ = 1.0;
};

}  // namespace skinning

#endif  // SKINNING_CORE_UTIL_PROGRESS_H_
