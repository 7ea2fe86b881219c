// The pod-spec policy on what users submit (ParseSubmittedTask / ParseSubmittedExperiment): one
// case per rule, each refused in the pool that keeps the safe default (naming the field) and, where
// an admin can relax it, accepted in the pool that does; master.yaml's pod_spec_policy keys; the
// seeds' priority class and scheduler names as the built pods carry them; what the strategic-merge
// directives a user may not write would do to the pool's default pod spec.
#include "master/policy/pod_spec_policy.h"

#include <ostream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/policy/strategic_merge.h"
#include "master/pods/pod_builder.h"
#include "master/spec/submission.h"

namespace phalanx::master {
namespace {

using ::testing::HasSubstr;

constexpr char kMasterYaml[] = R"(
max_slots_per_pod: 4
checkpoint_storage: {type: shared_fs, host_path: /mnt/ckpt}
pod_spec_policy: {allow_host_ports: false, allowed_service_accounts: [reader]}
resource_pools:
  - pool_name: default
  - pool_name: relaxed
    pod_spec_policy:
      allow_privileged: true
      allow_privilege_escalation: true
      allowed_capabilities: [SYS_ADMIN, net_admin]
      allow_host_namespaces: true
      allow_host_ports: true
      allowed_host_paths: [/data/]
      allowed_service_accounts: [trainer]
      allow_automount_service_account_token: true
      allowed_shared_fs_host_paths: [/mnt/shared]
      allowed_secrets: [wandb]
      allowed_volume_types: [nfs, emptyDir, secret, projected]
      host_paths_read_only: false
      allow_unconfined_profiles: true
      allow_custom_selinux: true
      allowed_sysctls: [kernel/msgmax]
  - pool_name: nonroot
    pod_spec_policy: {allow_run_as_root: false}
  - pool_name: admin
    pod_spec_policy: {allowed_host_paths: [/data]}
    task_container_defaults:
      gpu_pod_spec:
        spec:
          securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
          containers:
            - name: phalanx-container
              volumeMounts: [{name: scratch, mountPath: /scratch}, {name: logs, mountPath: /logs}]
            - {name: audit, image: audit}
          volumes: [{name: scratch, emptyDir: {}}, {name: logs, hostPath: {path: /var/log/x}}]
)";

const MasterConfig& Master() {
  static const MasterConfig* master = new MasterConfig(*ParseMasterConfig(kMasterYaml));
  return *master;
}

absl::Status SubmitTask(const std::string& pool, const std::string& pod_spec) {
  const std::string yaml = absl::StrCat(
      "resources: {slots: 1, resource_pool: ", pool, "}\n",
      pod_spec.empty() ? "" : "environment: {pod_spec: ", pod_spec, pod_spec.empty() ? "" : "}\n");
  return ParseSubmittedTask(yaml, TaskType::kCommand, {"true"}, Master()).status();
}

constexpr char kPrefix[] = "environment.pod_spec.";

struct Case {
  const char* name;
  const char* pod_spec;
  const char* path;         // Below environment.pod_spec.
  const char* refused_in;   // A pool that refuses it.
  const char* accepted_in;  // A pool that relaxes the rule; "" when none does.
};

const Case kCases[] = {
    {"Privileged", "{spec: {containers: [{name: a, securityContext: {privileged: true}}]}}",
     "spec.containers[0].securityContext.privileged", "default", "relaxed"},
    {"PrivilegedInitContainer",
     "{spec: {initContainers: [{name: a}, {name: b, securityContext: {privileged: true}}]}}",
     "spec.initContainers[1].securityContext.privileged", "default", "relaxed"},
    {"PrivilegedSecondContainer",
     "{spec: {containers: [{name: a}, {name: b, securityContext: {privileged: true}}]}}",
     "spec.containers[1].securityContext.privileged", "default", "relaxed"},
    {"PrivilegeEscalation",
     "{spec: {containers: [{name: a, securityContext: {allowPrivilegeEscalation: true}}]}}",
     "spec.containers[0].securityContext.allowPrivilegeEscalation", "default", "relaxed"},
    {"AddedCapability",
     "{spec: {containers: [{name: a, securityContext: {capabilities: {add: [CAP_SYS_ADMIN]}}}]}}",
     "spec.containers[0].securityContext.capabilities.add[0]", "default", "relaxed"},
    {"CapabilityNotListed",
     "{spec: {containers: [{name: a, securityContext: {capabilities: {add: [NET_ADMIN, "
     "SYS_PTRACE]}}}]}}",
     "spec.containers[0].securityContext.capabilities.add[1]", "relaxed", ""},
    {"HostNetwork", "{spec: {hostNetwork: true}}", "spec.hostNetwork", "default", "relaxed"},
    {"HostPID", "{spec: {hostPID: true}}", "spec.hostPID", "default", "relaxed"},
    {"HostIPC", "{spec: {hostIPC: true}}", "spec.hostIPC", "default", "relaxed"},
    {"HostPathRoot", "{spec: {volumes: [{name: v, hostPath: {path: /}}]}}",
     "spec.volumes[0].hostPath.path", "relaxed", ""},
    {"HostPathAllowed", "{spec: {volumes: [{name: v, hostPath: {path: /data/sets}}]}}",
     "spec.volumes[0].hostPath.path", "default", "relaxed"},
    {"HostPathDotDot", "{spec: {volumes: [{name: v, hostPath: {path: /data/../etc}}]}}",
     "spec.volumes[0].hostPath.path", "relaxed", ""},
    {"HostPathSiblingPrefix", "{spec: {volumes: [{name: v, hostPath: {path: /database}}]}}",
     "spec.volumes[0].hostPath.path", "relaxed", ""},
    {"HostPathRelative", "{spec: {volumes: [{name: v, hostPath: {path: data/x}}]}}",
     "spec.volumes[0].hostPath.path", "relaxed", ""},
    {"HostPort", "{spec: {containers: [{name: a, ports: [{containerPort: 80, hostPort: 80}]}]}}",
     "spec.containers[0].ports[0].hostPort", "default", "relaxed"},
    {"ServiceAccount", "{spec: {serviceAccountName: trainer}}", "spec.serviceAccountName",
     "default", "relaxed"},
    {"ServiceAccountOldName", "{spec: {serviceAccount: cluster-admin}}", "spec.serviceAccount",
     "relaxed", ""},
    {"TopLevelServiceAccountIsKeptByPools", "{spec: {serviceAccountName: reader}}",
     "spec.serviceAccountName", "relaxed", "default"},
    {"AutomountToken", "{spec: {automountServiceAccountToken: true}}",
     "spec.automountServiceAccountToken", "default", "relaxed"},
    {"NodeName", "{spec: {nodeName: node-1}}", "spec.nodeName", "relaxed", ""},
    {"SchedulerName", "{spec: {schedulerName: my-scheduler}}", "spec.schedulerName", "relaxed", ""},
    {"SchedulingGates", "{spec: {schedulingGates: [{name: mine}]}}", "spec.schedulingGates[0]",
     "relaxed", ""},
    {"SystemPriorityClass", "{spec: {priorityClassName: system-node-critical}}",
     "spec.priorityClassName", "relaxed", ""},
    {"PhalanxSystemPriorityClass", "{spec: {priorityClassName: phalanx-system-priority}}",
     "spec.priorityClassName", "relaxed", ""},
    {"PlacementAnnotation", "{metadata: {annotations: {phalanx.io/placement: node-1}}}",
     "metadata.annotations.phalanx.io/placement", "relaxed", ""},
    // The run's history, which the extender's victim choice reads: a recent checkpoint makes a
    // cheap victim, recent preemptions a protected one.
    {"CheckpointedAtAnnotation",
     "{metadata: {annotations: {phalanx.io/checkpointed-at: '2999-01-01T00:00:00Z'}}}",
     "metadata.annotations.phalanx.io/checkpointed-at", "relaxed", ""},
    {"PreemptedAtAnnotation",
     "{metadata: {annotations: {phalanx.io/preempted-at: '2026-01-01T00:00:00Z,"
     "2026-01-01T00:01:00Z,2026-01-01T00:02:00Z'}}}",
     "metadata.annotations.phalanx.io/preempted-at", "relaxed", ""},
    {"PhalanxLabel", "{metadata: {labels: {phalanx.io/queue-position: '0'}}}",
     "metadata.labels.phalanx.io/queue-position", "relaxed", ""},
    {"PhalanxSubdomainLabel", "{metadata: {labels: {x.phalanx.io/gang: g}}}",
     "metadata.labels.x.phalanx.io/gang", "relaxed", ""},
    {"ChartComponentLabel", "{metadata: {labels: {app.kubernetes.io/component: master}}}",
     "metadata.labels.app.kubernetes.io/component", "relaxed", ""},
    {"ChartComponentAnnotation", "{metadata: {annotations: {app.kubernetes.io/name: phalanx}}}",
     "metadata.annotations.app.kubernetes.io/name", "relaxed", ""},
    {"SecretEnv",
     "{spec: {containers: [{name: a, env: [{name: P, valueFrom: {secretKeyRef: {name: wandb, "
     "key: k}}}]}]}}",
     "spec.containers[0].env[0].valueFrom.secretKeyRef.name", "default", "relaxed"},
    {"AdminSecretEnv",
     "{spec: {containers: [{name: a, env: [{name: P, valueFrom: {secretKeyRef: {name: "
     "phalanx-master-auth, key: default-password}}}]}]}}",
     "spec.containers[0].env[0].valueFrom.secretKeyRef.name", "relaxed", ""},
    {"SecretEnvFrom",
     "{spec: {initContainers: [{name: a, envFrom: [{secretRef: {name: wandb}}]}]}}",
     "spec.initContainers[0].envFrom[0].secretRef.name", "default", "relaxed"},
    {"SecretVolume", "{spec: {volumes: [{name: v, secret: {secretName: wandb}}]}}",
     "spec.volumes[0].secret.secretName", "default", "relaxed"},
    {"ProjectedSecret",
     "{spec: {volumes: [{name: v, projected: {sources: [{configMap: {name: c}}, {secret: {name: "
     "other}}]}}]}}",
     "spec.volumes[0].projected.sources[1].secret.name", "relaxed", ""},
    {"ProjectedToken",
     "{spec: {volumes: [{name: v, projected: {sources: [{serviceAccountToken: {path: t}}]}}]}}",
     "spec.volumes[0].projected.sources[0].serviceAccountToken", "default", "relaxed"},
    {"GpusInASidecar",
     "{spec: {containers: [{name: phalanx-container}, {name: side, resources: {limits: "
     "{nvidia.com/gpu: 7}}}]}}",
     "spec.containers[1].resources.limits.nvidia.com/gpu", "relaxed", ""},
    {"GpusInAnInitContainer",
     "{spec: {initContainers: [{name: phalanx-container, resources: {requests: {amd.com/gpu: "
     "1}}}]}}",
     "spec.initContainers[0].resources.requests.amd.com/gpu", "relaxed", ""},
    {"GpusAtPodLevel", "{spec: {resources: {limits: {example.com/gpu: 1}}}}",
     "spec.resources.limits.example.com/gpu", "relaxed", ""},
    {"VisibleDevices",
     "{spec: {containers: [{name: side, env: [{name: NVIDIA_VISIBLE_DEVICES, value: all}]}]}}",
     "spec.containers[0].env[0].name", "relaxed", ""},
    {"Finalizers", "{metadata: {finalizers: [example.com/keep]}}", "metadata.finalizers", "relaxed",
     ""},
    {"NfsVolume", "{spec: {volumes: [{name: v, nfs: {server: s, path: /}}]}}",
     "spec.volumes[0].nfs", "default", "relaxed"},
    {"GitRepoVolume", "{spec: {volumes: [{name: v, gitRepo: {repository: r}}]}}",
     "spec.volumes[0].gitRepo", "relaxed", ""},
    {"RestrictedVolumeNotListedInAPool",
     "{spec: {volumes: [{name: a, emptyDir: {}}, {name: b, configMap: {name: c}}]}}",
     "spec.volumes[1].configMap", "relaxed", "default"},
    {"UnknownVolumeSource", "{spec: {volumes: [{name: v, madeUp: {}}]}}", "spec.volumes[0].madeUp",
     "relaxed", ""},
    {"WritableHostPathMount",
     "{spec: {volumes: [{name: v, hostPath: {path: /data/sets}}], containers: [{name: "
     "phalanx-container, volumeMounts: [{name: v, mountPath: /d}]}]}}",
     "spec.containers[0].volumeMounts[0].readOnly", "admin", "relaxed"},
    {"WritableHostPathMountInAnInitContainer",
     "{spec: {volumes: [{name: v, hostPath: {path: /data}}], initContainers: [{name: i, "
     "volumeMounts: [{name: v, mountPath: /a, readOnly: true}, {name: v, mountPath: /b, "
     "readOnly: false}]}]}}",
     "spec.initContainers[0].volumeMounts[1].readOnly", "admin", "relaxed"},
    {"ReadOnlyDroppedFromTheDefaultsMount",
     "{spec: {containers: [{name: phalanx-container, volumeMounts: [{name: logs, mountPath: "
     "/logs2}]}]}}",
     "spec.containers[0].volumeMounts[0].readOnly", "admin", ""},
    {"HostPathUnderTheDefaultsWritableMount",
     "{spec: {volumes: [{name: scratch, hostPath: {path: /data/x}}]}}", "spec.volumes[0].hostPath",
     "admin", ""},
    {"BidirectionalMount",
     "{spec: {containers: [{name: a, volumeMounts: [{name: v, mountPath: /m, mountPropagation: "
     "Bidirectional}]}], volumes: [{name: v, emptyDir: {}}]}}",
     "spec.containers[0].volumeMounts[0].mountPropagation", "default", "relaxed"},
    {"SeccompUnconfinedPod", "{spec: {securityContext: {seccompProfile: {type: Unconfined}}}}",
     "spec.securityContext.seccompProfile.type", "default", "relaxed"},
    {"SeccompUnconfinedContainer",
     "{spec: {containers: [{name: a, securityContext: {seccompProfile: {type: Unconfined}}}]}}",
     "spec.containers[0].securityContext.seccompProfile.type", "default", "relaxed"},
    {"AppArmorUnconfined",
     "{spec: {ephemeralContainers: [{name: a, securityContext: {appArmorProfile: {type: "
     "Unconfined}}}]}}",
     "spec.ephemeralContainers[0].securityContext.appArmorProfile.type", "default", "relaxed"},
    {"AppArmorAnnotation",
     "{metadata: {annotations: {container.apparmor.security.beta.kubernetes.io/a: unconfined}}}",
     "metadata.annotations.container.apparmor.security.beta.kubernetes.io/a", "default", "relaxed"},
    {"SeccompAnnotation",
     "{metadata: {annotations: {seccomp.security.alpha.kubernetes.io/pod: unconfined}}}",
     "metadata.annotations.seccomp.security.alpha.kubernetes.io/pod", "default", "relaxed"},
    {"SelinuxType", "{spec: {securityContext: {seLinuxOptions: {type: spc_t}}}}",
     "spec.securityContext.seLinuxOptions.type", "default", "relaxed"},
    {"SelinuxUser",
     "{spec: {containers: [{name: a, securityContext: {seLinuxOptions: {user: system_u}}}]}}",
     "spec.containers[0].securityContext.seLinuxOptions.user", "default", "relaxed"},
    {"SelinuxRole", "{spec: {securityContext: {seLinuxOptions: {role: system_r}}}}",
     "spec.securityContext.seLinuxOptions.role", "default", "relaxed"},
    {"ProcMountUnmasked",
     "{spec: {containers: [{name: a, securityContext: {procMount: Unmasked}}]}}",
     "spec.containers[0].securityContext.procMount", "default", "relaxed"},
    {"HostProcessPod", "{spec: {securityContext: {windowsOptions: {hostProcess: true}}}}",
     "spec.securityContext.windowsOptions.hostProcess", "default", "relaxed"},
    {"HostProcessContainer",
     "{spec: {initContainers: [{name: a, securityContext: {windowsOptions: {hostProcess: "
     "true}}}]}}",
     "spec.initContainers[0].securityContext.windowsOptions.hostProcess", "default", "relaxed"},
    {"UnsafeSysctl",
     "{spec: {securityContext: {sysctls: [{name: net.ipv4.tcp_syncookies, value: '1'}, {name: "
     "kernel.msgmax, value: '1'}]}}}",
     "spec.securityContext.sysctls[1].name", "default", "relaxed"},
    {"UnsafeSysctlWithSlashes",
     "{spec: {securityContext: {sysctls: [{name: net/core/somaxconn, value: '1'}]}}}",
     "spec.securityContext.sysctls[0].name", "relaxed", ""},
    {"PatchReplace", "{spec: {securityContext: {$patch: replace, runAsUser: 1000}}}",
     "spec.securityContext.$patch", "relaxed", ""},
    {"PatchDeleteADefaultContainer", "{spec: {containers: [{name: audit, $patch: delete}]}}",
     "spec.containers[0].$patch", "admin", ""},
    {"PatchInAList", "{spec: {volumes: [{$patch: replace}, {name: v, emptyDir: {}}]}}",
     "spec.volumes[0].$patch", "relaxed", ""},
    {"PatchInMetadata", "{metadata: {labels: {$patch: replace, a: b}}}", "metadata.labels.$patch",
     "relaxed", ""},
    {"RunAsRootContainer", "{spec: {containers: [{name: a, securityContext: {runAsUser: 0}}]}}",
     "spec.containers[0].securityContext.runAsUser", "nonroot", "default"},
    {"RunAsRootPod", "{spec: {securityContext: {runAsUser: 0, runAsNonRoot: true}}}",
     "spec.securityContext.runAsUser", "nonroot", "default"},
    {"RunAsNonRootMissing", "", "spec.securityContext.runAsNonRoot", "nonroot", "default"},
    {"RunAsNonRootMissingInASidecar",
     "{spec: {securityContext: {runAsNonRoot: true}, containers: [{name: phalanx-container}, "
     "{name: side, securityContext: {runAsNonRoot: false}}]}}",
     "spec.containers[1].securityContext.runAsNonRoot", "nonroot", "default"},
};

// gtest names a case by its name instead of its bytes.
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class PodSpecPolicyTest : public ::testing::TestWithParam<Case> {};

TEST_P(PodSpecPolicyTest, RefusedNamingTheFieldUnlessThePoolRelaxesIt) {
  const Case& c = GetParam();
  const absl::Status refused = SubmitTask(c.refused_in, c.pod_spec);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument) << refused;
  EXPECT_THAT(refused.message(),
              HasSubstr(absl::StrCat(kPrefix, c.path, ": refused by pod_spec_policy (")));
  if (*c.accepted_in != '\0') {
    EXPECT_TRUE(SubmitTask(c.accepted_in, c.pod_spec).ok()) << c.accepted_in;
  }
}

