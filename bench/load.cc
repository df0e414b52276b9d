// A load generator built on the client library: closed loop (--concurrency=N client threads, each
// sending its next call when the last one answered) or open loop (--rate=R calls/s on a fixed
// schedule; latency counted from each call's intended send time, so a slow server is not hidden
// by the generator slowing down). Workloads on a generated 20-joint, ~10k-vertex chain tube:
//
//   pose_transforms  unary Pose, the 20 skinning transforms only
//   pose_vertices    unary Pose, LBS vertices (10k × 3 floats)
//   session          PoseSession frames (one stream per client thread), LBS vertices
//   fast             SolveSession frames (a fast_model bake made first): the root
//                    fixed, the tip dragged around a circle by position, transforms returned
//   http_json_transforms   the HTTP front door: Connect JSON Pose, transforms only (one
//                          keep-alive connection per client thread)
//   http_proto_vertices    Connect binary Pose, LBS vertices
//   ws_session             PoseSession frames over a WebSocket per client thread, LBS vertices
//   echo_transforms  the baseline: skinning.internal.v1.LoadBaselineService/Echo (the server started
//   echo_vertices    with --load_baseline) with the request and response sizes of
//                    pose_transforms / pose_vertices: raw gRPC on the same server and machine
// (the HTTP request bodies are encoded once beforehand, as the gRPC ones are built once)
//
// It starts the real server binary on 127.0.0.1 with a temporary store (or uses --target) and
// prints one row per run: calls, errors by code, throughput, p50/p99/p99.9 latency.
//
//   ./build/bench/load --workload=pose_transforms --concurrency=16 --duration=5
//   ./build/bench/load --workload=session --rate=2000
//   ./build/bench/load --sweep --duration=5    # each pose row followed by its echo baseline
//   ./build/bench/load --sweep --repeat=5      # five pose/echo pairs per row, order alternating,
//                                              # then the median ratio of the pairs
//   ./build/bench/load --idle_sessions=1000 --repeat=3   # three rounds with 1,000 idle sessions open
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <google/protobuf/util/json_util.h>
#include <grpcpp/channel.h>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "bench/bench_rigs.h"
#include "bench/bench_stats.h"
#include "bench/spawned_server.h"
#include "client/client.h"
#include "core/util/process_stats.h"
#include "core/util/status_macros.h"
#include "server/convert/convert.h"
#include "skinning/internal/v1/load_baseline.grpc.pb.h"

ABSL_FLAG(std::string, target, "", "host:port of a running server; empty = start --server_binary");
ABSL_FLAG(int, http_port, 0, "with --target: the running server's HTTP front door port (HTTP workloads)");
ABSL_FLAG(std::string, server_binary, SKINNING_SERVER_BINARY, "the skinning-server binary to start");
ABSL_FLAG(std::string, server_flags, "", "extra flags for the started server, comma-separated (e.g. --threads=8)");
ABSL_FLAG(std::string, workload, "pose_transforms",
          "pose_transforms, pose_vertices, session, fast, http_json_transforms, http_proto_vertices, ws_session, "
          "echo_transforms or echo_vertices");
ABSL_FLAG(int, concurrency, 16, "closed loop: client threads, each with one call in flight");
ABSL_FLAG(double, rate, 0, "open loop: calls per second on a fixed schedule (0 = closed loop at --concurrency)");
ABSL_FLAG(int, rate_threads, 64, "open loop: threads sending the scheduled calls (most calls in flight at once)");
ABSL_FLAG(double, duration, 5, "seconds measured per run");
ABSL_FLAG(double, warmup, 1, "seconds run before measuring");
ABSL_FLAG(int, threads_per_channel, 8, "client threads sharing one gRPC channel (and TCP connection); 0 = one for all");
ABSL_FLAG(int, vertices, 10000, "vertices of the generated tube (100 per ring)");
ABSL_FLAG(int, joints, 20, "joints of the generated tube's chain");
ABSL_FLAG(bool, sweep, false,
          "run pose_transforms and pose_vertices at concurrency 1, 16, 64, each followed by its echo baseline, "
          "and session and fast at 1, 16 (closed loop) and print one table");
ABSL_FLAG(int, repeat, 1,
          "with --sweep: run each pose/echo pair this many times, echo first in every second pair (so a drift "
          "of the machine does not favour one side), and close with the median, min and max of the pairs' "
          "calls/s, p50 and p99 ratios; with --idle_sessions: open and close the sessions this many times, "
          "runs without them between, and close with the median, min and max of the rounds' ratios");
ABSL_FLAG(bool, http_sweep, false,
          "run every gRPC and HTTP pose workload at concurrency 1 and 16 (closed loop), gRPC and HTTP "
          "rows side by side in one table");

