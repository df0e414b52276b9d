// Writes the CreateRigRequest seeds of create_rig_fuzz (serialized requests of small generated
// rigs: sparse weights, dense weights, no weights, with parts and a morph target) into the
// folder given, at build time, so no binary seed is committed.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "server/convert/convert.h"
#include "skinning/v1/rig_service.pb.h"
#include "tests/support/fixtures.h"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  std::filesystem::create_directories(argv[1]);
  auto write = [&](const char* name, const skinning::Rig& rig) {
    skinning::v1::CreateRigRequest req;
    *req.mutable_rig() = skinning::RigToProto(rig);
    std::ofstream(std::string(argv[1]) + "/" + name, std::ios::binary) << req.SerializeAsString();
  };
  skinning::Rig sparse = skinning::testing::MakeTwoBoneTube(4, 5);
  write("sparse.pb", sparse);
  skinning::Rig dense = sparse;
  dense.dense_weights = skinning::ToDense(*sparse.sparse_weights, sparse.skeleton.size());
  dense.sparse_weights.reset();
  write("dense.pb", dense);
  skinning::Rig bare = sparse;
  bare.sparse_weights.reset();
  write("no_weights.pb", bare);
  skinning::Rig parts = sparse;
  parts.mesh_parts = {{"body", 0, static_cast<int>(parts.mesh.V.rows())}};
  skinning::MorphTarget morph;
  morph.name = "bulge";
  morph.dV = skinning::RowMatrixX3d::Constant(parts.mesh.V.rows(), 3, 0.01);
  parts.morph_targets.push_back(morph);
  write("parts_morph.pb", parts);
  return 0;
}
