// The Prometheus endpoint of the real server: after known traffic, a scrape over HTTP shows
// every series with the right labels and counts.
#include <gmock/gmock.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/security/credentials.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/client.h"
#include "server/convert/convert.h"
#include "skinning/v1/pose_service.grpc.pb.h"
#include "tests/support/fixtures.h"
#include "tests/support/http_client.h"
#include "tests/support/server_process.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::skinning::testing::HttpGet;
using ::skinning::testing::MakeTempDir;
using ::skinning::testing::MakeTubeForBaking;
using ::skinning::testing::ServerProcess;
using Labels = std::map<std::string, std::string>;

// One sample of the Prometheus text exposition format: name{labels} value.
struct Sample {
  std::string name;
  Labels labels;
  double value = 0;
};

// The samples and "# TYPE" declarations of an exposition text. Comments other than TYPE are
// skipped; a line that does not parse fails the test and is left out.
struct Exposition {
  std::vector<Sample> samples;
  std::map<std::string, std::string> types;  // family name → counter, gauge, histogram, ...

  // The value of the sample with exactly this name and label set.
  std::optional<double> Value(const std::string& name, const Labels& labels) const {
    for (const Sample& s : samples)
      if (s.name == name && s.labels == labels) return s.value;
    return std::nullopt;
  }
  // Samples called `name` whose labels include all of `subset`.
  std::vector<Sample> Matching(const std::string& name, const Labels& subset = {}) const {
    std::vector<Sample> out;
    for (const Sample& s : samples) {
      if (s.name != name) continue;
      bool all = true;
      for (const auto& [k, v] : subset) {
        auto it = s.labels.find(k);
        all = all && it != s.labels.end() && it->second == v;
      }
      if (all) out.push_back(s);
    }
    return out;
  }
};

bool IsNameChar(char c, bool first) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
         (!first && c >= '0' && c <= '9');
}

// Parses one sample line; nullopt when it is malformed.
std::optional<Sample> ParseSample(const std::string& line) {
  Sample s;
  size_t i = 0;
  while (i < line.size() && IsNameChar(line[i], i == 0)) ++i;
  if (i == 0) return std::nullopt;
  s.name = line.substr(0, i);
  if (i < line.size() && line[i] == '{') {
    ++i;
    while (true) {
      if (i < line.size() && line[i] == '}') {
        ++i;
        break;
      }
      const size_t name_start = i;
      while (i < line.size() && IsNameChar(line[i], i == name_start)) ++i;
      if (i == name_start || i + 1 >= line.size() || line[i] != '=' || line[i + 1] != '"')
        return std::nullopt;
      const std::string label = line.substr(name_start, i - name_start);
      i += 2;
      std::string value;
      while (i < line.size() && line[i] != '"') {
        if (line[i] == '\\' && i + 1 < line.size()) {
          ++i;
          value += line[i] == 'n' ? '\n' : line[i];  // \\ \" \n
        } else {
          value += line[i];
        }
        ++i;
      }
      if (i >= line.size()) return std::nullopt;                        // unterminated value
      ++i;                                                              // closing quote
      if (!s.labels.emplace(label, value).second) return std::nullopt;  // repeated label
      if (i < line.size() && line[i] == ',') ++i;
    }
  }
  if (i >= line.size() || line[i] != ' ') return std::nullopt;
  std::vector<std::string> rest = absl::StrSplit(line.substr(i + 1), ' ', absl::SkipEmpty());
  if (rest.empty() || rest.size() > 2) return std::nullopt;  // value [timestamp]
  if (rest[0] == "+Inf") {
    s.value = INFINITY;
  } else if (rest[0] == "-Inf") {
    s.value = -INFINITY;
  } else if (absl::EqualsIgnoreCase(rest[0], "NaN")) {  // prometheus-cpp writes "Nan"
    s.value = NAN;
  } else if (!absl::SimpleAtod(rest[0], &s.value)) {
    return std::nullopt;
  }
  return s;
}

