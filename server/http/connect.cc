#include "server/http/connect.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <boost/beast/http.hpp>
#include <google/protobuf/type.pb.h>
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/type_resolver.h>
#include <google/protobuf/util/type_resolver_util.h>
#include <grpcpp/support/server_interceptor.h>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "server/api/quick.h"
#include "server/http/grpc_web.h"
#include "server/http/gzip.h"
#include "server/http/proto_json.h"
#include "server/http/ws_status.h"
#include "skinning/v1/bake_service.pb.h"
#include "skinning/v1/fast_service.pb.h"
#include "skinning/v1/pose_service.pb.h"
#include "skinning/v1/rig_service.pb.h"

namespace skinning {

namespace http = boost::beast::http;
using google::protobuf::Message;
using RpcType = grpc::experimental::ServerRpcInfo::Type;

namespace {

// The media type without parameters, lower case ("application/json; charset=utf-8" → "application/json").
std::string MediaType(absl::string_view content_type) {
  const size_t semi = content_type.find(';');
  return absl::AsciiStrToLower(absl::StripAsciiWhitespace(content_type.substr(0, semi)));
}

// A type resolver over the generated descriptors that keeps every type it has built, for the
// JSON that server/http/proto_json.h leaves to protobuf. MessageToJsonString /
// JsonStringToMessage rebuild google.protobuf.Type messages from the descriptors on every call
// (their converter's type cache lives for one call); this one hands out copies of types built
// once, which takes about a sixth off parsing a JSON Pose request. The conversion itself is
// protobuf's own (BinaryToJsonString / JsonToBinaryString, which those two functions call), so
// the JSON is byte for byte the same.
class CachingTypeResolver final : public google::protobuf::util::TypeResolver {
 public:
  CachingTypeResolver()
      : base_(google::protobuf::util::NewTypeResolverForDescriptorPool(
            kTypeUrlPrefix, google::protobuf::DescriptorPool::generated_pool())) {}

  static constexpr const char* kTypeUrlPrefix = "type.googleapis.com";

  google::protobuf::util::Status ResolveMessageType(const std::string& type_url,
                                                    google::protobuf::Type* type) override {
    {
      absl::ReaderMutexLock lock(&mu_);
      if (auto it = types_.find(type_url); it != types_.end()) {
        *type = *it->second;
        return google::protobuf::util::Status();
      }
    }
    auto status = base_->ResolveMessageType(type_url, type);
    if (!status.ok()) return status;
    absl::MutexLock lock(&mu_);
    types_.try_emplace(type_url, std::make_unique<google::protobuf::Type>(*type));
    return status;
  }

  google::protobuf::util::Status ResolveEnumType(const std::string& type_url,
                                                 google::protobuf::Enum* enum_type) override {
    return base_->ResolveEnumType(type_url, enum_type);
  }

