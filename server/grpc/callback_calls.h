// The calls served on gRPC's callback API: the two bidirectional sessions (PoseSession,
// SolveSession) and unary Pose. An open session holds no thread: each is a reactor that reads a
// request, runs the session's Step, writes the answer and reads again — one operation outstanding
// at a time, so frames are answered in order. An idle session costs its reactor and the
// session's state (its warm start), nothing more; the host bounds how many are open
// (RESOURCE_EXHAUSTED past --max_sessions).
//
// Where the work runs: gRPC 1.51 runs every callback on two threads of its own that also move
// the sockets' bytes, so work that is quick runs right there (no hand-off: a hand-off to a pool
// and back cost a fifth of the frames/s of 16 LBS sessions on 2 cores) and anything else on the
// CallbackHost's pool (--callback_threads), so those threads are never held for long. Quick is
// learned: a session's frame runs inline when its previous frame was quick; a Pose call when the
// last call with the same tenant, rig, bake, deformer and outputs was (the first such call, which
// may load the rig and bake from the store, runs on the pool).
#ifndef SKINNING_SERVER_GRPC_CALLBACK_CALLS_H_
#define SKINNING_SERVER_GRPC_CALLBACK_CALLS_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>

#include <grpcpp/grpcpp.h>
#include <google/protobuf/arena.h>
#include <grpcpp/support/message_allocator.h>
#include <grpcpp/support/server_callback.h>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "server/api/call_context.h"
#include "server/api/quick.h"
#include "server/grpc/grpc_status.h"

namespace skinning {

// Admits a call of either gRPC API (sync or callback) through the gate.
absl::StatusOr<CallContext> AdmitGrpcCall(const CallGate& gate, grpc::ServerContextBase* ctx);

// The pool that runs callback work that is not quick, the count of open sessions, and which
// kinds of unary call were quick last time.
class CallbackHost {
 public:
  // threads <= 0: twice AvailableCpus(), at least 4 (a slow frame of one session does
  // not hold back the others). max_sessions <= 0: no limit.
  CallbackHost(int threads, int max_sessions);
  ~CallbackHost();  // waits for the work running (none once the gRPC server has shut down)
  CallbackHost(const CallbackHost&) = delete;
  CallbackHost& operator=(const CallbackHost&) = delete;

  // Whether the last call of kind `key` (a hash of what decides its cost) was quick; false for a
  // kind not seen yet.
  bool WasQuick(uint64_t key) const { return quick_.WasQuick(key); }
  void RecordQuick(uint64_t key, bool quick) { quick_.Record(key, quick); }

  // Counts a session in; false at the limit.
  bool TryOpen();
  void Close() { open_.fetch_sub(1); }
  int open() const { return open_.load(); }
  // Sessions waiting for their client's next frame: open calls with no work in flight, which a
  // drain need not wait for (SkinningServer::Shutdown).
  void Idle(int delta) { idle_.fetch_add(delta); }
  int idle() const { return idle_.load(); }
  int max_sessions() const { return max_sessions_; }
  int threads() const { return threads_; }
  void Post(std::function<void()> work);

 private:
  struct Pool;
  const int threads_;
  const int max_sessions_;
  std::atomic<int> open_{0};
  std::atomic<int> idle_{0};
  std::unique_ptr<Pool> pool_;
  QuickKinds quick_;
};

// Request and response of a callback unary call allocated on one protobuf arena whose first
// block lives in the holder itself: one allocation per call instead of one per sub-message and
// repeated field (a 20-joint Pose request is ~80), all freed at once when the call ends.
template <typename Request, typename Response>
class ArenaMessageAllocator final : public grpc::MessageAllocator<Request, Response> {
 public:
  grpc::MessageHolder<Request, Response>* AllocateMessages() override { return new Holder(); }

 private:
  class Holder final : public grpc::MessageHolder<Request, Response> {
   public:
    Holder() : arena_(Options(block_)) {
      this->set_request(google::protobuf::Arena::CreateMessage<Request>(&arena_));
      this->set_response(google::protobuf::Arena::CreateMessage<Response>(&arena_));
    }
    void Release() override { delete this; }

   private:
    static google::protobuf::ArenaOptions Options(char* block) {
      google::protobuf::ArenaOptions o;
      o.initial_block = block;
      o.initial_block_size = sizeof(block_);
      o.start_block_size = sizeof(block_);  // later blocks, when a message outgrows the first
      return o;
    }
    alignas(16) char block_[8192];  // before arena_, which is built on it
    google::protobuf::Arena arena_;
  };
};

// One session stream. `Session` has absl::Status Step(const Request&, Response*). Deletes itself
// when gRPC is done with the call.
template <typename Request, typename Response, typename Session>
class SessionReactor final : public grpc::ServerBidiReactor<Request, Response> {
 public:
  // `open` makes the session from the admitted call's context.
  template <typename Open>
  SessionReactor(grpc::CallbackServerContext* ctx, const CallGate& gate, CallbackHost* host, Open open)
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
    Read();
  }

  void OnReadDone(bool ok) override {
    host_->Idle(-1);
    if (!ok) return End();  // the client half-closed, went away, or the call was cancelled
    // Inline when the last frame was quick and this one asks the store nothing; the first frame
    // (it opens the rig and bake), one whose recheck of them is due, and frames after a slow one
    // on the pool (a stalled store would hold the callback thread).
    if (quick_ && !session_->NeedsStore(request_)) return RunStep();
    host_->Post([this] { RunStep(); });
  }

  void OnWriteDone(bool ok) override {
    if (!ok) return End();  // the client went away
    Read();
  }

  void OnDone() override {
    if (counted_) host_->Close();
    delete this;
  }

 private:
  // The last use of `this` here is Finish or StartWrite: after either, gRPC may end the call
  // (OnDone) on another thread.
  void RunStep() {
    const QuickTimer timer;
    absl::Status s = session_->Step(request_, &response_);
    quick_ = timer.Quick();
    if (!s.ok()) return this->Finish(ToGrpcStatus(s));
    this->StartWrite(&response_);
  }

  // Waits for the next frame, counted idle until it comes (every StartRead ends in one OnReadDone).
  void Read() {
    host_->Idle(1);
    this->StartRead(&request_);
  }

  void End() {
    this->Finish(ctx_->IsCancelled() ? grpc::Status(grpc::StatusCode::CANCELLED, "session cancelled")
                                     : grpc::Status::OK);
  }

  grpc::CallbackServerContext* const ctx_;
  CallbackHost* const host_;
  bool counted_ = false;
  bool quick_ = false;  // the last frame was quick (QuickTimer)
  std::unique_ptr<Session> session_;
  Request request_;
  Response response_;
};

}  // namespace skinning

#endif  // SKINNING_SERVER_GRPC_CALLBACK_CALLS_H_
