// The Redis store over TLS (--redis_tls) against a real redis-server serving TLS on its tls-port,
// with certificates from tests/support/test_pki.h. The tests' own plain hiredis connection to the
// same redis-server sees what the store wrote through TLS.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "server/store/blob_framing.h"
#include "server/store/blob_store.h"
#include "server/store/redis_pool.h"
#include "server/store/redis_tls.h"
#include "tests/support/random_bytes.h"
#include "tests/support/redis_process.h"
#include "tests/support/server_process.h"
#include "tests/support/test_pki.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::skinning::testing::ConnectRedis;
using ::skinning::testing::RandomBytes;
using ::skinning::testing::RedisConnection;
using ::skinning::testing::RedisProcess;
using ::skinning::testing::RedisReply;
using ::skinning::testing::RedisTlsFiles;
using ::skinning::testing::RunCommand;
using ::skinning::testing::SharedTestPki;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class RedisTlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { pki_.Make(); }
  static void TearDownTestSuite() { pki_.Reset(); }
  void SetUp() override { pki_.Require(); }

  // A redis-server serving TLS with the test PKI's server certificate.
  static std::unique_ptr<RedisProcess> StartRedis(bool auth_clients = false) {
    RedisTlsFiles files;
    files.cert_file = pki_->server_cert;
    files.key_file = pki_->server_key;
    files.ca_file = pki_->ca_cert;
    files.auth_clients = auth_clients;
    return std::make_unique<RedisProcess>(files);
  }
  // Credentials with TLS trusting `ca_file` (and the given client certificate, name to check).
  static RedisCredentials Tls(const std::string& ca_file, const std::string& cert_file = "",
                              const std::string& key_file = "", const std::string& server_name = "") {
    RedisTlsOptions options;
    options.ca_file = ca_file;
    options.cert_file = cert_file;
    options.key_file = key_file;
    options.server_name = server_name;
    absl::StatusOr<std::shared_ptr<const RedisTlsContext>> tls = RedisTlsContext::Create(options);
    EXPECT_TRUE(tls.ok()) << tls.status();
    RedisCredentials credentials;
    if (tls.ok()) credentials.tls = *tls;
    return credentials;
  }
  static absl::StatusOr<std::unique_ptr<BlobStore>> Open(const RedisProcess& redis, RedisCredentials credentials,
                                                          const std::string& host = "127.0.0.1") {
    return OpenRedisBlobStore(host, redis.tls_port(), "skinning:", std::move(credentials));
  }
  // The value under `key` through the plain port, or "" when absent.
  static std::string RawGet(const RedisProcess& redis, const std::string& key) {
    RedisConnection c = ConnectRedis(redis.port());
    EXPECT_NE(c, nullptr);
    if (c == nullptr) return "";
    RedisReply r(static_cast<redisReply*>(redisCommand(c.get(), "GET %b", key.data(), key.size())));
    return r && r->type == REDIS_REPLY_STRING ? std::string(r->str, r->len) : "";
  }

  static SharedTestPki pki_;
};

SharedTestPki RedisTlsTest::pki_;

TEST_F(RedisTlsTest, TheStoreRoundTripsBinaryAndLargeValuesOverTlsAndAPlainClientSeesThem) {
  std::unique_ptr<RedisProcess> redis = StartRedis();
  absl::StatusOr<std::unique_ptr<BlobStore>> store = Open(*redis, Tls(pki_->ca_cert));
  ASSERT_TRUE(store.ok()) << store.status();
  const std::string binary("a\0b\r\n\xff", 6);
  ASSERT_TRUE((*store)->Put("rigs/a.pb", binary).ok());
  ASSERT_TRUE((*store)->Put("rigs/b.info", "").ok());
  EXPECT_EQ(*(*store)->Get("rigs/a.pb"), binary);
  EXPECT_EQ(*(*store)->Get("rigs/b.info"), "");
  EXPECT_THAT(*(*store)->List("rigs/"), ElementsAre("rigs/a.pb", "rigs/b.info"));
  EXPECT_EQ((*store)->Get("rigs/c.pb").status().code(), absl::StatusCode::kNotFound);
  // A reply far larger than one TLS record (16 KB) and one read buffer, both ways.
  const std::string big = RandomBytes(20 << 20, 11);
  ASSERT_TRUE((*store)->Put("bakes/big.pb", big).ok());
  absl::StatusOr<std::string> back = (*store)->Get("bakes/big.pb");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(*back == big) << "the 20 MB value differs after the round trip over TLS";
  // The same redis-server through its plain port: the framed value the store wrote.
  const std::string raw = RawGet(*redis, "skinning:bakes/big.pb");
  ASSERT_EQ(raw.size(), kBlobHeaderBytes + big.size());
  EXPECT_TRUE(raw.substr(kBlobHeaderBytes) == big);
  EXPECT_TRUE(*(*store)->Delete("bakes/big.pb"));
  EXPECT_EQ(RawGet(*redis, "skinning:bakes/big.pb"), "");
}

