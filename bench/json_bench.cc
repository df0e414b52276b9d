// The Connect door's JSON (server/http/proto_json.h) against protobuf's converter
// (MessageToJsonString / JsonStringToMessage, which the door used alone before): parsing a
// 20-joint Pose request, printing its transforms-only answer (240 floats) and a 10k-vertex answer
// (30,000 floats). Values are what posing produces: computed floats, mostly 9 digits.
#include <benchmark/benchmark.h>
#include <google/protobuf/util/json_util.h>

#include <random>
#include <string>

#include "server/http/proto_json.h"
#include "skinning/v1/pose_service.pb.h"

namespace skinning {
namespace {

v1::PoseRequest Request() {
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> u(-1, 1);
  v1::PoseRequest r;
  r.set_rig("rigs/0123456789abcdef0123456789abcdef");
  r.mutable_outputs()->set_transforms(true);
  for (int j = 0; j < 20; ++j) {
    auto* t = r.mutable_pose()->add_joints();
    for (int k = 0; k < 4; ++k) t->add_rotation(u(gen));
    for (int k = 0; k < 3; ++k) t->add_translation(u(gen));
  }
  return r;
}

v1::PoseResponse Response(int floats) {
  std::mt19937 gen(2);
  std::normal_distribution<float> n(0, 0.5f);
  v1::PoseResponse r;
  for (int i = 0; i < floats; ++i) r.mutable_frame()->add_transforms(n(gen));
  return r;
}

std::string Json(const google::protobuf::Message& m) {
  std::string s;
  (void)google::protobuf::util::MessageToJsonString(m, &s);
  return s;
}

void BM_ParseRequest_Fast(benchmark::State& state) {
  const std::string json = Json(Request());
  v1::PoseRequest r;
  for (auto _ : state) benchmark::DoNotOptimize(proto_json::Parse(json, &r));
}
void BM_ParseRequest_Protobuf(benchmark::State& state) {
  const std::string json = Json(Request());
  v1::PoseRequest r;
  for (auto _ : state) {
    r.Clear();
    benchmark::DoNotOptimize(google::protobuf::util::JsonStringToMessage(json, &r).ok());
  }
}
void BM_PrintResponse_Fast(benchmark::State& state) {
  const v1::PoseResponse r = Response(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    std::string s;
    benchmark::DoNotOptimize(proto_json::Print(r, &s));
  }
}
void BM_PrintResponse_Protobuf(benchmark::State& state) {
  const v1::PoseResponse r = Response(static_cast<int>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(Json(r));
}

BENCHMARK(BM_ParseRequest_Fast);
BENCHMARK(BM_ParseRequest_Protobuf);
BENCHMARK(BM_PrintResponse_Fast)->Arg(240)->Arg(30000);
BENCHMARK(BM_PrintResponse_Protobuf)->Arg(240)->Arg(30000);

}  // namespace
}  // namespace skinning