 private:
  const std::unique_ptr<google::protobuf::util::TypeResolver> base_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::unique_ptr<const google::protobuf::Type>> types_ ABSL_GUARDED_BY(mu_);
};

CachingTypeResolver& Resolver() {
  static auto* resolver = new CachingTypeResolver();  // never destroyed: used until exit
  return *resolver;
}

std::string TypeUrl(const Message& m) {
  return absl::StrCat(CachingTypeResolver::kTypeUrlPrefix, "/", m.GetDescriptor()->full_name());
}

std::string ToJson(const Message& m) {
  std::string out;
  if (proto_json::Print(m, &out)) return out;  // the same bytes, without the binary round trip
  out.clear();
  google::protobuf::util::JsonPrintOptions options;
  // Canonical proto3 JSON: lowerCamelCase names, defaults omitted, 64-bit integers as strings.
  (void)google::protobuf::util::BinaryToJsonString(&Resolver(), TypeUrl(m), m.SerializeAsString(), &out, options);
  return out;
}

absl::Status FromJson(absl::string_view json, Message* m) {
  if (proto_json::Parse(json, m)) return absl::OkStatus();  // the same message; else protobuf's answer
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;  // a misspelt field is an error naming it
  std::string binary;
  const auto status = google::protobuf::util::JsonToBinaryString(
      &Resolver(), TypeUrl(*m), google::protobuf::StringPiece(json.data(), json.size()), &binary, options);
  if (status.ok() && m->ParseFromString(binary)) return absl::OkStatus();
  const auto message = status.ok() ? google::protobuf::StringPiece("the JSON converter produced an invalid message")
                                   : status.message();
  return absl::InvalidArgumentError(absl::StrCat("the request is not a valid ", m->GetDescriptor()->full_name(),
                                                 " in JSON: ", std::string(message.data(), message.size())));
}

absl::Status FromBinary(absl::string_view bytes, Message* m) {
  if (m->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("the request is not a valid binary ", m->GetDescriptor()->full_name()));
}

// A Connect streaming envelope: flags, big-endian length, payload.
std::string Envelope(uint8_t flags, absl::string_view payload) {
  std::string out;
  out.reserve(5 + payload.size());
  out.push_back(static_cast<char>(flags));
  const uint32_t n = static_cast<uint32_t>(payload.size());
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((n >> shift) & 0xFF));
  out.append(payload.data(), payload.size());
  return out;
}

// The one message of an enveloped request body (a Connect stream's, a gRPC-Web call's); a
// compressed one (flag 0x01) is inflated when the request's `coding_header` (the stream's
// Connect-Content-Encoding, gRPC-Web's grpc-encoding) is gzip (`gzip`), refused otherwise.
absl::StatusOr<std::string> OneEnvelope(absl::string_view body, bool gzip, size_t max_bytes,
                                        absl::string_view coding_header) {
  if (body.size() < 5)
    return absl::InvalidArgumentError(absl::StrCat(
        coding_header == "grpc-encoding" ? "a gRPC-Web" : "a streaming",
        " request body is one enveloped message (5-byte prefix + message)"));
  const auto flags = static_cast<uint8_t>(body[0]);
  uint32_t n = 0;
  for (int i = 1; i <= 4; ++i) n = (n << 8) | static_cast<uint8_t>(body[i]);
  if (body.size() != 5 + static_cast<size_t>(n))
    return absl::InvalidArgumentError(absl::StrCat("the request envelope says ", n, " bytes but the body holds ",
                                                   body.size() - 5, " (one message expected)"));
  if (!(flags & 0x01)) return std::string(body.substr(5));
  if (!gzip) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a compressed envelope needs ", coding_header == "grpc-encoding" ? "grpc-encoding" : "Connect-Content-Encoding",
        ": gzip (or send identity)"));
  }
  return Gunzip(body.substr(5), max_bytes);
}

// The request's value of `header`, lower case, "identity" when absent.
std::string Coding(const HttpRequest& req, const char* header) {
  auto it = req.find(header);
  if (it == req.end()) return "identity";
  return absl::AsciiStrToLower(absl::StripAsciiWhitespace(absl::string_view(it->value().data(), it->value().size())));
}

std::optional<absl::string_view> Authorization(const HttpRequest& req) {
  auto it = req.find(http::field::authorization);
  if (it == req.end()) return std::nullopt;
  return absl::string_view(it->value().data(), it->value().size());
}

// Connect-Timeout-Ms: at most 10 digits of milliseconds; for gRPC-Web (`grpc_web`), grpc-timeout.
absl::StatusOr<std::chrono::system_clock::time_point> Deadline(const HttpRequest& req, bool grpc_web) {
  if (grpc_web) {
    auto it = req.find("grpc-timeout");
    if (it == req.end()) return std::chrono::system_clock::time_point::max();
    absl::StatusOr<std::chrono::nanoseconds> timeout =
        grpc_web::ParseTimeout(absl::string_view(it->value().data(), it->value().size()));
    if (!timeout.ok()) return timeout.status();
    return std::chrono::system_clock::now() + std::chrono::duration_cast<std::chrono::system_clock::duration>(*timeout);
  }
  auto it = req.find("connect-timeout-ms");
  if (it == req.end()) return std::chrono::system_clock::time_point::max();
  const absl::string_view v(it->value().data(), it->value().size());
  int64_t ms = 0;
  if (v.empty() || v.size() > 10 || !absl::SimpleAtoi(v, &ms) || ms < 0)
    return absl::InvalidArgumentError(absl::StrCat("Connect-Timeout-Ms '", v, "' is not 1 to 10 digits"));
  return std::chrono::system_clock::now() + std::chrono::milliseconds(ms);
}

