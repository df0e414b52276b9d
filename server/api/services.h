// gRPC service implementations: RigService, PoseService, BakeService and FastService.
//
// Every call is authenticated first (Authenticator::Authenticate; UNAUTHENTICATED ends it) and
// then runs as the caller's tenant: rigs are reached through RigStore::CheckAccess /
// GetForTenant, bakes through the tenant's access to the bake's rig. A null `auth` means
// authentication off (tenant "", every rig).
#ifndef SKINNING_SERVER_API_SERVICES_H_
#define SKINNING_SERVER_API_SERVICES_H_

#include <atomic>
#include <memory>

#include "server/auth/auth.h"
#include "server/bake/bake_jobs.h"
#include "server/store/example_store.h"
#include "server/pose/posing.h"
#include "server/pose/psd_posing.h"
#include "server/store/rig_store.h"
#include "skinning/v1/skinning.grpc.pb.h"

namespace skinning {

// Watches per-frame posing (for metrics): one frame of Pose, PoseClip or PoseSession posed
// successfully with `method` (UNSPECIFIED is LBS) in `seconds`. Called on the gRPC threads.
class FrameObserver {
 public:
  virtual ~FrameObserver() = default;
  virtual void OnFrame(v1::Method method, double seconds) = 0;
};

class RigServiceImpl final : public v1::RigService::Service {
 public:
  // `examples` (may be null: the example calls are then UNIMPLEMENTED) holds the rigs' PSD
  // examples; DeleteRig removes them with the stored rig.
  // `max_response_bytes`: the server's message limit; ListExamples pages stay below it.
  RigServiceImpl(RigStore* store, const std::atomic<bool>* draining, const Authenticator* auth = nullptr,
                 ExampleStore* examples = nullptr, size_t max_response_bytes = size_t{64} << 20)
      : store_(store),
        draining_(draining),
        auth_(auth ? auth : &Authenticator::Off()),
        examples_(examples),
        max_response_bytes_(max_response_bytes) {}
  grpc::Status RegisterRig(grpc::ServerContext*, const v1::RegisterRigRequest*,
                           v1::RegisterRigResponse*) override;
  grpc::Status GetRig(grpc::ServerContext*, const v1::GetRigRequest*, v1::GetRigResponse*) override;
  grpc::Status ListRigs(grpc::ServerContext*, const v1::ListRigsRequest*,
                        v1::ListRigsResponse*) override;
  grpc::Status DeleteRig(grpc::ServerContext*, const v1::DeleteRigRequest*,
                         v1::DeleteRigResponse*) override;
  // Pose space deformation examples (see ExampleStore; validated by ResolveExample and
  // ValidateNewExample before anything is stored). Same access check as the rig.
  grpc::Status AddExample(grpc::ServerContext*, const v1::AddExampleRequest*,
                          v1::AddExampleResponse*) override;
  grpc::Status ListExamples(grpc::ServerContext*, const v1::ListExamplesRequest*,
                            v1::ListExamplesResponse*) override;
  grpc::Status RemoveExample(grpc::ServerContext*, const v1::RemoveExampleRequest*,
                             v1::RemoveExampleResponse*) override;

 private:
  // The rig of an example call: UNIMPLEMENTED when examples are off, else the tenant's rig
  // (NOT_FOUND for an unknown or deleted one, as GetForTenant).
  absl::StatusOr<std::shared_ptr<const LoadedRig>> ExampleRig(const std::string& rig_id,
                                                              const std::string& tenant) const;
  RigStore* store_;
  const std::atomic<bool>* draining_;
  const Authenticator* auth_;
  ExampleStore* examples_;
  size_t max_response_bytes_;
};

class PoseServiceImpl final : public v1::PoseService::Service {
 public:
  // `draining` becomes true when the server starts shutting down: sessions then end with
  // UNAVAILABLE after the frame in progress, so clients reconnect elsewhere.
  // `frames` (may be null) is told of every frame posed.
  PoseServiceImpl(RigStore* store, BakeJobs* bakes, const std::atomic<bool>* draining,
                  int max_clip_frames, FrameObserver* frames = nullptr,
                  const Authenticator* auth = nullptr, PsdModels* psd = nullptr)
      : store_(store),
        bakes_(bakes),
        draining_(draining),
        max_clip_frames_(max_clip_frames),
        frames_(frames),
        auth_(auth ? auth : &Authenticator::Off()),
        psd_(psd) {}
  grpc::Status Pose(grpc::ServerContext*, const v1::PoseRequest*, v1::PoseResponse*) override;
  grpc::Status PoseClip(grpc::ServerContext*, const v1::PoseClipRequest*,
                        v1::PoseClipResponse*) override;
  grpc::Status PoseSession(
      grpc::ServerContext*,
      grpc::ServerReaderWriter<v1::PoseSessionResponse, v1::PoseSessionRequest>*) override;

