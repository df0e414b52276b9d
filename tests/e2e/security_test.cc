// Security of the real skinning-server binary on a loopback port: bearer tokens and tenants
// (--auth_tokens), TLS (--tls_cert, --tls_key) and mutual TLS (--tls_client_ca). The
// certificates come from tests/support/test_pki.h: a CA, a server certificate for 127.0.0.1 and
// localhost, a client certificate from the CA, and a second CA with its own client certificate that
// the server must not accept.
#include <signal.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include <gmock/gmock.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "client/client.h"
#include "server/convert/convert.h"
#include "tests/support/fixtures.h"
#include "tests/support/health_check.h"
#include "tests/support/data.h"
#include "tests/support/server_process.h"
#include "tests/support/test_pki.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::skinning::testing::BinaryPath;
using ::skinning::testing::MakeTempDir;
using ::skinning::testing::MakeTubeForBaking;
using ::skinning::testing::MakeTwoBoneTube;
using ::skinning::testing::RunCommand;
using ::skinning::testing::ServerProcess;
using ::skinning::testing::SharedTestPki;
using ::testing::HasSubstr;

// Two tenants; alpha has two tokens.
constexpr char kTokens[] = R"(# tokens for the security tests
token-alpha alpha

token-beta	beta
token-alpha-2 alpha
)";

class SecurityTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    pki_.Make();
    if (pki_.operator->() != nullptr) std::ofstream(pki_->dir + "/tokens.txt") << kTokens;
  }
  static void TearDownTestSuite() { pki_.Reset(); }
  void SetUp() override { pki_.Require(); }

  static std::string TokensFile() { return pki_->dir + "/tokens.txt"; }
  static std::vector<std::string> TlsFlags() {
    return {"--tls_cert=" + pki_->server_cert, "--tls_key=" + pki_->server_key};
  }

  static SharedTestPki pki_;
};

SharedTestPki SecurityTest::pki_;

ClientOptions Options(const ServerProcess& server, const std::string& token = "") {
  ClientOptions o;
  o.target = server.address();
  o.deadline = std::chrono::milliseconds(10000);
  o.token = token;
  return o;
}

// Options for a connection that is expected to fail: one attempt, a short deadline.
ClientOptions Refused(ClientOptions o) {
  o.max_attempts = 1;
  o.deadline = std::chrono::milliseconds(3000);
  return o;
}

std::shared_ptr<grpc::ChannelCredentials> Tls(const std::string& ca, const std::string& cert = "",
                                              const std::string& key = "") {
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> creds =
      TlsChannelCredentials(ca, cert, key);
  EXPECT_TRUE(creds.ok()) << creds.status();
  return creds.ok() ? *creds : nullptr;
}

v1::PoseRequest PoseOf(const std::string& rig) {
  v1::PoseRequest req;
  req.set_rig(rig);
  req.mutable_outputs()->set_vertices(true);
  return req;
}

bool Lists(const absl::StatusOr<std::vector<v1::Rig>>& rigs, const std::string& name) {
  if (!rigs.ok()) return false;
  for (const v1::Rig& rig : *rigs)
    if (rig.name() == name) return true;
  return false;
}

