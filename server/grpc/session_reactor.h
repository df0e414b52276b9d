// The gRPC door of the two bidirectional sessions (PoseSession, SolveSession) on gRPC's callback
// API: an open session holds no thread. Each is a reactor that reads a request, runs the
// session's Step (on the SessionHost's step pool, or inline when its frames are quick), writes
// the answer and reads again — one operation outstanding at a time, so frames are answered in
// order. An idle session costs its
// reactor and the session's state (its warm start), nothing more; the host bounds how many are
// open (RESOURCE_EXHAUSTED past --max_sessions).
#ifndef SKINNING_SERVER_GRPC_SESSION_REACTOR_H_
#define SKINNING_SERVER_GRPC_SESSION_REACTOR_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <utility>

#include <grpcpp/grpcpp.h>
#include <grpcpp/support/server_callback.h>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "server/api/call_context.h"
#include "server/grpc/grpc_status.h"

namespace skinning {

// CPU seconds used by the calling thread so far.
double ThreadCpuSeconds();

// Admits a call of either gRPC API (sync or callback) through the gate.
absl::StatusOr<CallContext> AdmitGrpcCall(const CallGate& gate, grpc::ServerContextBase* ctx);

// The threads that run session steps and the count of open sessions. Steps are CPU work (a
// frame: microseconds to a second for an elastic one), so they run here rather than on gRPC's
// callback threads, which must not block.
class SessionHost {
 public:
  // threads <= 0: twice the hardware concurrency, at least 4 (a slow frame of one session does
  // not hold back the others). max_sessions <= 0: no limit.
  SessionHost(int threads, int max_sessions);
  ~SessionHost();  // waits for the steps running (none once the gRPC server has shut down)
  SessionHost(const SessionHost&) = delete;
  SessionHost& operator=(const SessionHost&) = delete;

  // Counts a session in; false at the limit.
  bool TryOpen();
  void Close() { open_.fetch_sub(1); }
  int open() const { return open_.load(); }
  int max_sessions() const { return max_sessions_; }
  int threads() const { return threads_; }
  void Post(std::function<void()> step);

 private:
  struct Pool;
  const int threads_;
  const int max_sessions_;
  std::atomic<int> open_{0};
  std::unique_ptr<Pool> pool_;
};

// One session stream. `Session` has absl::Status Step(const Request&, Response*). Deletes itself
// when gRPC is done with the call.
template <typename Request, typename Response, typename Session>
class SessionReactor final : public grpc::ServerBidiReactor<Request, Response> {
 public:
  // `open` makes the session from the admitted call's context.
  template <typename Open>
  SessionReactor(grpc::CallbackServerContext* ctx, const CallGate& gate, SessionHost* host, Open open)
      : ctx_(ctx), host_(host) {
    absl::StatusOr<CallContext> call = AdmitGrpcCall(gate, ctx);
    if (!call.ok()) {
      this->Finish(ToGrpcStatus(call.status()));
      return;
    }
    if (!host_->TryOpen()) {
      this->Finish(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                                absl::StrCat("this replica has ", host_->max_sessions(),
                                             " sessions open, its limit (--max_sessions); close one or retry later")));
      return;
    }
    counted_ = true;
    session_ = open(*std::move(call));
    this->StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) return End();  // the client half-closed, went away, or the call was cancelled
    // A session whose last frame was quick runs the next one here, on gRPC's callback thread (a
    // hand-off to the pool and back costs about a fifth of the frames/s of 16 LBS sessions on 2
    // cores); the first frame (it opens the rig and bake, maybe from the store) and frames after
    // a slow one go to the step pool, so gRPC's threads are never held for long.
    if (quick_) return RunStep();
    host_->Post([this] { RunStep(); });
  }

  void OnWriteDone(bool ok) override {
    if (!ok) return End();  // the client went away
    this->StartRead(&request_);
  }

  void OnDone() override {
    if (counted_) host_->Close();
    delete this;
  }

 private:
  // The last use of `this` here is Finish or StartWrite: after either, gRPC may end the call
  // (OnDone) on another thread.
  void RunStep() {
    const auto start = std::chrono::steady_clock::now();
    const double cpu_start = ThreadCpuSeconds();
    absl::Status s = session_->Step(request_, &response_);
    // Quick: little CPU (under contention a quick frame can take long on the clock) and no long
    // wait (on the store, say).
    quick_ = ThreadCpuSeconds() - cpu_start < kQuickStepCpuSeconds &&
             std::chrono::steady_clock::now() - start < kQuickStepWall;
    if (!s.ok()) return this->Finish(ToGrpcStatus(s));
    this->StartWrite(&response_);
  }

  void End() {
    this->Finish(ctx_->IsCancelled() ? grpc::Status(grpc::StatusCode::CANCELLED, "session cancelled")
                                     : grpc::Status::OK);
  }

  grpc::CallbackServerContext* const ctx_;
  SessionHost* const host_;
  static constexpr double kQuickStepCpuSeconds = 0.002;
  static constexpr std::chrono::milliseconds kQuickStepWall{50};
  bool counted_ = false;
  bool quick_ = false;  // the last frame was quick (see RunStep)
  std::unique_ptr<Session> session_;
  Request request_;
  Response response_;
};

}  // namespace skinning

#endif  // SKINNING_SERVER_GRPC_SESSION_REACTOR_H_
