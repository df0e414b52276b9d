// The token file parser and the rig store's per-tenant ownership, without a server.
#include "server/auth/auth.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "server/convert/convert.h"
#include "server/store/rig_store.h"
#include "tests/support/fixtures.h"
#include "tests/support/server_process.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::skinning::testing::MakeTempDir;
using ::skinning::testing::MakeTwoBoneTube;
using ::testing::HasSubstr;

TEST(TokenFile, ParsesTokensCommentsAndBlankLines) {
  auto auth = Authenticator::FromText("# comment\n\n  tok-1 alpha\ntok-2\tbeta \r\ntok-3 alpha\n", "t.txt");
  ASSERT_TRUE(auth.ok()) << auth.status();
  EXPECT_TRUE((*auth)->enabled());
  EXPECT_EQ((*auth)->tenant_count(), 2);
  EXPECT_FALSE(Authenticator().enabled());
}

TEST(TokenFile, RejectsMalformedLinesNamingThem) {
  auto message = [](const std::string& text) {
    return std::string(Authenticator::FromText(text, "t.txt").status().message());
  };
  EXPECT_EQ(message("a alpha\nlonely\n"), "t.txt:2: expected 'TOKEN TENANT', found 1 fields");
  EXPECT_THAT(message("a al/pha\n"), HasSubstr("t.txt:1: tenant 'al/pha' is not a tenant name"));
  EXPECT_THAT(message("a ..\n"), HasSubstr("t.txt:1: tenant '..' is not a tenant name"));
  EXPECT_THAT(message("a alpha\n# again\na beta\n"), HasSubstr("t.txt:3: this token is listed twice"));
  EXPECT_THAT(message("tok\x01x alpha\n"), HasSubstr("t.txt:1: the token has a character"));
  EXPECT_THAT(message("# nothing\n\n"), HasSubstr("t.txt: no tokens"));
  EXPECT_TRUE(CheckTenantName("studio-a_1.x").ok());
  EXPECT_FALSE(CheckTenantName("").ok());
  EXPECT_FALSE(CheckTenantName(".hidden").ok());
}

TEST(Authenticate, NeedsABearerTokenOfTheFile) {
  auto auth = Authenticator::FromText("tok-1 alpha\n", "t.txt");
  ASSERT_TRUE(auth.ok());
  EXPECT_EQ(*(*auth)->Authenticate("Bearer tok-1"), "alpha");
  EXPECT_EQ(*(*auth)->Authenticate("bearer  tok-1 "), "alpha");
  EXPECT_EQ((*auth)->Authenticate(std::nullopt).status().message(), "missing bearer token (authorization metadata)");
  EXPECT_EQ((*auth)->Authenticate("Bearer tok-2").status().message(), "unknown bearer token");
  EXPECT_EQ((*auth)->Authenticate("Basic tok-1").status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(*Authenticator().Authenticate(std::nullopt), "");
}

TEST(RigStoreTenancy, OwnershipIsPerTenantAndTheLastOwnerDeletes) {
  auto blobs = OpenFilesystemBlobStore(MakeTempDir("store"));
  ASSERT_TRUE(blobs.ok());
  RigStore store(*std::move(blobs), 1 << 30);
  const v1::Rig tube = RigToProto(MakeTwoBoneTube());
  auto a = store.Register(tube, "alpha");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(a->created);
  const std::string id = a->rig_id;
  EXPECT_TRUE(store.CheckAccess(id, "alpha").ok());
  EXPECT_TRUE(store.CheckAccess(id, "").ok());  // authentication off sees everything
  absl::Status denied = store.CheckAccess(id, "beta");
  EXPECT_EQ(denied.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(denied.message(), "rig 'rigs/" + id + "' belongs to another tenant");
  EXPECT_EQ(store.CheckAccess("rig-0123456789abcdef0123456789abcdef", "beta").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store.CheckAccess("nonsense", "beta").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store.List("alpha")->size(), 1u);
  EXPECT_TRUE(store.List("beta")->empty());
  EXPECT_EQ(store.List("")->size(), 1u);

  auto b = store.Register(tube, "beta");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->rig_id, id);
  EXPECT_TRUE(b->created);  // new for beta
  EXPECT_FALSE(store.Register(tube, "beta")->created);
  EXPECT_TRUE(store.CheckAccess(id, "beta").ok());

  EXPECT_EQ(store.Delete(id, "gamma").status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(*store.Delete(id, "alpha"));
  EXPECT_EQ(store.CheckAccess(id, "alpha").code(), absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(store.GetForTenant(id, "beta").ok());
  EXPECT_TRUE(*store.Delete(id, "beta"));
  EXPECT_EQ(store.Get(id).status().code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(*store.Delete(id, "beta"));
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
