// How many glTF uploads (CreateRig from a file) a replica reads at once. Reading one takes memory
// in proportion to the file and to what it declares, up to the upload limits (a 44 MB .glb of 1M
// vertices peaked at 323 MB in the reader alone; compressed views may decompress to 1 GiB), so a
// burst of uploads on the server's 128 call threads could take more memory than a pod has. The
// gate lets `readers` read at once and at most `waiting` more wait for a turn; beyond that an
// upload is refused at once with RESOURCE_EXHAUSTED (the client retries later or elsewhere).
#ifndef SKINNING_SERVER_API_UPLOAD_GATE_H_
#define SKINNING_SERVER_API_UPLOAD_GATE_H_

#include <condition_variable>
#include <mutex>

#include "absl/status/statusor.h"
#include "server/api/call_context.h"

namespace skinning {

class UploadGate {
 public:
  // readers ≥ 1; waiting ≥ 0.
  UploadGate(int readers, int waiting) : readers_(readers), waiting_limit_(waiting) {}
  UploadGate(const UploadGate&) = delete;
  UploadGate& operator=(const UploadGate&) = delete;

  // A turn to read; it ends when the Turn is destroyed. Must not outlive the gate.
  class Turn {
   public:
    Turn(Turn&& other) noexcept : gate_(other.gate_) { other.gate_ = nullptr; }
    Turn& operator=(Turn&&) = delete;
    Turn(const Turn&) = delete;
    ~Turn();

   private:
    friend class UploadGate;
    explicit Turn(UploadGate* gate) : gate_(gate) {}
    UploadGate* gate_;
  };

  // A turn at once when fewer than `readers` uploads are being read; else waits for one while
  // the call is wanted: DEADLINE_EXCEEDED or CANCELLED (ctx.StillWanted) or UNAVAILABLE when the
  // server starts draining, checked every 50 ms. RESOURCE_EXHAUSTED at once when `waiting` calls
  // already wait: "glTF uploads: this replica reads 2 at once and 8 are waiting, its limits
  // (--max_gltf_reads, --gltf_read_queue); retry later".
  absl::StatusOr<Turn> Enter(const CallContext& ctx);

  struct Counts {
    int reading = 0;
    int waiting = 0;
  };
  Counts counts() const;

 private:
  void Leave();

  const int readers_;
  const int waiting_limit_;
  mutable std::mutex mu_;
  std::condition_variable freed_;
  int reading_ = 0;
  int waiting_ = 0;
};

}  // namespace skinning

#endif  // SKINNING_SERVER_API_UPLOAD_GATE_H_