// A Connect error answer (JSON) with its HTTP status.
HttpResponse ErrorResponse(const HttpRequest& req, unsigned http_status, const absl::Status& s) {
  return MakeResponse(req, http_status, "application/json", ConnectErrorJson(s));
}

// The gRPC-Web media types, for Accept-Post.
constexpr char kGrpcWebTypes[] =
    "application/grpc-web+proto, application/grpc-web+json, application/grpc-web-text+proto";

// How a call came and how its answers go: Connect (JSON or binary) or gRPC-Web.
struct Wire {
  std::string media;      // the request's media type, also the answer's
  bool grpc_web = false;  // gRPC-Web framing and trailers
  bool text = false;      // gRPC-Web's -text: base64 bodies
  bool json = false;      // messages in protobuf's JSON mapping
};

// Answer bytes as they go on `wire`: in base64 for gRPC-Web's -text, else as they are.
std::string OnWire(const Wire& wire, std::string bytes) {
  return wire.text ? absl::Base64Escape(bytes) : std::move(bytes);
}

// A unary call's error: Connect's error body with the code's HTTP status, or gRPC-Web's HTTP 200
// with only a trailers frame.
HttpResponse UnaryError(const HttpRequest& req, const Wire& wire, const absl::Status& s) {
  if (!wire.grpc_web) return ErrorResponse(req, ConnectHttpStatus(s.code()), s);
  return MakeResponse(req, 200, wire.media, OnWire(wire, Envelope(0x80, grpc_web::Trailers(s))));
}

// `body` gzip-compressed for an answer of at least `min_bytes` (0: never) to a request whose
// `accept_header` (Accept-Encoding; gRPC-Web's grpc-accept-encoding) takes gzip; nullopt
// otherwise. Compression is an offer: if zlib fails, the answer goes plain.
std::optional<std::string> GzipIfAccepted(const HttpRequest& req, absl::string_view accept_header,
                                          const std::string& body, size_t min_bytes) {
  if (min_bytes == 0 || body.size() < min_bytes) return std::nullopt;
  auto accept = req.find(boost::beast::string_view(accept_header.data(), accept_header.size()));
  if (accept == req.end() || !AcceptsGzip(absl::string_view(accept->value().data(), accept->value().size())))
    return std::nullopt;
  absl::StatusOr<std::string> gz = Gzip(body, 1);
  if (!gz.ok()) return std::nullopt;
  return *std::move(gz);
}

// A WebSocket session of a bidirectional method: one Step per frame. Counted like a gRPC
// stream when the socket goes: handled with the status that closed it (OK when the client did),
// handling seconds over its whole life.
template <typename Session, typename Req, typename Resp>
class SessionSocket : public WebSocketHandler {
 public:
  SessionSocket(std::unique_ptr<Session> session, Metrics* metrics, Metrics::MethodSeries* series)
      : session_(std::move(session)), metrics_(metrics), series_(series), start_(std::chrono::steady_clock::now()) {}
  ~SessionSocket() override {
    if (series_ == nullptr) return;
    metrics_->Handled(*series_, static_cast<int>(ended_.code())).Increment();
    series_->handling->Observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
  }
  absl::StatusOr<Reply> OnFrame(const std::string& payload, bool text) override {
    ++frames_;
    if (!next_decoded_) Decode(payload, text);
    next_decoded_ = false;
    if (!next_status_.ok()) return ended_ = BadFrame(absl::StrCat("frame ", frames_, ": ", next_status_.message()));
    Resp resp;
    if (absl::Status s = session_->Step(next_, &resp); !s.ok()) return ended_ = s;
    return Reply{text ? ToJson(resp) : resp.SerializeAsString(), text};
  }
  // Decodes the frame for its OnFrame, which follows: what it asks for (a PSD deformer, say)
  // decides whether it may ask the store. A frame that does not decode waits for nothing.
  bool NextFrameMayWait(const std::string& payload, bool text) override {
    Decode(payload, text);
    next_decoded_ = true;
    return next_status_.ok() && session_->NeedsStore(next_);
  }

