// The load baseline's echo (skinning.internal.v1.LoadBaselineService/Echo) on the real server binary:
// served only with --load_baseline, answering the asked number of bytes, refusing sizes past the
// message limit, and admitted like every call (a token is needed when tokens are configured).
#include <chrono>
#include <fstream>
#include <memory>
#include <string>

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <gtest/gtest.h>

#include "skinning/internal/v1/load_baseline.grpc.pb.h"
#include "tests/support/server_process.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::skinning::testing::MakeTempDir;
using ::skinning::testing::ServerProcess;

grpc::Status Echo(const std::string& address, int request_bytes, int response_bytes,
                  internal::v1::EchoResponse* response, const std::string& token = "") {
  auto stub = internal::v1::LoadBaselineService::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
  internal::v1::EchoRequest request;
  request.mutable_payload()->assign(static_cast<size_t>(request_bytes), 'x');
  request.set_response_bytes(response_bytes);
  return stub->Echo(&ctx, request, response);
}

TEST(LoadBaseline, EchoIsServedOnlyWithTheFlagAndAnswersTheAskedSize) {
  {
    ServerProcess plain(MakeTempDir("store"));
    internal::v1::EchoResponse response;
    EXPECT_EQ(Echo(plain.address(), 10, 10, &response).error_code(), grpc::StatusCode::UNIMPLEMENTED);
  }
  ServerProcess server(MakeTempDir("store"), {"--load_baseline", "--max_message_mb=1"});
  for (int bytes : {0, 1, 967, 120000}) {
    internal::v1::EchoResponse response;
    const grpc::Status s = Echo(server.address(), 2000, bytes, &response);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(response.payload().size(), static_cast<size_t>(bytes));
  }
  internal::v1::EchoResponse response;
  for (int bytes : {-1, 2 << 20}) {
    const grpc::Status s = Echo(server.address(), 10, bytes, &response);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << bytes;
    EXPECT_NE(s.error_message().find("response_bytes"), std::string::npos) << s.error_message();
  }
}

TEST(LoadBaseline, EchoNeedsATokenWhenTokensAreConfigured) {
  const std::string dir = MakeTempDir("tokens");
  std::ofstream(dir + "/tokens.txt") << "token-alpha alpha\n";
  ServerProcess server(MakeTempDir("store"), {"--load_baseline", "--auth_tokens=" + dir + "/tokens.txt"});
  internal::v1::EchoResponse response;
  EXPECT_EQ(Echo(server.address(), 10, 10, &response).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(Echo(server.address(), 10, 10, &response, "token-alpha").ok());
  EXPECT_EQ(response.payload().size(), 10u);
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