INSTANTIATE_TEST_SUITE_P(Rules, PodSpecPolicyTest, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(PodSpecPolicyMessageTest, NamesTheKeyAndThePool) {
  EXPECT_EQ(SubmitTask("default", kCases[0].pod_spec).message(),
            "environment.pod_spec.spec.containers[0].securityContext.privileged: refused by "
            "pod_spec_policy (allow_privileged is false in pool \"default\")");
}

TEST(PodSpecPolicyMessageTest, WhatSeedsAndPhalanxWriteIsAccepted) {
  for (const auto& [pool, spec] : std::initializer_list<std::pair<const char*, const char*>>{
           {"default", "{spec: {priorityClassName: determined-medium-priority}}"},
           {"default", "{spec: {priorityClassName: phalanx-priority-7}}"},
           {"default", "{spec: {schedulerName: coscheduler}}"},
           {"default", "{spec: {schedulerName: preemption}}"},
           {"default", "{metadata: {name: x, labels: {pod-group.scheduling.sigs.k8s.io/name: g}}}"},
           {"default",
            "{spec: {serviceAccountName: default, automountServiceAccountToken: false}}"},
           {"nonroot", "{spec: {securityContext: {runAsNonRoot: true}}}"},
           {"default",
            "{spec: {volumes: [{name: a, configMap: {name: c}}, {name: b, csi: {driver: d}}, "
            "{name: c, downwardAPI: {}}, {name: d, emptyDir: {}}, {name: e, ephemeral: {}}, "
            "{name: f, persistentVolumeClaim: {claimName: p}}, {name: g, projected: {sources: "
            "[]}}, {name: h, nfs: null}]}}"},
           {"relaxed", "{spec: {volumes: [{name: v, hostPath: {path: /data}}]}}"},
           {"admin",
            "{spec: {volumes: [{name: v, hostPath: {path: /data/sets}}], containers: [{name: "
            "phalanx-container, volumeMounts: [{name: v, mountPath: /d, readOnly: true}, {name: "
            "scratch, mountPath: /scratch}]}, {name: side, volumeMounts: [{name: logs, "
            "mountPath: /l, readOnly: true, mountPropagation: HostToContainer}]}]}}"},
           {"default",
            "{metadata: {annotations: {container.apparmor.security.beta.kubernetes.io/a: "
            "runtime/default, container.apparmor.security.beta.kubernetes.io/b: localhost/p, "
            "seccomp.security.alpha.kubernetes.io/pod: runtime/default}}, spec: "
            "{securityContext: {seccompProfile: {type: RuntimeDefault}, seLinuxOptions: {type: "
            "container_t, level: 's0:c1,c2'}, windowsOptions: {hostProcess: false}, sysctls: "
            "[{name: net/ipv4/ip_local_port_range, value: '1 2'}, {name: kernel.shm_rmid_forced, "
            "value: '1'}]}, containers: [{name: a, securityContext: {procMount: Default, "
            "seccompProfile: {type: Localhost, localhostProfile: p}, appArmorProfile: {type: "
            "RuntimeDefault}, seLinuxOptions: {type: container_init_t}}}]}}"},
           {"relaxed", "{spec: {securityContext: {sysctls: [{name: kernel.msgmax, value: '1'}]}}}"},
       }) {
    EXPECT_TRUE(SubmitTask(pool, spec).ok()) << spec;
  }
}

// Checkpoint storage a user writes: the master's own host_path, or an allowed one.
TEST(PodSpecPolicyMessageTest, SharedFsHostPath) {
  struct StorageCase {
    const char* host_path;
    const char* pool;
    bool ok;
  } cases[] = {
      {"/", "default", false},
      {"/", "relaxed", false},
      {"/mnt/ckpt", "default", true},
      {"/mnt/ckpt/", "default", true},
      {"/mnt/shared/a", "relaxed", true},
      {"/mnt/shared/a", "default", false},
      {"/mnt/shared/../../etc", "relaxed", false},
  };
  for (const StorageCase& c : cases) {
    const std::string yaml = absl::StrCat("resources: {resource_pool: ", c.pool,
                                          "}\ncheckpoint_storage: {type: shared_fs, host_path: \"",
                                          c.host_path, "\"}\n");
    absl::StatusOr<ExperimentConfig> e = ParseSubmittedExperiment(yaml, Master());
    EXPECT_EQ(e.ok(), c.ok) << c.host_path << " in " << c.pool << ": " << e.status();
    if (!c.ok) {
      EXPECT_THAT(e.status().message(),
                  HasSubstr("checkpoint_storage.host_path: refused by pod_spec_policy"));
    }
  }
}

// Every strategic-merge directive, at any depth, whatever the pool (master.yaml's shape check
// refuses all but $patch before the policy runs; the policy refuses them too).
TEST(PodSpecPolicyMessageTest, MergeDirectivesAreRefusedEverywhere) {
  for (const auto& [pod, path] : std::initializer_list<std::pair<const char*, const char*>>{
           {R"({"spec": {"volumes": [{"name": "v", "$retainKeys": ["name"]}]}})",
            "p.spec.volumes[0].$retainKeys"},
           {R"({"spec": {"$setElementOrder/containers": [{"name": "a"}]}})",
            "p.spec.$setElementOrder/containers"},
           {R"({"spec": {"containers": [{"name": "a", "$deleteFromPrimitiveList/args": ["x"]}]}})",
            "p.spec.containers[0].$deleteFromPrimitiveList/args"},
           {R"({"spec": {"affinity": {"nodeAffinity": {"$patch": "delete"}}}})",
            "p.spec.affinity.nodeAffinity.$patch"},
       }) {
    const absl::Status s =
        CheckPodSpecPolicy(nlohmann::json::parse(pod), nullptr, "p",
                           Master().FindPool("relaxed")->pod_spec_policy, "relaxed");
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << pod;
    EXPECT_EQ(s.message(), absl::StrCat(path,
                                        ": refused by pod_spec_policy (a pod spec may not delete "
                                        "or replace what the pool's default pod spec sets; no key "
                                        "allows strategic-merge directives)"));
  }
}

// What the directives would do: the merged pod loses the admin's container and securityContext.
TEST(PodSpecPolicyMessageTest, DirectivesWouldDropTheAdminsDefaults) {
  const ResourcePoolConfig& admin = *Master().FindPool("admin");
  const nlohmann::json& defaults = Master().DefaultPodSpec(admin, true);
  const nlohmann::json attack = nlohmann::json::parse(
      R"({"spec": {"securityContext": {"$patch": "replace", "runAsUser": 1000},
                   "containers": [{"name": "audit", "$patch": "delete"}]}})");
  const nlohmann::json merged = StrategicMergePod(defaults, attack);
  EXPECT_EQ(merged["spec"]["securityContext"], nlohmann::json::parse(R"({"runAsUser": 1000})"));
  EXPECT_EQ(merged["spec"]["containers"].size(), 1u);
  EXPECT_THAT(
      SubmitTask("admin", "{spec: {securityContext: {$patch: replace, runAsUser: 1000}}}")
          .message(),
      HasSubstr("environment.pod_spec.spec.securityContext.$patch: refused by pod_spec_policy"));
}

