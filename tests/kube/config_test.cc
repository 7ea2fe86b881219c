// Kubeconfig and in-cluster configuration: auth variants, file references, and errors that name
// the file and the field.
#include "kube/config.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace phalanx::kube {
namespace {

using ::testing::HasSubstr;

// A kubeconfig whose current context "ctx" uses cluster "c" and user "u", with the given bodies.
std::string Kubeconfig(const std::string& cluster, const std::string& user,
                       const std::string& context_extra = "") {
  return absl::StrCat(R"(apiVersion: v1
kind: Config
current-context: ctx
clusters:
- name: other
  cluster: {server: "https://other:1"}
- name: c
  cluster:
)",
                      cluster, R"(
users:
- name: u
  user:
)",
                      user, R"(
contexts:
- name: ctx
  context: {cluster: c, user: u)",
                      context_extra, "}\n");
}

class KubeConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           absl::StrCat("kube_config_test_", ::testing::UnitTest::GetInstance()->random_seed(), "_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }
  std::filesystem::path dir_;
};

TEST_F(KubeConfigTest, TokenAndCaData) {
  absl::StatusOr<Config> c = ParseKubeconfig(
      Kubeconfig("    server: https://10.0.0.1:6443/\n"
                 "    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tQ0E=",
                 "    token: abc123", ", namespace: research"),
      "test", "");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server, "https://10.0.0.1:6443");
  EXPECT_EQ(c->ca_pem, "-----BEGIN CERTIFICATE-----CA");
  EXPECT_EQ(c->token, "abc123");
  EXPECT_EQ(c->ns, "research");
  EXPECT_FALSE(c->insecure_skip_tls_verify);
  EXPECT_TRUE(c->client_cert_pem.empty());
}

TEST_F(KubeConfigTest, ClientCertificateDataAndInsecure) {
  absl::StatusOr<Config> c = ParseKubeconfig(
      Kubeconfig("    server: https://api:443\n    insecure-skip-tls-verify: true",
                 "    client-certificate-data: Q0VSVA==\n    client-key-data: S0VZ"),
      "test", "");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->client_cert_pem, "CERT");
  EXPECT_EQ(c->client_key_pem, "KEY");
  EXPECT_TRUE(c->insecure_skip_tls_verify);
  EXPECT_EQ(c->ns, "default");
  EXPECT_TRUE(c->ca_pem.empty());
}

TEST_F(KubeConfigTest, TlsServerNameAndProxyUrl) {
  absl::StatusOr<Config> c = ParseKubeconfig(
      Kubeconfig("    server: https://10.0.0.1:6443\n    tls-server-name: kubernetes\n"
                 "    proxy-url: socks5://bastion:1080",
                 "    token: t"),
      "test", "");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->tls_server_name, "kubernetes");
  EXPECT_EQ(c->proxy_url, "socks5://bastion:1080");
}

TEST_F(KubeConfigTest, FilesResolveAgainstTheKubeconfigDirectory) {
  Write("ca.crt", "CA FILE");
  Write("client.crt", "CERT FILE");
  Write("client.key", "KEY FILE");
  Write("token", "tok\n");
  std::string path = Write(
      "config", Kubeconfig("    server: https://api:443\n    certificate-authority: ca.crt",
                           absl::StrCat("    client-certificate: client.crt\n"
                                        "    client-key: ",
                                        (dir_ / "client.key").string(), "\n    tokenFile: token")));
  absl::StatusOr<Config> c = LoadKubeconfig(path);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->ca_pem, "CA FILE");
  EXPECT_EQ(c->client_cert_pem, "CERT FILE");
  EXPECT_EQ(c->client_key_pem, "KEY FILE");
  EXPECT_EQ(c->token_file, (dir_ / "token").string());
}

TEST_F(KubeConfigTest, ExplicitContext) {
  std::string yaml = Kubeconfig("    server: https://api:443", "    token: t") +
                     "- name: second\n  context: {cluster: other}\n";
  absl::StatusOr<Config> c = ParseKubeconfig(yaml, "test", "", "second");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server, "https://other:1");
  EXPECT_EQ(c->token, "");
}

