// A multi-skin glTF written by hand for tests, of the shape exporters such as Unity write: one
// node tree, several nodes instancing ONE mesh, each node with its own skin over a different
// joint chain of the tree (and the shared root), the skins binding the mesh at different places.
#ifndef SKINNING_TESTS_SUPPORT_MULTI_SKIN_GLTF_H_
#define SKINNING_TESTS_SUPPORT_MULTI_SKIN_GLTF_H_

#include <string>

namespace skinning::testing {

struct MultiSkinGltf {
  // Chains from the root: along +x, +y, +z, then repeating; each `chain_joints` joints one unit
  // apart, the first at the root. Skin s lists [root, chain s's joints] and binds the mesh (a
  // tube along +x from 0 to chain_joints − 1, weighted between consecutive chain joints) onto
  // chain s: its inverse bind matrices are inverse(bind world) · P_s, P_s the
  // rotation taking +x to chain s's axis. So skins share the root and differ there by P_s.
  int chains = 3;
  int chain_joints = 3;
  int rings = 13;     // tube rings along the mesh
  int segments = 8;   // vertices per ring
  // When true, skins[1] also lists chain 0's first joint (bound by P_1 like its own joints) and
  // its root's inverse bind matrix gets an extra translation: the two joints it shares with
  // skins[0] then differ from it by different transforms, which no single per-skin transform
  // explains (the reader refuses it).
  bool inconsistent_shared_binds = false;
  // When true, a second mesh (a box) without a skin hangs below chain 0's last joint, with its
  // own rest translation and rotation: a prop that moves rigidly with that joint.
  bool prop = false;
  // With prop: the box is chain 0's last joint node's own mesh (no node of its own below it),
  // which moves with that joint.
  bool prop_on_joint = false;
  // With prop (below the joint): the box hangs from a node "mount" between it and the joint, 0.1
  // from it, which the animation turns: an animated prop.
  bool animated_prop = false;
  // When true, the scene also holds "ground", an instance of the tube mesh without a skin at the
  // scene's root, 3 below it: a static mesh, which the reader refuses unless it is to skip them.
  bool scenery = false;
  // With scenery: the ground is the only node of a second scene ("Props"; the first is then
  // "Character"), in the first too with `ground_in_both_scenes`; the file's default scene is
  // `default_scene`.
  bool scenery_scene = false;
  bool ground_in_both_scenes = false;
  int default_scene = 0;
  // The animation's key times (0, 0.5 and 1.5 s) multiplied by this: a long animation.
  double key_time_scale = 1.0;
};

// Writes the file as .gltf with an embedded (data URI) buffer; one animation of LINEAR rotation
// keys at 0, 0.5 and 1.5 s (times key_time_scale) on the root and every chain joint. Returns the
// path.
std::string WriteMultiSkinGltf(const MultiSkinGltf& spec, const std::string& path);

}  // namespace skinning::testing

#endif  // SKINNING_TESTS_SUPPORT_MULTI_SKIN_GLTF_H_
