// Config sections shared by master.yaml, experiment configs and task configs: pod specs,
// checkpoint storage, `resources` and `environment`, and the slots-per-pod rule.
#ifndef PHALANX_MASTER_CONFIG_CONFIG_PARTS_H_
#define PHALANX_MASTER_CONFIG_CONFIG_PARTS_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/strings/string_view.h"
#include "master/config/config.h"
#include "master/yaml/yaml.h"
#include "nlohmann/json.hpp"

namespace phalanx::master {

// Image of task containers whose config names none.
inline constexpr absl::string_view kDefaultTaskImage = "python:3.11-slim";
// Priority of jobs that set none (Kubernetes semantics: higher runs first).
inline constexpr int kDefaultPriority = 50;

// `entrypoint`: a list is the command and its arguments, one string a shell command line, run as
// ["sh", "-c", line] as Determined runs it. Empty when absent.
absl::StatusOr<std::vector<std::string>> ParseEntrypoint(const YamlMap& parent);

// A Kubernetes Pod object (apiVersion v1, kind Pod, metadata, spec) as JSON; null when absent.
absl::StatusOr<nlohmann::json> ParsePodSpec(const YamlMap& parent, absl::string_view key);

// {type: shared_fs|s3|gcs|azure, ...} with the fields each type requires, and Determined's
// retention counts save_experiment_best, save_trial_best and save_trial_latest (integers >= 0).
// shared_fs: host_path is absolute; storage_path, relative to host_path or absolute, lies inside
// host_path. Absent: `inherited`. Retention counts alone (no type) apply to `inherited`.
absl::StatusOr<nlohmann::json> ParseCheckpointStorage(const YamlMap& parent, absl::string_view key,
                                                      const nlohmann::json& inherited);

// Where task containers mount the host_path of shared_fs checkpoint storage (Determined's path).
inline constexpr absl::string_view kSharedFsContainerPath = "/determined_shared_fs";

// For shared_fs `storage`, the directory inside task containers where checkpoints go:
// kSharedFsContainerPath plus storage_path taken relative to host_path. nullopt for other storage
// types, which need no mount (and for a storage_path outside host_path, which the parser rejects).
std::optional<std::string> CheckpointContainerDir(const nlohmann::json& storage);

struct ResourcesConfig {
  int slots = 1;
  std::optional<int> priority;
  std::string resource_pool;     // Empty: the master's default pool for the slot count.
  std::optional<int> max_slots;  // Experiments: cap on slots used by all trials at once.
  // How long the work runs (an experiment: each trial), for start-time forecasts; unset: unknown.
  std::optional<absl::Duration> expected_runtime;
};
inline constexpr absl::Duration kMaxExpectedRuntime = absl::Hours(24 * 366);

// `slots_key` is "slots_per_trial" (experiments, with max_slots) or "slots" (tasks).
absl::StatusOr<ResourcesConfig> ParseResources(const YamlMap& parent, absl::string_view slots_key,
                                               int default_slots);

// What a task container runs with on one kind of device.
struct DeviceEnvironment {
  std::string image = std::string(kDefaultTaskImage);
  std::vector<std::pair<std::string, std::string>> environment_variables;
};

// `image` and `environment_variables` are each one value for every task, or Determined's mapping
// by device {cpu: ..., cuda: ...} (gpu: cuda's older name; rocm is accepted and unused, as
// phalanx's GPU slots are nvidia.com/gpu): GPU tasks (slots > 0, slot type gpu) take the cuda one,
// others the cpu one; a device left out gets the default image and no variables.
struct EnvironmentConfig {
  DeviceEnvironment cpu;
  DeviceEnvironment gpu;
  nlohmann::json pod_spec;  // Null when absent.

  const DeviceEnvironment& For(bool gpu_task) const { return gpu_task ? gpu : cpu; }
};

absl::StatusOr<EnvironmentConfig> ParseEnvironment(const YamlMap& parent);

// Resolves `resources.resource_pool` (empty: the compute pool, or the aux pool for zero slots) and
// checks the slot count against the pool's max_slots_per_pod: a task of more slots than that runs
// as slots / max_slots_per_pod pods, so the count must divide evenly. `slots_field` names the field
// in errors ("resources.slots_per_trial").
absl::StatusOr<const ResourcePoolConfig*> ResolvePool(const MasterConfig& master,
                                                      ResourcesConfig& resources,
                                                      absl::string_view slots_field);

}  // namespace phalanx::master

#endif  // PHALANX_MASTER_CONFIG_CONFIG_PARTS_H_