ABSL_FLAG(int, idle_sessions, 0,
          "open this many idle pose sessions (each answered one frame) and run pose_transforms at 1 and 16 "
          "clients without them, with them, and without them again (--repeat rounds); prints the server's "
          "threads (a started server only) and the rate with them as a share of the rate without");

namespace skinning {
namespace {

using Clock = std::chrono::steady_clock;

// What every run needs: the rig, a FAST bake when asked, precomputed request bodies.
struct Fixture {
  std::string target;
  int http_port = 0;
  std::vector<std::string> json_transform_bodies, proto_vertex_bodies, ws_frames;  // per pose
  std::string rig_name;   // rigs/{rig}
  std::string fast_bake;  // the FAST bake's name
  Rig rig;
  std::vector<v1::Pose> poses;                   // a bending animation, cycled through
  // Its unary Pose requests, built once like the echo's request (transforms only; vertices).
  std::vector<v1::PoseRequest> transform_requests, vertex_requests;
  std::vector<v1::SolveSessionRequest> fast_frames;  // the tip circling
  // The echo baseline's sizes: bytes of a transforms-only and of a vertices Pose request and
  // response of this rig (measured on one real call each).
  int64_t transforms_request_bytes = 0, transforms_response_bytes = 0;
  int64_t vertices_request_bytes = 0, vertices_response_bytes = 0;
};

ClientOptions LoadClientOptions(const std::string& target) {
  ClientOptions o;
  o.target = target;
  o.deadline = std::chrono::seconds(10);
  o.max_attempts = 1;  // a load test counts errors instead of hiding them in retries
  o.round_robin = false;
  o.own_connection = true;  // each Client (channel) is its own TCP connection
  return o;
}

absl::Status PrepareFixture(bool need_fast, Fixture* fx) {
  const int segments = 100, rings = std::max(2, absl::GetFlag(FLAGS_vertices) / segments);
  const int joints = absl::GetFlag(FLAGS_joints);
  fx->rig = MakeChainTube(rings, segments, joints);
  Client client(LoadClientOptions(fx->target));
  ASSIGN_OR_RETURN(v1::CreateRigResponse reg, client.CreateRig(RigToProto(fx->rig)));
  fx->rig_name = reg.rig().name();
  for (int c = 0; c < 256; ++c) {
    Pose pose = RestPose(fx->rig.skeleton);
    for (int j = 1; j < joints; ++j)
      pose.local[j].rotation = Eigen::AngleAxisd(0.3 * std::sin(2 * M_PI * c / 256 + j), Eigen::Vector3d::UnitZ());
    fx->poses.push_back(PoseToProto(pose));
    v1::PoseRequest req;
    req.set_rig(fx->rig_name);
    *req.mutable_pose() = fx->poses.back();
    req.mutable_outputs()->set_transforms(true);
    fx->transform_requests.push_back(req);
    std::string json;
    (void)google::protobuf::util::MessageToJsonString(req, &json);
    fx->json_transform_bodies.push_back(std::move(json));
    req.mutable_outputs()->set_transforms(false);
    req.mutable_outputs()->set_vertices(true);
    fx->vertex_requests.push_back(req);
    fx->proto_vertex_bodies.push_back(req.SerializeAsString());
    v1::PoseSessionRequest frame;
    frame.set_sequence(c);
    *frame.mutable_pose() = fx->poses.back();
    fx->ws_frames.push_back(frame.SerializeAsString());
  }
  for (bool vertices : {false, true}) {
    v1::PoseRequest req;
    req.set_rig(fx->rig_name);
    *req.mutable_pose() = fx->poses[1];
    if (vertices) req.mutable_outputs()->set_vertices(true);
    else req.mutable_outputs()->set_transforms(true);
    ASSIGN_OR_RETURN(v1::PosedFrame frame, client.Pose(req));
    v1::PoseResponse res;
    *res.mutable_frame() = std::move(frame);
    (vertices ? fx->vertices_request_bytes : fx->transforms_request_bytes) = static_cast<int64_t>(req.ByteSizeLong());
    (vertices ? fx->vertices_response_bytes : fx->transforms_response_bytes) = static_cast<int64_t>(res.ByteSizeLong());
  }
  if (!need_fast) return absl::OkStatus();
  v1::BakeOptions options;
  // The default energy, surface spokes and rims: the tube is open, it has no inside.
  options.mutable_fast_model();
  ASSIGN_OR_RETURN(v1::StartBakeResponse started, client.StartBake(fx->rig_name, options));
  ASSIGN_OR_RETURN(v1::Bake done,
                   client.WatchBake(started.bake().name(), [](const v1::Bake&) { return true; }));
  if (done.metadata().state() != v1::BAKE_STATE_SUCCEEDED)
    return absl::InternalError(absl::StrCat("FAST bake ended ", v1::BakeState_Name(done.metadata().state()),
                                            ": ", done.error().message()));
  fx->fast_bake = done.name();
  const int tip = joints - 1;
  const double spacing = 10.0 / joints, x = spacing * tip;
  for (int c = 0; c < 256; ++c) {
    const double a = 2 * M_PI * c / 256;
    v1::SolveSessionRequest req;
    v1::HandleConstraint* root = req.add_constraints();
    root->set_joint(0);
    root->set_kind(v1::HandleConstraint::KIND_TRANSFORM);
    for (float v : {1.f, 0.f, 0.f, 0.f, 0.f, 1.f, 0.f, 0.f, 0.f, 0.f, 1.f, 0.f}) root->add_target(v);
    v1::HandleConstraint* drag = req.add_constraints();
    drag->set_joint(tip);
    drag->set_kind(v1::HandleConstraint::KIND_POSITION);  // the tip joint itself goes to the target
    for (double v : {x - 0.5 * (1 - std::cos(a)), 0.0, 1.0 * std::sin(a)}) drag->add_target(static_cast<float>(v));
    fx->fast_frames.push_back(std::move(req));
  }
  return absl::OkStatus();
}

enum class Workload {
  kPoseTransforms,
  kPoseVertices,
  kSession,
  kFast,
  kHttpJsonTransforms,
  kHttpProtoVertices,
  kWsSession,
  kEchoTransforms,
  kEchoVertices
};

bool IsEcho(Workload w) { return w == Workload::kEchoTransforms || w == Workload::kEchoVertices; }

// The echo run that is a pose workload's baseline (same message sizes), if it has one.
std::optional<Workload> EchoBaselineOf(Workload w) {
  if (w == Workload::kPoseTransforms) return Workload::kEchoTransforms;
  if (w == Workload::kPoseVertices) return Workload::kEchoVertices;
  return std::nullopt;
}

bool IsHttp(Workload w) {
  return w == Workload::kHttpJsonTransforms || w == Workload::kHttpProtoVertices || w == Workload::kWsSession;
}

absl::StatusOr<Workload> ParseWorkload(const std::string& name) {
  if (name == "pose_transforms") return Workload::kPoseTransforms;
  if (name == "pose_vertices") return Workload::kPoseVertices;
  if (name == "session") return Workload::kSession;
  if (name == "fast") return Workload::kFast;
  if (name == "http_json_transforms") return Workload::kHttpJsonTransforms;
  if (name == "http_proto_vertices") return Workload::kHttpProtoVertices;
  if (name == "ws_session") return Workload::kWsSession;
  if (name == "echo_transforms") return Workload::kEchoTransforms;
  if (name == "echo_vertices") return Workload::kEchoVertices;
  return absl::InvalidArgumentError(absl::StrCat(
      "--workload=", name,
      " is not one of pose_transforms, pose_vertices, session, fast, http_json_transforms, http_proto_vertices, "
      "ws_session, echo_transforms, echo_vertices"));
}

const char* WorkloadName(Workload w) {
  switch (w) {
    case Workload::kPoseTransforms:
      return "pose_transforms";
    case Workload::kPoseVertices:
      return "pose_vertices";
    case Workload::kSession:
      return "session";
    case Workload::kFast:
      return "fast";
    case Workload::kHttpJsonTransforms:
      return "http_json_transforms";
    case Workload::kHttpProtoVertices:
      return "http_proto_vertices";
    case Workload::kWsSession:
      return "ws_session";
    case Workload::kEchoTransforms:
      return "echo_transforms";
    case Workload::kEchoVertices:
      return "echo_vertices";
  }
  return "?";
}

namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = boost::asio::ip::tcp;

// One keep-alive HTTP connection (reopened after an error) and one WebSocket, per client thread.
class HttpCaller {
 public:
  // The read buffers hold a whole answer (10k vertices are 120 KB), so each is read in a few
  // large reads rather than many small ones.
  explicit HttpCaller(int port) : port_(port) {
    buffer_.reserve(1 << 20);
    ws_buffer_.reserve(1 << 20);
  }

