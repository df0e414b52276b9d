// Resource names: parsed and formatted in one place, refused with the field and the pattern.
#include "server/names.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::testing::HasSubstr;

constexpr char kRigId[] = "rig-0123456789abcdef0123456789abcdef";
constexpr char kBakeId[] = "bake-fedcba9876543210fedcba9876543210";

TEST(Names, FormatAndParseRoundTrip) {
  EXPECT_EQ(RigName(kRigId), std::string("rigs/") + kRigId);
  EXPECT_EQ(*ParseRigName(RigName(kRigId), "name"), kRigId);
  const std::string bake = BakeName(kRigId, kBakeId);
  EXPECT_EQ(bake, std::string("rigs/") + kRigId + "/bakes/" + kBakeId);
  auto ref = ParseBakeName(bake, "bake");
  ASSERT_TRUE(ref.ok()) << ref.status();
  EXPECT_EQ(ref->rig_id, kRigId);
  EXPECT_EQ(ref->bake_id, kBakeId);
  EXPECT_EQ(ref->name(), bake);
  auto example = ParseExampleName(ExampleName(kRigId, "elbow-90"), "name");
  ASSERT_TRUE(example.ok()) << example.status();
  EXPECT_EQ(example->rig_id, kRigId);
  EXPECT_EQ(example->example_id, "elbow-90");
}

TEST(Names, RejectsMalformedNamesNamingTheFieldAndPattern) {
  auto rig = ParseRigName("rigs/rig-123", "name");
  EXPECT_EQ(rig.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(rig.status().message(), HasSubstr("name 'rigs/rig-123' is not a rig name (expected rigs/rig-<32 hex"));
  EXPECT_THAT(ParseRigName("", "parent").status().message(), HasSubstr("parent is required"));
  EXPECT_FALSE(ParseRigName(kRigId, "name").ok()) << "an id is not a name";
  EXPECT_FALSE(ParseRigName(std::string("rigs/") + kRigId + "/", "name").ok());
  EXPECT_FALSE(ParseRigName("rigs/rig-0123456789ABCDEF0123456789abcdef", "name").ok()) << "upper case";
  // A bake under the wrong collection, a bake id for a rig id, a rig id that is not one.
  const std::string rig_name = RigName(kRigId);
  EXPECT_FALSE(ParseBakeName(rig_name + "/examples/" + kBakeId, "bake").ok());
  EXPECT_FALSE(ParseBakeName(rig_name + "/bakes/" + kRigId, "bake").ok());
  EXPECT_FALSE(ParseBakeName(std::string("rigs/x/bakes/") + kBakeId, "bake").ok());
  EXPECT_THAT(ParseBakeName("bake-1", "options.fast_model.weights_bake").status().message(),
              HasSubstr("options.fast_model.weights_bake 'bake-1' is not a bake name"));
  EXPECT_FALSE(ParseExampleName(rig_name + "/examples/", "name").ok());
  EXPECT_FALSE(ParseExampleName(rig_name + "/examples/a\nb", "name").ok());
}

TEST(Names, ExampleIdsOfStoredExamplesStillParse) {
  // Before ids had a charset, names were any 1 to 128 printable bytes, '/' and spaces included.
  auto old = ParseExampleName(RigName(kRigId) + "/examples/elbow 90/sculpt", "name");
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ(old->example_id, "elbow 90/sculpt");
}

TEST(Names, NewExampleIdsFollowTheDocumentedCharset) {
  for (const std::string& ok :
       {std::string("a"), std::string("elbow-90"), std::string("Elbow_90.v2"), std::string("9lives"), std::string(63, 'x')})
    EXPECT_TRUE(CheckNewExampleId(ok, "example_id").ok()) << ok;
  for (const std::string& bad : {std::string(), std::string(64, 'x'), std::string("-lead"), std::string(".hidden"),
                                std::string("has space"), std::string("slash/y"), std::string("ü")})
    EXPECT_EQ(CheckNewExampleId(bad, "example_id").code(), absl::StatusCode::kInvalidArgument) << bad;
  EXPECT_THAT(CheckNewExampleId("a b", "example_id").message(),
              HasSubstr("example_id 'a b' is not an example id (1 to 63 of letters, digits"));
}

TEST(Names, IdsAreHexOfTheRightLength) {
  EXPECT_TRUE(IsRigId(kRigId));
  EXPECT_TRUE(IsBakeId(kBakeId));
  EXPECT_FALSE(IsRigId(kBakeId));
  EXPECT_FALSE(IsBakeId("bake-fedcba9876543210fedcba987654321"));
  EXPECT_EQ(CheckRigId("rig-../../x").code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