TEST_F(SecurityTest, MissingOrWrongTokenIsUnauthenticated) {
  ServerProcess server(MakeTempDir("store"), {"--auth_tokens=" + TokensFile()});
  EXPECT_THAT(server.Output(), HasSubstr("bearer tokens (2 tenants)"));
  const v1::Rig rig = RigToProto(MakeTwoBoneTube());

  Client anonymous(Options(server));
  absl::StatusOr<v1::CreateRigResponse> r = anonymous.CreateRig(rig);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnauthenticated) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("missing bearer token (authorization metadata)"));
  absl::StatusOr<std::vector<v1::Rig>> list = anonymous.ListRigs();
  EXPECT_EQ(list.status().code(), absl::StatusCode::kUnauthenticated) << list.status();

  Client wrong(Options(server, "token-gamma"));
  r = wrong.CreateRig(rig);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnauthenticated) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("unknown bearer token"));
  EXPECT_THAT(r.status().message(), ::testing::Not(HasSubstr("token-gamma")));

  // Streams are refused too: the session ends before its first frame.
  Client alpha(Options(server, "token-alpha"));
  absl::StatusOr<v1::CreateRigResponse> registered = alpha.CreateRig(rig);
  ASSERT_TRUE(registered.ok()) << registered.status();
  absl::StatusOr<std::unique_ptr<PoseSession>> session =
      wrong.StartPoseSession(registered->rig().name(), v1::DEFORMER_UNSPECIFIED, v1::PoseOutputs());
  ASSERT_TRUE(session.ok()) << session.status();
  absl::StatusOr<v1::PosedFrame> frame = (*session)->Step(v1::Pose());
  EXPECT_EQ(frame.status().code(), absl::StatusCode::kUnauthenticated) << frame.status();
  absl::StatusOr<v1::Bake> watched = anonymous.WatchBake(
      "rigs/rig-00000000000000000000000000000000/bakes/bake-00000000000000000000000000000000", [](const v1::Bake&) { return true; });
  EXPECT_EQ(watched.status().code(), absl::StatusCode::kUnauthenticated) << watched.status();

  // A raw header that is not "Bearer TOKEN".
  auto channel = grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials());
  auto stub = v1::RigService::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.AddMetadata("authorization", "Basic dXNlcjpwYXNz");
  v1::ListRigsResponse resp;
  grpc::Status s = stub->ListRigs(&ctx, v1::ListRigsRequest(), &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(s.error_message(), HasSubstr("not 'Bearer TOKEN'"));
  // The scheme is case-insensitive (RFC 6750), and the right token passes.
  grpc::ClientContext ok_ctx;
  ok_ctx.AddMetadata("authorization", "bearer token-beta");
  s = stub->ListRigs(&ok_ctx, v1::ListRigsRequest(), &resp);
  EXPECT_TRUE(s.ok()) << s.error_message();
}

TEST_F(SecurityTest, MalformedTokenFileStopsTheServer) {
  const std::string dir = MakeTempDir("tokens");
  std::ofstream(dir + "/bad.txt") << "# ok\ntoken-a alpha\ntoken-b beta extra\n";
  std::ofstream(dir + "/bad-tenant.txt") << "token-a ../alpha\n";
  std::ofstream(dir + "/twice.txt") << "token-a alpha\ntoken-a beta\n";
  const std::vector<std::string> base = {
      BinaryPath("server/skinning-server"), "--address=127.0.0.1:0",
      "--store_dir=" + MakeTempDir("store"), "--metrics_address="};
  auto run = [&](const std::string& flag) {
    std::vector<std::string> args = base;
    args.push_back(flag);
    return RunCommand(args);
  };
  testing::CommandResult r = run("--auth_tokens=" + dir + "/bad.txt");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("bad.txt:3: expected 'TOKEN TENANT', found 3 fields"));
  r = run("--auth_tokens=" + dir + "/bad-tenant.txt");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("bad-tenant.txt:1: tenant '../alpha' is not a tenant name"));
  r = run("--auth_tokens=" + dir + "/twice.txt");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("twice.txt:2: this token is listed twice"));
  r = run("--auth_tokens=" + dir + "/absent.txt");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("cannot read the token file"));
  r = run("--auth_tokens_reload_seconds=-1");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("--auth_tokens_reload_seconds must be in [0, 86400], not -1"));
  // TLS flags are checked the same way.
  r = run("--tls_cert=" + pki_->server_cert);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("--tls_cert and --tls_key go together"));
  std::vector<std::string> mismatched = base;
  mismatched.push_back("--tls_cert=" + pki_->server_cert);
  mismatched.push_back("--tls_key=" + pki_->client_key);
  r = RunCommand(mismatched);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("is not the private key of the certificate"));
}

