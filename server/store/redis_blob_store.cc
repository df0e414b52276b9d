// The Redis backend of BlobStore (see blob_store.h for the value layout).
#include <hiredis/hiredis.h>
#include <signal.h>
#include <sys/time.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <mutex>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/strings/string_view.h"
#include "core/util/status_macros.h"
#include "server/store/blob_framing.h"
#include "server/store/blob_store.h"
#include "server/store/redis_pool.h"

namespace skinning {
namespace {

// Keys asked for per SCAN step.
constexpr char kScanCount[] = "1000";

absl::Status CheckKey(const std::string& key) {
  bool ok = !key.empty() && key.front() != '/' && !absl::StrContains(key, "..");
  for (size_t i = 0; ok && i < key.size(); ++i) {
    const char c = key[i];
    ok =
        std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == '/';
  }
  if (!ok) return absl::InvalidArgumentError(absl::StrCat("invalid store key '", key, "'"));
  return absl::OkStatus();
}

// `text` with Redis glob specials escaped, for SCAN MATCH.
std::string GlobEscape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

using Reply = RedisReplyPtr;

class RedisBlobStore : public BlobStore {
 public:
  RedisBlobStore(std::string host, int port, std::string key_prefix, RedisCredentials credentials)
      : prefix_(std::move(key_prefix)), pool_(std::move(host), port, std::move(credentials)) {}

  // At startup: errors name the endpoint (they go to the operator, not to a client).
  absl::Status Ping() {
    absl::StatusOr<Reply> reply = Command({"PING"}, "PING");
    if (!reply.ok()) return pool_.ForOperator(reply.status());
    if ((*reply)->type != REDIS_REPLY_STATUS || absl::string_view((*reply)->str, (*reply)->len) != "PONG")
      return pool_.ForOperator(absl::FailedPreconditionError("did not answer PING with PONG"));
    return absl::OkStatus();
  }

  // At startup: a line for the operator when Redis would delete keys to stay under `maxmemory`
  // (any policy but noeviction once maxmemory is set): allkeys-* takes stored rigs and bakes,
  // volatile-* the records of ended bake jobs before their day is up (they carry a TTL).
  // INFO rather than CONFIG GET, which managed Redis services often refuse; nothing is printed
  // when INFO is refused (the pool prints the refusal).
  void WarnIfEvicting() {
    absl::StatusOr<Reply> reply = Command({"INFO", "memory"}, "INFO memory");
    if (!reply.ok() || (*reply)->type != REDIS_REPLY_STRING) return;
    std::string maxmemory, policy;
    for (absl::string_view line : absl::StrSplit(absl::string_view((*reply)->str, (*reply)->len), '\n')) {
      line = absl::StripAsciiWhitespace(line);
      if (absl::ConsumePrefix(&line, "maxmemory:")) maxmemory = std::string(line);
      if (absl::ConsumePrefix(&line, "maxmemory_policy:")) policy = std::string(line);
    }
    if (maxmemory.empty() || maxmemory == "0" || policy.empty() || policy == "noeviction") return;
    std::printf(
        "skinning-server store: warning: redis at %s evicts keys at its maxmemory (%s bytes, maxmemory-policy %s): "
        "stored rigs, bakes or bake jobs would vanish under memory pressure; set maxmemory-policy noeviction, so "
        "that writes fail with OOM instead\n",
        pool_.Endpoint().c_str(), maxmemory.c_str(), policy.c_str());
    std::fflush(stdout);
  }

