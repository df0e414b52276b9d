// The Connect door's JSON (server/http/proto_json.h) against protobuf's converter
// (MessageToJsonString / JsonStringToMessage, which the door used alone before): parsing a
// 20-joint Pose request, printing its transforms-only answer (240 floats) and a 10k-vertex answer
// (30,000 floats). Values are what posing produces: computed floats, mostly 9 digits. And what
// gzip (server/http/gzip.h, level 1 as the door sends it) costs on those answers, JSON and binary,
// with the size it leaves (counter `ratio`), and inflating a gzip JSON request.
//
//   ./build/bench/json_bench --benchmark_filter="Gzip|Gunzip"
#include <benchmark/benchmark.h>
#include <google/protobuf/util/json_util.h>

#include <random>
#include <string>

#include "server/http/gzip.h"
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

// The answer of `state.range(0)` floats as JSON (range(1) = 1) or binary, gzip level 1.
void BM_GzipResponse(benchmark::State& state) {
  const v1::PoseResponse r = Response(static_cast<int>(state.range(0)));
  const std::string body = state.range(1) ? Json(r) : r.SerializeAsString();
  size_t compressed = 0;
  for (auto _ : state) {
    std::string gz = Gzip(body, 1).value();
    compressed = gz.size();
    benchmark::DoNotOptimize(gz);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
  state.counters["bytes"] = static_cast<double>(body.size());
  state.counters["ratio"] = static_cast<double>(compressed) / static_cast<double>(body.size());
}
// A gzip JSON request (the 10k-vertex answer's size, as a large CreateRig or PoseClip body) inflated.
void BM_GunzipRequest(benchmark::State& state) {
  const std::string body = Json(Response(30000));
  const std::string gz = Gzip(body, 6).value();
  for (auto _ : state) benchmark::DoNotOptimize(Gunzip(gz, body.size()));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
}

BENCHMARK(BM_ParseRequest_Fast);
BENCHMARK(BM_ParseRequest_Protobuf);
BENCHMARK(BM_PrintResponse_Fast)->Arg(240)->Arg(30000);
BENCHMARK(BM_PrintResponse_Protobuf)->Arg(240)->Arg(30000);
BENCHMARK(BM_GzipResponse)->ArgNames({"floats", "json"})->Args({240, 1})->Args({30000, 1})->Args({30000, 0});
BENCHMARK(BM_GunzipRequest);

}  // namespace
}  // namespace skinning
