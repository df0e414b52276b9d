// The API lint finds every kind of violation it is meant to (on testdata/bad/v1/bad.proto), and
// none on the real API.
#include "tests/proto/api_lint.h"

#include <fstream>
#include <set>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace skinning {
namespace {

google::protobuf::FileDescriptorSet ReadSet(const char* path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  google::protobuf::FileDescriptorSet set;
  EXPECT_TRUE(in && set.ParseFromString(bytes.str())) << path;
  return set;
}

std::set<std::pair<std::string, std::string>> RuleAndPlace(const std::vector<ApiViolation>& v) {
  std::set<std::pair<std::string, std::string>> out;
  for (const auto& x : v) out.insert({x.rule, x.where});
  return out;
}

TEST(ApiLint, FindsEveryRuleInTheBadApi) {
  const auto found = RuleAndPlace(LintApi(ReadSet(SKINNING_BAD_API_DESCRIPTORS), "bad.v1"));
  const std::set<std::pair<std::string, std::string>> expected = {
      {"unsigned", "bad.v1.Thing.size"},
      {"timestamp", "bad.v1.Thing.created"},
      {"timestamp", "bad.v1.Thing.update_time"},
      {"duration", "bad.v1.Thing.elapsed_seconds"},
      {"duration", "bad.v1.Thing.run_time"},
      {"count", "bad.v1.Thing.num_parts"},
      {"reference", "bad.v1.Thing.owner_id"},
      {"enum-zero", "bad.v1.ThingKind"},
      {"enum-zero", "bad.v1.COLOUR_UNSPECIFIED"},
      {"standard-get", "bad.v1.ThingService.GetThing"},
      {"resource-name", "bad.v1.Thing"},
      {"page-size", "bad.v1.ListThingsRequest.page_size"},
      {"page-size", "bad.v1.ListThingsRequest"},
      {"page-size", "bad.v1.ListThingsResponse"},
      {"view", "bad.v1.ListThingsRequest.include_parts"},
      {"standard-delete", "bad.v1.ThingService.DeleteThing"},
      {"standard-create", "bad.v1.ThingService.CreateThing"},
      {"request-unique", "bad.v1.ThingService.CreateThing"},
      {"request-unique", "bad.v1.DeleteThingRequest"},
      {"internal-import", "bad/v1/bad.proto"},
  };
  for (const auto& e : expected) EXPECT_TRUE(found.count(e)) << "missed [" << e.first << "] " << e.second;
  // The allowed cases stay quiet.
  EXPECT_FALSE(found.count({"unsigned", "bad.v1.Thing.flags"})) << "a documented bit pattern is allowed";
}

TEST(ApiLint, ThePublicApiFollowsTheConventions) {
  const std::vector<ApiViolation> v = LintApi(ReadSet(SKINNING_API_DESCRIPTORS), "skinning.v1");
  for (const auto& x : v) ADD_FAILURE() << "[" << x.rule << "] " << x.where << ": " << x.message;
}

}  // namespace
}  // namespace skinning
