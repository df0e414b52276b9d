// BakeService's logic, transport-neutral: start a bake, read or watch its state, cancel it, read
// its weights. Bakes belong to their rig: every call needs the tenant's access to the rig named
// in the bake's name. Status calls answer from the queue or the stored header, never loading a
// result.
#ifndef SKINNING_SERVER_API_BAKE_API_H_
#define SKINNING_SERVER_API_BAKE_API_H_

#include <functional>

#include "absl/status/status.h"
#include "server/api/call_context.h"
#include "server/bake/bakes.h"
#include "skinning/v1/bake_service.pb.h"

namespace skinning {

class BakeApi {
 public:
  explicit BakeApi(Bakes* bakes) : bakes_(bakes) {}

  absl::Status StartBake(const CallContext& ctx, const v1::StartBakeRequest& req, v1::StartBakeResponse* resp);
  absl::Status GetBake(const CallContext& ctx, const v1::GetBakeRequest& req, v1::Bake* resp);
  // Writes the bake's state with `write` (false: the client went away) until it is done. Ends
  // with UNAVAILABLE when the server drains.
  absl::Status WatchBake(const CallContext& ctx, const v1::WatchBakeRequest& req,
                         const std::function<bool(const v1::Bake&)>& write);
  absl::Status CancelBake(const CallContext& ctx, const v1::CancelBakeRequest& req, v1::Bake* resp);
  absl::Status GetWeights(const CallContext& ctx, const v1::GetWeightsRequest& req, v1::GetWeightsResponse* resp);

 private:
  Bakes* bakes_;
};

}  // namespace skinning

#endif  // SKINNING_SERVER_API_BAKE_API_H_
