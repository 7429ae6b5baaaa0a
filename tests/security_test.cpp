// TLS, mutual TLS and the bearer token, end to end on a loopback server.
// Certificates are made here by openssl for each run: none are committed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "api/bearer_auth.h"
#include "server_fixture.h"

namespace gemmd::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string Slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A CA, a server certificate for 127.0.0.1 and a client certificate it
// signed, and a second CA that signed nothing the server trusts.
class Pki {
 public:
  Pki() : dir_(fs::temp_directory_path() / ("gemmd-pki-" + std::to_string(::getpid()))) {
    fs::create_directories(dir_);
    ok_ = Run("openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=test-ca -keyout ca.key -out ca.pem") &&
          Run("openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=rogue-ca -keyout rogue.key -out "
              "rogue.pem") &&
          Issue("server", "ca", "subjectAltName=IP:127.0.0.1,DNS:localhost") &&
          Issue("client", "ca", "extendedKeyUsage=clientAuth") &&
          Issue("client2", "ca", "extendedKeyUsage=clientAuth") &&
          Issue("rogue-client", "rogue", "extendedKeyUsage=clientAuth");
  }
  ~Pki() { fs::remove_all(dir_); }
  bool ok() const { return ok_; }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string pem(const std::string& name) const { return Slurp(dir_ / name); }

 private:
  bool Run(const std::string& cmd) const {
    return std::system(("cd " + dir_.string() + " && " + cmd + " >/dev/null 2>&1").c_str()) == 0;
  }
  bool Issue(const std::string& name, const std::string& ca, const std::string& ext) const {
    return Run("openssl req -newkey rsa:2048 -nodes -subj /CN=" + name + " -keyout " + name + ".key -out " + name +
               ".csr") &&
           Run("printf '%s\\n' '" + ext + "' > " + name + ".ext && openssl x509 -req -in " + name + ".csr -CA " + ca +
               ".pem -CAkey " + ca + ".key -CAcreateserial -days 1 -extfile " + name + ".ext -out " + name + ".pem");
  }
  fs::path dir_;
  bool ok_ = false;
};

class SecurityTest : public ServerFixture {
 protected:
  static void SetUpTestSuite() { pki_ = new Pki(); }
  static void TearDownTestSuite() { delete pki_; }
  void SetUp() override {
    if (!pki_->ok()) GTEST_SKIP() << "openssl could not make the test certificates";
  }

  ServerConfig TlsConfig(bool mutual, const std::string& token = "") const {
    ServerConfig c = LoopbackConfig();
    c.tls_cert = pki_->path("server.pem");
    c.tls_key = pki_->path("server.key");
    if (mutual) c.tls_client_ca = pki_->path("ca.pem");
    c.auth_token = token;
    return c;
  }
  gemmc::ClientOptions Options() const {
    gemmc::ClientOptions o;
    o.target = "127.0.0.1:" + std::to_string(server().port());
    o.timeout_seconds = 10;
    return o;
  }
  gemmc::ClientOptions TlsOptions() const {
    gemmc::ClientOptions o = Options();
    o.tls_ca = pki_->pem("ca.pem");
    return o;
  }
  static grpc::Status ListKernels(const gemmc::ClientOptions& o) {
    gemmc::GemmClient c(o);
    gemm::v1::ListKernelsResponse r;
    return c.ListKernels(&r);
  }
  GemmServer& server() const { return const_cast<SecurityTest*>(this)->ServerFixture::server(); }

  static Pki* pki_;
};
Pki* SecurityTest::pki_ = nullptr;

TEST_F(SecurityTest, PlaintextClientIsRefusedWhenTlsIsRequired) {
  StartServer(TlsConfig(/*mutual=*/false));
  const grpc::Status st = ListKernels(Options());
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAVAILABLE) << st.error_message();
  EXPECT_TRUE(ListKernels(TlsOptions()).ok());
}

TEST_F(SecurityTest, ClientThatDoesNotTrustTheServerCertificateIsRefused) {
  StartServer(TlsConfig(false));
  gemmc::ClientOptions o = Options();
  o.tls_ca = pki_->pem("rogue.pem");
  EXPECT_EQ(ListKernels(o).error_code(), grpc::StatusCode::UNAVAILABLE);
}

TEST_F(SecurityTest, MutualTlsNeedsAClientCertificateSignedByTheClientCa) {
  StartServer(TlsConfig(/*mutual=*/true));
  EXPECT_EQ(ListKernels(TlsOptions()).error_code(), grpc::StatusCode::UNAVAILABLE);  // no client certificate

  gemmc::ClientOptions rogue = TlsOptions();
  rogue.tls_cert = pki_->pem("rogue-client.pem");
  rogue.tls_key = pki_->pem("rogue-client.key");
  EXPECT_EQ(ListKernels(rogue).error_code(), grpc::StatusCode::UNAVAILABLE);

  gemmc::ClientOptions good = TlsOptions();
  good.tls_cert = pki_->pem("client.pem");
  good.tls_key = pki_->pem("client.key");
  EXPECT_TRUE(ListKernels(good).ok());
}