TEST_F(KubeConfigTest, ErrorsNameFileAndField) {
  auto error = [](const std::string& yaml) {
    return std::string(ParseKubeconfig(yaml, "/etc/kube.yaml", "/etc").status().message());
  };
  const std::string ok_cluster = "    server: https://api:443";
  EXPECT_THAT(error("clusters: []\n"),
              HasSubstr("kubeconfig /etc/kube.yaml: current-context: not set"));
  EXPECT_THAT(error("current-context: nope\ncontexts: []\n"),
              HasSubstr(R"(contexts: no entry named "nope")"));
  EXPECT_THAT(error(Kubeconfig("    insecure-skip-tls-verify: true", "    token: t")),
              HasSubstr(R"(clusters["c"].cluster.server: missing)"));
  EXPECT_THAT(error(Kubeconfig("    server: api:443", "    token: t")),
              HasSubstr(R"(clusters["c"].cluster.server: not an http(s) URL)"));
  EXPECT_THAT(
      error(Kubeconfig(ok_cluster + "\n    certificate-authority-data: '!!'", "    token: t")),
      HasSubstr(R"(clusters["c"].cluster.certificate-authority-data: invalid base64)"));
  EXPECT_THAT(
      error(Kubeconfig(ok_cluster + "\n    certificate-authority: missing.crt", "    token: t")),
      HasSubstr(R"(clusters["c"].cluster.certificate-authority: cannot read /etc/missing.crt)"));
  // A directory or an empty file as the CA would leave only the system's CAs trusted.
  EXPECT_THAT(
      error(Kubeconfig(ok_cluster + "\n    certificate-authority: /tmp", "    token: t")),
      HasSubstr(R"(clusters["c"].cluster.certificate-authority: cannot read /tmp: a directory)"));
  EXPECT_THAT(
      error(Kubeconfig(ok_cluster + "\n    certificate-authority: /dev/null", "    token: t")),
      HasSubstr(R"(clusters["c"].cluster.certificate-authority: /dev/null is empty)"));
  EXPECT_THAT(
      error(Kubeconfig(ok_cluster + "\n    certificate-authority-data: IAo=", "    token: t")),
      HasSubstr(R"(clusters["c"].cluster.certificate-authority-data: empty)"));
  EXPECT_THAT(
      error(Kubeconfig(ok_cluster, "    client-certificate-data: Q0VSVA==")),
      HasSubstr(R"(users["u"].user: client-certificate and client-key must be given together)"));
  EXPECT_THAT(error(Kubeconfig(ok_cluster, "    token: [a, b]")),
              HasSubstr(R"(users["u"].user.token: expected a string)"));
  EXPECT_THAT(
      error(Kubeconfig(ok_cluster + "\n    insecure-skip-tls-verify: maybe", "    token: t")),
      HasSubstr("insecure-skip-tls-verify: expected true or false"));
  EXPECT_THAT(error(Kubeconfig(ok_cluster + "\n    proxy-url: bastion:3128", "    token: t")),
              HasSubstr(R"(clusters["c"].cluster.proxy-url: not an http, https or socks5 URL)"));
  EXPECT_THAT(
      error(Kubeconfig("    server: http://api:80\n    tls-server-name: api", "    token: t")),
      HasSubstr(R"(clusters["c"].cluster.tls-server-name: set for a server without TLS)"));
  EXPECT_THAT(error("current-context: ctx\ncontexts:\n- name: ctx\n  context: {cluster: c}\n"),
              HasSubstr(R"(clusters: no entry named "c")"));
  EXPECT_THAT(error("current-context: ctx\ncontexts:\n- name: ctx\n  context: {user: u}\n"),
              HasSubstr(R"(contexts["ctx"].context.cluster: missing)"));
  EXPECT_THAT(error("current-context: [\n"), HasSubstr("kubeconfig /etc/kube.yaml: document:"));
  EXPECT_THAT(error("[a, b]\n"),
              HasSubstr("kubeconfig /etc/kube.yaml: document: expected a mapping"));
  EXPECT_THAT(std::string(LoadKubeconfig("/nonexistent/kubeconfig").status().message()),
              HasSubstr("cannot read /nonexistent/kubeconfig"));
}