Exposition Parse(const std::string& text) {
  Exposition e;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    if (line.front() == '#') {
      std::vector<std::string> words = absl::StrSplit(line, ' ', absl::SkipEmpty());
      if (words.size() == 4 && words[1] == "TYPE") e.types[words[2]] = words[3];
      continue;
    }
    std::optional<Sample> s = ParseSample(std::string(line));
    EXPECT_TRUE(s.has_value()) << "unparsable exposition line: " << line;
    if (s) e.samples.push_back(*std::move(s));
  }
  return e;
}

TEST(MetricsExpositionParser, ReadsNamesLabelsAndValues) {
  const Exposition e = Parse(
      "# HELP a_total help\n# TYPE a_total counter\n"
      "a_total{x=\"1\",y=\"q\\\"uo\\\\te\"} 3\n"
      "b 2.5e-06\n"
      "c_bucket{le=\"+Inf\"} 7 1700000000000\n"
      "d{quantile=\"0.5\"} Nan\n");
  ASSERT_EQ(e.samples.size(), 4u);
  EXPECT_EQ(e.types.at("a_total"), "counter");
  EXPECT_EQ(e.Value("a_total", {{"x", "1"}, {"y", "q\"uo\\te"}}), 3.0);
  EXPECT_EQ(e.Value("b", {}), 2.5e-6);
  EXPECT_EQ(e.Value("c_bucket", {{"le", "+Inf"}}), 7.0);
  EXPECT_TRUE(std::isnan(*e.Value("d", {{"quantile", "0.5"}})));
  EXPECT_FALSE(e.Value("a_total", {{"x", "1"}}).has_value()) << "label sets must match exactly";
}

Labels Grpc(const std::string& service, const std::string& method, const std::string& type) {
  return {{"grpc_service", "skinning.v1." + service}, {"grpc_method", method}, {"grpc_type", type}};
}

Labels WithCode(Labels labels, const std::string& code) {
  labels["grpc_code"] = code;
  return labels;
}

v1::Pose BentPose(const Rig& rig, double degrees) {
  Pose pose = RestPose(rig.skeleton);
  pose.local[1].rotation = Eigen::AngleAxisd(degrees * M_PI / 180, Eigen::Vector3d::UnitZ());
  return PoseToProto(pose);
}