  // POST `body` to `target`; the answer's body in *out. Non-200 is an error with its body.
  absl::Status Post(const std::string& target, const std::string& content_type, const std::string& body,
                    std::string* out) {
    beast::error_code ec;
    if (!stream_) {
      stream_ = std::make_unique<beast::tcp_stream>(io_);
      stream_->connect(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port_)), ec);
      if (ec) return Fail(absl::UnavailableError(ec.message()));
    }
    http::request<http::string_body> req{http::verb::post, target, 11};
    req.set(http::field::host, "127.0.0.1");
    req.set(http::field::content_type, content_type);
    req.keep_alive(true);
    req.body() = body;
    req.prepare_payload();
    http::write(*stream_, req, ec);
    if (ec) return Fail(absl::UnavailableError(ec.message()));
    http::response<http::string_body> res;
    buffer_.consume(buffer_.size());
    http::read(*stream_, buffer_, res, ec);
    if (ec) return Fail(absl::UnavailableError(ec.message()));
    if (res.result_int() != 200) return absl::UnknownError(absl::StrCat("HTTP ", res.result_int(), ": ", res.body()));
    *out = std::move(res.body());
    if (!res.keep_alive()) stream_.reset();
    return absl::OkStatus();
  }

  // One WebSocket frame out, its answer in *out.
  absl::Status WsStep(const std::string& frame, const std::string& first_rig, std::string* out) {
    beast::error_code ec;
    if (!ws_) {
      ws_ = std::make_unique<websocket::stream<tcp::socket>>(io_);
      ws_->next_layer().connect(
          tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port_)), ec);
      if (!ec) ws_->handshake("127.0.0.1", "/skinning.v1.PoseService/PoseSession", ec);
      if (ec) return FailWs(absl::UnavailableError(ec.message()));
      ws_->binary(true);
      ws_->auto_fragment(false);
      first_ = true;
    }
    std::string payload = frame;
    if (first_) {
      v1::PoseSessionRequest req;
      req.ParseFromString(frame);
      req.set_rig(first_rig);
      req.mutable_outputs()->set_vertices(true);
      payload = req.SerializeAsString();
      first_ = false;
    }
    ws_->write(boost::asio::buffer(payload), ec);
    if (ec) return FailWs(absl::UnavailableError(ec.message()));
    ws_buffer_.consume(ws_buffer_.size());
    ws_->read(ws_buffer_, ec);
    if (ec) return FailWs(absl::UnavailableError(ec.message()));
    *out = beast::buffers_to_string(ws_buffer_.data());
    return absl::OkStatus();
  }

  void Close() {
    if (ws_) {
      beast::error_code ec;
      ws_->close(websocket::close_code::normal, ec);
    }
  }

 private:
  absl::Status Fail(absl::Status s) {
    stream_.reset();
    return s;
  }
  absl::Status FailWs(absl::Status s) {
    ws_.reset();
    return s;
  }

  const int port_;
  boost::asio::io_context io_;
  std::unique_ptr<beast::tcp_stream> stream_;
  beast::flat_buffer buffer_, ws_buffer_;
  std::unique_ptr<websocket::stream<tcp::socket>> ws_;
  bool first_ = true;
};

