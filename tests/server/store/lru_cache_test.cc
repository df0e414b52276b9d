// The byte-bounded LRU cache: Find counts and reorders, Peek (where a call is to run, decided
// before the call looks its rig and bake up) does neither, so the caches' hit and miss series
// count the calls' lookups only.
#include "server/store/lru_cache.h"

#include <memory>
#include <string>

#include <gtest/gtest.h>

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

TEST(LruCache, FindCountsAndMakesTheEntryTheMostRecentlyUsed) {
  LruCache<std::string> cache(20);
  cache.Insert("a", std::make_shared<const std::string>("A"), 10);
  cache.Insert("b", std::make_shared<const std::string>("B"), 10);
  ASSERT_NE(cache.Find("a"), nullptr);  // a is now the most recently used: b goes first
  EXPECT_EQ(cache.Find("x"), nullptr);
  cache.Insert("c", std::make_shared<const std::string>("C"), 10);
  EXPECT_NE(cache.Peek("a"), nullptr);
  EXPECT_EQ(cache.Peek("b"), nullptr);
  const CacheStats stats = cache.stats();
  EXPECT_EQ(stats.hits, 1u);
  EXPECT_EQ(stats.misses, 1u);
  EXPECT_EQ(stats.evictions, 1u);
}

TEST(LruCache, PeekNeitherCountsNorReorders) {
  LruCache<std::string> cache(20);
  cache.Insert("a", std::make_shared<const std::string>("A"), 10);
  cache.Insert("b", std::make_shared<const std::string>("B"), 10);
  ASSERT_NE(cache.Peek("a"), nullptr);
  EXPECT_EQ(*cache.Peek("a"), "A");
  EXPECT_EQ(cache.Peek("x"), nullptr);
  cache.Insert("c", std::make_shared<const std::string>("C"), 10);
  EXPECT_EQ(cache.Peek("a"), nullptr) << "a stayed the least recently used";
  EXPECT_NE(cache.Peek("b"), nullptr);
  const CacheStats stats = cache.stats();
  EXPECT_EQ(stats.hits, 0u);
  EXPECT_EQ(stats.misses, 0u);
  EXPECT_EQ(stats.entries, 2u);
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
