// Kubeconfig (yaml-cpp) and in-cluster service-account configuration.
#include "kube/config.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "kube/json.h"
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

  // The `section` entry (clusters, users, contexts) called `name`, at its inner key `inner`;
  // nullopt when this file has none of that name.
  absl::StatusOr<std::optional<YAML::Node>> Named(const YAML::Node& root, const char* section,
                                                  const std::string& name,
                                                  const char* inner) const {
    YAML::Node list = root[section];
    if (Is(list, YAML::NodeType::Map) || Is(list, YAML::NodeType::Scalar)) {
      return Error(section, "expected a list");
    }
    if (!Is(list, YAML::NodeType::Sequence)) return std::nullopt;
    for (const YAML::Node& entry : list) {
      if (!Is(entry, YAML::NodeType::Map)) continue;
      YAML::Node entry_name = entry["name"];
      if (!Is(entry_name, YAML::NodeType::Scalar) || entry_name.Scalar() != name) continue;
      YAML::Node body = entry[inner];
      if (!Is(body, YAML::NodeType::Map)) {
        return Error(absl::StrCat(section, "[\"", name, "\"].", inner), "missing or not a mapping");
      }
      return body;
    }
    return std::nullopt;
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
      if (absl::StripAsciiWhitespace(pem).empty()) {
        return Error(absl::StrCat(path, ".", data_key), "empty");
      }
      return pem;
    }
    auto file = Scalar(parent, path, key.c_str());
    if (!file.ok() || file->empty()) return file;
    absl::StatusOr<std::string> pem = ReadFile(Resolve(*file));
    if (!pem.ok()) return Error(absl::StrCat(path, ".", key), pem.status().message());
    if (absl::StripAsciiWhitespace(*pem).empty()) {
      return Error(absl::StrCat(path, ".", key), absl::StrCat(Resolve(*file), " is empty"));
    }
    return pem;
  }

  const std::string& source() const { return source_; }

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

// One kubeconfig file: its reader (errors and relative paths) and its YAML.
struct Document {
  Reader reader;
  YAML::Node root;
};

// An entry of a merged kubeconfig, read with the reader of the file it came from.
struct Entry {
  const Reader* reader;
  YAML::Node body;
  std::string path;  // As errors name it: clusters["c"].cluster.
};

// An error about the merged files as a whole.
absl::Status MergedError(const std::vector<Document>& docs, absl::string_view field,
                         absl::string_view problem) {
  std::vector<std::string> sources;
  for (const Document& d : docs) sources.push_back(d.reader.source());
  return Reader(absl::StrJoin(sources, ", "), "").Error(field, problem);
}

// kubectl's merge: the first file that sets current-context wins.
absl::StatusOr<std::string> CurrentContext(const std::vector<Document>& docs) {
  for (const Document& d : docs) {
    absl::StatusOr<std::string> current = d.reader.Scalar(d.root, "", "current-context");
    if (!current.ok() || !current->empty()) return current;
  }
  return MergedError(docs, "current-context", "not set");
}

// kubectl's merge: the first file with a `section` entry called `name` wins.
absl::StatusOr<Entry> Named(const std::vector<Document>& docs, const char* section,
                            const std::string& name, const char* inner) {
  for (const Document& d : docs) {
    KUBE_ASSIGN_OR_RETURN(std::optional<YAML::Node> body,
                          d.reader.Named(d.root, section, name, inner));
    if (body) {
      return Entry{&d.reader, *std::move(body), absl::StrCat(section, "[\"", name, "\"].", inner)};
    }
  }
  return MergedError(docs, section, absl::StrCat("no entry named \"", name, "\""));
}

absl::Status ReadCluster(const Entry& cluster, Config& config) {
  const Reader& r = *cluster.reader;
  auto server = r.Scalar(cluster.body, cluster.path, "server");
  auto insecure = r.Scalar(cluster.body, cluster.path, "insecure-skip-tls-verify");
  auto ca = r.Pem(cluster.body, cluster.path, "certificate-authority");
  auto server_name = r.Scalar(cluster.body, cluster.path, "tls-server-name");
  auto proxy = r.Scalar(cluster.body, cluster.path, "proxy-url");
  for (const auto* s : {&server, &insecure, &ca, &server_name, &proxy}) {
    if (!s->ok()) return s->status();
  }
  if (server->empty()) return r.Error(cluster.path + ".server", "missing");
  if (!absl::StartsWith(*server, "https://") && !absl::StartsWith(*server, "http://")) {
    return r.Error(cluster.path + ".server", absl::StrCat("not an http(s) URL: \"", *server, "\""));
  }
  if (!insecure->empty() && *insecure != "true" && *insecure != "false") {
    return r.Error(cluster.path + ".insecure-skip-tls-verify", "expected true or false");
  }
  if (!proxy->empty() && !absl::StartsWith(*proxy, "http://") &&
      !absl::StartsWith(*proxy, "https://") && !absl::StartsWith(*proxy, "socks5://") &&
      !absl::StartsWith(*proxy, "socks5h://")) {
    return r.Error(cluster.path + ".proxy-url",
                   absl::StrCat("not an http, https or socks5 URL: \"", *proxy, "\""));
  }
  if (!server_name->empty() && absl::StartsWith(*server, "http://")) {
    return r.Error(cluster.path + ".tls-server-name", "set for a server without TLS");
  }
  config.server = std::string(absl::StripSuffix(*server, "/"));
  config.tls_server_name = *std::move(server_name);
  config.proxy_url = *std::move(proxy);
  config.insecure_skip_tls_verify = *insecure == "true";
  config.ca_pem = *std::move(ca);
  return absl::OkStatus();
}