// One client thread's calls: unary Pose through a shared Client, or a stream of its own
// (reopened after an error).
class Caller {
 public:
  Caller(Workload workload, Client* client, internal::v1::LoadBaselineService::Stub* echo, const Fixture* fx, int seed)
      : workload_(workload), client_(client), echo_(echo), fx_(fx), next_(seed * 37), http_(fx->http_port) {
    if (IsEcho(workload)) {
      const bool vertices = workload == Workload::kEchoVertices;
      // The payload's bytes plus its tag and length come to the Pose request's size.
      const int64_t request = vertices ? fx->vertices_request_bytes : fx->transforms_request_bytes;
      echo_request_.mutable_payload()->assign(static_cast<size_t>(std::max<int64_t>(0, request - 4)), 'x');
      echo_request_.set_response_bytes(
          static_cast<int32_t>(std::max<int64_t>(0, (vertices ? fx->vertices_response_bytes : fx->transforms_response_bytes) - 4)));
    }
    if (workload == Workload::kPoseTransforms || workload == Workload::kPoseVertices) {
      const bool transforms = workload == Workload::kPoseTransforms;
      pose_requests_ = transforms ? &fx->transform_requests : &fx->vertex_requests;
      pose_expected_ = transforms ? 12 * static_cast<int64_t>(fx->rig.skeleton.size()) : 3 * fx->rig.mesh.V.rows();
    }
    outputs_.set_vertices(true);  // what pose sessions return
  }