 private:
  // PoseFrame, timed for frames_.
  absl::Status PoseOneFrame(const PoseContext& pc, const v1::Pose& pose, v1::Method method, const v1::PoseOutputs& outputs, v1::PosedFrame* out,
                            const char* field = "pose");
  // The PSD model of a METHOD_PSD_* call into `holder` (null for other methods, without
  // examples or without psd_).
  absl::Status FetchPsd(const LoadedRig& rig, const std::string& tenant, const SparseWeights* weights,
                        const std::string& bake_id, v1::Method method, std::shared_ptr<const PsdModel>* holder);

  RigStore* store_;
  BakeJobs* bakes_;
  const std::atomic<bool>* draining_;
  const int max_clip_frames_;
  FrameObserver* const frames_;
  const Authenticator* auth_;
  PsdModels* psd_;  // METHOD_PSD_* models; null = those methods pose as plain LBS / DQS
};

class BakeServiceImpl final : public v1::BakeService::Service {
 public:
  BakeServiceImpl(BakeJobs* bakes, const std::atomic<bool>* draining,
                  const Authenticator* auth = nullptr)
      : bakes_(bakes), draining_(draining), auth_(auth ? auth : &Authenticator::Off()) {}
  grpc::Status StartBake(grpc::ServerContext*, const v1::StartBakeRequest*, v1::BakeStatus*) override;
  grpc::Status WatchBake(grpc::ServerContext*, const v1::WatchBakeRequest*,
                         grpc::ServerWriter<v1::BakeStatus>*) override;
  grpc::Status GetBake(grpc::ServerContext*, const v1::GetBakeRequest*, v1::BakeStatus*) override;
  grpc::Status CancelBake(grpc::ServerContext*, const v1::CancelBakeRequest*,
                          v1::BakeStatus*) override;
  grpc::Status GetWeights(grpc::ServerContext*, const v1::GetWeightsRequest*,
                          v1::GetWeightsResponse*) override;

 private:
  BakeJobs* bakes_;
  const std::atomic<bool>* draining_;
  const Authenticator* auth_;
};

class FastServiceImpl final : public v1::FastService::Service {
 public:
  FastServiceImpl(BakeJobs* bakes, const std::atomic<bool>* draining,
                  const Authenticator* auth = nullptr)
      : bakes_(bakes), draining_(draining), auth_(auth ? auth : &Authenticator::Off()) {}
  grpc::Status Solve(grpc::ServerContext*, const v1::FastSolveRequest*, v1::FastSolveResponse*) override;
  grpc::Status Session(grpc::ServerContext*,
                       grpc::ServerReaderWriter<v1::FastSolveResponse, v1::FastSolveRequest>*) override;

 private:
  BakeJobs* bakes_;
  const std::atomic<bool>* draining_;
  const Authenticator* auth_;
};

// DEADLINE_EXCEEDED once the call's deadline has passed, else OK. Cheap (reads the clock).
absl::Status DeadlinePassed(const grpc::ServerContext& ctx);
// DeadlineExceeded as above, CANCELLED once the client cancelled the call or went away, else OK.
// Long unary work (PoseClip frames, FAST solver iterations, the stages of RegisterRig) checks it
// between steps and stops, so a server under load does not finish answers nobody waits for.
// Bakes are jobs, not calls: they run on until done or CancelBake, whatever happens to the
// StartBake call that queued them.
absl::Status StillWanted(const grpc::ServerContext& ctx);

// The weights a pose call uses: the bake's when bake_id is set (its rig must be rig.id), else
// the rig's own (nullptr when it has none). `holder` keeps a bake's weights alive.
// Whether `tenant` may use the bake: it must be allowed the bake's rig (RigStore::CheckAccess).
// OK for tenant "" and for a bake that does not exist (the call then reports that itself).
absl::Status CheckBakeAccess(BakeJobs* bakes, const std::string& bake_id,
                             const std::string& tenant);

absl::StatusOr<const SparseWeights*> ResolveWeights(BakeJobs* bakes, const LoadedRig& rig,
                                                    const std::string& bake_id,
                                                    std::shared_ptr<const LoadedBake>* holder);

}  // namespace skinning

#endif  // SKINNING_SERVER_API_SERVICES_H_