 private:
  void Decode(const std::string& payload, bool text) {
    next_.Clear();
    next_status_ = text ? FromJson(payload, &next_) : FromBinary(payload, &next_);
  }

  std::unique_ptr<Session> session_;
  Metrics* const metrics_;
  Metrics::MethodSeries* const series_;
  const std::chrono::steady_clock::time_point start_;
  absl::Status ended_;
  int64_t frames_ = 0;
  Req next_;                    // the frame being stepped, decoded
  absl::Status next_status_;    // its decoding
  bool next_decoded_ = false;   // by NextFrameMayWait, for the OnFrame that follows
};

}  // namespace

template <typename Api, typename Req, typename Resp>
void ConnectService::AddUnary(const std::string& path, Api* api,
                              absl::Status (Api::*fn)(const CallContext&, const Req&, Resp*)) {
  Method m;
  m.kind = Kind::kUnary;
  m.request = &Req::default_instance();
  m.response = &Resp::default_instance();
  m.series = metrics_ ? &metrics_->GrpcMethod(path, RpcType::UNARY) : nullptr;
  m.unary = [api, fn](const CallContext& ctx, const Message& req, Message* resp) {
    return (api->*fn)(ctx, static_cast<const Req&>(req), static_cast<Resp*>(resp));
  };
  methods_[path] = std::move(m);
}

template <typename Session, typename Req, typename Resp, typename Api>
void ConnectService::AddSession(const std::string& path, Api* api) {
  Method m;
  m.kind = Kind::kBidiSession;
  Metrics* metrics = metrics_;
  Metrics::MethodSeries* series = metrics ? &metrics->GrpcMethod(path, RpcType::BIDI_STREAMING) : nullptr;
  m.session = [api, metrics, series](CallContext ctx) -> std::unique_ptr<WebSocketHandler> {
    if (series) series->started->Increment();
    return std::make_unique<SessionSocket<Session, Req, Resp>>(api->OpenSession(std::move(ctx)), metrics, series);
  };
  methods_[path] = std::move(m);
}

