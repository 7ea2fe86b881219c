// master.yaml: the master's configuration, as deploy/helm/phalanx/templates/master-config.yaml
// renders it. LoadMasterConfig rejects unknown keys, wrong types, out-of-range values and missing
// required fields with an InvalidArgument error naming the field
// ("resource_pools[1].max_slots_per_pod: must be between 1 and 1000000, got 0").
#ifndef PHALANX_MASTER_CONFIG_CONFIG_H_
#define PHALANX_MASTER_CONFIG_CONFIG_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "master/config/metrics_server.h"
#include "master/policy/pod_spec_policy.h"
#include "master/config/user_limits.h"
#include "nlohmann/json.hpp"

namespace phalanx::master {

enum class SlotType { kGpu, kCpu };
// kPhalanx: pods name schedulerName "phalanx" (kube-scheduler + phalanx-extender).
// kDefault: pods keep Kubernetes' default-scheduler.
enum class SchedulerKind { kPhalanx, kDefault };

// Default pod specs (Kubernetes Pod objects as JSON; null when unset) for CPU-only and GPU tasks,
// and the port ranges of a run's GLOO and NCCL traffic ("MIN:MAX", port_range.h; "" when unset).
struct PodSpecDefaults {
  nlohmann::json cpu_pod_spec;
  nlohmann::json gpu_pod_spec;
  std::string gloo_port_range;
  std::string nccl_port_range;
};

struct DbConfig {
  std::string host = "localhost";
  int port = 5432;
  std::string name = "phalanx";
  std::string user = "postgres";
  std::string password;
  std::string sslmode = "prefer";  // libpq sslmode (db_sslmode.h).
};

struct ResourcePoolConfig {
  std::string name;
  std::string ns = "default";            // kubernetes_namespace: where its pods go.
  std::optional<int> max_slots_per_pod;  // Overrides the top-level one.
  std::optional<PodSpecDefaults> task_container_defaults;  // Replaces the top-level ones.
  PodSpecPolicy pod_spec_policy;  // The top-level one with the pool's keys over it.
};

struct TlsConfig {
  std::string cert;  // PEM file paths.
  std::string key;
  std::string ca;  // What task pods trust to reach the master; empty: `cert` (self-signed).
  // The PEM of `ca` (else of `cert`), given to task pods; LoadMasterConfig reads it.
  std::string task_trust_pem;
};

struct MasterConfig {
  int port = 8080;
  int metrics_port = 9090;             // HTTP: /metrics (Prometheus text format) and /healthz.
  MetricsServerConfig metrics_server;  // Its connection limits.
  DbConfig db;
  int max_slots_per_pod = 0;  // Required, 1..1000000.
  SlotType slot_type = SlotType::kGpu;
  int64_t cpu_milli_per_slot = 0;  // slot_resource_requests.cpu; required when slot_type is cpu.
  SchedulerKind default_scheduler = SchedulerKind::kPhalanx;
  absl::Duration preemption_timeout = absl::Minutes(5);
  // How long a run's pod may fail to start a container for a reason that can clear (ErrImagePull,
  // ImagePullBackOff, CreateContainerConfigError, CreateContainerError) before the run fails.
  absl::Duration pod_start_failure_timeout = absl::Minutes(5);
  // How long past its grace period a pod of the master may stay terminating on a node that is down
  // (gone, or not Ready) before the master force-deletes it, so that its run can end and its trial
  // resume elsewhere. No kubelet confirms such a pod's end, and Kubernetes never removes it.
  absl::Duration terminating_pod_timeout = absl::Minutes(5);
  std::vector<ResourcePoolConfig> resource_pools;  // At least one; defaults to "default".
  std::string default_compute_pool;                // Defaults to the first pool.
  std::string default_aux_pool;                    // Zero-slot tasks; defaults to the compute pool.
  // {"type": ..., ...}; passed to tasks. "credentials_secret" (checkpoint_storage.credentials_secret)
  // names the Secret of its credentials, which then are never inline.
  nlohmann::json checkpoint_storage;
  PodSpecDefaults task_container_defaults;
  PodSpecPolicy pod_spec_policy;  // What users' pod specs may carry; pools relax it.
  std::optional<TlsConfig> tls;
  std::string default_password;  // auth.default_password of the built-in admin and determined.
  bool allow_empty_password = false;  // auth.allow_empty_password: local demos only.
  QuotaConfig quotas;
  // How task pods reach the master's gRPC API (env PHALANX_MASTER); empty: not passed.
  std::string task_master_address;

  // nullptr when no pool has that name.
  const ResourcePoolConfig* FindPool(absl::string_view name) const;
  // The pool's max_slots_per_pod, else the top-level one.
  int MaxSlotsPerPod(const ResourcePoolConfig& pool) const;
  // The pool's default pod spec for GPU (slots > 0 and slot type gpu) or CPU tasks, else the
  // top-level one; null when neither is set.
  const nlohmann::json& DefaultPodSpec(const ResourcePoolConfig& pool, bool gpu) const;
  // The pool's port range `range` (&PodSpecDefaults::gloo_port_range or nccl_port_range), else
  // the top-level one; "" when neither is set.
  const std::string& PortRange(const ResourcePoolConfig& pool,
                               std::string PodSpecDefaults::*range) const;
};

// Parses and validates master.yaml text.
absl::StatusOr<MasterConfig> ParseMasterConfig(absl::string_view yaml);
// Reads the file, then ParseMasterConfig; errors name the file.
absl::StatusOr<MasterConfig> ParseMasterConfigFile(const std::string& path);
// ParseMasterConfigFile, then reads the TLS file task pods are given.
absl::StatusOr<MasterConfig> LoadMasterConfig(const std::string& path);

// "5m", "90s", "1h30m" or a number of seconds.
absl::StatusOr<absl::Duration> ParseConfigDuration(absl::string_view text);

}  // namespace phalanx::master

#endif  // PHALANX_MASTER_CONFIG_CONFIG_H_