  // One call, answered.
  absl::Status Call() {
    const int i = next_++ & 255;
    switch (workload_) {
      case Workload::kPoseTransforms:
      case Workload::kPoseVertices: {
        ASSIGN_OR_RETURN(v1::PosedFrame frame, client_->Pose((*pose_requests_)[i]));
        return Expect(workload_ == Workload::kPoseTransforms ? frame.transforms_size() : frame.vertices_size(),
                      pose_expected_);
      }
      case Workload::kSession: {
        if (!pose_session_) {
          ASSIGN_OR_RETURN(pose_session_, client_->StartPoseSession(fx_->rig_name, v1::DEFORMER_UNSPECIFIED,
                                                                    outputs_));
        }
        absl::StatusOr<v1::PosedFrame> frame = pose_session_->Step(fx_->poses[i]);
        if (!frame.ok()) {
          pose_session_.reset();
          return frame.status();
        }
        return Expect(frame->vertices_size(), 3 * fx_->rig.mesh.V.rows());
      }
      case Workload::kFast: {
        if (!fast_session_) {
          ASSIGN_OR_RETURN(fast_session_, client_->StartSolveSession(fx_->fast_bake));
        }
        absl::StatusOr<v1::FastSolution> answer = fast_session_->Step(fx_->fast_frames[i]);
        if (!answer.ok()) {
          fast_session_.reset();
          return answer.status();
        }
        return Expect(answer->transforms_size() > 0, 1);
      }
      case Workload::kHttpJsonTransforms: {
        std::string body;
        RETURN_IF_ERROR(http_.Post("/skinning.v1.PoseService/Pose", "application/json",
                                   fx_->json_transform_bodies[i], &body));
        // Checked without parsing (a parse would load the shared CPUs on the client's side).
        return Expect(body.find("\"transforms\"") != std::string::npos, 1);
      }
      case Workload::kHttpProtoVertices: {
        std::string body;
        RETURN_IF_ERROR(http_.Post("/skinning.v1.PoseService/Pose", "application/proto", fx_->proto_vertex_bodies[i], &body));
        v1::PoseResponse res;
        if (!res.ParseFromString(body)) return absl::DataLossError("not a PoseResponse");
        return Expect(res.frame().vertices_size(), 3 * fx_->rig.mesh.V.rows());
      }
      case Workload::kEchoTransforms:
      case Workload::kEchoVertices: {
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
        internal::v1::EchoResponse res;
        const grpc::Status s = echo_->Echo(&ctx, echo_request_, &res);
        if (!s.ok()) return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
        return Expect(static_cast<int64_t>(res.payload().size()), echo_request_.response_bytes());
      }
      case Workload::kWsSession: {
        std::string body;
        RETURN_IF_ERROR(http_.WsStep(fx_->ws_frames[i], fx_->rig_name, &body));
        v1::PoseSessionResponse res;
        if (!res.ParseFromString(body)) return absl::DataLossError("not a PoseSessionResponse");
        return Expect(res.frame().vertices_size(), 3 * fx_->rig.mesh.V.rows());
      }
    }
    return absl::InternalError("unknown workload");
  }

  void Close() {
    http_.Close();
    if (pose_session_) pose_session_->Close().IgnoreError();
    if (fast_session_) fast_session_->Close().IgnoreError();
  }

 private:
  static absl::Status Expect(int64_t got, int64_t want) {
    if (got == want) return absl::OkStatus();
    return absl::DataLossError(absl::StrCat("answer has ", got, " values, expected ", want));
  }

  const Workload workload_;
  Client* const client_;
  internal::v1::LoadBaselineService::Stub* const echo_;
  internal::v1::EchoRequest echo_request_;
  const Fixture* const fx_;
  int next_;
  // Unary Pose: the fixture's requests for this workload and the values each answer holds.
  const std::vector<v1::PoseRequest>* pose_requests_ = nullptr;
  int64_t pose_expected_ = 0;
  v1::PoseOutputs outputs_;
  std::unique_ptr<PoseSession> pose_session_;
  std::unique_ptr<SolveSession> fast_session_;
  HttpCaller http_;
};

struct ThreadResult {
  std::vector<double> micros;
  std::map<absl::StatusCode, int64_t> errors;
  std::string first_error;
};

struct RunResult {
  std::string workload, load;
  int64_t calls = 0;
  std::map<absl::StatusCode, int64_t> errors;
  std::string first_error;
  double seconds = 0;
  double p50 = 0, p99 = 0, p999 = 0;
};