ConnectService::ConnectService(const CallGate* gate, Apis apis, Metrics* metrics, ConnectOptions options)
    : gate_(gate), metrics_(metrics), options_(options) {
  const std::string rig = "/skinning.v1.RigService/", pose = "/skinning.v1.PoseService/",
                    bake = "/skinning.v1.BakeService/", fast = "/skinning.v1.FastService/";
  AddUnary(rig + "CreateRig", apis.rig, &RigApi::CreateRig);
  AddUnary(rig + "GetRig", apis.rig, &RigApi::GetRig);
  AddUnary(rig + "ListRigs", apis.rig, &RigApi::ListRigs);
  AddUnary(rig + "DeleteRig", apis.rig, &RigApi::DeleteRig);
  AddUnary(rig + "CreateExample", apis.rig, &RigApi::CreateExample);
  AddUnary(rig + "GetExample", apis.rig, &RigApi::GetExample);
  AddUnary(rig + "ListExamples", apis.rig, &RigApi::ListExamples);
  AddUnary(rig + "DeleteExample", apis.rig, &RigApi::DeleteExample);
  AddUnary(rig + "GetAnimations", apis.rig, &RigApi::GetAnimations);
  AddUnary(pose + "Pose", apis.pose, &PoseApi::Pose);
  AddUnary(pose + "PoseClip", apis.pose, &PoseApi::PoseClip);
  AddUnary(bake + "StartBake", apis.bake, &BakeApi::StartBake);
  AddUnary(bake + "GetBake", apis.bake, &BakeApi::GetBake);
  AddUnary(bake + "CancelBake", apis.bake, &BakeApi::CancelBake);
  AddUnary(bake + "GetWeights", apis.bake, &BakeApi::GetWeights);
  AddUnary(fast + "Solve", apis.fast, &FastApi::Solve);
  // What decides a unary call's cost beyond its method and tenant (QuickKinds): for these two, the
  // rig, bake and deformer; for the rest their method alone.
  methods_[pose + "Pose"].cost_key = [](const Message& req) {
    return PoseApi::CostKey(static_cast<const v1::PoseRequest&>(req));
  };
  methods_[fast + "Solve"].cost_key = [](const Message& req) {
    return absl::HashOf(static_cast<const v1::SolveRequest&>(req).bake());
  };
  // Only these two run on a socket thread (when quick, and answered from memory); every other
  // method reads or writes the store, which could stall and hold the thread.
  methods_[pose + "Pose"].resident = [api = apis.pose](const CallContext& ctx, const Message& req) {
    return api->Resident(ctx, static_cast<const v1::PoseRequest&>(req));
  };
  methods_[fast + "Solve"].resident = [api = apis.fast](const CallContext& ctx, const Message& req) {
    return api->Resident(ctx, static_cast<const v1::SolveRequest&>(req));
  };
  {
    Method m;
    m.kind = Kind::kServerStream;
    m.request = &v1::WatchBakeRequest::default_instance();
    m.response = &v1::Bake::default_instance();
    m.series = metrics_ ? &metrics_->GrpcMethod(bake + "WatchBake", RpcType::SERVER_STREAMING) : nullptr;
    BakeApi* api = apis.bake;
    m.stream = [api](const CallContext& ctx, const Message& req,
                     const std::function<bool(const Message&)>& write) {
      return api->WatchBake(ctx, static_cast<const v1::WatchBakeRequest&>(req),
                            [&write](const v1::Bake& b) { return write(b); });
    };
    methods_[bake + "WatchBake"] = std::move(m);
  }
  AddSession<PoseApi::Session, v1::PoseSessionRequest, v1::PoseSessionResponse>(pose + "PoseSession", apis.pose);
  AddSession<FastApi::Session, v1::SolveSessionRequest, v1::SolveSessionResponse>(fast + "SolveSession", apis.fast);
}

ConnectService::Kind ConnectService::KindOf(const std::string& path) const {
  auto it = methods_.find(path);
  return it == methods_.end() ? Kind::kNone : it->second.kind;
}

std::vector<std::string> ConnectService::Paths() const {
  std::vector<std::string> out;
  for (const auto& [path, m] : methods_) out.push_back(path);
  std::sort(out.begin(), out.end());
  return out;
}