// One server with metrics on, known traffic, one scrape, shared by the suite's tests.
class MetricsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new ServerProcess(MakeTempDir("store"), {"--metrics_address=127.0.0.1:0"});
    ClientOptions options;
    options.target = server_->address();
    options.deadline = std::chrono::seconds(60);
    Client client(options);
    const Rig rig = MakeTubeForBaking();

    // CreateRig: the same rig twice, then an invalid one.
    auto first = client.CreateRig(RigToProto(rig));
    ASSERT_TRUE(first.ok()) << first.status();
    auto again = client.CreateRig(RigToProto(rig));
    ASSERT_TRUE(again.ok()) << again.status();
    ASSERT_FALSE(again->created());
    v1::Rig bad = RigToProto(rig);
    bad.mutable_skeleton()->mutable_joints(1)->set_parent(7);
    auto refused = client.CreateRig(bad);
    ASSERT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << refused.status();
    const std::string rig_name = first->rig().name();

    // An unknown rig: a cache miss, NOT_FOUND from the store (not a store error).
    auto unknown = client.GetRig("rigs/rig-00000000000000000000000000000000");
    ASSERT_EQ(unknown.status().code(), absl::StatusCode::kNotFound) << unknown.status();

    // One bake; the poses below use its weights.
    v1::BakeOptions bake_options;
    bake_options.mutable_geodesic_voxel();
    bake_options.mutable_domain()->set_voxel_resolution(32);
    auto started = client.StartBake(rig_name, bake_options);
    ASSERT_TRUE(started.ok()) << started.status();
    auto done = client.WatchBake(started->bake().name(), [](const v1::Bake&) { return true; });
    ASSERT_TRUE(done.ok()) << done.status();
    ASSERT_EQ(done->metadata().state(), v1::BAKE_STATE_SUCCEEDED) << done->error().message();
    const std::string bake_name = started->bake().name();

    // Pose: 5 LBS, 2 DQS.
    for (int i = 0; i < 7; ++i) {
      v1::PoseRequest req;
      req.set_rig(rig_name);
      req.set_bake(bake_name);
      req.set_deformer(i < 5 ? v1::DEFORMER_UNSPECIFIED : v1::DEFORMER_DQS);
      req.mutable_outputs()->set_vertices(true);
      *req.mutable_pose() = BentPose(rig, 10 * i);
      auto posed = client.Pose(req);
      ASSERT_TRUE(posed.ok()) << posed.status();
    }

    // A pose session of 4 LBS frames on the bake's weights, through the generated stub.
    auto channel = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());
    auto stub = v1::PoseService::NewStub(channel);
    grpc::ClientContext context;
    auto stream = stub->PoseSession(&context);
    for (int f = 0; f < 4; ++f) {
      v1::PoseSessionRequest req;
      if (f == 0) {
        req.set_rig(rig_name);
        req.set_bake(bake_name);
        req.set_deformer(v1::DEFORMER_UNSPECIFIED);
      }
      req.set_sequence(f);
      *req.mutable_pose() = BentPose(rig, 5 * f);
      ASSERT_TRUE(stream->Write(req));
      v1::PoseSessionResponse resp;
      ASSERT_TRUE(stream->Read(&resp));
      ASSERT_EQ(resp.sequence(), f);
    }
    ASSERT_TRUE(stream->WritesDone());
    const grpc::Status finished = stream->Finish();
    ASSERT_TRUE(finished.ok()) << finished.error_message();

    const int port = server_->metrics_port();
    ASSERT_GT(port, 0) << server_->Output();
    auto response = HttpGet("127.0.0.1", port, "/metrics");
    ASSERT_TRUE(response.ok()) << response.status();
    ASSERT_EQ(response->status, 200) << response->body;
    text_ = new std::string(response->body);
    metrics_ = new Exposition(Parse(*text_));
  }

  static void TearDownTestSuite() {
    delete metrics_;
    delete text_;
    delete server_;
    metrics_ = nullptr;
    text_ = nullptr;
    server_ = nullptr;
  }

  void SetUp() override { ASSERT_NE(metrics_, nullptr) << "the suite's setup failed"; }

  // The value of `name`{labels}; fails the test (and returns NaN) when the series is absent.
  static double Value(const std::string& name, const Labels& labels) {
    std::optional<double> v = metrics_->Value(name, labels);
    if (!v) {
      ADD_FAILURE() << "no series " << name << " with the labels asked; the scrape:\n" << *text_;
      return NAN;
    }
    return *v;
  }

  // An info series (`name`, a gauge of one sample, always 1) and the line of the server's start
  // output that begins with `marker`: fills *labels (a label with an empty value may be left out
  // of the text: it reads as "") and *line; fails the test when either is missing.
  static void InfoAndLine(const std::string& name, const std::string& marker, Labels* labels, std::string* line) {
    const std::vector<Sample> info = metrics_->Matching(name, {});
    ASSERT_EQ(info.size(), 1u) << *text_;
    EXPECT_EQ(info[0].value, 1);
    EXPECT_EQ(metrics_->types.at(name), "gauge");
    *labels = info[0].labels;
    const std::string out = server_->Output();
    const size_t at = out.find(marker);
    ASSERT_NE(at, std::string::npos) << out;
    *line = out.substr(at, out.find('\n', at) - at);
  }

  static ServerProcess* server_;
  static std::string* text_;
  static Exposition* metrics_;
};

ServerProcess* MetricsTest::server_ = nullptr;
std::string* MetricsTest::text_ = nullptr;
Exposition* MetricsTest::metrics_ = nullptr;