absl::Status ReadUser(const Entry& user, Config& config) {
  const Reader& r = *user.reader;
  auto token = r.Scalar(user.body, user.path, "token");
  auto token_file = r.Scalar(user.body, user.path, "tokenFile");
  auto cert = r.Pem(user.body, user.path, "client-certificate");
  auto key = r.Pem(user.body, user.path, "client-key");
  for (const auto* s : {&token, &token_file, &cert, &key}) {
    if (!s->ok()) return s->status();
  }
  if (cert->empty() != key->empty()) {
    return r.Error(user.path, "client-certificate and client-key must be given together");
  }
  if (token->empty() && token_file->empty() && cert->empty()) {
    if (absl::Status s = NoUsableCredentials(r, user.body, user.path); !s.ok()) return s;
  }
  config.token = *std::move(token);
  if (!token_file->empty()) {
    config.token_file = r.Resolve(*token_file);
    absl::StatusOr<std::string> t = ReadFile(config.token_file);
    if (!t.ok()) return r.Error(user.path + ".tokenFile", t.status().message());
  }
  config.client_cert_pem = *std::move(cert);
  config.client_key_pem = *std::move(key);
  return absl::OkStatus();
}

absl::StatusOr<Config> Parse(const std::vector<Document>& docs, absl::string_view context) {
  std::string ctx_name(context);
  if (ctx_name.empty()) {
    KUBE_ASSIGN_OR_RETURN(ctx_name, CurrentContext(docs));
  }
  KUBE_ASSIGN_OR_RETURN(Entry ctx, Named(docs, "contexts", ctx_name, "context"));
  auto cluster_name = ctx.reader->Scalar(ctx.body, ctx.path, "cluster");
  auto user_name = ctx.reader->Scalar(ctx.body, ctx.path, "user");
  auto ns = ctx.reader->Scalar(ctx.body, ctx.path, "namespace");
  for (const auto* s : {&cluster_name, &user_name, &ns}) {
    if (!s->ok()) return s->status();
  }
  if (cluster_name->empty()) return ctx.reader->Error(ctx.path + ".cluster", "missing");

  Config config;
  if (!ns->empty()) config.ns = *ns;
  KUBE_ASSIGN_OR_RETURN(Entry cluster, Named(docs, "clusters", *cluster_name, "cluster"));
  KUBE_RETURN_IF_ERROR(ReadCluster(cluster, config));
  if (user_name->empty()) return config;  // Anonymous.
  KUBE_ASSIGN_OR_RETURN(Entry user, Named(docs, "users", *user_name, "user"));
  KUBE_RETURN_IF_ERROR(ReadUser(user, config));
  return config;
}

// The document of `yaml`, or an error naming `source`.
absl::StatusOr<Document> Load(absl::string_view yaml, absl::string_view source,
                              absl::string_view base_dir) {
  Document doc{.reader = Reader(source, base_dir)};
  try {
    doc.root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return doc.reader.Error("document", e.what());
  }
  if (doc.root.IsNull()) doc.root = YAML::Node(YAML::NodeType::Map);  // Empty: sets nothing.
  if (!Is(doc.root, YAML::NodeType::Map)) return doc.reader.Error("document", "expected a mapping");
  return doc;
}

absl::StatusOr<Document> LoadFile(const std::string& path) {
  KUBE_ASSIGN_OR_RETURN(std::string yaml, ReadFile(path));
  size_t slash = path.rfind('/');
  return Load(yaml, path, slash == std::string::npos ? "." : path.substr(0, slash));
}

}  // namespace

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    return absl::FailedPreconditionError(absl::StrCat("cannot read ", path, ": a directory"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return absl::NotFoundError(absl::StrCat("cannot read ", path, ": ", std::strerror(errno)));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

absl::StatusOr<Config> ParseKubeconfig(absl::string_view yaml, absl::string_view source,
                                       absl::string_view base_dir, absl::string_view context) {
  KUBE_ASSIGN_OR_RETURN(Document doc, Load(yaml, source, base_dir));
  std::vector<Document> docs;
  docs.push_back(std::move(doc));
  return Parse(docs, context);
}

absl::StatusOr<Config> LoadKubeconfig(const std::string& path, absl::string_view context) {
  return LoadKubeconfigs({path}, context);
}

absl::StatusOr<Config> LoadKubeconfigs(const std::vector<std::string>& paths,
                                       absl::string_view context) {
  std::vector<Document> docs;
  for (const std::string& path : paths) {
    KUBE_ASSIGN_OR_RETURN(Document doc, LoadFile(path));
    docs.push_back(std::move(doc));
  }
  if (docs.empty()) return absl::InvalidArgumentError("kubeconfig: no file given");
  return Parse(docs, context);
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
  if (absl::StripAsciiWhitespace(*ca).empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("in-cluster config: ", sa_dir, "/ca.crt is empty"));
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
    std::vector<std::string> listed = absl::StrSplit(kubeconfig, ':', absl::SkipEmpty());
    std::vector<std::string> present;
    for (const std::string& path : listed) {
      if (std::filesystem::exists(path)) present.push_back(path);  // As kubectl: skip missing.
    }
    if (!present.empty()) return LoadKubeconfigs(present);
    if (!listed.empty()) {
      return absl::NotFoundError(
          absl::StrCat("KUBECONFIG: none of its files exists: ", absl::StrJoin(listed, ", ")));
    }
  }
  if (std::getenv("KUBERNETES_SERVICE_HOST") != nullptr) return InClusterConfig();
  const char* home = std::getenv("HOME");
  if (home == nullptr) return absl::FailedPreconditionError("no KUBECONFIG, cluster or HOME");
  return LoadKubeconfig(absl::StrCat(home, "/.kube/config"));
}

}  // namespace phalanx::kube
