// Allocation → gang of gated pods (see pod_builder.h for the steps).
#include "master/pods/pod_builder.h"

#include <algorithm>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "core/pod.h"
#include "kube/decode.h"
#include "master/pods/rendezvous.h"
#include "master/policy/pod_spec_policy.h"
#include "master/policy/strategic_merge.h"

namespace phalanx::master {
namespace {

using nlohmann::json;

constexpr absl::string_view kSeedContainerName = "determined-container";
constexpr absl::string_view kCheckpointVolume = "phalanx-checkpoints";

// Renames the seeds' task container so that it merges into phalanx-container.
void RenameSeedContainer(json& pod) {
  if (!pod.is_object() || !pod.contains("spec") || !pod["spec"].contains("containers")) return;
  for (json& c : pod["spec"]["containers"]) {
    if (c.is_object() && c.value("name", "") == kSeedContainerName) c["name"] = kTaskContainer;
  }
}

// Whether a task of `slots` slots runs on GPUs.
bool GpuTask(int slots, const MasterConfig& master) {
  return slots > 0 && master.slot_type == SlotType::kGpu;
}

// The default pod spec of a task of `slots` slots in `pool`.
const json& DefaultSpec(const ResourcePoolConfig& pool, int slots, const MasterConfig& master) {
  return master.DefaultPodSpec(pool, GpuTask(slots, master));
}

json MergedSpec(const PodRequest& r, const MasterConfig& master) {
  json base = DefaultSpec(*r.pool, r.slots, master);
  json patch = r.environment->pod_spec;
  RenameSeedContainer(base);
  RenameSeedContainer(patch);
  json pod = StrategicMergePod(base, patch);
  if (!pod.is_object()) pod = json::object();
  for (const char* key : {"metadata", "spec"}) {
    if (!pod[key].is_object()) pod[key] = json::object();
  }
  pod["apiVersion"] = "v1";
  pod["kind"] = "Pod";
  return pod;
}

// Puts `item` in the list `list` (made an array if it is not one), replacing an item of the same
// name.
void SetByName(json& list, json item) {
  if (!list.is_array()) list = json::array();
  const std::string name = item.value("name", "");
  for (json& existing : list) {
    if (existing.is_object() && existing.value("name", "") == name) {
      existing = std::move(item);
      return;
    }
  }
  list.push_back(std::move(item));
}

// Sets env var `name` (replacing a user value of the same name).
void SetEnv(json& container, absl::string_view name, json value_or_source) {
  json var = {{"name", name}};
  if (value_or_source.is_string()) {
    var["value"] = value_or_source;
  } else {
    var["valueFrom"] = std::move(value_or_source);
  }
  SetByName(container["env"], std::move(var));
}

json FieldRef(absl::string_view path) { return {{"fieldRef", {{"fieldPath", path}}}}; }

// The slot requests and limits; a user's GPU count never survives, other resources do.
void SetSlotResources(json& container, int slots_per_pod, const MasterConfig& master) {
  for (const char* kind : {"requests", "limits"}) {
    const json::json_pointer path("/resources/" + std::string(kind));
    if (container.contains(path) && container[path].is_object()) {
      container[path].erase(std::string(core::kNvidiaGpu));
    }
    if (slots_per_pod == 0) continue;
    json& target = container["resources"][kind];
    if (master.slot_type == SlotType::kGpu) {
      target[std::string(core::kNvidiaGpu)] = std::to_string(slots_per_pod);
    } else {
      target["cpu"] = absl::StrCat(master.cpu_milli_per_slot * slots_per_pod, "m");
    }
  }
}

json& TaskContainer(json& spec) {
  json& containers = spec["containers"];
  if (!containers.is_array()) containers = json::array();
  for (json& c : containers) {
    if (c.is_object() && c.value("name", "") == kTaskContainer) return c;
  }
  containers.insert(containers.begin(), json{{"name", kTaskContainer}});
  return containers.front();
}

// How the task reaches the master: PHALANX_MASTER, https:// with PHALANX_MASTER_CA (the PEM to
// trust) when the master serves TLS.
void SetMasterAddress(json& container, const MasterConfig& master) {
  if (master.task_master_address.empty()) return;
  if (!master.tls) {
    SetEnv(container, "PHALANX_MASTER", master.task_master_address);
    return;
  }
  SetEnv(container, "PHALANX_MASTER", absl::StrCat("https://", master.task_master_address));
  if (!master.tls->task_trust_pem.empty()) {
    SetEnv(container, "PHALANX_MASTER_CA", master.tls->task_trust_pem);
  }
}

// PHALANX_CHECKPOINT_STORAGE; with a credentials Secret, each credential field as
// PHALANX_CHECKPOINT_<FIELD> from the Secret's key of that name (absent keys are skipped).
void AddStorageEnv(json& container, json storage) {
  const std::string secret = storage.value("credentials_secret", "");
  storage.erase("credentials_secret");
  SetEnv(container, "PHALANX_CHECKPOINT_STORAGE", storage.dump());
  if (secret.empty()) return;
  for (absl::string_view field : StorageCredentialFields()) {
    SetEnv(container, absl::StrCat("PHALANX_CHECKPOINT_", absl::AsciiStrToUpper(field)),
           {{"secretKeyRef", {{"name", secret}, {"key", field}, {"optional", true}}}});
  }
}

// Step 4: the checkpoint storage's env and, for shared_fs, its hostPath volume and mount (unless
// the pod spec mounts a volume of its own there).
void AddCheckpointStorage(json& spec, json& container, const json& storage) {
  if (storage.is_null()) return;
  AddStorageEnv(container, storage);
  const std::optional<std::string> dir = CheckpointContainerDir(storage);
  if (!dir) return;
  SetEnv(container, "PHALANX_CHECKPOINT_DIR", *dir);
  json& mounts = container["volumeMounts"];
  if (!mounts.is_array()) mounts = json::array();
  for (const json& m : mounts) {
    if (m.is_object() && m.value("mountPath", "") == kSharedFsContainerPath) return;
  }
  mounts.push_back({{"name", kCheckpointVolume}, {"mountPath", kSharedFsContainerPath}});
  SetByName(
      spec["volumes"],
      {{"name", kCheckpointVolume},
       {"hostPath", {{"path", storage.value("host_path", "")}, {"type", "DirectoryOrCreate"}}}});
}

// Step 7: hostname, subdomain and peer environment (rendezvous.h).
void SetRendezvous(json& spec, json& container, const PodRequest& r, int rank, int pods,
                   int slots_per_pod, const MasterConfig& master) {
  const Rendezvous rv = RendezvousOf(
      {.ns = r.pool->ns,
       .allocation_id = r.allocation_id,
       .pods = pods,
       .rank = rank,
       .slots_per_pod = slots_per_pod,
       .gloo_port_range = master.PortRange(*r.pool, &PodSpecDefaults::gloo_port_range),
       .nccl_port_range = master.PortRange(*r.pool, &PodSpecDefaults::nccl_port_range)});
  if (!rv.hostname.empty()) {
    spec["hostname"] = rv.hostname;
    spec["subdomain"] = rv.subdomain;
  }
  for (const auto& [name, value] : rv.env) SetEnv(container, name, value);
}

void FillTaskContainer(json& spec, const PodRequest& r, int rank, int pods, int slots_per_pod,
                       const MasterConfig& master) {
  json& c = TaskContainer(spec);
  const DeviceEnvironment& device = r.environment->For(GpuTask(r.slots, master));
  c["image"] = device.image;
  if (!r.entrypoint.empty()) c["command"] = r.entrypoint;
  for (const auto& [name, value] : device.environment_variables) SetEnv(c, name, value);
  const std::pair<absl::string_view, std::string> vars[] = {
      {"PHALANX_JOB_ID", r.job_id},
      {"PHALANX_ALLOCATION_ID", r.allocation_id},
      {"PHALANX_TASK_TYPE", std::string(TaskTypeName(r.type))},
      {"PHALANX_RESOURCE_POOL", r.pool->name},
      {"PHALANX_SLOTS_PER_POD", std::to_string(slots_per_pod)},
      {"PHALANX_NUM_PODS", std::to_string(pods)},
      {"PHALANX_POD_RANK", std::to_string(rank)},
  };
  for (const auto& [name, value] : vars) SetEnv(c, name, value);
  for (const auto& [name, value] : r.env) SetEnv(c, name, value);
  SetRendezvous(spec, c, r, rank, pods, slots_per_pod, master);
  AddCheckpointStorage(spec, c, r.checkpoint_storage);
  SetMasterAddress(c, master);
  SetEnv(c, "PHALANX_NODE_NAME", FieldRef("spec.nodeName"));
  SetEnv(c, "PHALANX_POD_IP", FieldRef("status.podIP"));
  if (slots_per_pod == 0 || master.slot_type == SlotType::kCpu) {
    SetEnv(c, "NVIDIA_VISIBLE_DEVICES", "void");
  }
  SetSlotResources(c, slots_per_pod, master);
}

void SetMetadata(json& meta, const PodRequest& r, int rank, int pods) {
  meta["name"] = absl::StrCat(r.allocation_id, "-", rank);
  meta["namespace"] = r.pool->ns;
  meta.erase("generateName");
  json& labels = meta["labels"];
  if (!labels.is_object()) labels = json::object();
  labels[std::string(kManagedByLabel)] = kManagedByValue;
  labels[std::string(kube::kGangLabel)] = r.allocation_id;
  labels[std::string(kube::kGangSizeLabel)] = std::to_string(pods);
  labels[std::string(kube::kJobIdLabel)] = r.job_id;
  labels[std::string(kTaskTypeLabel)] = TaskTypeName(r.type);
  labels[std::string(kube::kResourcePoolLabel)] = r.pool->name;
  labels[std::string(kube::kQueuePositionLabel)] = FormatQueuePosition(r.queue_position);
  labels[std::string(kube::kPreemptibleLabel)] = r.type == TaskType::kExperiment ? "true" : "false";
}

// Sets annotation `key` to `value`; an empty `value` removes it.
void SetAnnotation(json& meta, absl::string_view key, const std::string& value) {
  const auto annotations = meta.find("annotations");
  if (value.empty()) {
    if (annotations != meta.end() && annotations->is_object()) annotations->erase(std::string(key));
    return;
  }
  if (annotations == meta.end() || !annotations->is_object()) meta["annotations"] = json::object();
  meta["annotations"][std::string(key)] = value;
}

// The newest core::kMaxPreemptionHistory of `times`, oldest first, as phalanx.io/preempted-at.
std::string PreemptedAt(std::vector<int64_t> times) {
  std::sort(times.begin(), times.end());
  const size_t keep = std::min<size_t>(times.size(), core::kMaxPreemptionHistory);
  std::vector<std::string> out;
  for (auto it = times.end() - keep; it != times.end(); ++it) out.push_back(FormatPodTime(*it));
  return absl::StrJoin(out, ",");
}

// Step 5: the run's history, in place of anything the merged spec says under those keys.
void SetHistory(json& meta, const PodRequest& r) {
  SetAnnotation(meta, kube::kCheckpointedAtAnnotation,
                r.checkpoint_ms > 0 ? FormatPodTime(r.checkpoint_ms) : "");
  SetAnnotation(meta, kube::kPreemptedAtAnnotation, PreemptedAt(r.preempted_ms));
  SetAnnotation(meta, kube::kExpectedRuntimeAnnotation,
                r.expected_runtime_s ? std::to_string(*r.expected_runtime_s) : "");
  SetAnnotation(meta, kube::kExpectedRuntimeBasisAnnotation,
                r.expected_runtime_s ? r.expected_runtime_basis : "");
}

// The class a pod's `spec` names, the seeds' names mapped to phalanx's (priority_classes.h); ""
// when none.
std::string SpecClass(const json& spec) {
  const auto cls = spec.find("priorityClassName");
  if (cls == spec.end() || !cls->is_string()) return "";
  return MapSeedPriorityClass(cls->get<std::string>());
}

// Kubernetes mounts the service account's API token unless told not to: where the pool's policy
// does not allow the mount, a spec that does not ask for it gets none.
void SetTokenMount(json& spec, const ResourcePoolConfig& pool) {
  if (!pool.pod_spec_policy.allow_automount_service_account_token &&
      !spec.contains("automountServiceAccountToken")) {
    spec["automountServiceAccountToken"] = false;
  }
}

void SetSchedulingFields(json& spec, const PodRequest& r, const MasterConfig& master) {
  spec["restartPolicy"] = "Never";
  spec.erase("priority");
  const std::string cls = SpecClass(spec);
  // A pod_spec class wins over the task's priority.
  spec["priorityClassName"] = cls.empty() ? PriorityClassFor(r.priority) : cls;
  if (master.default_scheduler != SchedulerKind::kPhalanx) {
    // Determined's scheduler names (accepted for seed compatibility) mean the default scheduler.
    if (IsSeedSchedulerName(spec.value("schedulerName", json()))) spec.erase("schedulerName");
    return;
  }
  spec["schedulerName"] = kSchedulerName;
  json& gates = spec["schedulingGates"];
  if (!gates.is_array()) gates = json::array();
  for (const json& g : gates) {
    if (g.value("name", "") == kube::kAdmissionGate) return;
  }
  gates.push_back({{"name", kube::kAdmissionGate}});
}

}  // namespace

int PodCount(int slots, int max_slots_per_pod) {
  return slots <= max_slots_per_pod ? 1 : slots / max_slots_per_pod;
}

std::vector<json> BuildPods(const PodRequest& r, const MasterConfig& master) {
  const int max = master.MaxSlotsPerPod(*r.pool);
  const int pods = PodCount(r.slots, max);
  const int slots_per_pod = r.slots <= max ? r.slots : max;
  const json merged = MergedSpec(r, master);
  std::vector<json> out;
  for (int rank = 0; rank < pods; ++rank) {
    json pod = merged;
    SetMetadata(pod["metadata"], r, rank, pods);
    SetHistory(pod["metadata"], r);
    SetSchedulingFields(pod["spec"], r, master);
    SetTokenMount(pod["spec"], *r.pool);
    FillTaskContainer(pod["spec"], r, rank, pods, slots_per_pod, master);
    out.push_back(std::move(pod));
  }
  return out;
}

std::string SpecPriorityClass(const ResourcePoolConfig& pool, int slots,
                              const EnvironmentConfig& environment, const MasterConfig& master) {
  const json pod = StrategicMergePod(DefaultSpec(pool, slots, master), environment.pod_spec);
  return pod.is_object() && pod.contains("spec") && pod["spec"].is_object() ? SpecClass(pod["spec"])
                                                                            : "";
}

std::string FormatQueuePosition(double position) { return absl::StrFormat("%.6f", position); }

std::string FormatPodTime(int64_t ms) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E3S%Ez", absl::FromUnixMillis(ms), absl::UTCTimeZone());
}

}  // namespace phalanx::master