TEST_F(MetricsTest, HandledCountsCallsByServiceMethodTypeAndCode) {
  const Labels reg = Grpc("RigService", "CreateRig", "unary");
  EXPECT_EQ(Value("grpc_server_started_total", reg), 3);
  EXPECT_EQ(Value("grpc_server_handled_total", WithCode(reg, "OK")), 2);
  EXPECT_EQ(Value("grpc_server_handled_total", WithCode(reg, "INVALID_ARGUMENT")), 1);
  EXPECT_EQ(Value("grpc_server_handled_total",
                  WithCode(Grpc("RigService", "GetRig", "unary"), "NOT_FOUND")),
            1);

  const Labels pose = Grpc("PoseService", "Pose", "unary");
  EXPECT_EQ(Value("grpc_server_started_total", pose), 7);
  EXPECT_EQ(Value("grpc_server_handled_total", WithCode(pose, "OK")), 7);
  EXPECT_EQ(metrics_->Matching("grpc_server_handled_total", pose).size(), 1u) << "only OK was seen";

  const Labels session = Grpc("PoseService", "PoseSession", "bidi_stream");
  EXPECT_EQ(Value("grpc_server_started_total", session), 1);
  EXPECT_EQ(Value("grpc_server_handled_total", WithCode(session, "OK")), 1);
  EXPECT_EQ(
      Value("grpc_server_handled_total", WithCode(Grpc("BakeService", "StartBake", "unary"), "OK")),
      1);
  EXPECT_EQ(Value("grpc_server_handled_total",
                  WithCode(Grpc("BakeService", "WatchBake", "server_stream"), "OK")),
            1);

  EXPECT_EQ(metrics_->types.at("grpc_server_started_total"), "counter");
  EXPECT_EQ(metrics_->types.at("grpc_server_handled_total"), "counter");
}

TEST_F(MetricsTest, HandlingSecondsIsAHistogramPerMethod) {
  const Labels pose = Grpc("PoseService", "Pose", "unary");
  EXPECT_EQ(metrics_->types.at("grpc_server_handling_seconds"), "histogram");
  EXPECT_EQ(Value("grpc_server_handling_seconds_count", pose), 7);
  EXPECT_GT(Value("grpc_server_handling_seconds_sum", pose), 0);
  Labels inf = pose;
  inf["le"] = "+Inf";
  EXPECT_EQ(Value("grpc_server_handling_seconds_bucket", inf), 7);
  const std::vector<Sample> buckets =
      metrics_->Matching("grpc_server_handling_seconds_bucket", pose);
  EXPECT_EQ(buckets.size(), 20u) << "19 bounds from 50 µs to 60 s, and +Inf";
  EXPECT_EQ(Value("grpc_server_handling_seconds_count", Grpc("RigService", "CreateRig", "unary")),
            3);
}

TEST_F(MetricsTest, FrameSecondsCountsEveryPosedFrameByMethod) {
  EXPECT_EQ(metrics_->types.at("skinning_frame_seconds"), "histogram");
  EXPECT_EQ(Value("skinning_frame_seconds_count", {{"method", "lbs"}}), 5 + 4)
      << "5 Pose calls, 4 session frames";
  EXPECT_EQ(Value("skinning_frame_seconds_count", {{"method", "dqs"}}), 2);
  EXPECT_GT(Value("skinning_frame_seconds_sum", {{"method", "lbs"}}), 0);
  EXPECT_EQ(Value("skinning_frame_seconds_bucket", {{"method", "dqs"}, {"le", "+Inf"}}), 2);
}

