// Kubeconfig (yaml-cpp) and in-cluster service-account configuration.
#include "kube/config.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "yaml-cpp/yaml.h"

namespace phalanx::kube {
namespace {

// yaml-cpp throws on most queries of a missing node; IsDefined() is the safe first question.
bool Is(const YAML::Node& n, YAML::NodeType::value type) {
  return n.IsDefined() && n.Type() == type;
}

// Reads kubeconfig fields; every error names the file and the field.
class Reader {
 public:
  Reader(absl::string_view source, absl::string_view base_dir)
      : source_(source), base_dir_(base_dir) {}

  absl::Status Error(absl::string_view field, absl::string_view problem) const {
    return absl::InvalidArgumentError(
        absl::StrCat("kubeconfig ", source_, ": ", field, ": ", problem));
  }

  // A scalar field; "" when absent or null.
  absl::StatusOr<std::string> Scalar(const YAML::Node& parent, const std::string& parent_path,
                                     const char* key) const {
    YAML::Node n = parent[key];
    if (!n.IsDefined() || n.IsNull()) return std::string();
    if (!Is(n, YAML::NodeType::Scalar)) {
      return Error(parent_path.empty() ? key : absl::StrCat(parent_path, ".", key),
                   "expected a string");
    }
    return n.Scalar();
  }

  // The `section` entry (clusters, users, contexts) called `name`, at its inner key `inner`.
  absl::StatusOr<YAML::Node> Named(const YAML::Node& root, const char* section,
                                   const std::string& name, const char* inner) const {
    YAML::Node list = root[section];
    if (Is(list, YAML::NodeType::Map) || Is(list, YAML::NodeType::Scalar)) {
      return Error(section, "expected a list");
    }
    if (Is(list, YAML::NodeType::Sequence)) {
      for (const YAML::Node& entry : list) {
        if (!Is(entry, YAML::NodeType::Map)) continue;
        YAML::Node entry_name = entry["name"];
        if (!Is(entry_name, YAML::NodeType::Scalar) || entry_name.Scalar() != name) continue;
        YAML::Node body = entry[inner];
        if (!Is(body, YAML::NodeType::Map)) {
          return Error(absl::StrCat(section, "[\"", name, "\"].", inner),
                       "missing or not a mapping");
        }
        return body;
      }
    }
    return Error(section, absl::StrCat("no entry named \"", name, "\""));
  }

  // PEM from `<key>-data` (base64) or the file named by `<key>`; "" when neither is set.
  absl::StatusOr<std::string> Pem(const YAML::Node& parent, const std::string& path,
                                  const std::string& key) const {
    std::string data_key = key + "-data";
    auto data = Scalar(parent, path, data_key.c_str());
    if (!data.ok()) return data.status();
    if (!data->empty()) {
      std::string pem;
      if (!absl::Base64Unescape(*data, &pem)) {
        return Error(absl::StrCat(path, ".", data_key), "invalid base64");
      }
      return pem;
    }
    auto file = Scalar(parent, path, key.c_str());
    if (!file.ok() || file->empty()) return file;
    absl::StatusOr<std::string> pem = ReadFile(Resolve(*file));
    if (!pem.ok()) return Error(absl::StrCat(path, ".", key), pem.status().message());
    return pem;
  }

  std::string Resolve(const std::string& file) const {
    if (file.empty() || file[0] == '/' || base_dir_.empty()) return file;
    return absl::StrCat(base_dir_, "/", file);
  }