TEST_F(RedisTlsTest, ManyThreadsShareThePoolsTlsConnections) {
  std::unique_ptr<RedisProcess> redis = StartRedis();
  absl::StatusOr<std::unique_ptr<BlobStore>> store = Open(*redis, Tls(pki_->ca_cert));
  ASSERT_TRUE(store.ok()) << store.status();
  constexpr int kThreads = 8, kCalls = 40;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int c = 0; c < kCalls; ++c) {
        const std::string key = "rigs/t" + std::to_string(t) + "-" + std::to_string(c) + ".pb";
        const std::string value = RandomBytes(40000 + 997 * c, 100 * t + c);
        if (!(*store)->Put(key, value).ok()) ++wrong;
        absl::StatusOr<std::string> got = (*store)->Get(key);
        if (!got.ok() || *got != value) ++wrong;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ((*store)->List("rigs/")->size(), static_cast<size_t>(kThreads * kCalls));
}

// A pooled TLS connection that Redis closed (a restart) is replaced at the next call; a Redis that
// stops answering fails the call within the 5 s socket timeout, as over plain TCP.
TEST_F(RedisTlsTest, TheStoreReconnectsAfterARestartAndTimesOutOnAHungRedis) {
  std::unique_ptr<RedisProcess> redis = StartRedis();
  absl::StatusOr<std::unique_ptr<BlobStore>> store = Open(*redis, Tls(pki_->ca_cert));
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)->Put("rigs/before.pb", "x").ok());
  ASSERT_EQ(redis->Stop(SIGTERM), 0);
  redis->Restart();
  ASSERT_TRUE((*store)->Put("rigs/after.pb", "y").ok());
  EXPECT_EQ(*(*store)->Get("rigs/after.pb"), "y");

  ASSERT_EQ(kill(redis->pid(), SIGSTOP), 0);
  const auto t0 = std::chrono::steady_clock::now();
  const absl::Status get = (*store)->Get("rigs/after.pb").status();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(kill(redis->pid(), SIGCONT), 0);
  EXPECT_EQ(get.code(), absl::StatusCode::kUnavailable) << get;
  EXPECT_THAT(std::string(get.message()), HasSubstr("no answer within 5 s"));
  EXPECT_LT(seconds, 15);
  EXPECT_FALSE(IsStoreRefusal(get)) << "a hung Redis is waited for at start, not a refusal";
  EXPECT_EQ(*(*store)->Get("rigs/after.pb"), "y");
}

// What the operator must mend is a refusal (not waited for at start) that says what to mend.
TEST_F(RedisTlsTest, ACertificateThatIsNotTrustedOrNotForTheNameIsARefusalThatSaysWhy) {
  std::unique_ptr<RedisProcess> redis = StartRedis();
  absl::StatusOr<std::unique_ptr<BlobStore>> other_ca = Open(*redis, Tls(pki_->other_ca_cert));
  EXPECT_EQ(other_ca.status().code(), absl::StatusCode::kUnavailable) << other_ca.status();
  EXPECT_TRUE(IsStoreRefusal(other_ca.status())) << other_ca.status();
  EXPECT_THAT(std::string(other_ca.status().message()),
              AllOf(HasSubstr("certificate is not trusted"), HasSubstr("--redis_tls_ca_file")));
  // The system's trust store does not know the test CA either.
  absl::StatusOr<std::unique_ptr<BlobStore>> system = Open(*redis, Tls(""));
  EXPECT_TRUE(IsStoreRefusal(system.status())) << system.status();
  EXPECT_THAT(std::string(system.status().message()), HasSubstr("not trusted"));

  absl::StatusOr<std::unique_ptr<BlobStore>> wrong_name =
      Open(*redis, Tls(pki_->ca_cert, "", "", "redis.example.com"));
  EXPECT_TRUE(IsStoreRefusal(wrong_name.status())) << wrong_name.status();
  EXPECT_THAT(std::string(wrong_name.status().message()),
              AllOf(HasSubstr("not for 'redis.example.com'"), HasSubstr("--redis_tls_server_name")));
  // The certificate names 127.0.0.1 and localhost: both the address and the DNS name pass, as
  // the host of --redis or as --redis_tls_server_name.
  EXPECT_TRUE(Open(*redis, Tls(pki_->ca_cert), "localhost").ok());
  EXPECT_TRUE(Open(*redis, Tls(pki_->ca_cert, "", "", "localhost")).ok());
  absl::StatusOr<std::unique_ptr<BlobStore>> other_ip = Open(*redis, Tls(pki_->ca_cert, "", "", "127.0.0.2"));
  EXPECT_THAT(std::string(other_ip.status().message()), HasSubstr("not for '127.0.0.2'"));
}

