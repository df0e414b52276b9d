// A test PKI made with the openssl command line (scripts/install-deps.sh installs it) in a
// temporary directory: a CA, a server certificate for 127.0.0.1 and localhost, a client
// certificate from the CA, and a second CA with its own client certificate that a server must not
// accept. Used by the gRPC TLS tests (tests/e2e/security_test.cc) and the Redis TLS tests.
#ifndef SKINNING_TESTS_SUPPORT_TEST_PKI_H_
#define SKINNING_TESTS_SUPPORT_TEST_PKI_H_

#include <memory>
#include <string>

namespace skinning::testing {

// PEM files (certificates .crt, unencrypted keys .key) in `dir`.
struct TestPki {
  std::string dir;
  std::string ca_cert, server_cert, server_key, client_cert, client_key;
  std::string other_ca_cert, other_client_cert, other_client_key;
};

// The openssl binary the PKI is made with.
inline constexpr char kOpenssl[] = "/usr/bin/openssl";

// Makes the PKI (about 0.1 s). Throws std::runtime_error with openssl's output when a step fails
// or openssl is not installed.
TestPki MakeTestPki();

// A suite's PKI: made once in SetUpTestSuite (Make), required by each test's SetUp (Require).
class SharedTestPki {
 public:
  // Makes the PKI, or keeps MakeTestPki's error.
  void Make();
  // In a test's SetUp, when Make failed: a fatal failure in CI (scripts/install-deps.sh installs
  // openssl), a skip elsewhere; the test body then does not run.
  void Require() const;
  void Reset() { pki_.reset(); }
  const TestPki* operator->() const { return pki_.get(); }
  const TestPki& operator*() const { return *pki_; }

 private:
  std::unique_ptr<TestPki> pki_;
  std::string error_;
};

}  // namespace skinning::testing

#endif  // SKINNING_TESTS_SUPPORT_TEST_PKI_H_