 private:
  std::string source_;
  std::string base_dir_;
};

// Credentials this client cannot use, and why. A user with only these would connect anonymously.
constexpr std::pair<const char*, const char*> kUnsupportedCredentials[] = {
    {"exec", "exec credential plugins are not supported"},
    {"auth-provider", "auth-provider plugins are not supported"},
    {"username", "basic authentication is not supported"},
    {"password", "basic authentication is not supported"},
};

// An error naming the first unsupported credential of `user`, which has no usable one.
absl::Status NoUsableCredentials(const Reader& r, const YAML::Node& user,
                                 const std::string& user_path) {
  for (const auto& [key, problem] : kUnsupportedCredentials) {
    YAML::Node n = user[key];
    if (n.IsDefined() && !n.IsNull()) {
      return r.Error(absl::StrCat(user_path, ".", key),
                     absl::StrCat(problem, "; use a token, tokenFile or client certificate"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Config> Parse(const Reader& r, const YAML::Node& root, absl::string_view context) {
  if (!Is(root, YAML::NodeType::Map)) return r.Error("document", "expected a mapping");
  std::string ctx_name(context);
  if (ctx_name.empty()) {
    auto current = r.Scalar(root, "", "current-context");
    if (!current.ok()) return current.status();
    if (current->empty()) return r.Error("current-context", "not set");
    ctx_name = *current;
  }
  absl::StatusOr<YAML::Node> ctx = r.Named(root, "contexts", ctx_name, "context");
  if (!ctx.ok()) return ctx.status();
  std::string ctx_path = absl::StrCat("contexts[\"", ctx_name, "\"].context");
  auto cluster_name = r.Scalar(*ctx, ctx_path, "cluster");
  auto user_name = r.Scalar(*ctx, ctx_path, "user");
  auto ns = r.Scalar(*ctx, ctx_path, "namespace");
  for (const auto* s : {&cluster_name, &user_name, &ns}) {
    if (!s->ok()) return s->status();
  }
  if (cluster_name->empty()) return r.Error(ctx_path + ".cluster", "missing");

  Config config;
  if (!ns->empty()) config.ns = *ns;
  absl::StatusOr<YAML::Node> cluster = r.Named(root, "clusters", *cluster_name, "cluster");
  if (!cluster.ok()) return cluster.status();
  std::string cluster_path = absl::StrCat("clusters[\"", *cluster_name, "\"].cluster");
  auto server = r.Scalar(*cluster, cluster_path, "server");
  auto insecure = r.Scalar(*cluster, cluster_path, "insecure-skip-tls-verify");
  auto ca = r.Pem(*cluster, cluster_path, "certificate-authority");
  for (const auto* s : {&server, &insecure, &ca}) {
    if (!s->ok()) return s->status();
  }
  if (server->empty()) return r.Error(cluster_path + ".server", "missing");
  if (!absl::StartsWith(*server, "https://") && !absl::StartsWith(*server, "http://")) {
    return r.Error(cluster_path + ".server", absl::StrCat("not an http(s) URL: \"", *server, "\""));
  }
  if (!insecure->empty() && *insecure != "true" && *insecure != "false") {
    return r.Error(cluster_path + ".insecure-skip-tls-verify", "expected true or false");
  }
  config.server = std::string(absl::StripSuffix(*server, "/"));
  config.insecure_skip_tls_verify = *insecure == "true";
  config.ca_pem = *std::move(ca);

  if (user_name->empty()) return config;  // Anonymous.
  absl::StatusOr<YAML::Node> user = r.Named(root, "users", *user_name, "user");
  if (!user.ok()) return user.status();
  std::string user_path = absl::StrCat("users[\"", *user_name, "\"].user");
  auto token = r.Scalar(*user, user_path, "token");
  auto token_file = r.Scalar(*user, user_path, "tokenFile");
  auto cert = r.Pem(*user, user_path, "client-certificate");
  auto key = r.Pem(*user, user_path, "client-key");
  for (const auto* s : {&token, &token_file, &cert, &key}) {
    if (!s->ok()) return s->status();
  }
  if (cert->empty() != key->empty()) {
    return r.Error(user_path, "client-certificate and client-key must be given together");
  }
  if (token->empty() && token_file->empty() && cert->empty()) {
    if (absl::Status s = NoUsableCredentials(r, *user, user_path); !s.ok()) return s;
  }
  config.token = *std::move(token);
  if (!token_file->empty()) {
    config.token_file = r.Resolve(*token_file);
    absl::StatusOr<std::string> t = ReadFile(config.token_file);
    if (!t.ok()) return r.Error(user_path + ".tokenFile", t.status().message());
  }
  config.client_cert_pem = *std::move(cert);
  config.client_key_pem = *std::move(key);
  return config;
}

}  // namespace

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return absl::NotFoundError(absl::StrCat("cannot read ", path, ": ", std::strerror(errno)));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

absl::StatusOr<Config> ParseKubeconfig(absl::string_view yaml, absl::string_view source,
                                       absl::string_view base_dir, absl::string_view context) {
  Reader reader(source, base_dir);
  try {
    return Parse(reader, YAML::Load(std::string(yaml)), context);
  } catch (const YAML::Exception& e) {
    return reader.Error("document", e.what());
  }
}

absl::StatusOr<Config> LoadKubeconfig(const std::string& path, absl::string_view context) {
  absl::StatusOr<std::string> yaml = ReadFile(path);
  if (!yaml.ok()) return yaml.status();
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  return ParseKubeconfig(*yaml, path, dir, context);
}

absl::StatusOr<Config> InClusterConfig(absl::string_view sa_dir) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || *host == '\0' || port == nullptr || *port == '\0') {
    return absl::FailedPreconditionError(
        "in-cluster config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set");
  }
  Config config;
  bool ipv6 = absl::StrContains(host, ':');
  config.server = absl::StrCat("https://", ipv6 ? "[" : "", host, ipv6 ? "]" : "", ":", port);
  config.token_file = absl::StrCat(sa_dir, "/token");
  absl::StatusOr<std::string> token = ReadFile(config.token_file);
  absl::StatusOr<std::string> ca = ReadFile(absl::StrCat(sa_dir, "/ca.crt"));
  for (const auto* s : {&token, &ca}) {
    if (!s->ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("in-cluster config: ", s->status().message()));
    }
  }
  config.ca_pem = *std::move(ca);
  absl::StatusOr<std::string> ns = ReadFile(absl::StrCat(sa_dir, "/namespace"));
  if (ns.ok() && !absl::StripAsciiWhitespace(*ns).empty()) {
    config.ns = std::string(absl::StripAsciiWhitespace(*ns));
  }
  return config;
}

absl::StatusOr<Config> DefaultConfig() {
  const char* kubeconfig = std::getenv("KUBECONFIG");
  if (kubeconfig != nullptr && *kubeconfig != '\0') {
    std::vector<std::string> paths = absl::StrSplit(kubeconfig, ':', absl::SkipEmpty());
    if (!paths.empty()) return LoadKubeconfig(paths.front());
  }
  if (std::getenv("KUBERNETES_SERVICE_HOST") != nullptr) return InClusterConfig();
  const char* home = std::getenv("HOME");
  if (home == nullptr) return absl::FailedPreconditionError("no KUBECONFIG, cluster or HOME");
  return LoadKubeconfig(absl::StrCat(home, "/.kube/config"));
}

}  // namespace phalanx::kube