// tls-auth-clients: Redis ends the session of a client without a certificate from its CA (with
// TLS 1.3 only after the handshake, so the store's first PING on a new connection tells it).
TEST_F(RedisTlsTest, ARedisThatAsksForAClientCertificateTakesOnlyOneFromItsCa) {
  std::unique_ptr<RedisProcess> redis = StartRedis(/*auth_clients=*/true);
  absl::StatusOr<std::unique_ptr<BlobStore>> none = Open(*redis, Tls(pki_->ca_cert));
  EXPECT_TRUE(IsStoreRefusal(none.status())) << none.status();
  EXPECT_THAT(std::string(none.status().message()), HasSubstr("--redis_tls_cert_file"));
  absl::StatusOr<std::unique_ptr<BlobStore>> other =
      Open(*redis, Tls(pki_->ca_cert, pki_->other_client_cert, pki_->other_client_key));
  EXPECT_TRUE(IsStoreRefusal(other.status())) << other.status();
  absl::StatusOr<std::unique_ptr<BlobStore>> good =
      Open(*redis, Tls(pki_->ca_cert, pki_->client_cert, pki_->client_key));
  ASSERT_TRUE(good.ok()) << good.status();
  ASSERT_TRUE((*good)->Put("rigs/m.pb", "mutual").ok());
  EXPECT_EQ(*(*good)->Get("rigs/m.pb"), "mutual");
}

// A password (requirepass) goes with TLS: AUTH is the first command inside the session.
TEST_F(RedisTlsTest, APasswordIsSentOverTheTlsSession) {
  std::unique_ptr<RedisProcess> redis = StartRedis();
  {
    RedisConnection c = ConnectRedis(redis->port());
    ASSERT_NE(c, nullptr);
    RedisReply set(static_cast<redisReply*>(redisCommand(c.get(), "CONFIG SET requirepass %s", "tls-pass")));
    ASSERT_TRUE(set && set->type == REDIS_REPLY_STATUS);
  }
  absl::StatusOr<std::unique_ptr<BlobStore>> without = Open(*redis, Tls(pki_->ca_cert));
  EXPECT_TRUE(IsStoreRefusal(without.status())) << without.status();
  EXPECT_THAT(std::string(without.status().message()), HasSubstr("refused this server"));
  RedisCredentials with = Tls(pki_->ca_cert);
  with.password = "tls-pass";
  absl::StatusOr<std::unique_ptr<BlobStore>> store = Open(*redis, with);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_TRUE((*store)->Put("rigs/p.pb", "p").ok());
}

// TLS to the plain port: that redis-server waits for the end of a line that the handshake never
// sends, so the handshake times out, and the message asks whether it is the TLS port.
TEST_F(RedisTlsTest, TlsToThePlainPortTimesOutAskingWhetherItIsTheTlsPort) {
  std::unique_ptr<RedisProcess> redis = StartRedis();
  absl::StatusOr<std::unique_ptr<BlobStore>> plain =
      OpenRedisBlobStore("127.0.0.1", redis->port(), "skinning:", Tls(pki_->ca_cert));
  EXPECT_EQ(plain.status().code(), absl::StatusCode::kUnavailable) << plain.status();
  EXPECT_THAT(std::string(plain.status().message()), HasSubstr("is it Redis's TLS port?"));
}

// The files behind --redis_tls_* are read once at start; a bad one is named with its flag.
TEST_F(RedisTlsTest, BadFilesAreNamedWithTheirFlag) {
  auto create = [](const std::string& ca, const std::string& cert, const std::string& key) {
    RedisTlsOptions options;
    options.ca_file = ca;
    options.cert_file = cert;
    options.key_file = key;
    return RedisTlsContext::Create(options).status();
  };
  const std::string missing = pki_->dir + "/absent.crt";
  EXPECT_THAT(create(missing, "", "").ToString(),
              AllOf(HasSubstr("INVALID_ARGUMENT"), HasSubstr("--redis_tls_ca_file"), HasSubstr(missing)));
  EXPECT_THAT(create(pki_->dir + "/openssl.cnf", "", "").ToString(),
              AllOf(HasSubstr("--redis_tls_ca_file"), HasSubstr("openssl.cnf"), HasSubstr("PEM CA certificates")));
  EXPECT_THAT(create(pki_->ca_cert, pki_->client_cert, "").ToString(),
              AllOf(HasSubstr("--redis_tls_cert_file and --redis_tls_key_file go together")));
  EXPECT_THAT(create(pki_->ca_cert, pki_->client_cert, pki_->server_key).ToString(),
              AllOf(HasSubstr("--redis_tls_key_file"), HasSubstr("does not belong to the certificate")));
  EXPECT_THAT(create(pki_->ca_cert, pki_->client_key, pki_->client_key).ToString(),
              AllOf(HasSubstr("--redis_tls_cert_file"), HasSubstr("PEM certificate chain")));
  // An encrypted key fails at once instead of asking for a passphrase.
  const std::string encrypted = pki_->dir + "/client-encrypted.key";
  const testing::CommandResult r = RunCommand({testing::kOpenssl, "pkey", "-in", pki_->client_key, "-aes256",
                                               "-passout", "pass:secret", "-out", encrypted});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(create(pki_->ca_cert, pki_->client_cert, encrypted).ToString(),
              AllOf(HasSubstr("--redis_tls_key_file"), HasSubstr("unencrypted PEM private key")));
  EXPECT_TRUE(create(pki_->ca_cert, pki_->client_cert, pki_->client_key).ok());
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