TEST_F(SecurityTest, BearerTokenMissingOrWrongIsUnauthenticatedAndRightIsAccepted) {
  StartServer(TlsConfig(false, "s3cret-token"));
  gemmc::ClientOptions o = TlsOptions();
  grpc::Status st = ListKernels(o);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(st.error_message(), HasSubstr("requires a bearer token"));

  o.token = "wrong";
  st = ListKernels(o);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(st.error_message(), HasSubstr("invalid bearer token"));
  EXPECT_THAT(st.error_message(), ::testing::Not(HasSubstr("s3cret")));

  o.token = "s3cret-token";
  EXPECT_TRUE(ListKernels(o).ok());
}

TEST_F(SecurityTest, EveryGemmCallChecksTheTokenButHealthStaysOpenForProbes) {
  ServerConfig c = LoopbackConfig();
  c.auth_token = "t0ken";
  StartServer(c);
  gemmc::GemmClient anonymous(Options());

  const gemm::v1::MultiplyRequest req = SeededRequest(2, 2, 2, 1, 2);
  gemm::v1::MultiplyResponse resp;
  EXPECT_EQ(anonymous.Multiply(req, &resp).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  gemm::v1::ListMatricesResponse matrices;
  EXPECT_EQ(anonymous.ListMatrices(&matrices).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(anonymous.Delete("m-1").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  gemm::v1::MatrixInfo info;
  EXPECT_EQ(anonymous.Upload(2, 2, std::string(8, '\0'), "x", &info).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  std::string bytes;
  EXPECT_EQ(anonymous.Download("m-1", &bytes).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  gemmc::ClientOptions with_token = Options();
  with_token.token = "t0ken";
  gemmc::GemmClient client(with_token);
  ASSERT_TRUE(client.ListMatrices(&matrices).ok());
  EXPECT_EQ(matrices.used_bytes(), 0u);  // the refused upload stored nothing

  grpc::health::v1::HealthCheckResponse::ServingStatus health{};
  ASSERT_TRUE(anonymous.Health("", &health).ok());
  EXPECT_EQ(health, grpc::health::v1::HealthCheckResponse::SERVING);

  EXPECT_TRUE(client.Multiply(req, &resp).ok());
}

TEST_F(SecurityTest, UnreadableCertificateStopsTheServerWithAMessage) {
  ServerConfig c = TlsConfig(false);
  c.tls_key = pki_->path("no-such.key");
  GemmServer server(c, std::make_unique<CpuEngine>());
  const absl::Status st = server.Start();
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(st.message()), HasSubstr("cannot read a PEM private key from"));
}

TEST(BearerAuthTest, TokenFileIsTrimmedAndAnEmptyOneIsAnError) {
  const auto path = fs::temp_directory_path() / ("gemmd-token-" + std::to_string(::getpid()));
  std::ofstream(path) << "  abc123 \n";
  std::vector<NamedToken> tokens;
  ASSERT_TRUE(ReadTokenFile(path.string(), &tokens).ok());
  ASSERT_EQ(tokens.size(), 1u);
  EXPECT_EQ(tokens[0].token, "abc123");
  EXPECT_EQ(tokens[0].name, "default");  // a token alone, as before names existed
  std::ofstream(path) << "\n";
  EXPECT_THAT(std::string(ReadTokenFile(path.string(), &tokens).message()), HasSubstr("is empty"));
  fs::remove(path);
  EXPECT_THAT(std::string(ReadTokenFile(path.string(), &tokens).message()), HasSubstr("cannot read"));
}

TEST(BearerAuthTest, TokenFileNamesAnIdentityPerToken) {
  const auto path = fs::temp_directory_path() / ("gemmd-tokens-" + std::to_string(::getpid()));
  std::ofstream(path) << "# team tokens\n\ntok-a alice\n  tok-b   bob  \n";
  std::vector<NamedToken> tokens;
  ASSERT_TRUE(ReadTokenFile(path.string(), &tokens).ok());
  ASSERT_EQ(tokens.size(), 2u);
  EXPECT_EQ(tokens[0].token, "tok-a");
  EXPECT_EQ(tokens[0].name, "alice");
  EXPECT_EQ(tokens[1].token, "tok-b");
  EXPECT_EQ(tokens[1].name, "bob");
  std::ofstream(path) << "tok-a alice\ntok-a bob\n";
  EXPECT_THAT(std::string(ReadTokenFile(path.string(), &tokens).message()), HasSubstr("line 2: a token given twice"));
  std::ofstream(path) << "tok-a alice\ntok-b alice\n";
  EXPECT_THAT(std::string(ReadTokenFile(path.string(), &tokens).message()),
              HasSubstr("line 2: the name 'alice' is given twice"));
  std::ofstream(path) << "tok-a alice extra\n";
  EXPECT_THAT(std::string(ReadTokenFile(path.string(), &tokens).message()),
              HasSubstr("line 1: expected 'TOKEN' or 'TOKEN NAME'"));
  fs::remove(path);
}

// Any authenticated client could list, download or delete any other's
// matrices. Now a matrix belongs to the identity that stored it; to anyone
// else its handle does not exist. An operator sees all.
TEST_F(SecurityTest, EachTokensIdentitySeesOnlyItsOwnMatricesAndAnOperatorSeesAll) {
  ServerConfig c = LoopbackConfig();
  c.auth_tokens = {{"tok-a", "alice"}, {"tok-b", "bob"}, {"tok-ops", "ops"}};
  c.operators = {"ops"};
  StartServer(c);
  auto as = [&](const std::string& token) {
    gemmc::ClientOptions o = Options();
    o.token = token;
    return std::make_unique<gemmc::GemmClient>(o);
  };
  auto alice = as("tok-a"), bob = as("tok-b"), ops = as("tok-ops");
  gemm::v1::MatrixInfo a_info, b_info;
  ASSERT_TRUE(alice->Upload(4, 4, std::string(32, '\x3c'), "alice's", &a_info).ok());
  ASSERT_TRUE(bob->Upload(4, 4, std::string(32, '\x3c'), "bob's", &b_info).ok());
  EXPECT_EQ(a_info.owner(), "alice");

  for (auto [me, mine, theirs] : {std::tuple{alice.get(), a_info.handle(), b_info.handle()},
                                  std::tuple{bob.get(), b_info.handle(), a_info.handle()}}) {
    gemm::v1::ListMatricesResponse list;
    ASSERT_TRUE(me->ListMatrices(&list).ok());
    ASSERT_EQ(list.matrices_size(), 1);
    EXPECT_EQ(list.matrices(0).handle(), mine);
    std::string bytes;
    EXPECT_EQ(me->Download(theirs, &bytes).error_code(), grpc::StatusCode::NOT_FOUND);
    EXPECT_EQ(me->Delete(theirs).error_code(), grpc::StatusCode::NOT_FOUND);
    gemm::v1::MultiplyRequest req = SeededRequest(4, 4, 4, 1, 2);
    req.mutable_a()->set_handle(theirs);
    gemm::v1::MultiplyResponse resp;
    const grpc::Status st = me->Multiply(req, &resp);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::NOT_FOUND);
    EXPECT_THAT(st.error_message(), HasSubstr("a.handle"));
    req.mutable_a()->set_handle(mine);
    EXPECT_TRUE(me->Multiply(req, &resp).ok());
  }

  // D stored by alice's Multiply is alice's.
  gemm::v1::MultiplyRequest req = SeededRequest(4, 4, 4, 1, 2);
  req.set_output(gemm::v1::OUTPUT_HANDLE);
  gemm::v1::MultiplyResponse resp;
  ASSERT_TRUE(alice->Multiply(req, &resp).ok());
  std::string bytes;
  EXPECT_EQ(bob->Download(resp.d_handle(), &bytes).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_TRUE(alice->Download(resp.d_handle(), &bytes).ok());

  gemm::v1::ListMatricesResponse all;
  ASSERT_TRUE(ops->ListMatrices(&all).ok());
  EXPECT_EQ(all.matrices_size(), 3);
  EXPECT_TRUE(ops->Delete(b_info.handle()).ok());
  gemm::v1::ListMatricesResponse bobs;
  ASSERT_TRUE(bob->ListMatrices(&bobs).ok());
  EXPECT_EQ(bobs.matrices_size(), 0);
}

// Under mutual TLS without tokens, the verified client certificate's
// subject is the identity.
TEST_F(SecurityTest, UnderMutualTlsEachCertificateSubjectOwnsItsMatrices) {
  StartServer(TlsConfig(/*mutual=*/true));
  auto with_cert = [&](const std::string& name) {
    gemmc::ClientOptions o = TlsOptions();
    o.tls_cert = pki_->pem(name + ".pem");
    o.tls_key = pki_->pem(name + ".key");
    return std::make_unique<gemmc::GemmClient>(o);
  };
  auto one = with_cert("client"), two = with_cert("client2");
  gemm::v1::MatrixInfo info;
  ASSERT_TRUE(one->Upload(2, 2, std::string(8, '\0'), "", &info).ok());
  EXPECT_THAT(info.owner(), HasSubstr("CN=client"));
  gemm::v1::ListMatricesResponse list;
  ASSERT_TRUE(two->ListMatrices(&list).ok());
  EXPECT_EQ(list.matrices_size(), 0);
  std::string bytes;
  EXPECT_EQ(two->Download(info.handle(), &bytes).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(two->Delete(info.handle()).error_code(), grpc::StatusCode::NOT_FOUND);
  ASSERT_TRUE(one->ListMatrices(&list).ok());
  EXPECT_EQ(list.matrices_size(), 1);
  EXPECT_TRUE(one->Delete(info.handle()).ok());
}

}  // namespace
}  // namespace gemmd::testing
