// The admin's pod-spec policy (master.yaml `pod_spec_policy`, relaxed per pool by
// `resource_pools[i].pod_spec_policy`, key by key) and its check of what a user submits: the
// `environment.pod_spec` of an experiment or task and an experiment's shared_fs checkpoint storage.
// Admin-written pod specs (task_container_defaults) are not checked, but by the `merged` rules.
// Rules, in the order checked (each refusal is InvalidArgument naming the field, e.g.
// "environment.pod_spec.spec.containers[0].securityContext.privileged: refused by pod_spec_policy
// (allow_privileged is false in pool "default")"):
//   anywhere    0. no strategic-merge directive key ($patch, $retainKeys, $setElementOrder/...,
//                  $deleteFromPrimitiveList/...) at any depth: never, no key allows it (the user's
//                  pod spec is merged over the pool's default one and may not delete or replace
//                  what the admin set there);
//   metadata    1. only name, namespace, generateName (all replaced by the master), labels and
//                  annotations; 2. no `phalanx.io/` (or `*.phalanx.io/`)
//                  or `app.kubernetes.io/` label or annotation key;
//               2a. annotations container.apparmor.security.beta.kubernetes.io/<c>,
//                  seccomp.security.alpha.kubernetes.io/pod and
//                  container.seccomp.security.alpha.kubernetes.io/<c>: only runtime/default
//                  (or docker/default for seccomp) or localhost/<profile>, unless
//                  allow_unconfined_profiles (pod_security_fields.h).
//   spec        3. hostNetwork, hostPID, hostIPC true: allow_host_namespaces;
//               4. nodeName: never (placement is the scheduler's);
//               5. schedulerName: only Determined's coscheduler or preemption (the master
//                  replaces them with its own scheduler, or drops them for the default one);
//               6. schedulingGates: never (the admission gate is the master's);
//               7. priorityClassName: phalanx's task classes (priority_classes.h) or the seeds'
//                  determined-*-priority (mapped); never system-*, phalanx-system-priority or
//                  another cluster class;
//               8. serviceAccountName / serviceAccount: "default" or allowed_service_accounts;
//               9. automountServiceAccountToken true: allow_automount_service_account_token;
//              10. volumes[i].hostPath.path: an absolute path under one of allowed_host_paths
//                  (paths compared component by component after removing `.` and `..`), whatever
//                  allowed_volume_types says;
//              10a. volumes[i].<source>, every source but hostPath: in allowed_volume_types
//                  (pod_volume_policy.h);
//              11. securityContext.runAsUser 0: allow_run_as_root;
//              11a. volumes[i].secret and projected secret sources: in allowed_secrets; projected
//                  serviceAccountToken sources: allow_automount_service_account_token;
//              11b. resources (pod level): no GPU resource (nvidia.com/, amd.com/,
//                  gpu.intel.com/, */gpu): GPUs are the job's slots.
//              11c. securityContext (pod_security_fields.h): seccompProfile.type and
//                  appArmorProfile.type other than RuntimeDefault or Localhost:
//                  allow_unconfined_profiles; seLinuxOptions.type other than container_t,
//                  container_init_t, container_kvm_t, container_engine_t, or seLinuxOptions.user
//                  or .role set: allow_custom_selinux; windowsOptions.hostProcess true:
//                  allow_privileged; sysctls[j].name: Kubernetes' safe sysctls or allowed_sysctls.
//   containers, initContainers and ephemeralContainers, each:
//              12. securityContext.privileged true: allow_privileged;
//              13. securityContext.allowPrivilegeEscalation true: allow_privilege_escalation;
//              14. securityContext.capabilities.add: each in allowed_capabilities (CAP_ prefix
//                  and case ignored; ALL only when ALL is listed);
//              15. securityContext.runAsUser 0: allow_run_as_root;
//              16. ports[j].hostPort: allow_host_ports;
//              16a. env[j].valueFrom.secretKeyRef and envFrom[j].secretRef: in allowed_secrets;
//              16b. env NVIDIA_VISIBLE_DEVICES / NVIDIA_DRIVER_CAPABILITIES: never (the master
//                  sets the task container's); GPU resources in a container other than
//                  phalanx-container: never.
//              16c. securityContext: as 11c for seccompProfile, appArmorProfile, seLinuxOptions
//                  and windowsOptions.hostProcess; procMount other than Default: allow_privileged;
//              16d. volumeMounts[j].mountPropagation Bidirectional: allow_privileged.
//   merged     17. when allow_run_as_root is false, every container of the pod spec merged over
//                  the pool's default one (and the task container) has runAsNonRoot true, its own
//                  or the pod's.
//              17a. when host_paths_read_only is true, every volumeMount of a hostPath volume in
//                  the merged pod spec is readOnly: true, unless neither the mount (container name
//                  and mountPath) nor the hostPath volume comes from the user's pod spec; so the
//                  default pod spec's own mounts of its own hostPath volumes stay as the admin
//                  wrote them, the task container's included.
//   storage    18. shared_fs host_path: the master's own checkpoint_storage host_path, or under
//                  allowed_shared_fs_host_paths.
#ifndef PHALANX_MASTER_POLICY_POD_SPEC_POLICY_H_
#define PHALANX_MASTER_POLICY_POD_SPEC_POLICY_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "master/yaml/yaml.h"
#include "nlohmann/json.hpp"