  absl::Status Put(const std::string& key, const std::string& bytes) override {
    RETURN_IF_ERROR(CheckKey(key));
    const std::string value = FrameBlob(bytes);
    const std::string redis_key = prefix_ + key;
    ASSIGN_OR_RETURN(Reply reply, Command({"SET", redis_key, value}, absl::StrCat("SET '", key, "'")));
    if (reply->type != REDIS_REPLY_STATUS)
      return absl::InternalError(
          absl::StrCat("SET '", key, "': unexpected redis reply type ", reply->type));
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> Get(const std::string& key) override {
    RETURN_IF_ERROR(CheckKey(key));
    ASSIGN_OR_RETURN(Reply reply, Command({"GET", prefix_ + key}, absl::StrCat("GET '", key, "'")));
    if (reply->type == REDIS_REPLY_NIL)
      return absl::NotFoundError(absl::StrCat("no stored object '", key, "'"));
    if (reply->type != REDIS_REPLY_STRING)
      return absl::InternalError(
          absl::StrCat("GET '", key, "': unexpected redis reply type ", reply->type));
    return Decode(key, reply->str, reply->len);
  }

  absl::StatusOr<bool> Exists(const std::string& key) override {
    RETURN_IF_ERROR(CheckKey(key));
    ASSIGN_OR_RETURN(const int64_t n, IntegerCommand({"EXISTS", prefix_ + key}, absl::StrCat("EXISTS '", key, "'")));
    return n > 0;
  }

  absl::StatusOr<bool> Delete(const std::string& key) override {
    RETURN_IF_ERROR(CheckKey(key));
    ASSIGN_OR_RETURN(const int64_t n, IntegerCommand({"DEL", prefix_ + key}, absl::StrCat("DEL '", key, "'")));
    return n > 0;
  }

  absl::StatusOr<std::vector<std::string>> List(const std::string& prefix) override {
    const std::string pattern = GlobEscape(prefix_ + prefix) + "*";
    const std::string what = absl::StrCat("SCAN for keys starting with '", prefix, "'");
    std::vector<std::string> keys;
    std::string cursor = "0";
    do {
      ASSIGN_OR_RETURN(Reply reply, Command({"SCAN", cursor, "MATCH", pattern, "COUNT", kScanCount}, what));
      const redisReply* r = reply.get();
      if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
          r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_ARRAY)
        return absl::InternalError(absl::StrCat(what, ": malformed redis reply"));
      cursor.assign(r->element[0]->str, r->element[0]->len);
      for (size_t i = 0; i < r->element[1]->elements; ++i) {
        const redisReply* k = r->element[1]->element[i];
        if (k->type != REDIS_REPLY_STRING) continue;
        std::string full(k->str, k->len);
        if (!absl::StartsWith(full, prefix_ + prefix)) continue;
        keys.push_back(full.substr(prefix_.size()));
      }
    } while (cursor != "0");
    // SCAN may return a key more than once.
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    return keys;
  }

  // KEYS[1] the guard, KEYS[2..] the written keys; ARGV[1] "1" when the guard must hold
  // ARGV[2] (the encoded value), "0" when it must be absent; then per written key i ≥ 2 the pair
  // ARGV[2i−1] = "set" or "del", ARGV[2i] = the encoded value. A script runs atomically.
  absl::StatusOr<bool> WriteIf(const std::string& guard, const std::optional<std::string>& expected,
                               const std::vector<Write>& writes) override {
    static constexpr char kScript[] =
        "local cur = redis.call('GET', KEYS[1])\n"
        "if ARGV[1] == '1' then\n"
        "  if cur ~= ARGV[2] then return 0 end\n"
        "elseif cur then return 0 end\n"
        "for i = 2, #KEYS do\n"
        "  if ARGV[2 * i - 1] == 'set' then redis.call('SET', KEYS[i], ARGV[2 * i])\n"
        "  else redis.call('DEL', KEYS[i]) end\n"
        "end\n"
        "return 1\n";
    RETURN_IF_ERROR(CheckKey(guard));
    std::vector<std::string> keys = {prefix_ + guard};
    std::vector<std::string> values = {expected.has_value() ? "1" : "0", expected.has_value() ? FrameBlob(*expected) : ""};
    for (const Write& w : writes) {
      RETURN_IF_ERROR(CheckKey(w.key));
      keys.push_back(prefix_ + w.key);
      values.push_back(w.bytes.has_value() ? "set" : "del");
      values.push_back(w.bytes.has_value() ? FrameBlob(*w.bytes) : "");
    }
    const std::string num_keys = absl::StrCat(keys.size());
    std::vector<absl::string_view> args = {"EVAL", kScript, num_keys};
    for (const std::string& k : keys) args.push_back(k);
    for (const std::string& v : values) args.push_back(v);
    ASSIGN_OR_RETURN(const int64_t n, IntegerCommand(args, absl::StrCat("conditional write guarded by '", guard, "'")));
    return n == 1;
  }

 private:
  absl::StatusOr<std::string> Decode(const std::string& key, const char* data, size_t size) const {
    ASSIGN_OR_RETURN(const absl::string_view payload,
                     BlobPayload(absl::string_view(data, size),
                                 absl::StrCat("stored object '", key, "' (redis key '", prefix_, key, "')")));
    return std::string(payload);
  }

  absl::StatusOr<Reply> Command(const std::vector<absl::string_view>& args, const std::string& what) {
    return pool_.Command(args, what);
  }
  absl::StatusOr<int64_t> IntegerCommand(const std::vector<absl::string_view>& args, const std::string& what) {
    return pool_.IntegerCommand(args, what);
  }

  const std::string prefix_;
  RedisPool pool_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<BlobStore>> OpenRedisBlobStore(const std::string& host, int port,
                                                              const std::string& key_prefix,
                                                              RedisCredentials credentials) {
  if (host.empty()) return absl::InvalidArgumentError("redis host is empty");
  if (port <= 0 || port > 65535)
    return absl::InvalidArgumentError(absl::StrCat("redis port ", port, " is out of range"));
  IgnoreSigpipeForRedis();
  auto store = std::make_unique<RedisBlobStore>(host, port, key_prefix, std::move(credentials));
  RETURN_IF_ERROR(store->Ping());
  store->WarnIfEvicting();
  return std::unique_ptr<BlobStore>(std::move(store));
}

}  // namespace skinning
