// A thread-safe LRU cache by bytes: string key → shared immutable value.
#ifndef SKINNING_SERVER_STORE_LRU_CACHE_H_
#define SKINNING_SERVER_STORE_LRU_CACHE_H_

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace skinning {

struct CacheStats {
  uint64_t hits = 0, misses = 0, evictions = 0;
  size_t bytes = 0, entries = 0;
};

template <typename V>
class LruCache {
 public:
  explicit LruCache(size_t capacity_bytes) : capacity_(capacity_bytes) {}

  // The value under `key` (now most recently used), or nullptr. Counts a hit or a miss.
  std::shared_ptr<const V> Find(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = index_.find(key);
    if (it == index_.end()) {
      ++stats_.misses;
      return nullptr;
    }
    ++stats_.hits;
    lru_.splice(lru_.begin(), lru_, it->second);
    return it->second->value;
  }

  // The value under `key`, or nullptr, counting neither a hit nor a miss and leaving the order as
  // it is (a look before the lookup, e.g. to decide where a call runs).
  std::shared_ptr<const V> Peek(const std::string& key) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : it->second->value;
  }

  // Inserts or replaces; evicts least recently used entries until the total is within the
  // capacity. A value larger than the whole capacity is not cached.
  void Insert(const std::string& key, std::shared_ptr<const V> value, size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    EraseLocked(key);
    if (bytes > capacity_) return;
    lru_.push_front(Entry{key, std::move(value), bytes});
    index_[key] = lru_.begin();
    stats_.bytes += bytes;
    EvictLocked();
  }

  // Counts `bytes` more for the entry under `key` when it still holds `value` (a value that grew
  // after it was inserted, e.g. by something prepared on its first use), then evicts as Insert
  // does, this entry too if it is now the least recently used. Nothing when the key is gone or
  // holds another value (the growth is then counted nowhere, as the value is no longer cached).
  void Grow(const std::string& key, const V* value, size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = index_.find(key);
    if (it == index_.end() || it->second->value.get() != value) return;
    it->second->bytes += bytes;
    stats_.bytes += bytes;
    EvictLocked();
  }

  void Erase(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    EraseLocked(key);
  }

  CacheStats stats() const {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }

 private:
  struct Entry {
    std::string key;
    std::shared_ptr<const V> value;
    size_t bytes;
  };
  void EvictLocked() {
    while (stats_.bytes > capacity_ && !lru_.empty()) {
      stats_.bytes -= lru_.back().bytes;
      index_.erase(lru_.back().key);
      lru_.pop_back();
      ++stats_.evictions;
    }
    stats_.entries = lru_.size();
  }
  void EraseLocked(const std::string& key) {
    auto it = index_.find(key);
    if (it == index_.end()) return;
    stats_.bytes -= it->second->bytes;
    lru_.erase(it->second);
    index_.erase(it);
    stats_.entries = lru_.size();
  }

  const size_t capacity_;
  mutable std::mutex mu_;
  std::list<Entry> lru_;  // front = most recently used
  std::unordered_map<std::string, typename std::list<Entry>::iterator> index_;
  CacheStats stats_;
};

}  // namespace skinning

#endif  // SKINNING_SERVER_STORE_LRU_CACHE_H_