TEST(PodSpecPolicyMessageTest, NamesTheKeyThatForbidsAndTheDefaultsMount) {
  EXPECT_EQ(SubmitTask("admin", "{spec: {volumes: [{name: scratch, hostPath: {path: /data}}]}}")
                .message(),
            "environment.pod_spec.spec.volumes[0].hostPath: refused by pod_spec_policy "
            "(host_paths_read_only is true in pool \"admin\"; the pool's default pod spec mounts "
            "it at /scratch without readOnly)");
  EXPECT_EQ(
      SubmitTask("default", "{spec: {volumes: [{name: n, nfs: {server: s, path: /}}]}}").message(),
      "environment.pod_spec.spec.volumes[0].nfs: refused by pod_spec_policy (\"nfs\" is not "
      "in allowed_volume_types of pool \"default\")");
}

TEST(PodSpecPolicyConfigTest, BadKeysAreRefused) {
  for (const auto& [yaml, error] : std::initializer_list<std::pair<const char*, const char*>>{
           {"pod_spec_policy: {allow_everything: true}", "pod_spec_policy.allow_everything"},
           {"pod_spec_policy: {allowed_host_paths: [data]}",
            "pod_spec_policy.allowed_host_paths[0]: must be an absolute path"},
           {"pod_spec_policy: {allow_privileged: yes please}", "pod_spec_policy.allow_privileged"},
           {"resource_pools: [{pool_name: a, pod_spec_policy: {allow_host_ports: 1}}]",
            "resource_pools[0].pod_spec_policy.allow_host_ports"},
           {"pod_spec_policy: {allowed_volume_types: [nfs, hostPath]}",
            "pod_spec_policy.allowed_volume_types[1]: hostPath volumes are allowed by "
            "allowed_host_paths alone"},
           {"pod_spec_policy: {allowed_volume_types: [NFS]}",
            "pod_spec_policy.allowed_volume_types[0]: \"NFS\" is not a Kubernetes volume source"},
           {"pod_spec_policy: {host_paths_read_only: no thanks}",
            "pod_spec_policy.host_paths_read_only"},
           {"pod_spec_policy: {allow_unconfined_profiles: 1}",
            "pod_spec_policy.allow_unconfined_profiles"},
           {"pod_spec_policy: {allow_custom_selinux: []}", "pod_spec_policy.allow_custom_selinux"},
           {"pod_spec_policy: {allowed_sysctls: [[a]]}", "pod_spec_policy.allowed_sysctls"},
       }) {
    absl::StatusOr<MasterConfig> c =
        ParseMasterConfig(absl::StrCat("max_slots_per_pod: 1\n", yaml));
    EXPECT_THAT(c.status().message(), HasSubstr(error)) << yaml;
  }
}

