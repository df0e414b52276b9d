#include "tests/fuzz/rpc_world.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "core/rig/pose.h"
#include "server/convert/convert.h"
#include "server/protobuf_log.h"
#include "tests/support/fixtures.h"

namespace skinning::fuzz {
namespace {

[[noreturn]] void Die(const char* what, const absl::Status& s) {
  std::fprintf(stderr, "rpc world: %s: %s\n", what, s.ToString().c_str());
  std::abort();
}

// Starts a bake and waits until it is done; its name.
std::string Bake(RpcWorld& w, const std::string& rig, const v1::BakeOptions& options) {
  v1::StartBakeRequest req;
  req.set_parent(rig);
  *req.mutable_options() = options;
  v1::StartBakeResponse started;
  if (absl::Status s = w.server->bake_api().StartBake(CallContext(), req, &started); !s.ok()) Die("StartBake", s);
  for (int i = 0; i < 6000; ++i) {
    v1::GetBakeRequest get;
    get.set_name(started.bake().name());
    v1::Bake bake;
    if (absl::Status s = w.server->bake_api().GetBake(CallContext(), get, &bake); !s.ok()) Die("GetBake", s);
    if (bake.done()) {
      if (bake.metadata().state() != v1::BAKE_STATE_SUCCEEDED)
        Die("bake", absl::InternalError(bake.error().message()));
      return bake.name();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  Die("bake", absl::DeadlineExceededError("not done in 60 s"));
}

RpcWorld* Build() {
  auto* w = new RpcWorld;
  LimitProtobufLogging();  // as skinning-server does: mutated strings are often not UTF-8
  w->store_dir = (std::filesystem::temp_directory_path() /
                  ("rpc-fuzz-store-" + std::to_string(::getpid()))).string();
  std::filesystem::remove_all(w->store_dir);
  ServerOptions o;
  o.address = "127.0.0.1:0";
  o.store_dir = w->store_dir;
  o.metrics_address = "";
  o.threads = 4;
  o.max_clip_frames = 32;  // a clip input does bounded work
  o.bakes.workers = 1;
  o.bakes.max_queue = 2;
  auto server = SkinningServer::Start(o);
  if (!server.ok()) Die("start", server.status());
  w->server = *std::move(server);

  const Rig rig = testing::MakeTwoBoneTube(6, 6);
  Rig bare = rig;
  bare.sparse_weights.reset();
  for (const Rig* r : {&rig, static_cast<const Rig*>(&bare)}) {
    v1::CreateRigRequest req;
    *req.mutable_rig() = RigToProto(*r);
    v1::CreateRigResponse resp;
    if (absl::Status s = w->server->rig_api().CreateRig(CallContext(), req, &resp); !s.ok()) Die("CreateRig", s);
    (r == &rig ? w->rig : w->bare_rig) = resp.rig().name();
  }
  v1::CreateExampleRequest ex;
  ex.set_parent(w->rig);
  ex.set_example_id("bend");
  Pose pose = RestPose(rig.skeleton);
  pose.local[1].rotation = Eigen::AngleAxisd(0.7, Eigen::Vector3d::UnitZ());
  *ex.mutable_example()->mutable_pose() = PoseToProto(pose);
  for (int i = 0; i < rig.mesh.V.rows(); ++i)
    for (int a = 0; a < 3; ++a) ex.mutable_example()->add_positions(static_cast<float>(1.01 * rig.mesh.V(i, a)));
  v1::CreateExampleResponse ex_resp;
  if (absl::Status s = w->server->rig_api().CreateExample(CallContext(), ex, &ex_resp); !s.ok()) Die("CreateExample", s);
  w->example = ex_resp.example().name();

  v1::BakeOptions heat;
  heat.mutable_bone_heat();
  w->heat_bake = Bake(*w, w->bare_rig, heat);
  v1::BakeOptions fast;
  fast.mutable_fast_model();
  w->fast_bake = Bake(*w, w->rig, fast);
  return w;
}

}  // namespace

RpcWorld& World() {
  static RpcWorld* world = [] {
    RpcWorld* w = Build();
    // At exit, before the libraries' own statics go: stop the server, remove its store.
    std::atexit([] {
      RpcWorld& w = World();
      w.server.reset();
      std::error_code ec;
      std::filesystem::remove_all(w.store_dir, ec);
    });
    return w;
  }();
  return *world;
}

CallContext ShortCall(double seconds) {
  return CallContext("", std::chrono::system_clock::now() + std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6)),
                     nullptr, nullptr);
}

}  // namespace skinning::fuzz
