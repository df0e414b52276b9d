#include "tests/support/test_pki.h"

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/data.h"
#include "tests/support/server_process.h"

namespace skinning::testing {
namespace {

// Extensions for the test PKI, independent of the system's openssl.cnf.
constexpr char kOpensslConfig[] = R"([req]
distinguished_name = dn
prompt = no
[dn]
CN = unused
[ca_ext]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[server_ext]
basicConstraints = CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1, DNS:localhost
[client_ext]
basicConstraints = CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = clientAuth
)";

void Openssl(std::vector<std::string> args) {
  args.insert(args.begin(), kOpenssl);
  const CommandResult r = RunCommand(args);
  if (r.exit_code != 0) throw std::runtime_error("openssl " + args[1] + " failed:\n" + r.output);
}

// A self-signed CA `name`.{crt,key} (P-256).
void MakeCa(const TestPki& pki, const std::string& name, const std::string& subject) {
  Openssl({"req", "-x509", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
           pki.dir + "/" + name + ".key", "-out", pki.dir + "/" + name + ".crt", "-days", "2", "-subj", subject,
           "-config", pki.dir + "/openssl.cnf", "-extensions", "ca_ext"});
}

// A certificate `name`.{crt,key} signed by the CA `ca`, with the extensions section `ext`.
void MakeLeaf(const TestPki& pki, const std::string& name, const std::string& subject, const std::string& ca,
              const std::string& ext, int serial) {
  const std::string base = pki.dir + "/" + name;
  Openssl({"req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
           base + ".key", "-out", base + ".csr", "-subj", subject, "-config", pki.dir + "/openssl.cnf"});
  Openssl({"x509", "-req", "-in", base + ".csr", "-CA", pki.dir + "/" + ca + ".crt", "-CAkey",
           pki.dir + "/" + ca + ".key", "-set_serial", std::to_string(serial), "-out", base + ".crt", "-days", "2",
           "-extfile", pki.dir + "/openssl.cnf", "-extensions", ext});
}

}  // namespace

TestPki MakeTestPki() {
  if (!std::filesystem::exists(kOpenssl))
    throw std::runtime_error(std::string(kOpenssl) + " is not installed (scripts/install-deps.sh installs it)");
  TestPki p;
  p.dir = MakeTempDir("pki");
  std::ofstream(p.dir + "/openssl.cnf") << kOpensslConfig;
  MakeCa(p, "ca", "/CN=Skinning Test CA");
  MakeLeaf(p, "server", "/CN=localhost", "ca", "server_ext", 2);
  MakeLeaf(p, "client", "/CN=skinning test client", "ca", "client_ext", 3);
  MakeCa(p, "other-ca", "/CN=Some Other CA");
  MakeLeaf(p, "other-client", "/CN=client of another CA", "other-ca", "client_ext", 4);
  p.ca_cert = p.dir + "/ca.crt";
  p.server_cert = p.dir + "/server.crt";
  p.server_key = p.dir + "/server.key";
  p.client_cert = p.dir + "/client.crt";
  p.client_key = p.dir + "/client.key";
  p.other_ca_cert = p.dir + "/other-ca.crt";
  p.other_client_cert = p.dir + "/other-client.crt";
  p.other_client_key = p.dir + "/other-client.key";
  return p;
}

void SharedTestPki::Make() {
  try {
    pki_ = std::make_unique<TestPki>(MakeTestPki());
  } catch (const std::exception& e) {
    error_ = e.what();
  }
}

void SharedTestPki::Require() const {
  if (pki_ != nullptr) return;
  if (InCi()) FAIL() << error_;
  GTEST_SKIP() << error_ << " (CI is unset, so skipping)";
}

}  // namespace skinning::testing