// Closed loop when rate == 0 (threads = concurrency), else open loop at `rate` calls/s.
RunResult Run(const Fixture& fx, Workload workload, int threads, double rate) {
  const double warmup = absl::GetFlag(FLAGS_warmup), duration = absl::GetFlag(FLAGS_duration);
  const int per_channel = absl::GetFlag(FLAGS_threads_per_channel);
  const int channels = per_channel <= 0 ? 1 : (threads + per_channel - 1) / per_channel;
  std::vector<std::unique_ptr<Client>> clients;
  std::vector<std::unique_ptr<internal::v1::LoadBaselineService::Stub>> echo_stubs;
  for (int c = 0; c < channels; ++c) {
    clients.push_back(std::make_unique<Client>(LoadClientOptions(fx.target)));
    echo_stubs.push_back(internal::v1::LoadBaselineService::NewStub(clients.back()->channel()));  // same connection
  }

  const Clock::time_point start = Clock::now() + std::chrono::milliseconds(100);  // threads ready first
  const Clock::time_point measure_from = start + std::chrono::microseconds(static_cast<int64_t>(warmup * 1e6));
  const Clock::time_point end = measure_from + std::chrono::microseconds(static_cast<int64_t>(duration * 1e6));
  std::atomic<int64_t> ticket{0};
  const auto period = std::chrono::duration<double>(rate > 0 ? 1.0 / rate : 0.0);
  std::vector<ThreadResult> results(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      const size_t channel = per_channel <= 0 ? 0 : t / per_channel;
      Caller caller(workload, clients[channel].get(), echo_stubs[channel].get(), &fx, t);
      ThreadResult& r = results[t];
      r.micros.reserve(rate > 0 ? static_cast<size_t>(rate * duration / threads * 2 + 16) : 1 << 16);
      std::this_thread::sleep_until(start);
      while (true) {
        Clock::time_point intended;
        if (rate > 0) {
          const int64_t k = ticket.fetch_add(1);
          intended = start + std::chrono::duration_cast<Clock::duration>(period * k);
          if (intended >= end) break;
          std::this_thread::sleep_until(intended);
        } else {
          intended = Clock::now();
          if (intended >= end) break;
        }
        const absl::Status s = caller.Call();
        const Clock::time_point done = Clock::now();
        if (intended < measure_from) continue;
        if (s.ok()) {
          r.micros.push_back(std::chrono::duration<double, std::micro>(done - intended).count());
        } else {
          if (r.errors.empty()) r.first_error = s.ToString();
          ++r.errors[s.code()];
        }
      }
      caller.Close();
    });
  }
  for (std::thread& t : pool) t.join();

  RunResult out;
  out.workload = WorkloadName(workload);
  out.load = rate > 0 ? absl::StrCat("rate ", rate, "/s") : absl::StrCat(threads, " clients");
  out.seconds = duration;
  std::vector<double> all;
  for (ThreadResult& r : results) {
    all.insert(all.end(), r.micros.begin(), r.micros.end());
    for (const auto& [code, n] : r.errors) out.errors[code] += n;
    if (out.first_error.empty()) out.first_error = r.first_error;
  }
  std::sort(all.begin(), all.end());
  out.calls = static_cast<int64_t>(all.size());
  for (const auto& [code, n] : out.errors) out.calls += n;
  out.p50 = PercentileOfSorted(all, 0.5);
  out.p99 = PercentileOfSorted(all, 0.99);
  out.p999 = PercentileOfSorted(all, 0.999);
  return out;
}

// Answered calls per second.
double Rate(const RunResult& r) {
  int64_t errors = 0;
  for (const auto& [code, n] : r.errors) errors += n;
  return (r.calls - errors) / r.seconds;
}

void PrintHeader() {
  std::printf("%-16s %-14s %9s %-22s %10s %9s %9s %9s\n", "workload", "load", "calls", "errors", "calls/s", "p50 us",
              "p99 us", "p99.9 us");
}

void PrintRow(const RunResult& r) {
  std::string errors = "0";
  if (!r.errors.empty()) {
    std::vector<std::string> parts;
    for (const auto& [code, n] : r.errors) parts.push_back(absl::StrCat(absl::StatusCodeToString(code), ":", n));
    errors = absl::StrJoin(parts, ",");
  }
  std::printf("%-16s %-14s %9lld %-22s %10.0f %9.0f %9.0f %9.0f\n", r.workload.c_str(), r.load.c_str(),
              static_cast<long long>(r.calls), errors.c_str(), Rate(r), r.p50, r.p99, r.p999);
  if (!r.first_error.empty()) std::printf("  first error: %s\n", r.first_error.c_str());
  std::fflush(stdout);
}

// One ratio over the repeats of a row: "label median [min, max]" times `scale` (100 for a percentage).
void PrintSpread(std::vector<double> v, double scale, int digits, const char* label, const char* unit) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  const double median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  std::printf("   %s %.*f%s [%.*f, %.*f]", label, digits, scale * median, unit, digits, scale * v.front(), digits,
              scale * v.back());
}