void ConnectService::Handled(Metrics::MethodSeries* series, std::chrono::steady_clock::time_point start,
                             const absl::Status& status) {
  if (series == nullptr) return;
  metrics_->Handled(*series, static_cast<int>(status.code())).Increment();
  series->handling->Observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

void ConnectService::Serve(const std::shared_ptr<Exchange>& exchange, const std::string& path) {
  const HttpRequest& req = exchange->request();
  const Method& m = methods_.at(path);
  const bool stream = m.kind == Kind::kServerStream;
  Wire wire;
  wire.media = MediaType(std::string(req[http::field::content_type]));
  const std::string json_type = stream ? "application/connect+json" : "application/json";
  const std::string proto_type = stream ? "application/connect+proto" : "application/proto";
  if (const std::optional<grpc_web::Format> web = grpc_web::ParseMediaType(wire.media)) {
    wire.grpc_web = true;
    wire.text = web->text;
    wire.json = web->json;
  } else if (wire.media == json_type || wire.media == proto_type) {
    wire.json = wire.media == json_type;
  } else {
    HttpResponse res = MakeResponse(
        req, 415, "application/json",
        ConnectErrorJson(absl::InvalidArgumentError(absl::StrCat("content type '", wire.media, "' is not supported by ",
                                                                 path, ": send ", json_type, " or ", proto_type,
                                                                 " (Connect), or application/grpc-web+proto, "
                                                                 "+json or application/grpc-web-text (gRPC-Web)"))));
    res.set("Accept-Post", absl::StrCat(json_type, ", ", proto_type, ", ", kGrpcWebTypes));
    return exchange->Respond(std::move(res));
  }
  auto error = [&](const absl::Status& s) { exchange->Respond(UnaryError(req, wire, s)); };
  // Connect compresses a unary body as a whole (Content-Encoding), a stream's messages one by one
  // (Connect-Content-Encoding); gRPC-Web, its one message (grpc-encoding). gzip and identity
  // are taken.
  const bool enveloped = stream || wire.grpc_web;
  const char* coding_header =
      wire.grpc_web ? "grpc-encoding" : stream ? "connect-content-encoding" : "content-encoding";
  const char* other_header = wire.grpc_web || stream ? "content-encoding" : "connect-content-encoding";
  const std::string coding = Coding(req, coding_header), other = Coding(req, other_header);
  for (const auto& [header, value] : {std::pair{coding_header, coding}, std::pair{other_header, other}}) {
    if (value == "identity" || (value == "gzip" && header == coding_header)) continue;
    const absl::Status s = absl::UnimplementedError(
        absl::StrCat(header, " '", value, "' is not supported by ", path, " (send ",
                     header == coding_header ? "gzip or identity" : "identity", ")"));
    HttpResponse res = UnaryError(req, wire, s);
    res.set(wire.grpc_web ? "Grpc-Accept-Encoding" : stream ? "Connect-Accept-Encoding" : "Accept-Encoding",
            "gzip, identity");
    return exchange->Respond(std::move(res));
  }
  const bool gzip_request = coding == "gzip";

  Metrics::MethodSeries* series = m.series;
  const auto start = std::chrono::steady_clock::now();
  if (series) series->started->Increment();
  auto finish = [this, series, start](const absl::Status& s) { Handled(series, start, s); };

  // Decode, admit, run.
  std::unique_ptr<Message> request(m.request->New());
  absl::Status status;
  absl::string_view payload = req.body();
  std::string unwrapped;  // the request's message when it came in an envelope, compressed or in base64
  if (wire.text) {
    absl::StatusOr<std::string> decoded = grpc_web::DecodeText(payload);
    if (decoded.ok()) unwrapped = *std::move(decoded);
    else status = decoded.status();
    payload = unwrapped;
  }
  if (status.ok() && (enveloped || gzip_request)) {
    absl::StatusOr<std::string> message = enveloped ? OneEnvelope(payload, gzip_request, options_.max_message_bytes,
                                                                  coding_header)
                                                    : Gunzip(payload, options_.max_message_bytes);
    if (message.ok()) unwrapped = *std::move(message);
    else status = message.status();
    payload = unwrapped;
  }
  if (status.ok()) status = wire.json ? FromJson(payload, request.get()) : FromBinary(payload, request.get());
  absl::StatusOr<std::chrono::system_clock::time_point> deadline = Deadline(req, wire.grpc_web);
  if (status.ok() && !deadline.ok()) status = deadline.status();
  absl::StatusOr<CallContext> ctx = absl::UnknownError("not admitted");
  if (status.ok()) {
    // A client that closes the connection cancels its call (checked where the call checks for a
    // gRPC cancel: between a clip's frames, and every 100 ms of a watch).
    ctx = gate_->Admit(Authorization(req), *deadline, [exchange] { return exchange->ClientGone(); });
    if (!ctx.ok()) status = ctx.status();
  }
  auto encode = [json = wire.json](const Message& msg) { return json ? ToJson(msg) : msg.SerializeAsString(); };

  if (!stream) {
    if (!status.ok()) {
      finish(status);
      return error(status);
    }
    // On this socket thread when the last call of its kind was quick (QuickTimer) and this one
    // asks the store nothing (Method::resident), else on the server's pool, so that a long call
    // (an elastic Pose, a clip, a rig from a large file) or one waiting for a stalled store holds
    // no socket thread: four such calls held every thread of the front door, as gRPC's sync
    // calls held one each.
    const uint64_t kind = absl::HashOf(path, ctx->tenant(), m.cost_key ? m.cost_key(*request) : 0);
    const bool inline_call = quick_.WasQuick(kind) && m.resident && m.resident(*ctx, *request);
    std::shared_ptr<const Message> shared_request(std::move(request));
    auto run = [this, exchange, &m, shared_request, kind, wire, series, start, encode, call = *std::move(ctx)] {
      const HttpRequest& req = exchange->request();
      const QuickTimer timer;
      std::unique_ptr<Message> response(m.response->New());
      absl::Status status = m.unary(call, *shared_request, response.get());
      quick_.Record(kind, timer.Quick());
      std::string body;
      if (status.ok()) {
        body = encode(*response);
        // The same bound as gRPC's on what it sends (JSON is about 3 times the binary size).
        if (body.size() > options_.max_message_bytes)
          status = absl::ResourceExhaustedError(absl::StrFormat(
              "the answer (%d bytes%s) exceeds the server's message limit of %d MiB (--max_message_mb); ask for less "
              "(fewer frames or outputs a call)%s",
              body.size(), wire.json ? " of JSON" : "", options_.max_message_bytes >> 20,
              wire.json ? absl::StrCat(", or take it as ",
                                       wire.grpc_web ? "application/grpc-web+proto" : "application/proto",
                                       " (about a third of the size)")
                        : ""));
      }
      Handled(series, start, status);
      if (!status.ok()) return exchange->Respond(UnaryError(req, wire, status));
      if (wire.grpc_web) {
        // The message (gzip-compressed, flag 0x01, on the same terms as a Connect answer), then
        // the trailers.
        std::optional<std::string> gz =
            GzipIfAccepted(req, "grpc-accept-encoding", body, options_.compress_min_bytes);
        std::string frames =
            Envelope(gz ? 0x01 : 0, gz ? *gz : body) + Envelope(0x80, grpc_web::Trailers(absl::OkStatus()));
        HttpResponse res = MakeResponse(req, 200, wire.media, OnWire(wire, std::move(frames)));
        if (gz) res.set("Grpc-Encoding", "gzip");
        return exchange->Respond(std::move(res));
      }
      if (std::optional<std::string> gz = GzipIfAccepted(req, "accept-encoding", body, options_.compress_min_bytes)) {
        HttpResponse res = MakeResponse(req, 200, wire.media, *std::move(gz));
        res.set(http::field::content_encoding, "gzip");
        res.set(http::field::vary, "Accept-Encoding");
        return exchange->Respond(std::move(res));
      }
      exchange->Respond(MakeResponse(req, 200, wire.media, std::move(body)));
    };
    // (A call with a large body was read on the pool already: it runs where it is.)
    HttpServer& server = exchange->server();
    if (inline_call || server.stopping() || server.OnPool()) return run();
    server.Post(std::move(run));
    return;
  }
  // Server streaming: HTTP 200 whatever happens; the end-of-stream message (Connect) or the
  // trailers frame (gRPC-Web) carries the status. A -text stream sends each frame in base64.
  HttpResponse head = MakeResponse(req, 200, wire.media, "");
  std::unique_ptr<Exchange::StreamWriter> writer = exchange->StartStream(std::move(head));
  auto write = [&](uint8_t flags, const std::string& payload) {
    return writer->Write(OnWire(wire, Envelope(flags, payload)));
  };
  if (status.ok()) status = m.stream(*ctx, *request, [&](const Message& msg) { return write(0, encode(msg)); });
  finish(status);
  if (wire.grpc_web) {
    write(0x80, grpc_web::Trailers(status));
  } else {
    write(0x02, status.ok() ? "{}" : absl::StrCat("{\"error\":", ConnectErrorJson(status), "}"));
  }
  writer->Finish();
}

absl::StatusOr<std::unique_ptr<WebSocketHandler>> ConnectService::OpenSession(
    const std::string& path, std::optional<absl::string_view> authorization) {
  auto it = methods_.find(path);
  if (it == methods_.end() || it->second.kind != Kind::kBidiSession)
    return absl::UnimplementedError(absl::StrCat(path, " is not a session method"));
  absl::StatusOr<CallContext> ctx = gate_->Admit(authorization, std::chrono::system_clock::time_point::max(), {});
  if (!ctx.ok()) return ctx.status();
  return it->second.session(*std::move(ctx));
}

}  // namespace skinning
