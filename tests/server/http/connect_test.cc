// The Connect door's method table against the API's service descriptors, its code mapping
// against the Connect specification's table, the CORS origin rule and the decoding of a query's
// access_token.
#include "server/http/connect.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <google/protobuf/descriptor.h>

#include "server/http/front_door.h"
#include "skinning/v1/bake_service.pb.h"
#include "skinning/v1/fast_service.pb.h"
#include "skinning/v1/pose_service.pb.h"
#include "skinning/v1/rig_service.pb.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

TEST(ConnectServiceTest, ServesEveryMethodOfEveryServiceWithItsStreamingKind) {
  ConnectService connect(nullptr, ConnectService::Apis{}, nullptr);
  int methods = 0;
  for (const char* name : {"skinning.v1.RigService", "skinning.v1.PoseService", "skinning.v1.BakeService",
                           "skinning.v1.FastService"}) {
    const google::protobuf::ServiceDescriptor* service =
        google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(name);
    ASSERT_NE(service, nullptr) << name;
    for (int m = 0; m < service->method_count(); ++m) {
      const google::protobuf::MethodDescriptor* method = service->method(m);
      const std::string path = "/" + service->full_name() + "/" + method->name();
      const ConnectService::Kind want = method->client_streaming() ? ConnectService::Kind::kBidiSession
                                        : method->server_streaming() ? ConnectService::Kind::kServerStream
                                                                     : ConnectService::Kind::kUnary;
      EXPECT_EQ(connect.KindOf(path), want) << path;
      ++methods;
    }
  }
  EXPECT_EQ(static_cast<int>(connect.Paths().size()), methods) << "a path that is no method of the API";
  EXPECT_EQ(connect.KindOf("/skinning.v1.PoseService/Posed"), ConnectService::Kind::kNone);
}

TEST(ConnectServiceTest, CodesMapToTheConnectSpecificationsHttpStatuses) {
  // connectrpc.com/docs/protocol#error-codes
  const std::pair<absl::StatusCode, unsigned> table[] = {
      {absl::StatusCode::kCancelled, 499},         {absl::StatusCode::kUnknown, 500},
      {absl::StatusCode::kInvalidArgument, 400},   {absl::StatusCode::kDeadlineExceeded, 504},
      {absl::StatusCode::kNotFound, 404},          {absl::StatusCode::kAlreadyExists, 409},
      {absl::StatusCode::kPermissionDenied, 403},  {absl::StatusCode::kResourceExhausted, 429},
      {absl::StatusCode::kFailedPrecondition, 400}, {absl::StatusCode::kAborted, 409},
      {absl::StatusCode::kOutOfRange, 400},        {absl::StatusCode::kUnimplemented, 501},
      {absl::StatusCode::kInternal, 500},          {absl::StatusCode::kUnavailable, 503},
      {absl::StatusCode::kDataLoss, 500},          {absl::StatusCode::kUnauthenticated, 401}};
  for (const auto& [code, http] : table) EXPECT_EQ(ConnectHttpStatus(code), http) << absl::StatusCodeToString(code);
  EXPECT_STREQ(ConnectCodeName(absl::StatusCode::kCancelled), "canceled");
  EXPECT_EQ(ConnectErrorJson(absl::NotFoundError("rig \"x\" not found")),
            R"({"code":"not_found","message":"rig \"x\" not found"})");
}

TEST(FrontDoorTest, OnlyListedOriginsAndThePagesOwnMayCall) {
  const std::vector<std::string> list = {"https://app.example.com"};
  EXPECT_TRUE(OriginAllowed(list, "", "127.0.0.1:8080"));  // not a browser's cross-origin call
  EXPECT_TRUE(OriginAllowed(list, "http://127.0.0.1:8080", "127.0.0.1:8080"));
  EXPECT_TRUE(OriginAllowed(list, "https://app.example.com", "127.0.0.1:8080"));
  EXPECT_FALSE(OriginAllowed(list, "https://app.example.com.evil.net", "127.0.0.1:8080"));
  EXPECT_FALSE(OriginAllowed(list, "http://127.0.0.1:8081", "127.0.0.1:8080"));
  EXPECT_FALSE(OriginAllowed({}, "https://app.example.com", "127.0.0.1:8080"));
  EXPECT_TRUE(OriginAllowed({"*"}, "https://anything.example", "127.0.0.1:8080"));
}

// ?access_token= as a page sends it: encodeURIComponent of a base64 token ("tok+en/with=b64").
TEST(HttpQueryTest, ParametersArePercentDecodedAndPlusStaysAPlus) {
  auto token = [](const std::string& target) { return QueryParameter(target, "access_token"); };
  EXPECT_EQ(*token("/s?access_token=tok%2Ben%2Fwith%3Db64"), "tok+en/with=b64");
  EXPECT_EQ(*token("/s?access_token=tok%2ben%2fwith%3db64"), "tok+en/with=b64");  // lower-case hex
  EXPECT_EQ(*token("/s?access_token=tok+en/with=b64"), "tok+en/with=b64");        // not a space
  EXPECT_EQ(*token("/s?a=1&access_token=x%20y&access_token=z#frag"), "x y");      // the first one
  EXPECT_EQ(*token("/s?access_token=ab#c"), "ab");
  EXPECT_EQ(*token("/s?access_token="), "");
  EXPECT_EQ(*token("/s?my_access_token=a"), std::nullopt);
  EXPECT_EQ(*token("/s?access_tokens=a"), std::nullopt);
  EXPECT_EQ(*token("/s"), std::nullopt);
  for (const char* bad : {"/s?access_token=a%zz", "/s?access_token=a%2", "/s?access_token=%", "/s?access_token=%%41"}) {
    absl::StatusOr<std::optional<std::string>> r = token(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(r.status().message()), ::testing::HasSubstr("not a percent-escape")) << bad;
  }
  // The bad escape is quoted printable (http_head_fuzz found its raw bytes in the message).
  EXPECT_THAT(std::string(token("/s?access_token=tok%\xb2" "Ben").status().message()),
              ::testing::HasSubstr("'%?B' at offset 3"));
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
