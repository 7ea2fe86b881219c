// Pod builder: one allocation (a trial's or task's run) → its gang of gated pods.
//   1. Pods: a task of S slots with max_slots_per_pod M runs as one pod of S slots when S <= M,
//      else as S / M pods of M slots (ResolvePool already rejected other counts). Zero slots: one
//      pod without GPUs (in the aux pool).
//   2. Spec: the pool's default pod spec for GPU or CPU tasks (replacing the top-level one), the
//      task's pod_spec strategic-merged over it (strategic_merge.h), then what the master owns:
//      name "<allocation>-<rank>", the pool's namespace, restartPolicy Never, and with the phalanx
//      scheduler schedulerName "phalanx" plus the scheduling gate phalanx.io/admission; with the
//      default scheduler, the seeds' schedulerName coscheduler or preemption is dropped. What a
//      user's pod_spec may carry at all is pod_spec_policy.h's (checked at submit).
//   3. The task container "phalanx-container" (a pod_spec container of that name, or the seeds'
//      "determined-container", is merged into it; other containers stay as sidecars): image and
//      environment variables of the task's device (EnvironmentConfig), command, PHALANX_* ones, and
//      the slot requests and limits (nvidia.com/gpu, or cpu for the cpu slot type) that the user
//      cannot override.
//   4. Checkpoint storage: env PHALANX_CHECKPOINT_STORAGE (the storage config as JSON; with the
//      master's checkpoint_storage.credentials_secret, its credentials come as env
//      PHALANX_CHECKPOINT_ACCESS_KEY, _SECRET_KEY, _CONNECTION_STRING, _CREDENTIAL from that
//      Secret's keys access_key, secret_key, connection_string, credential). shared_fs
//      storage is also mounted: a hostPath volume "phalanx-checkpoints" of host_path
//      (DirectoryOrCreate) at /determined_shared_fs in phalanx-container, as Determined mounts it,
//      and env PHALANX_CHECKPOINT_DIR names where checkpoints go (the mount plus storage_path). A
//      pod_spec volumeMount of its own at /determined_shared_fs (an NFS or PVC volume) replaces
//      the hostPath. Other storage types need no mount.
//   5. Contract labels (DESIGN.md) override user labels of the same key. So do the annotations of
//      the run's history, which the extender reads to choose victims: phalanx.io/checkpointed-at
//      (when the trial last reported a checkpoint, RFC 3339 UTC) and phalanx.io/preempted-at (when
//      its earlier runs were preempted: the newest core::kMaxPreemptionHistory times, oldest
//      first, comma-separated); a pod without that history carries neither. And the run's expected
//      duration for start-time forecasts: phalanx.io/expected-runtime (whole seconds) and
//      phalanx.io/expected-runtime-basis (where the figure comes from), absent when unknown.
//   6. Priority: a priorityClassName in the merged spec wins (the seeds' determined-*-priority
//      names mapped to phalanx's classes, priority_classes.h); else the class of exactly the
//      task's priority (PriorityClassFor). Pods cannot carry a bare spec.priority: the Priority
//      admission plugin rejects a value not taken from a class.
//   7. Rendezvous (rendezvous.h): in a run of several pods, hostname and subdomain that its
//      headless Service resolves; in every run, the chief's address and port, the peers, the
//      world size and the GLOO/NCCL port ranges as env of phalanx-container.
#ifndef PHALANX_MASTER_PODS_POD_BUILDER_H_
#define PHALANX_MASTER_PODS_POD_BUILDER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "kube/decode.h"
#include "master/config/config.h"
#include "master/config/config_parts.h"
#include "master/policy/priority_classes.h"
#include "master/spec/task_type.h"
#include "nlohmann/json.hpp"

namespace phalanx::master {

inline constexpr absl::string_view kTaskContainer = "phalanx-container";
inline constexpr absl::string_view kSchedulerName = "phalanx";
inline constexpr absl::string_view kManagedByLabel = "app.kubernetes.io/managed-by";
inline constexpr absl::string_view kManagedByValue = "phalanx-master";
inline constexpr absl::string_view kTaskTypeLabel = "phalanx.io/task-type";

struct PodRequest {
  TaskType type = TaskType::kExperiment;
  std::string job_id;         // "exp-3"
  std::string allocation_id;  // The gang: "exp-3-trial-7-r1"
  int slots = 0;
  int priority = kDefaultPriority;
  double queue_position = 0;
  const ResourcePoolConfig* pool = nullptr;
  const EnvironmentConfig* environment = nullptr;
  std::vector<std::string> entrypoint;
  nlohmann::json checkpoint_storage;  // ParseCheckpointStorage's; null: none (step 4).
  // Extra PHALANX_* variables (hyperparameters, allocation token, ...).
  std::vector<std::pair<std::string, std::string>> env;
  // Step 5: ms since the epoch when the trial last reported a checkpoint (0: never), and when its
  // earlier runs were preempted.
  int64_t checkpoint_ms = 0;
  std::vector<int64_t> preempted_ms;
  // How long the run is expected to take, and why (run_estimate.h); nullopt: unknown.
  std::optional<int64_t> expected_runtime_s;
  std::string expected_runtime_basis;
};

// The pods of `request`, ranks 0..N-1.
std::vector<nlohmann::json> BuildPods(const PodRequest& request, const MasterConfig& master);

// Pods of a task of `slots` slots in a pool of `max_slots_per_pod`.
int PodCount(int slots, int max_slots_per_pod);

// The priorityClassName a task's pods take from its pod specs (step 2: the default pod spec's,
// unless the task's pod_spec sets it), or "" when they take the class of the task's priority.
std::string SpecPriorityClass(const ResourcePoolConfig& pool, int slots,
                              const EnvironmentConfig& environment, const MasterConfig& master);

// The queue position as label phalanx.io/queue-position writes it ("1700000000.123456").
std::string FormatQueuePosition(double position);

// A time of the run's history annotations (step 5): RFC 3339 in UTC with milliseconds,
// "2026-11-29T03:04:35.123+00:00".
std::string FormatPodTime(int64_t ms);

}  // namespace phalanx::master

#endif  // PHALANX_MASTER_PODS_POD_BUILDER_H_