TEST(PodSpecPolicyConfigTest, PoolsOverrideKeyByKey) {
  const PodSpecPolicy& top = Master().pod_spec_policy;
  EXPECT_FALSE(top.allow_privileged);
  EXPECT_TRUE(top.allow_run_as_root);
  const PodSpecPolicy& nonroot = Master().FindPool("nonroot")->pod_spec_policy;
  EXPECT_FALSE(nonroot.allow_run_as_root);
  EXPECT_EQ(nonroot.allowed_service_accounts, std::vector<std::string>{"reader"});
  EXPECT_EQ(Master().FindPool("relaxed")->pod_spec_policy.allowed_host_paths,
            std::vector<std::string>{"/data"});
  EXPECT_EQ(top.allowed_volume_types,
            (std::vector<std::string>{"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral",
                                      "persistentVolumeClaim", "projected", "secret"}));
  EXPECT_TRUE(top.host_paths_read_only);
  EXPECT_FALSE(top.allow_unconfined_profiles);
  EXPECT_FALSE(top.allow_custom_selinux);
  EXPECT_TRUE(top.allowed_sysctls.empty());
  const PodSpecPolicy& relaxed = Master().FindPool("relaxed")->pod_spec_policy;
  EXPECT_EQ(relaxed.allowed_volume_types,
            (std::vector<std::string>{"nfs", "emptyDir", "secret", "projected"}));
  EXPECT_FALSE(relaxed.host_paths_read_only);
  EXPECT_EQ(relaxed.allowed_sysctls, std::vector<std::string>{"kernel.msgmax"});
  EXPECT_EQ(nonroot.allowed_volume_types, top.allowed_volume_types);
}