// The token file is read again while the server runs (a Kubernetes Secret is updated in place:
// the kubelet swaps its files atomically). A rotated token works and the revoked one is refused
// without a restart; a session admitted before keeps its tenant; a new content that does not
// parse is reported once and the tokens of before stay.
TEST_F(SecurityTest, TokensAreRotatedAndRevokedWithoutARestart) {
  const std::string dir = MakeTempDir("tokens");
  const std::string file = dir + "/tokens.txt";
  auto write = [&](const std::string& text) {
    std::ofstream(file + ".new") << text;
    std::filesystem::rename(file + ".new", file);
  };
  write("token-old alpha\n");
  ServerProcess server(MakeTempDir("store"), {"--auth_tokens=" + file, "--auth_tokens_reload_seconds=0.1"});
  Client old_token(Options(server, "token-old"));
  Client new_token(Refused(Options(server, "token-new")));
  absl::StatusOr<v1::CreateRigResponse> created = old_token.CreateRig(RigToProto(MakeTwoBoneTube()));
  ASSERT_TRUE(created.ok()) << created.status();
  const std::string rig = created->rig().name();
  absl::StatusOr<std::unique_ptr<PoseSession>> session =
      old_token.StartPoseSession(rig, v1::DEFORMER_UNSPECIFIED, v1::PoseOutputs());
  ASSERT_TRUE(session.ok()) << session.status();
  ASSERT_TRUE((*session)->Step(v1::Pose()).ok());
  EXPECT_EQ(new_token.ListRigs().status().code(), absl::StatusCode::kUnauthenticated);

  write("token-new alpha\n");
  absl::StatusOr<std::vector<v1::Rig>> listed = absl::UnknownError("not asked");
  for (int i = 0; i < 100 && !listed.ok(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    listed = new_token.ListRigs();
  }
  ASSERT_TRUE(listed.ok()) << "the new token was not taken within 5 s: " << listed.status();
  EXPECT_TRUE(Lists(listed, rig)) << "the new token is the same tenant's";
  const absl::Status revoked = Client(Refused(Options(server, "token-old"))).ListRigs().status();
  EXPECT_EQ(revoked.code(), absl::StatusCode::kUnauthenticated) << revoked;
  EXPECT_THAT(revoked.message(), HasSubstr("unknown bearer token"));
  EXPECT_TRUE((*session)->Step(v1::Pose()).ok()) << "a session admitted before keeps its tenant";
  EXPECT_THAT(server.Output(), HasSubstr("--auth_tokens: read " + file + " again: 1 tenant"));

  // Not valid: reported once (the file is read every 0.1 s), and token-new still works.
  write("token-newer\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  EXPECT_TRUE(new_token.ListRigs().ok());
  EXPECT_EQ(Client(Refused(Options(server, "token-newer"))).ListRigs().status().code(),
            absl::StatusCode::kUnauthenticated);
  const std::string out = server.Output();
  const std::string refused = file + " changed and is not valid (" + file +
                              ":1: expected 'TOKEN TENANT', found 1 fields); the tokens of before stay";
  ASSERT_THAT(out, HasSubstr(refused));
  EXPECT_EQ(out.find(refused), out.rfind(refused)) << "reported more than once:\n" << out;
  // Fixed again: taken.
  write("token-newer beta\ntoken-new alpha\n");
  absl::Status newer = absl::UnknownError("not asked");
  for (int i = 0; i < 100 && !newer.ok(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    newer = Client(Refused(Options(server, "token-newer"))).ListRigs().status();
  }
  EXPECT_TRUE(newer.ok()) << newer;
  EXPECT_THAT(server.Output(), HasSubstr("--auth_tokens: read " + file + " again: 2 tenants"));
  EXPECT_EQ(server.Stop(SIGTERM), 0);
}

TEST_F(SecurityTest, TenantsSeeOnlyTheirOwnRigs) {
  ServerProcess server(MakeTempDir("store"), {"--auth_tokens=" + TokensFile()});
  Client alpha(Options(server, "token-alpha"));
  Client alpha2(Options(server, "token-alpha-2"));
  Client beta(Options(server, "token-beta"));
  const v1::Rig tube = RigToProto(MakeTwoBoneTube());

  absl::StatusOr<v1::CreateRigResponse> a = alpha.CreateRig(tube);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(a->created());
  const std::string id = a->rig().name();
  // Another token of the same tenant sees it.
  EXPECT_TRUE(alpha2.GetRig(id).ok());
  EXPECT_TRUE(Lists(alpha2.ListRigs(), id));

  // Beta cannot see, pose, bake or delete it, and does not list it.
  absl::StatusOr<v1::Rig> got = beta.GetRig(id, v1::RIG_VIEW_FULL);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kPermissionDenied) << got.status();
  EXPECT_THAT(got.status().message(), HasSubstr("rig '" + id + "' belongs to another tenant"));
  absl::StatusOr<v1::PosedFrame> posed = beta.Pose(PoseOf(id));
  EXPECT_EQ(posed.status().code(), absl::StatusCode::kPermissionDenied) << posed.status();
  v1::PoseClipRequest clip;
  clip.set_rig(id);
  clip.add_poses();
  EXPECT_EQ(beta.PoseClip(clip).status().code(), absl::StatusCode::kPermissionDenied);
  absl::StatusOr<std::unique_ptr<PoseSession>> session =
      beta.StartPoseSession(id, v1::DEFORMER_UNSPECIFIED, v1::PoseOutputs());
  ASSERT_TRUE(session.ok());
  EXPECT_EQ((*session)->Step(v1::Pose()).status().code(), absl::StatusCode::kPermissionDenied);
  absl::StatusOr<v1::StartBakeResponse> bake = beta.StartBake(id, v1::BakeOptions());
  EXPECT_EQ(bake.status().code(), absl::StatusCode::kPermissionDenied) << bake.status();
  absl::StatusOr<std::vector<v1::Rig>> beta_rigs = beta.ListRigs();
  ASSERT_TRUE(beta_rigs.ok()) << beta_rigs.status();
  EXPECT_TRUE(beta_rigs->empty());
  EXPECT_EQ(beta.DeleteRig(id).code(), absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(alpha.GetRig(id).ok()) << "beta's refused delete must leave alpha's rig";
  // A rig nobody has is NOT_FOUND, not PERMISSION_DENIED.
  const std::string nobody = "rigs/rig-0123456789abcdef0123456789abcdef";
  EXPECT_EQ(beta.GetRig(nobody).status().code(), absl::StatusCode::kNotFound);

  // Bakes follow their rig: alpha's bake is invisible to beta.
  absl::StatusOr<v1::CreateRigResponse> to_bake =
      alpha.CreateRig(RigToProto(MakeTubeForBaking()));
  ASSERT_TRUE(to_bake.ok()) << to_bake.status();
  v1::BakeOptions options;
  options.mutable_domain()->set_voxel_resolution(16);
  absl::StatusOr<v1::StartBakeResponse> alpha_bake = alpha.StartBake(to_bake->rig().name(), options);
  ASSERT_TRUE(alpha_bake.ok()) << alpha_bake.status();
  const std::string bake_id = alpha_bake->bake().name();
  absl::StatusOr<v1::Bake> peek = beta.GetBake(bake_id);
  EXPECT_EQ(peek.status().code(), absl::StatusCode::kPermissionDenied) << peek.status();
  EXPECT_THAT(peek.status().message(), HasSubstr("belongs to another tenant"));
  EXPECT_EQ(beta.CancelBake(bake_id).status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(beta.WatchBake(bake_id, [](const v1::Bake&) { return true; }).status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(beta.GetWeights(bake_id).status().code(), absl::StatusCode::kPermissionDenied);
  v1::SolveRequest solve;
  solve.set_bake(bake_id);
  EXPECT_EQ(beta.Solve(solve).status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(alpha.GetBake(bake_id).ok());
  EXPECT_TRUE(alpha.CancelBake(bake_id).ok());

  // Beta registering the same mesh gets the same id (created for beta) and can then pose it.
  absl::StatusOr<v1::CreateRigResponse> b = beta.CreateRig(tube);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->rig().name(), id);
  EXPECT_TRUE(b->created());
  posed = beta.Pose(PoseOf(id));
  ASSERT_TRUE(posed.ok()) << posed.status();
  EXPECT_EQ(posed->vertices_size(), 3 * MakeTwoBoneTube().mesh.V.rows());
  beta_rigs = beta.ListRigs();
  ASSERT_TRUE(beta_rigs.ok());
  ASSERT_EQ(beta_rigs->size(), 1u);
  EXPECT_EQ((*beta_rigs)[0].name(), id);
  // Registering again is not new for beta.
  b = beta.CreateRig(tube);
  ASSERT_TRUE(b.ok());
  EXPECT_FALSE(b->created());

  // Alpha deleting its copy keeps beta's.
  ASSERT_TRUE(alpha.DeleteRig(id).ok());
  EXPECT_FALSE(Lists(alpha.ListRigs(), id));
  EXPECT_EQ(alpha.GetRig(id).status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(beta.GetRig(id).ok());
  EXPECT_TRUE(beta.Pose(PoseOf(id)).ok());
  // The last owner's delete removes the rig.
  ASSERT_TRUE(beta.DeleteRig(id).ok());
  EXPECT_EQ(beta.GetRig(id).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(alpha.GetRig(id).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(beta.DeleteRig(id).code(), absl::StatusCode::kNotFound);
}

// A rig's stored bakes go with the stored rig: while another tenant owns the rig they stay (and
// serve that tenant), after the last owner's delete they are gone from the store.
TEST_F(SecurityTest, BakesStayWhileAnotherTenantOwnsTheRigAndGoWithTheLastOwner) {
  const std::string store = MakeTempDir("store");
  ServerProcess server(store, {"--auth_tokens=" + TokensFile()});
  Client alpha(Options(server, "token-alpha"));
  Client beta(Options(server, "token-beta"));
  const v1::Rig tube = RigToProto(MakeTubeForBaking());
  absl::StatusOr<v1::CreateRigResponse> a = alpha.CreateRig(tube), b = beta.CreateRig(tube);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->rig().name(), b->rig().name());
  v1::BakeOptions options;
  options.mutable_domain()->set_voxel_resolution(16);
  absl::StatusOr<v1::StartBakeResponse> started = alpha.StartBake(a->rig().name(), options);
  ASSERT_TRUE(started.ok()) << started.status();
  const std::string bake = started->bake().name();
  absl::StatusOr<v1::Bake> done = alpha.WatchBake(bake, [](const v1::Bake&) { return true; });
  ASSERT_TRUE(done.ok()) << done.status();
  ASSERT_EQ(done->metadata().state(), v1::BAKE_STATE_SUCCEEDED);
  const std::string file = store + "/bakes/" + bake.substr(bake.rfind('/') + 1) + ".pb";
  ASSERT_TRUE(std::filesystem::exists(file));

  ASSERT_TRUE(alpha.DeleteRig(a->rig().name()).ok());
  EXPECT_TRUE(std::filesystem::exists(file)) << "beta still owns the rig";
  absl::StatusOr<v1::Bake> kept = beta.GetBake(bake);
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_EQ(kept->metadata().state(), v1::BAKE_STATE_SUCCEEDED);
  EXPECT_TRUE(beta.GetWeights(bake).ok());

  ASSERT_TRUE(beta.DeleteRig(b->rig().name()).ok());
  EXPECT_FALSE(std::filesystem::exists(file)) << "the last owner's delete left the bake";
  const std::filesystem::path index = std::filesystem::path(store) / "rig-bakes" / a->rig().name().substr(5);
  EXPECT_TRUE(!std::filesystem::exists(index) || std::filesystem::is_empty(index)) << "its index entry stayed";
}

using ::skinning::testing::HealthCheck;

TEST_F(SecurityTest, HealthIsOpenWithoutToken) {
  ServerProcess server(MakeTempDir("store"), {"--auth_tokens=" + TokensFile()});
  std::string bytes;
  grpc::Status status = HealthCheck(
      grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials()), &bytes);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(bytes, std::string("\x08\x01", 2));  // SERVING
  // The skinning services on the same channel are not open.
  Client anonymous(Options(server));
  EXPECT_EQ(anonymous.ListRigs().status().code(), absl::StatusCode::kUnauthenticated);
}

TEST_F(SecurityTest, TlsConnectionWorksAndPlaintextIsRefused) {
  ServerProcess server(MakeTempDir("store"), TlsFlags());
  EXPECT_THAT(server.Output(), HasSubstr("security: TLS, no authentication"));
  const v1::Rig tube = RigToProto(MakeTwoBoneTube());

  ClientOptions tls = Options(server);
  tls.credentials = Tls(pki_->ca_cert);
  Client client(tls);
  absl::StatusOr<v1::CreateRigResponse> r = client.CreateRig(tube);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(client.Pose(PoseOf(r->rig().name())).ok());
  // By name: the certificate names localhost too.
  ClientOptions by_name = tls;
  by_name.target = "localhost:" + std::to_string(server.port());
  EXPECT_TRUE(Client(by_name).GetRig(r->rig().name()).ok());
  // Health checking is served over TLS as well.
  std::string bytes;
  EXPECT_TRUE(HealthCheck(grpc::CreateChannel(server.address(), tls.credentials), &bytes).ok());

  // Plaintext is refused.
  Client plaintext(Refused(Options(server)));
  absl::StatusOr<std::vector<v1::Rig>> list = plaintext.ListRigs();
  EXPECT_FALSE(list.ok());
  EXPECT_THAT(list.status().code(),
              ::testing::AnyOf(absl::StatusCode::kUnavailable, absl::StatusCode::kDeadlineExceeded))
      << list.status();
  bytes.clear();
  EXPECT_FALSE(
      HealthCheck(grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials()), &bytes)
          .ok());
  // A client that trusts another CA refuses the server.
  ClientOptions distrust = Refused(Options(server));
  distrust.credentials = Tls(pki_->other_ca_cert);
  EXPECT_FALSE(Client(distrust).ListRigs().ok());
}

// --health_address: a plaintext port for probes that cannot speak TLS (the kubelet's gRPC probe)
// answers grpc.health.v1.Health and nothing else, so it opens no way around TLS or the tokens.
TEST_F(SecurityTest, ThePlaintextHealthPortAnswersHealthChecksAndNoOtherCall) {
  std::vector<std::string> flags = TlsFlags();
  flags.push_back("--tls_client_ca=" + pki_->ca_cert);
  flags.push_back("--auth_tokens=" + TokensFile());
  flags.push_back("--health_address=127.0.0.1:0");
  ServerProcess server(MakeTempDir("store"), flags);
  const int health = server.health_port();
  ASSERT_GT(health, 0) << server.Output();
  ASSERT_NE(health, server.port());
  const std::string plain_health = "127.0.0.1:" + std::to_string(health);
  std::string bytes;
  grpc::Status status = HealthCheck(grpc::CreateChannel(plain_health, grpc::InsecureChannelCredentials()), &bytes);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(bytes, std::string("\x08\x01", 2));  // SERVING
  // The skinning services are not on it, even with a valid token.
  ClientOptions o;
  o.target = plain_health;
  o.deadline = std::chrono::milliseconds(5000);
  o.max_attempts = 1;
  o.token = "token-alpha";
  absl::StatusOr<std::vector<v1::Rig>> listed = Client(o).ListRigs();
  EXPECT_EQ(listed.status().code(), absl::StatusCode::kUnimplemented) << listed.status();
  // The main port still takes mutual TLS only.
  bytes.clear();
  EXPECT_FALSE(HealthCheck(grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials()), &bytes).ok());
}

TEST_F(SecurityTest, MutualTlsRequiresAClientCertificateFromTheTrustedCa) {
  std::vector<std::string> flags = TlsFlags();
  flags.push_back("--tls_client_ca=" + pki_->ca_cert);
  ServerProcess server(MakeTempDir("store"), flags);
  EXPECT_THAT(server.Output(), HasSubstr("security: TLS with client certificates"));
  const v1::Rig tube = RigToProto(MakeTwoBoneTube());

  ClientOptions no_cert = Refused(Options(server));
  no_cert.credentials = Tls(pki_->ca_cert);
  absl::StatusOr<v1::CreateRigResponse> r = Client(no_cert).CreateRig(tube);
  EXPECT_FALSE(r.ok()) << "a client without a certificate was accepted";

  ClientOptions other_ca = Refused(Options(server));
  other_ca.credentials = Tls(pki_->ca_cert, pki_->other_client_cert, pki_->other_client_key);
  r = Client(other_ca).CreateRig(tube);
  EXPECT_FALSE(r.ok()) << "a certificate from another CA was accepted";

  Client plaintext(Refused(Options(server)));
  EXPECT_FALSE(plaintext.ListRigs().ok());

  ClientOptions good = Options(server);
  good.credentials = Tls(pki_->ca_cert, pki_->client_cert, pki_->client_key);
  Client client(good);
  r = client.CreateRig(tube);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(client.Pose(PoseOf(r->rig().name())).ok());
  absl::StatusOr<std::unique_ptr<PoseSession>> session =
      client.StartPoseSession(r->rig().name(), v1::DEFORMER_DQS, v1::PoseOutputs());
  ASSERT_TRUE(session.ok());
  EXPECT_TRUE((*session)->Step(v1::Pose()).ok());
  EXPECT_TRUE((*session)->Close().ok());
}

TEST_F(SecurityTest, SkinctlUsesTokenAndTls) {
  std::vector<std::string> flags = TlsFlags();
  flags.push_back("--tls_client_ca=" + pki_->ca_cert);
  flags.push_back("--auth_tokens=" + TokensFile());
  ServerProcess server(MakeTempDir("store"), flags);
  ClientOptions o = Options(server, "token-beta");
  o.credentials = Tls(pki_->ca_cert, pki_->client_cert, pki_->client_key);
  absl::StatusOr<v1::CreateRigResponse> r = Client(o).CreateRig(RigToProto(MakeTwoBoneTube()));
  ASSERT_TRUE(r.ok()) << r.status();

  const std::vector<std::string> tls_flags = {"--tls_ca=" + pki_->ca_cert,
                                              "--tls_cert=" + pki_->client_cert,
                                              "--tls_key=" + pki_->client_key};
  auto skinctl = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {BinaryPath("client/skinctl"), "--server=" + server.address(),
                               "--deadline_ms=5000"});
    return RunCommand(args);
  };
  std::vector<std::string> args = tls_flags;
  args.insert(args.end(), {"--token=token-beta", "list"});
  testing::CommandResult listed = skinctl(args);
  EXPECT_EQ(listed.exit_code, 0) << listed.output;
  EXPECT_THAT(listed.output, HasSubstr(r->rig().name()));

  // Another tenant's token: the list is empty and the rig is refused.
  args = tls_flags;
  args.insert(args.end(), {"--token=token-alpha", "get", r->rig().name()});
  testing::CommandResult refused = skinctl(args);
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_THAT(refused.output, HasSubstr("PERMISSION_DENIED"));
  EXPECT_THAT(refused.output, HasSubstr("belongs to another tenant"));

  // No token at all.
  args = tls_flags;
  args.push_back("list");
  testing::CommandResult anonymous = skinctl(args);
  EXPECT_EQ(anonymous.exit_code, 2) << anonymous.output;
  EXPECT_THAT(anonymous.output, HasSubstr("UNAUTHENTICATED"));
  EXPECT_THAT(anonymous.output, HasSubstr("missing bearer token"));

  // $SKINNING_TOKEN stands in for --token.
  ASSERT_EQ(setenv("SKINNING_TOKEN", "token-beta", 1), 0);
  args = tls_flags;
  args.insert(args.end(), {"get", r->rig().name()});
  testing::CommandResult from_env = skinctl(args);
  unsetenv("SKINNING_TOKEN");
  EXPECT_EQ(from_env.exit_code, 0) << from_env.output;
  EXPECT_THAT(from_env.output, HasSubstr(r->rig().name()));

  // Without TLS flags skinctl speaks plaintext, which the server refuses.
  testing::CommandResult plaintext = skinctl({"--token=token-beta", "--deadline_ms=2000", "list"});
  EXPECT_EQ(plaintext.exit_code, 2) << plaintext.output;
  // A TLS file that does not exist is named.
  testing::CommandResult missing = skinctl({"--tls_ca=" + pki_->dir + "/absent.crt", "list"});
  EXPECT_EQ(missing.exit_code, 2) << missing.output;
  EXPECT_THAT(missing.output, HasSubstr("absent.crt"));
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
