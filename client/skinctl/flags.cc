// The definitions of skinctl's flags (declared in flags.h).
#include "client/skinctl/flags.h"

#include "absl/flags/flag.h"

ABSL_FLAG(std::string, server, "localhost:50051", "server address (gRPC target)");
ABSL_FLAG(int, deadline_ms, 60000, "deadline per call in milliseconds, retries included");
ABSL_FLAG(std::string, token, "",
          "bearer token for a server with --auth_tokens (default: $SKINNING_TOKEN)");
ABSL_FLAG(std::string, tls_ca, "",
          "connect with TLS, trusting the CA certificate(s) in this PEM file");
ABSL_FLAG(std::string, tls_cert, "",
          "TLS client certificate (PEM) for servers that require one (with --tls_key)");
ABSL_FLAG(std::string, tls_key, "", "private key (PEM) of --tls_cert");
ABSL_FLAG(std::string, gltf, "", "a glTF 2.0 character (.gltf or .glb)");
ABSL_FLAG(bool, skip_static_meshes, false,
          "with --gltf: leave out meshes without a skin below no joint (a ground plane, scenery) instead of "
          "refusing the file");
ABSL_FLAG(int, scene, -1,
          "with --gltf: of a file with several scenes, the one to read (its index; default: the file's default "
          "scene)");
ABSL_FLAG(std::string, obj, "", "a mesh: .obj, .off or MEDIT .mesh (with --tgf)");
ABSL_FLAG(std::string, tgf, "", "a libigl .tgf skeleton: one joint per bone (with --obj)");
ABSL_FLAG(std::string, dmat, "", "a libigl .dmat weight matrix, #vertices by #bones (with --obj)");
ABSL_FLAG(std::string, name, "", "a label for the registered rig (default: the file name); example add/remove: the example's name");
ABSL_FLAG(std::string, rig, "", "the rig to use, rigs/{rig} (pose: default registers the given files first)");
ABSL_FLAG(std::string, pose, "", "a pose file: .json (local transforms by joint name or index) or "
                                 ".dmat (one relative rotation quaternion x,y,z,w per joint)");
ABSL_FLAG(std::string, times, "", "comma-separated animation times in seconds, e.g. 0,0.25,0.5");
ABSL_FLAG(double, fps, 0, "sample the whole animation at this frame rate");
ABSL_FLAG(int, animation, 0, "which animation to sample: the glTF file's, or of those stored with --rig");
ABSL_FLAG(std::string, method, "lbs",
          "pose methods, comma-separated: lbs, dqs, stbs_lbs, stbs_dqs, swing_twist, elastic, psd_lbs, psd_dqs, "
          "psd_support_lbs, psd_support_dqs");
ABSL_FLAG(std::string, stretch, "", "pose (stbs_*): bone length scales, JOINT=SCALE,... (joint name or index)");
ABSL_FLAG(std::string, twist, "",
          "pose (stbs_*): twist angles in degrees at a bone's start and end, JOINT=START:END,...");
ABSL_FLAG(std::string, weights_bake, "", "bake (fast_model, endpoint): the weights bake to build on, rigs/{rig}/bakes/{bake} (default: the rig's own weights)");
ABSL_FLAG(std::string, endpoint_method, "joint_bbw", "bake endpoint: joint_bbw or projection");
ABSL_FLAG(std::string, out, "skinning-out", "output folder for posed meshes");
ABSL_FLAG(std::string, format, "glb,obj", "output formats: any of glb, gltf, obj");
ABSL_FLAG(std::string, bake_method, "bbw",
          "bake: bbw, bone_heat, geodesic_voxel, fast_model, swing_twist, endpoint or elastic_model");
ABSL_FLAG(int, resolution, 0, "bake: voxel cells along the longest side (0 = server default, 64)");
ABSL_FLAG(int, influences, 4, "bake: influences kept per vertex (top k)");
ABSL_FLAG(std::string, tet, "", "bake: a MEDIT .mesh tet mesh to run the volumetric methods on");
ABSL_FLAG(double, falloff, 0, "bake: geodesic falloff exponent (0 = server default, 12)");
ABSL_FLAG(double, dionne_falloff, -1,
          "bake: geodesic voxel with Dionne & de Lasa's weight function and this falloff in [0, 1] (negative = the power law)");
ABSL_FLAG(int, smoothing, 0, "bake: geodesic voxel smoothing passes over the voxel grid, in [0, 100] (0 = none)");
ABSL_FLAG(bool, wait, true, "bake: wait for the bake and write its results (--nowait: print its name)");
ABSL_FLAG(std::string, bake, "", "pose: use this bake's weights; solve: the fast_model bake (rigs/{rig}/bakes/{bake})");
ABSL_FLAG(std::string, constraints, "", "solve: a JSON constraints file (see the README)");
ABSL_FLAG(int, iterations, 15, "solve: local/global iterations");
ABSL_FLAG(std::string, out_file, "", "get: also write the stored rig as a skinned glTF (.glb or .gltf)");
ABSL_FLAG(std::string, mesh, "",
          "example add: the sculpted mesh (.obj or .off) with the rig's vertex count and order");