// Without them the user would connect as system:anonymous and every request would fail with 401
// or 403, far from the cause.
TEST_F(KubeConfigTest, CredentialsThisClientCannotUseAreErrors) {
  auto parse = [](const std::string& user) {
    return ParseKubeconfig(Kubeconfig("    server: https://api:443", user), "test", "");
  };
  absl::StatusOr<Config> exec = parse(
      "    exec:\n      apiVersion: client.authentication.k8s.io/v1beta1\n      command: aws");
  EXPECT_EQ(exec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(exec.status().message(),
              HasSubstr(R"(users["u"].user.exec: exec credential plugins are not supported; )"
                        "use a token, tokenFile or client certificate"));
  EXPECT_THAT(
      parse("    auth-provider: {name: oidc}").status().message(),
      HasSubstr(R"(users["u"].user.auth-provider: auth-provider plugins are not supported)"));
  EXPECT_THAT(parse("    username: admin\n    password: pw").status().message(),
              HasSubstr(R"(users["u"].user.username: basic authentication is not supported)"));
  absl::StatusOr<Config> with_token = parse("    token: t\n    exec: {command: aws}");
  ASSERT_TRUE(with_token.ok()) << with_token.status();
  EXPECT_EQ(with_token->token, "t");
}

TEST_F(KubeConfigTest, InCluster) {
  Write("token", "sa-token\n");
  Write("ca.crt", "SA CA");
  Write("namespace", "phalanx\n");
  setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
  setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  absl::StatusOr<Config> c = InClusterConfig(dir_.string());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server, "https://[fd00::1]:443");
  EXPECT_EQ(c->token_file, (dir_ / "token").string());
  EXPECT_EQ(c->ca_pem, "SA CA");
  EXPECT_EQ(c->ns, "phalanx");

  std::filesystem::remove(dir_ / "ca.crt");
  EXPECT_THAT(
      std::string(InClusterConfig(dir_.string()).status().message()),
      HasSubstr(absl::StrCat("in-cluster config: cannot read ", (dir_ / "ca.crt").string())));
  unsetenv("KUBERNETES_SERVICE_HOST");
  unsetenv("KUBERNETES_SERVICE_PORT");
  EXPECT_THAT(std::string(InClusterConfig(dir_.string()).status().message()),
              HasSubstr("KUBERNETES_SERVICE_HOST"));
}

// Several files, as in KUBECONFIG=a:b: the first file that sets a field or has an entry of a name
// wins (an empty file sets nothing), and each file's relative paths resolve against its own
// directory.
TEST_F(KubeConfigTest, FilesMergeAsKubectlMergesThem) {
  std::filesystem::create_directories(dir_ / "a");
  std::filesystem::create_directories(dir_ / "b");
  const std::string a = Write("a/config", R"(current-context: ctx
contexts:
- {name: ctx, context: {cluster: c, user: u, namespace: team}}
users:
- {name: u, user: {token: first}}
)");
  Write("b/ca.crt", "CA OF B");
  const std::string b = Write("b/config", R"(current-context: elsewhere
contexts:
- {name: ctx, context: {cluster: nowhere}}
clusters:
- {name: c, cluster: {server: "https://b:6443", certificate-authority: ca.crt}}
users:
- {name: u, user: {token: second}}
)");
  const std::string empty = Write("empty", "");
  absl::StatusOr<Config> c = LoadKubeconfigs({empty, a, b});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server, "https://b:6443");
  EXPECT_EQ(c->ca_pem, "CA OF B");
  EXPECT_EQ(c->token, "first");
  EXPECT_EQ(c->ns, "team");

  const std::string bad = Write("b/bad", "clusters: {c: {server: x}}\n");
  EXPECT_THAT(std::string(LoadKubeconfigs({a, bad}).status().message()),
              HasSubstr(absl::StrCat("kubeconfig ", bad, ": clusters: expected a list")));
  EXPECT_THAT(
      std::string(LoadKubeconfigs({a, a}).status().message()),
      HasSubstr(absl::StrCat("kubeconfig ", a, ", ", a, R"(: clusters: no entry named "c")")));
}

TEST_F(KubeConfigTest, KubeconfigVariableSkipsMissingFilesUnlessAllAre) {
  const std::string config =
      Write("config", Kubeconfig("    server: https://api:443", "    token: t"));
  const std::string missing = (dir_ / "missing").string();
  const char* saved = std::getenv("KUBECONFIG");
  const std::string restore = saved == nullptr ? "" : saved;
  setenv("KUBECONFIG", absl::StrCat(missing, ":", config).c_str(), 1);
  absl::StatusOr<Config> c = DefaultConfig();
  setenv("KUBECONFIG", absl::StrCat(missing, ":", missing, "2").c_str(), 1);
  absl::StatusOr<Config> none = DefaultConfig();
  if (saved == nullptr) {
    unsetenv("KUBECONFIG");
  } else {
    setenv("KUBECONFIG", restore.c_str(), 1);
  }
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server, "https://api:443");
  EXPECT_EQ(none.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(none.status().message()),
              HasSubstr(absl::StrCat("KUBECONFIG: none of its files exists: ", missing, ", ",
                                     missing, "2")));
}

}  // namespace
}  // namespace phalanx::kube
