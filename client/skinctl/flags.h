// The command-line flags of skinctl, defined in flags.cc and shared by the commands.
#ifndef SKINNING_CLIENT_SKINCTL_FLAGS_H_
#define SKINNING_CLIENT_SKINCTL_FLAGS_H_

#include <string>

#include "absl/flags/declare.h"

ABSL_DECLARE_FLAG(std::string, server);
ABSL_DECLARE_FLAG(int, deadline_ms);
ABSL_DECLARE_FLAG(std::string, token);
ABSL_DECLARE_FLAG(std::string, tls_ca);
ABSL_DECLARE_FLAG(std::string, tls_cert);
ABSL_DECLARE_FLAG(std::string, tls_key);
ABSL_DECLARE_FLAG(std::string, gltf);
ABSL_DECLARE_FLAG(bool, skip_static_meshes);
ABSL_DECLARE_FLAG(int, scene);
ABSL_DECLARE_FLAG(std::string, obj);
ABSL_DECLARE_FLAG(std::string, tgf);
ABSL_DECLARE_FLAG(std::string, dmat);
ABSL_DECLARE_FLAG(std::string, name);
ABSL_DECLARE_FLAG(std::string, rig);
ABSL_DECLARE_FLAG(std::string, pose);
ABSL_DECLARE_FLAG(std::string, times);
ABSL_DECLARE_FLAG(double, fps);
ABSL_DECLARE_FLAG(int, animation);
ABSL_DECLARE_FLAG(std::string, method);
ABSL_DECLARE_FLAG(std::string, stretch);
ABSL_DECLARE_FLAG(std::string, twist);
ABSL_DECLARE_FLAG(std::string, weights_bake);
ABSL_DECLARE_FLAG(std::string, endpoint_method);
ABSL_DECLARE_FLAG(std::string, out);
ABSL_DECLARE_FLAG(std::string, format);
ABSL_DECLARE_FLAG(std::string, bake_method);
ABSL_DECLARE_FLAG(int, resolution);
ABSL_DECLARE_FLAG(int, influences);
ABSL_DECLARE_FLAG(std::string, tet);
ABSL_DECLARE_FLAG(double, falloff);
ABSL_DECLARE_FLAG(double, dionne_falloff);
ABSL_DECLARE_FLAG(int, smoothing);
ABSL_DECLARE_FLAG(bool, wait);
ABSL_DECLARE_FLAG(std::string, bake);
ABSL_DECLARE_FLAG(std::string, constraints);
ABSL_DECLARE_FLAG(int, iterations);
ABSL_DECLARE_FLAG(std::string, out_file);
ABSL_DECLARE_FLAG(std::string, mesh);

#endif  // SKINNING_CLIENT_SKINCTL_FLAGS_H_