// The built pods carry phalanx's class for the seeds' name and the master's scheduler.
TEST(PodSpecPolicyBuildTest, SeedNamesBecomePhalanxs) {
  absl::StatusOr<TaskConfig> task = ParseSubmittedTask(
      "environment: {pod_spec: {spec: {priorityClassName: determined-medium-priority, "
      "schedulerName: coscheduler}}}",
      TaskType::kCommand, {"true"}, Master());
  ASSERT_TRUE(task.ok()) << task.status();
  const PodRequest r{.job_id = "cmd-1",
                     .allocation_id = "cmd-1-r1",
                     .slots = task->resources.slots,
                     .pool = Master().FindPool(task->resources.resource_pool),
                     .environment = &task->environment,
                     .entrypoint = task->entrypoint};
  const std::vector<nlohmann::json> pods = BuildPods(r, Master());
  ASSERT_EQ(pods.size(), 1u);
  EXPECT_EQ(pods[0]["spec"]["priorityClassName"], "phalanx-medium-priority");
  EXPECT_EQ(pods[0]["spec"]["schedulerName"], "phalanx");
  EXPECT_EQ(SpecPriorityClass(*r.pool, r.slots, task->environment, Master()),
            "phalanx-medium-priority");
}

}  // namespace
}  // namespace phalanx::master