namespace phalanx::master {

struct PodSpecPolicy {
  bool allow_privileged = false;
  bool allow_privilege_escalation = false;
  std::vector<std::string> allowed_capabilities;  // Upper case, without CAP_.
  bool allow_host_namespaces = false;
  bool allow_host_ports = false;
  std::vector<std::string> allowed_host_paths;  // Absolute, normalized.
  std::vector<std::string> allowed_service_accounts;
  std::vector<std::string> allowed_secrets;  // Secrets a user's pod spec may reference.
  bool allow_automount_service_account_token = false;
  bool allow_run_as_root = true;
  // Volume sources besides hostPath; by default Pod Security "restricted"'s.
  std::vector<std::string> allowed_volume_types = {
      "configMap", "csi",   "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
      "projected", "secret"};
  bool host_paths_read_only = true;
  bool allow_unconfined_profiles = false;
  bool allow_custom_selinux = false;
  std::vector<std::string> allowed_sysctls;  // Beyond Kubernetes' safe ones; `.` separated.
  std::vector<std::string> allowed_shared_fs_host_paths;  // Absolute, normalized.
};

// The policy at `parent.key`: each key present replaces `base`'s (the top-level policy for a
// pool's), each absent one keeps it. Unknown keys, wrong types and relative paths are errors.
absl::StatusOr<PodSpecPolicy> ParsePodSpecPolicy(const YamlMap& parent, absl::string_view key,
                                                 const PodSpecPolicy& base);

// Rules 0-17a for the user's `pod` (a Pod as JSON, null when the user gave none; `path` names it)
// over `default_pod`, the pool's default pod spec, in pool `pool`.
absl::Status CheckPodSpecPolicy(const nlohmann::json& pod, const nlohmann::json& default_pod,
                                absl::string_view path, const PodSpecPolicy& policy,
                                absl::string_view pool);

// Rule 18 for the checkpoint storage a job ends up with (`storage`; `path` names it), the master's
// being `master_storage`.
absl::Status CheckCheckpointStoragePolicy(const nlohmann::json& storage,
                                          const nlohmann::json& master_storage,
                                          absl::string_view path, const PodSpecPolicy& policy,
                                          absl::string_view pool);

// Determined's scheduler names, which the master accepts and replaces (rule 5).
bool IsSeedSchedulerName(const nlohmann::json& name);

}  // namespace phalanx::master

#endif  // PHALANX_MASTER_POLICY_POD_SPEC_POLICY_H_