// pose_transforms at 1 and 16 clients without idle sessions, with --idle_sessions of them open
// (each answered one frame, then left waiting), and without them again; with --repeat=R the
// sessions are opened and closed R times (R + 1 runs without them, R with), each run with them
// compared with the mean of the runs without them just before and just after, so that a drift
// of the machine over the rounds does not count as the sessions' cost.
int IdleSessionsSweep(const Fixture& fx, pid_t server_pid) {
  const int n = absl::GetFlag(FLAGS_idle_sessions);
  const int rounds = std::max(1, absl::GetFlag(FLAGS_repeat));
  const std::vector<int> loads = {1, 16};
  std::map<int, std::vector<RunResult>> without, with;
  auto run_without = [&] {
    for (int c : loads) {
      without[c].push_back(Run(fx, Workload::kPoseTransforms, c, 0));
      PrintRow(without[c].back());
    }
  };
  run_without();
  Client client(LoadClientOptions(fx.target));
  v1::PoseOutputs outputs;
  outputs.set_transforms(true);
  for (int round = 0; round < rounds; ++round) {
    const int threads_before = ThreadCount(server_pid);
    std::vector<std::unique_ptr<PoseSession>> sessions;
    const auto opened = Clock::now();
    for (int i = 0; i < n; ++i) {
      absl::StatusOr<std::unique_ptr<PoseSession>> session =
          client.StartPoseSession(fx.rig_name, v1::DEFORMER_UNSPECIFIED, outputs);
      absl::Status s = session.status();
      if (s.ok()) s = (*session)->Step(fx.poses[i % fx.poses.size()]).status();
      if (!s.ok()) {
        std::fprintf(stderr, "load: idle session %d: %s\n", i, s.ToString().c_str());
        return 1;
      }
      sessions.push_back(*std::move(session));
    }
    const double open_seconds = std::chrono::duration<double>(Clock::now() - opened).count();
    const int threads_open = ThreadCount(server_pid);
    std::printf("%d idle pose sessions opened in %.2f s; server threads %d before, %d with them open%s\n", n,
                open_seconds, threads_before, threads_open, server_pid > 0 ? "" : " (-1: not a started server)");
    for (int c : loads) {
      RunResult r = Run(fx, Workload::kPoseTransforms, c, 0);
      r.load = absl::StrCat(r.load, " +", n, " idle");
      PrintRow(r);
      with[c].push_back(r);
    }
    for (auto& s : sessions) (void)s->Close();
    sessions.clear();
    run_without();
  }
  for (int c : loads) {
    std::vector<double> rate, p99;
    for (int round = 0; round < rounds; ++round) {
      const RunResult &before = without[c][round], &after = without[c][round + 1], &open = with[c][round];
      rate.push_back(Rate(open) / ((Rate(before) + Rate(after)) / 2));
      p99.push_back(open.p99 / ((before.p99 + after.p99) / 2));
    }
    if (rounds == 1) {
      std::printf("  %d clients with %d idle sessions: %.0f%% of the calls/s without them (mean of the runs before "
                  "and after), p99 %.2fx\n",
                  c, n, 100.0 * rate[0], p99[0]);
    } else {
      std::printf("  %d clients with %d idle sessions, against the mean of the runs before and after, over %d rounds "
                  "(median [min, max]):",
                  c, n, rounds);
      PrintSpread(rate, 100, 0, "calls/s", "%");
      PrintSpread(p99, 1, 2, "p99", "x");
      std::printf("\n");
    }
  }
  return 0;
}

