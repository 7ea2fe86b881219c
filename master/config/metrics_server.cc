// master.yaml `metrics_server:` (see metrics_server.h).
#include "master/config/metrics_server.h"

#include "absl/strings/str_cat.h"
#include "kube/json.h"

namespace phalanx::master {
namespace {

absl::StatusOr<std::optional<int64_t>> Bounded(const YamlMap& m, absl::string_view key,
                                               int64_t max) {
  KUBE_ASSIGN_OR_RETURN(std::optional<int64_t> v, m.Int(key));
  if (v && (*v < 1 || *v > max)) {
    return FieldError(m.FieldPath(key), absl::StrCat("must be between 1 and ", max, ", got ", *v));
  }
  return v;
}

}  // namespace

absl::StatusOr<MetricsServerConfig> ParseMetricsServer(const YamlMap& root) {
  KUBE_ASSIGN_OR_RETURN(YamlMap m, root.Map("metrics_server"));
  KUBE_RETURN_IF_ERROR(
      m.CheckKeys({"max_connections", "max_connections_per_peer", "idle_timeout_seconds"}));
  MetricsServerConfig c;
  KUBE_ASSIGN_OR_RETURN(c.max_connections, Bounded(m, "max_connections", 1'000'000));
  KUBE_ASSIGN_OR_RETURN(c.max_connections_per_peer,
                        Bounded(m, "max_connections_per_peer", 1'000'000));
  KUBE_ASSIGN_OR_RETURN(c.idle_timeout_seconds, Bounded(m, "idle_timeout_seconds", 86'400));
  return c;
}

}  // namespace phalanx::master
