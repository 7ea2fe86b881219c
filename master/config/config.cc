// Parsing and validation of master.yaml (see config.h).
#include "master/config/config.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/quantity.h"
#include "kube/config.h"
#include "kube/json.h"
#include "master/config/config_parts.h"
#include "master/config/db_sslmode.h"
#include "master/config/port_range.h"
#include "master/yaml/yaml.h"

namespace phalanx::master {
namespace {

constexpr int kMaxPort = 65535;
constexpr int kMaxSlotsPerPodCap = 1'000'000;

// The integer at `key` (`fallback` when absent), which must lie in [1, max].
absl::StatusOr<int> IntUpTo(const YamlMap& m, absl::string_view key, int fallback, int max) {
  KUBE_ASSIGN_OR_RETURN(std::optional<int64_t> v, m.Int(key));
  if (!v) return fallback;
  if (*v < 1 || *v > max) {
    return FieldError(m.FieldPath(key), absl::StrCat("must be between 1 and ", max, ", got ", *v));
  }
  return static_cast<int>(*v);
}

// Kubernetes' shape for a name of 1-63 characters: letters (lowercase only when `lower`) and
// digits, and `punctuation` inside. Label values take "-_.", namespaces (DNS labels) "-" only.
bool IsKubeName(absl::string_view v, bool lower, absl::string_view punctuation) {
  auto alnum = [lower](char c) {
    return absl::ascii_isdigit(c) || (lower ? absl::ascii_islower(c) : absl::ascii_isalpha(c));
  };
  if (v.empty() || v.size() > 63 || !alnum(v.front()) || !alnum(v.back())) return false;
  return std::all_of(v.begin(), v.end(),
                     [&](char c) { return alnum(c) || absl::StrContains(punctuation, c); });
}

// A pool's name labels its pods, and its namespace holds them: both must be what Kubernetes takes.
absl::Status CheckPoolNames(const YamlMap& m, const ResourcePoolConfig& pool) {
  if (!IsKubeName(pool.name, /*lower=*/false, "-_.")) {
    return FieldError(m.FieldPath("pool_name"),
                      absl::StrCat("must be 1-63 letters, digits, '-', '_' or '.', beginning and "
                                   "ending with a letter or digit (it labels the pool's pods), "
                                   "got \"",
                                   pool.name, "\""));
  }
  if (!IsKubeName(pool.ns, /*lower=*/true, "-")) {
    return FieldError(m.FieldPath("kubernetes_namespace"),
                      absl::StrCat("must be a namespace name: 1-63 lowercase letters, digits or "
                                   "'-', beginning and ending with a letter or digit, got \"",
                                   pool.ns, "\""));
  }
  return absl::OkStatus();
}

absl::StatusOr<DbConfig> ParseDb(const YamlMap& m) {
  KUBE_RETURN_IF_ERROR(m.CheckKeys({"host", "port", "name", "user", "password", "sslmode"}));
  DbConfig db;
  KUBE_ASSIGN_OR_RETURN(std::optional<std::string> host, m.String("host"));
  KUBE_ASSIGN_OR_RETURN(db.port, IntUpTo(m, "port", db.port, kMaxPort));
  KUBE_ASSIGN_OR_RETURN(std::optional<std::string> name, m.String("name"));
  KUBE_ASSIGN_OR_RETURN(std::optional<std::string> user, m.String("user"));
  KUBE_ASSIGN_OR_RETURN(std::optional<std::string> password, m.String("password"));
  db.host = host.value_or(db.host);
  db.name = name.value_or(db.name);
  db.user = user.value_or(db.user);
  db.password = password.value_or("");
  KUBE_ASSIGN_OR_RETURN(db.sslmode, ParseSslMode(m));
  return db;
}

absl::StatusOr<PodSpecDefaults> ParseDefaults(const YamlMap& m) {
  KUBE_RETURN_IF_ERROR(
      m.CheckKeys({"cpu_pod_spec", "gpu_pod_spec", "gloo_port_range", "nccl_port_range"}));
  PodSpecDefaults d;
  KUBE_ASSIGN_OR_RETURN(d.cpu_pod_spec, ParsePodSpec(m, "cpu_pod_spec"));
  KUBE_ASSIGN_OR_RETURN(d.gpu_pod_spec, ParsePodSpec(m, "gpu_pod_spec"));
  KUBE_ASSIGN_OR_RETURN(d.gloo_port_range, ParsePortRange(m, "gloo_port_range"));
  KUBE_ASSIGN_OR_RETURN(d.nccl_port_range, ParsePortRange(m, "nccl_port_range"));
  return d;
}

absl::StatusOr<ResourcePoolConfig> ParsePool(const YamlMap& m, const PodSpecPolicy& policy) {
  KUBE_RETURN_IF_ERROR(m.CheckKeys({"pool_name", "kubernetes_namespace", "max_slots_per_pod",
                                    "task_container_defaults", "pod_spec_policy"}));
  ResourcePoolConfig pool;
  KUBE_ASSIGN_OR_RETURN(pool.pod_spec_policy, ParsePodSpecPolicy(m, "pod_spec_policy", policy));
  KUBE_ASSIGN_OR_RETURN(pool.name, m.RequiredString("pool_name"));
  KUBE_ASSIGN_OR_RETURN(std::optional<std::string> ns, m.String("kubernetes_namespace"));
  pool.ns = ns.value_or(pool.ns);
  KUBE_RETURN_IF_ERROR(CheckPoolNames(m, pool));
  if (m.Has("max_slots_per_pod")) {
    KUBE_ASSIGN_OR_RETURN(pool.max_slots_per_pod,
                          IntUpTo(m, "max_slots_per_pod", 0, kMaxSlotsPerPodCap));
  }
  if (m.Has("task_container_defaults")) {
    KUBE_ASSIGN_OR_RETURN(YamlMap tcd, m.Map("task_container_defaults"));
    KUBE_ASSIGN_OR_RETURN(pool.task_container_defaults, ParseDefaults(tcd));
  }
  return pool;
}

absl::Status ParsePools(const YamlMap& root, MasterConfig& c) {
  YAML::Node pools = root.Get("resource_pools");
  if (pools.IsDefined() && !pools.IsNull() && !pools.IsSequence()) {
    return FieldError("resource_pools", "expected a list of pools");
  }
  for (size_t i = 0; pools.IsSequence() && i < pools.size(); ++i) {
    KUBE_ASSIGN_OR_RETURN(YamlMap m,
                          YamlMap::Of(pools[i], absl::StrCat("resource_pools[", i, "]")));
    KUBE_ASSIGN_OR_RETURN(ResourcePoolConfig pool, ParsePool(m, c.pod_spec_policy));
    if (c.FindPool(pool.name) != nullptr) {
      return FieldError(m.FieldPath("pool_name"),
                        absl::StrCat("\"", pool.name, "\" appears twice"));
    }
    c.resource_pools.push_back(std::move(pool));
  }
  if (c.resource_pools.empty()) {
    c.resource_pools.push_back({.name = "default", .pod_spec_policy = c.pod_spec_policy});
  }
  KUBE_ASSIGN_OR_RETURN(std::optional<std::string> compute,
                        root.String("default_compute_resource_pool"));
  KUBE_ASSIGN_OR_RETURN(std::optional<std::string> aux, root.String("default_aux_resource_pool"));
  c.default_compute_pool = compute.value_or(c.resource_pools.front().name);
  c.default_aux_pool = aux.value_or(c.default_compute_pool);
  for (const auto& [key, name] :
       {std::pair{"default_compute_resource_pool", c.default_compute_pool},
        std::pair{"default_aux_resource_pool", c.default_aux_pool}}) {
    if (c.FindPool(name) == nullptr) {
      return FieldError(key, absl::StrCat("no resource pool named \"", name, "\""));
    }
  }
  return absl::OkStatus();
}

absl::Status ParseSlots(const YamlMap& root, MasterConfig& c) {
  if (!root.Has("max_slots_per_pod")) {
    return FieldError("max_slots_per_pod", "required (the slots of one pod, e.g. 8)");
  }
  KUBE_ASSIGN_OR_RETURN(c.max_slots_per_pod,
                        IntUpTo(root, "max_slots_per_pod", 0, kMaxSlotsPerPodCap));
  KUBE_ASSIGN_OR_RETURN(std::optional<std::string> slot_type, root.String("slot_type"));
  if (slot_type && *slot_type != "gpu" && *slot_type != "cuda" && *slot_type != "cpu") {
    return FieldError("slot_type", absl::StrCat("must be gpu or cpu, got \"", *slot_type, "\""));
  }
  c.slot_type = slot_type == "cpu" ? SlotType::kCpu : SlotType::kGpu;
  KUBE_ASSIGN_OR_RETURN(YamlMap requests, root.Map("slot_resource_requests"));
  KUBE_RETURN_IF_ERROR(requests.CheckKeys({"cpu"}));
  KUBE_ASSIGN_OR_RETURN(std::optional<std::string> cpu, requests.String("cpu"));
  if (cpu) {
    absl::StatusOr<int64_t> milli = core::ParseQuantityMilli(*cpu);
    if (!milli.ok() || *milli <= 0) {
      return FieldError("slot_resource_requests.cpu",
                        absl::StrCat("expected a positive CPU quantity, got \"", *cpu, "\""));
    }
    c.cpu_milli_per_slot = *milli;
  }
  if (c.slot_type == SlotType::kCpu && c.cpu_milli_per_slot == 0) {
    return FieldError("slot_resource_requests.cpu", "required when slot_type is cpu");
  }
  return absl::OkStatus();
}

// The duration at `key` into `out`, which keeps its default when the key is absent.
absl::Status ParseDuration(const YamlMap& m, absl::string_view key, absl::Duration& out) {
  KUBE_ASSIGN_OR_RETURN(std::optional<std::string> text, m.String(key));
  if (!text) return absl::OkStatus();
  absl::StatusOr<absl::Duration> d = ParseConfigDuration(*text);
  if (!d.ok()) return FieldError(m.FieldPath(key), d.status().message());
  out = *d;
  return absl::OkStatus();
}

absl::Status ParseRest(const YamlMap& root, MasterConfig& c) {
  KUBE_ASSIGN_OR_RETURN(c.port, IntUpTo(root, "port", c.port, kMaxPort));
  KUBE_ASSIGN_OR_RETURN(c.metrics_port, IntUpTo(root, "metrics_port", c.metrics_port, kMaxPort));
  KUBE_ASSIGN_OR_RETURN(YamlMap db, root.Map("db"));
  KUBE_ASSIGN_OR_RETURN(c.db, ParseDb(db));
  KUBE_ASSIGN_OR_RETURN(std::optional<std::string> scheduler, root.String("default_scheduler"));
  if (scheduler && *scheduler != "phalanx" && *scheduler != "default") {
    return FieldError("default_scheduler",
                      absl::StrCat("must be phalanx or default, got \"", *scheduler, "\""));
  }
  c.default_scheduler = scheduler == "default" ? SchedulerKind::kDefault : SchedulerKind::kPhalanx;
  KUBE_RETURN_IF_ERROR(ParseDuration(root, "preemption_timeout", c.preemption_timeout));
  KUBE_RETURN_IF_ERROR(
      ParseDuration(root, "pod_start_failure_timeout", c.pod_start_failure_timeout));
  KUBE_RETURN_IF_ERROR(ParseDuration(root, "terminating_pod_timeout", c.terminating_pod_timeout));
  KUBE_ASSIGN_OR_RETURN(const std::string credentials_secret, TakeCredentialsSecret(root));
  KUBE_ASSIGN_OR_RETURN(
      c.checkpoint_storage,
      ParseCheckpointStorage(root, "checkpoint_storage",
                             {{"type", "shared_fs"}, {"host_path", "/tmp/checkpoints"}}));
  KUBE_RETURN_IF_ERROR(ApplyCredentialsSecret(credentials_secret, c.checkpoint_storage));
  KUBE_RETURN_IF_ERROR(ParseQuotas(root, c.quotas));
  KUBE_ASSIGN_OR_RETURN(YamlMap tcd, root.Map("task_container_defaults"));
  KUBE_ASSIGN_OR_RETURN(c.task_container_defaults, ParseDefaults(tcd));
  if (root.Has("tls")) {
    KUBE_ASSIGN_OR_RETURN(YamlMap tls, root.Map("tls"));
    KUBE_RETURN_IF_ERROR(tls.CheckKeys({"cert", "key", "ca"}));
    TlsConfig t;
    KUBE_ASSIGN_OR_RETURN(t.cert, tls.RequiredString("cert"));
    KUBE_ASSIGN_OR_RETURN(t.key, tls.RequiredString("key"));
    KUBE_ASSIGN_OR_RETURN(std::optional<std::string> ca, tls.String("ca"));
    t.ca = ca.value_or("");
    c.tls = std::move(t);
  }
  KUBE_ASSIGN_OR_RETURN(YamlMap auth, root.Map("auth"));
  KUBE_RETURN_IF_ERROR(auth.CheckKeys({"default_password", "allow_empty_password"}));
  KUBE_ASSIGN_OR_RETURN(std::optional<std::string> password, auth.String("default_password"));
  c.default_password = password.value_or("");
  KUBE_ASSIGN_OR_RETURN(std::optional<bool> allow_empty, auth.Bool("allow_empty_password"));
  c.allow_empty_password = allow_empty.value_or(false);
  KUBE_ASSIGN_OR_RETURN(std::optional<std::string> address, root.String("task_master_address"));
  c.task_master_address = address.value_or("");
  return absl::OkStatus();
}

}  // namespace

const ResourcePoolConfig* MasterConfig::FindPool(absl::string_view name) const {
  for (const ResourcePoolConfig& pool : resource_pools) {
    if (pool.name == name) return &pool;
  }
  return nullptr;
}

int MasterConfig::MaxSlotsPerPod(const ResourcePoolConfig& pool) const {
  return pool.max_slots_per_pod.value_or(max_slots_per_pod);
}

const nlohmann::json& MasterConfig::DefaultPodSpec(const ResourcePoolConfig& pool, bool gpu) const {
  auto pick = [gpu](const PodSpecDefaults& d) -> const nlohmann::json& {
    return gpu ? d.gpu_pod_spec : d.cpu_pod_spec;
  };
  if (pool.task_container_defaults && !pick(*pool.task_container_defaults).is_null()) {
    return pick(*pool.task_container_defaults);
  }
  return pick(task_container_defaults);
}

const std::string& MasterConfig::PortRange(const ResourcePoolConfig& pool,
                                           std::string PodSpecDefaults::*range) const {
  if (pool.task_container_defaults && !((*pool.task_container_defaults).*range).empty()) {
    return (*pool.task_container_defaults).*range;
  }
  return task_container_defaults.*range;
}

absl::StatusOr<MasterConfig> ParseMasterConfig(absl::string_view yaml) {
  KUBE_ASSIGN_OR_RETURN(YAML::Node node, ParseYaml(yaml));
  KUBE_ASSIGN_OR_RETURN(YamlMap root, YamlMap::Of(node, ""));
  KUBE_RETURN_IF_ERROR(root.CheckKeys(
      {"port", "metrics_port", "db", "max_slots_per_pod", "slot_type", "slot_resource_requests",
       "default_scheduler", "preemption_timeout", "pod_start_failure_timeout",
       "terminating_pod_timeout", "resource_pools", "default_compute_resource_pool",
       "default_aux_resource_pool", "checkpoint_storage", "task_container_defaults", "tls", "auth",
       "task_master_address", "quotas", "pod_spec_policy", "metrics_server"}));
  MasterConfig c;
  KUBE_RETURN_IF_ERROR(ParseSlots(root, c));
  KUBE_ASSIGN_OR_RETURN(c.pod_spec_policy, ParsePodSpecPolicy(root, "pod_spec_policy", {}));
  KUBE_RETURN_IF_ERROR(ParsePools(root, c));
  KUBE_RETURN_IF_ERROR(ParseRest(root, c));
  KUBE_ASSIGN_OR_RETURN(c.metrics_server, ParseMetricsServer(root));
  return c;
}

absl::StatusOr<MasterConfig> ParseMasterConfigFile(const std::string& path) {
  KUBE_ASSIGN_OR_RETURN(std::string text, kube::ReadFile(path));
  absl::StatusOr<MasterConfig> config = ParseMasterConfig(text);
  if (!config.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", config.status().message()));
  }
  return config;
}

absl::StatusOr<MasterConfig> LoadMasterConfig(const std::string& path) {
  absl::StatusOr<MasterConfig> config = ParseMasterConfigFile(path);
  if (!config.ok()) return config;
  if (config->tls) {
    const bool own_ca = !config->tls->ca.empty();
    absl::StatusOr<std::string> pem = kube::ReadFile(own_ca ? config->tls->ca : config->tls->cert);
    if (!pem.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": ", own_ca ? "tls.ca" : "tls.cert", ": ", pem.status().message()));
    }
    config->tls->task_trust_pem = *std::move(pem);
  }
  return config;
}

absl::StatusOr<absl::Duration> ParseConfigDuration(absl::string_view text) {
  int64_t seconds = 0;
  absl::Duration d;
  if (absl::SimpleAtoi(text, &seconds)) {
    d = absl::Seconds(seconds);
  } else if (!absl::ParseDuration(text, &d)) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected a duration such as 5m, 90s or 1h, got \"", text, "\""));
  }
  if (d < absl::ZeroDuration()) return absl::InvalidArgumentError("must not be negative");
  return d;
}

}  // namespace phalanx::master
