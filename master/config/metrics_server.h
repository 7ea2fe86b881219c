// master.yaml `metrics_server:` the connection limits of the HTTP server of /metrics and /healthz
// (http::Limits): max_connections, max_connections_per_peer, idle_timeout_seconds. Unset keys keep
// http::Limits' defaults.
#ifndef PHALANX_MASTER_CONFIG_METRICS_SERVER_H_
#define PHALANX_MASTER_CONFIG_METRICS_SERVER_H_

#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "master/yaml/yaml.h"

namespace phalanx::master {

struct MetricsServerConfig {
  std::optional<int64_t> max_connections;
  std::optional<int64_t> max_connections_per_peer;
  std::optional<int64_t> idle_timeout_seconds;
};

// Reads `metrics_server` of `root`; errors name the field.
absl::StatusOr<MetricsServerConfig> ParseMetricsServer(const YamlMap& root);

}  // namespace phalanx::master

#endif  // PHALANX_MASTER_CONFIG_METRICS_SERVER_H_
