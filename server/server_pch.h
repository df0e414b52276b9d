// Precompiled for every translation unit of the server library (server/CMakeLists.txt): the core
// library's third-party headers, gRPC and the generated service headers, which most of them
// parse. Only third-party, standard and generated headers go here; each file still includes what
// it uses.
#ifndef SKINNING_SERVER_SERVER_PCH_H_
#define SKINNING_SERVER_SERVER_PCH_H_

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "core/util/pch.h"
#include "skinning/v1/bake_service.grpc.pb.h"
#include "skinning/v1/fast_service.grpc.pb.h"
#include "skinning/v1/pose_service.grpc.pb.h"
#include "skinning/v1/rig_service.grpc.pb.h"

#endif  // SKINNING_SERVER_SERVER_PCH_H_
