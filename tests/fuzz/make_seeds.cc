// Writes the seeds of create_rig_fuzz and rpc_fuzz at build time, so no binary seed is committed:
//   fuzz_make_seeds <create_rig folder> <rpc folder>
// CreateRigRequests of small generated rigs (sparse weights, dense weights, no weights, with
// parts and a morph target); and for rpc_fuzz a method byte plus a valid request per method,
// naming the resources of the RPC world (rpc_world.h), which this program builds to learn them.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/rig/pose.h"
#include "server/convert/convert.h"
#include "skinning/v1/rig_service.pb.h"
#include "tests/fuzz/rpc_world.h"
#include "tests/support/fixtures.h"

namespace skinning::fuzz {
namespace {

void WriteCreateRigSeeds(const std::string& dir) {
  auto write = [&](const char* name, const Rig& rig) {
    v1::CreateRigRequest req;
    *req.mutable_rig() = RigToProto(rig);
    std::ofstream(dir + "/" + name, std::ios::binary) << req.SerializeAsString();
  };
  Rig sparse = testing::MakeTwoBoneTube(4, 5);
  write("sparse.pb", sparse);
  Rig dense = sparse;
  dense.dense_weights = ToDense(*sparse.sparse_weights, sparse.skeleton.size());
  dense.sparse_weights.reset();
  write("dense.pb", dense);
  Rig bare = sparse;
  bare.sparse_weights.reset();
  write("no_weights.pb", bare);
  Rig parts = sparse;
  parts.mesh_parts = {{"body", 0, static_cast<int>(parts.mesh.V.rows())}};
  MorphTarget morph;
  morph.name = "bulge";
  morph.dV = RowMatrixX3d::Constant(parts.mesh.V.rows(), 3, 0.01);
  parts.morph_targets.push_back(morph);
  write("parts_morph.pb", parts);
}

void WriteRpcSeeds(const std::string& dir) {
  RpcWorld& w = World();
  int count = 0;
  auto write = [&](RpcMethod method, const google::protobuf::Message& req) {
    std::ofstream(dir + "/" + std::to_string(count++) + ".pb", std::ios::binary)
        << static_cast<char>(method) << req.SerializeAsString();
  };
  const Rig rig = testing::MakeTwoBoneTube(6, 6);
  Pose bent = RestPose(rig.skeleton);
  bent.local[1].rotation = Eigen::AngleAxisd(0.9, Eigen::Vector3d(0, 0.6, 0.8));
  const v1::Pose pose = PoseToProto(bent);

  v1::CreateRigRequest create;
  *create.mutable_rig() = RigToProto(testing::MakeTwoBoneTube(5, 5));
  write(kCreateRig, create);
  // The same rig with a clip of two frames (its rest, then joint 1 turned).
  v1::AnimationClip* bend = create.add_animations();
  bend->set_name("bend");
  bend->set_frames_per_second(30);
  for (int f = 0; f < 2; ++f) {
    v1::Pose* pose = bend->add_poses();
    for (const v1::Joint& joint : create.rig().skeleton().joints()) *pose->add_joints() = joint.rest();
    pose->mutable_joints(1)->clear_rotation();
    for (float v : {0.f, 0.f, 0.3f * f, std::sqrt(1 - 0.09f * f * f)}) pose->mutable_joints(1)->add_rotation(v);
  }
  write(kCreateRig, create);
  v1::GetAnimationsRequest get_animations;
  get_animations.set_rig(w.rig);
  write(kGetAnimations, get_animations);
  for (const std::string& name : {w.rig, w.bare_rig}) {
    v1::GetRigRequest get;
    get.set_name(name);
    get.set_view(v1::RIG_VIEW_FULL);
    write(kGetRig, get);
  }
  v1::ListRigsRequest list;
  list.set_page_size(1);
  write(kListRigs, list);
  v1::DeleteRigRequest del;
  del.set_name("rigs/rig-0123456789abcdef0123456789abcdef");
  write(kDeleteRig, del);

  v1::CreateExampleRequest ex;
  ex.set_parent(w.rig);
  ex.set_example_id("other");
  *ex.mutable_example()->mutable_pose() = pose;
  for (int i = 0; i < rig.mesh.V.rows(); ++i)
    for (int a = 0; a < 3; ++a) ex.mutable_example()->add_positions(static_cast<float>(0.99 * rig.mesh.V(i, a)));
  write(kCreateExample, ex);
  v1::GetExampleRequest get_ex;
  get_ex.set_name(w.example);
  write(kGetExample, get_ex);
  v1::ListExamplesRequest list_ex;
  list_ex.set_parent(w.rig);
  list_ex.set_view(v1::EXAMPLE_VIEW_FULL);
  write(kListExamples, list_ex);
  v1::DeleteExampleRequest del_ex;
  del_ex.set_name(w.rig + "/examples/other");
  write(kDeleteExample, del_ex);

  for (v1::Deformer d : {v1::DEFORMER_UNSPECIFIED, v1::DEFORMER_DQS, v1::DEFORMER_SWING_TWIST}) {
    v1::PoseRequest p;
    p.set_rig(w.rig);
    *p.mutable_pose() = pose;
    p.set_deformer(d);
    p.mutable_outputs()->set_vertices(true);
    p.mutable_outputs()->set_normals(d == v1::DEFORMER_DQS);
    p.mutable_outputs()->set_transforms(d == v1::DEFORMER_UNSPECIFIED);
    write(kPose, p);
  }
  v1::PoseRequest baked;
  baked.set_rig(w.bare_rig);
  baked.set_bake(w.heat_bake);
  *baked.mutable_pose() = pose;
  write(kPose, baked);
  v1::PoseClipRequest clip;
  clip.set_rig(w.rig);
  for (int f = 0; f < 3; ++f) *clip.add_poses() = pose;
  clip.mutable_outputs()->set_vertices(true);
  write(kPoseClip, clip);
  v1::PoseSessionRequest session;
  session.set_rig(w.rig);
  session.set_sequence(7);
  *session.mutable_pose() = pose;
  write(kPoseSession, session);

  v1::StartBakeRequest start;
  start.set_parent(w.bare_rig);
  start.mutable_options()->mutable_geodesic_voxel()->set_falloff(8);
  start.mutable_options()->mutable_domain()->set_voxel_resolution(16);
  write(kStartBake, start);
  v1::GetBakeRequest get_bake;
  get_bake.set_name(w.heat_bake);
  write(kGetBake, get_bake);
  v1::WatchBakeRequest watch;
  watch.set_name(w.fast_bake);
  write(kWatchBake, watch);
  v1::CancelBakeRequest cancel;
  cancel.set_name(w.heat_bake);
  write(kCancelBake, cancel);
  v1::GetWeightsRequest weights;
  weights.set_bake(w.heat_bake);
  write(kGetWeights, weights);

  v1::SolveRequest solve;
  solve.set_bake(w.fast_bake);
  v1::HandleConstraint* c = solve.add_constraints();
  c->set_joint(1);
  c->set_kind(v1::HandleConstraint::KIND_POSITION);
  for (float x : {1.2f, 0.3f, 0.0f}) c->add_target(x);
  solve.set_iteration_count(5);
  solve.mutable_outputs()->set_vertices(true);
  write(kSolve, solve);
  v1::SolveSessionRequest solve_session;
  solve_session.set_bake(w.fast_bake);
  *solve_session.mutable_constraints() = solve.constraints();
  write(kSolveSession, solve_session);
}

}  // namespace
}  // namespace skinning::fuzz

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s <create_rig seed folder> <rpc seed folder>\n", argv[0]);
    return 2;
  }
  for (int i = 1; i < 3; ++i) std::filesystem::create_directories(argv[i]);
  skinning::fuzz::WriteCreateRigSeeds(argv[1]);
  skinning::fuzz::WriteRpcSeeds(argv[2]);
  return 0;
}