int Main() {
  std::vector<std::pair<Workload, int>> plan;
  double rate = absl::GetFlag(FLAGS_rate);
  const int repeat = std::max(1, absl::GetFlag(FLAGS_repeat));
  if (absl::GetFlag(FLAGS_sweep)) {
    rate = 0;
    for (Workload w : {Workload::kPoseTransforms, Workload::kPoseVertices})
      for (int c : {1, 16, 64})
        for (int k = 0; k < repeat; ++k) {
          const Workload echo = *EchoBaselineOf(w);
          if (k % 2 == 0) {
            plan.emplace_back(w, c);
            plan.emplace_back(echo, c);
          } else {
            plan.emplace_back(echo, c);
            plan.emplace_back(w, c);
          }
        }
    for (Workload w : {Workload::kSession, Workload::kFast})
      for (int c : {1, 16}) plan.emplace_back(w, c);
  } else if (absl::GetFlag(FLAGS_http_sweep)) {
    rate = 0;
    for (int c : {1, 16})
      for (Workload w : {Workload::kPoseTransforms, Workload::kHttpJsonTransforms, Workload::kPoseVertices,
                         Workload::kHttpProtoVertices, Workload::kSession, Workload::kWsSession})
        plan.emplace_back(w, c);
  } else if (absl::GetFlag(FLAGS_idle_sessions) > 0) {
    rate = 0;  // the plan is run by IdleSessionsSweep
  } else {
    absl::StatusOr<Workload> w = ParseWorkload(absl::GetFlag(FLAGS_workload));
    if (!w.ok()) {
      std::fprintf(stderr, "load: %s\n", std::string(w.status().message()).c_str());
      return 2;
    }
    plan.emplace_back(*w, rate > 0 ? absl::GetFlag(FLAGS_rate_threads) : absl::GetFlag(FLAGS_concurrency));
  }
  const bool need_fast = std::any_of(plan.begin(), plan.end(), [](const auto& p) { return p.first == Workload::kFast; });

  SpawnedServer server;
  Fixture fx;
  fx.target = absl::GetFlag(FLAGS_target);
  if (fx.target.empty()) {
    std::vector<std::string> extra = {"--load_baseline"};
    for (absl::string_view f : absl::StrSplit(absl::GetFlag(FLAGS_server_flags), ',', absl::SkipEmpty()))
      extra.emplace_back(f);
    if (absl::Status s = server.Start(absl::GetFlag(FLAGS_server_binary), extra); !s.ok()) {
      std::fprintf(stderr, "load: %s\n", std::string(s.message()).c_str());
      return 1;
    }
    fx.target = absl::StrCat("127.0.0.1:", server.port());
    fx.http_port = server.http_port();
  } else {
    fx.http_port = absl::GetFlag(FLAGS_http_port);
  }
  if (fx.http_port == 0 && std::any_of(plan.begin(), plan.end(), [](const auto& p) { return IsHttp(p.first); })) {
    std::fprintf(stderr, "load: the HTTP workloads need the front door (--http_port with --target)\n");
    return 2;
  }
  if (absl::Status s = PrepareFixture(need_fast, &fx); !s.ok()) {
    std::fprintf(stderr, "load: setup failed: %s\n", s.ToString().c_str());
    return 1;
  }
  std::printf("skinning load: %s, rig %lld vertices / %d joints; %.0f s measured after %.0f s warm-up per row; "
              "%d client threads per channel; %u hardware threads shared by client and server%s%s\n",
              fx.target.c_str(), static_cast<long long>(fx.rig.mesh.V.rows()), fx.rig.skeleton.size(),
              absl::GetFlag(FLAGS_duration), absl::GetFlag(FLAGS_warmup), absl::GetFlag(FLAGS_threads_per_channel),
              std::thread::hardware_concurrency(), absl::GetFlag(FLAGS_server_flags).empty() ? "" : "; server flags ",
              absl::GetFlag(FLAGS_server_flags).c_str());
  PrintHeader();
  if (absl::GetFlag(FLAGS_idle_sessions) > 0) return IdleSessionsSweep(fx, server.pid());
  // A pose run and its echo baseline at the same load, run back to back (either order): the pose
  // figures as ratios to raw gRPC. With --repeat the pairs of a row are summarized at the end.
  std::optional<std::pair<Workload, RunResult>> last;
  struct Ratios {
    std::vector<double> rate, p50, p99;
  };
  std::map<std::pair<std::string, std::string>, Ratios> ratios;  // (pose workload, load)
  std::vector<std::pair<std::string, std::string>> order;
  for (const auto& [workload, threads] : plan) {
    const RunResult r = Run(fx, workload, threads, rate);
    PrintRow(r);
    const bool echo_now = IsEcho(workload);
    const Workload pose_w = last && echo_now ? last->first : workload;
    const Workload echo_w = last && !echo_now ? last->first : workload;
    if (last && last->second.load == r.load && EchoBaselineOf(pose_w) == echo_w) {
      const RunResult& pose = echo_now ? last->second : r;
      const RunResult& echo = echo_now ? r : last->second;
      const double pose_rate = Rate(pose), echo_rate = Rate(echo);
      std::printf("  %s / %s: %.0f%% of the baseline's calls/s; p50 %.2fx, p99 %.2fx the baseline's\n",
                  pose.workload.c_str(), echo.workload.c_str(), 100.0 * pose_rate / echo_rate, pose.p50 / echo.p50,
                  pose.p99 / echo.p99);
      std::fflush(stdout);
      const auto key = std::make_pair(pose.workload, pose.load);
      if (!ratios.count(key)) order.push_back(key);
      ratios[key].rate.push_back(pose_rate / echo_rate);
      ratios[key].p50.push_back(pose.p50 / echo.p50);
      ratios[key].p99.push_back(pose.p99 / echo.p99);
      last.reset();  // a run belongs to one pair
    } else {
      last.emplace(workload, r);
    }
  }
  if (repeat > 1) {
    std::printf("\npose against its echo baseline, over %d pairs per row (median [min, max]):\n", repeat);
    for (const auto& key : order) {
      const Ratios& q = ratios[key];
      std::printf("  %-16s %-10s", key.first.c_str(), key.second.c_str());
      PrintSpread(q.rate, 100, 0, "calls/s", "%");
      PrintSpread(q.p50, 1, 2, "p50", "x");
      PrintSpread(q.p99, 1, 2, "p99", "x");
      std::printf("\n");
    }
  }
  return 0;
}

}  // namespace
}  // namespace skinning

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Load generator for the skinning service.\n"
      "Usage: load [--workload=pose_transforms|pose_vertices|session|fast|echo_transforms|...] "
      "[--concurrency=N | --rate=R] "
      "[--duration=S] [--sweep [--repeat=N] | --http_sweep | --idle_sessions=N [--repeat=N]] [--target=host:port [--http_port=P]]");
  absl::ParseCommandLine(argc, argv);
  signal(SIGPIPE, SIG_IGN);
  return skinning::Main();
}
