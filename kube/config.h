// How to reach and authenticate to an API server: from a kubeconfig file or from inside a pod.
#ifndef PHALANX_KUBE_CONFIG_H_
#define PHALANX_KUBE_CONFIG_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace phalanx::kube {

inline constexpr absl::string_view kServiceAccountDir =
    "/var/run/secrets/kubernetes.io/serviceaccount";

struct Config {
  std::string server;  // "https://host:port", no trailing slash.
  // PEM contents (files are read when the config is loaded). An empty CA means the system trust
  // store.
  std::string ca_pem;
  std::string client_cert_pem;
  std::string client_key_pem;
  std::string token;  // Bearer token; ignored when token_file is set.
  std::string
      token_file;  // Re-read by the client from time to time (service-account tokens rotate).
  bool insecure_skip_tls_verify = false;
  // The name the server's certificate is checked against (and sent as SNI), when not the host
  // of `server`.
  std::string tls_server_name;
  // "http://", "https://", "socks5://" or "socks5h://" proxy for every request; empty: the
  // environment's (https_proxy, no_proxy, ...), as client-go does.
  std::string proxy_url;
  std::string ns = "default";  // The context's namespace, or the service account's.
};

// Parses kubeconfig YAML. `context` empty means current-context. Relative file paths resolve
// against `base_dir`. Errors name the file (`source`) and the missing or malformed field.
absl::StatusOr<Config> ParseKubeconfig(absl::string_view yaml, absl::string_view source,
                                       absl::string_view base_dir, absl::string_view context = "");

// Reads and parses the kubeconfig file at `path`.
absl::StatusOr<Config> LoadKubeconfig(const std::string& path, absl::string_view context = "");

// Reads the kubeconfig files at `paths` and merges them as kubectl does: the first file that sets
// current-context, or has a context, cluster or user of the name asked for, wins. Each file's
// relative paths resolve against its own directory; errors name the file.
absl::StatusOr<Config> LoadKubeconfigs(const std::vector<std::string>& paths,
                                       absl::string_view context = "");

// The config of a pod: token, CA and namespace from `sa_dir`, the address from
// KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT.
absl::StatusOr<Config> InClusterConfig(absl::string_view sa_dir = kServiceAccountDir);

// $KUBECONFIG (its files merged; missing ones skipped, as kubectl does, unless none exists),
// else in-cluster when KUBERNETES_SERVICE_HOST is set, else ~/.kube/config.
absl::StatusOr<Config> DefaultConfig();

// The whole file, or an error naming it.
absl::StatusOr<std::string> ReadFile(const std::string& path);

}  // namespace phalanx::kube

#endif  // PHALANX_KUBE_CONFIG_H_