TEST_F(MetricsTest, BakesAreCountedAndTimedByMethod) {
  const Labels geo = {{"method", "geodesic_voxel"}};
  EXPECT_EQ(
      Value("skinning_bakes_finished_total", {{"method", "geodesic_voxel"}, {"state", "done"}}), 1);
  EXPECT_EQ(
      Value("skinning_bakes_finished_total", {{"method", "geodesic_voxel"}, {"state", "failed"}}),
      0);
  EXPECT_EQ(Value("skinning_bakes_finished_total",
                  {{"method", "geodesic_voxel"}, {"state", "cancelled"}}),
            0);
  EXPECT_EQ(Value("skinning_bakes_queued", geo), 0);
  EXPECT_EQ(Value("skinning_bakes_running", geo), 0);
  EXPECT_EQ(Value("skinning_bake_duration_seconds_count", geo), 1);
  EXPECT_GT(Value("skinning_bake_duration_seconds_sum", geo), 0);
  EXPECT_EQ(metrics_->types.at("skinning_bakes_queued"), "gauge");
  EXPECT_EQ(metrics_->types.at("skinning_bake_duration_seconds"), "histogram");
}

TEST_F(MetricsTest, CacheSeriesAreReadAtScrapeTime) {
  // The second registration and every Pose found the rig in the cache; the unknown rig missed.
  EXPECT_GE(Value("skinning_rig_cache_hits_total", {}), 1 + 7 + 1);
  EXPECT_GE(Value("skinning_rig_cache_misses_total", {}), 1);
  EXPECT_EQ(Value("skinning_rig_cache_evictions_total", {}), 0);
  EXPECT_EQ(Value("skinning_rig_cache_entries", {}), 1);
  EXPECT_GT(Value("skinning_rig_cache_bytes", {}), 41 * 24 * 3 * 8) << "at least the positions";
  EXPECT_EQ(metrics_->types.at("skinning_rig_cache_hits_total"), "counter");
  EXPECT_EQ(metrics_->types.at("skinning_rig_cache_bytes"), "gauge");
  // Every Pose and the session looked the bake up in the bake cache.
  EXPECT_GE(Value("skinning_bake_cache_hits_total", {}), 7 + 1);
  EXPECT_EQ(Value("skinning_bake_cache_entries", {}), 1);
}

// The kernels under CHOLMOD, as the server's "blas:" line names them (core/util/blas_kernels.h).
TEST_F(MetricsTest, BlasInfoNamesTheKernelsTheServerRuns) {
  Labels labels;
  std::string line;
  ASSERT_NO_FATAL_FAILURE(InfoAndLine("skinning_blas_info", "skinning-server blas: ", &labels, &line));
  auto label = [&labels](const std::string& key) { return labels[key]; };
  if (label("library") == "not OpenBLAS") {
    EXPECT_THAT(line, ::testing::HasSubstr("not OpenBLAS"));
    return;
  }
  EXPECT_THAT(line, ::testing::HasSubstr(label("library") + ", " + label("kernels") + " kernels"));
  if (!label("replaced").empty()) {
    EXPECT_THAT(line, ::testing::HasSubstr("OpenBLAS chose " + label("replaced")));
  }
}

// Which build the replica runs: the labels say what the server's "version:" line says.
TEST_F(MetricsTest, BuildInfoNamesTheVersionTheServerPrints) {
  Labels labels;
  std::string line;
  ASSERT_NO_FATAL_FAILURE(InfoAndLine("skinning_build_info", "skinning-server version: ", &labels, &line));
  auto label = [&labels](const std::string& key) { return labels[key]; };
  ASSERT_FALSE(label("version").empty());
  ASSERT_FALSE(label("build_type").empty()) << "the suite is built with a build type";
  EXPECT_THAT(line, ::testing::HasSubstr("version: " + label("version") + " (" + label("build_type") + " build; gRPC " +
                                         label("grpc") + ", "));
  EXPECT_EQ(label("grpc"), grpc::Version());
}

TEST_F(MetricsTest, StoreErrorsArePresentAndNotFoundIsNoError) {
  for (const char* op : {"put", "get", "exists", "delete", "list", "write_if"})
    EXPECT_EQ(Value("skinning_store_operation_errors_total", {{"operation", op}}), 0) << op;
  EXPECT_EQ(metrics_->types.at("skinning_store_operation_errors_total"), "counter");
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
