// The pod-spec policy on what users submit (ParseSubmittedTask / ParseSubmittedExperiment): one
// case per rule, each refused in the pool that keeps the safe default (naming the field) and, where
// an admin can relax it, accepted in the pool that does; master.yaml's pod_spec_policy keys; the
// seeds' priority class and scheduler names as the built pods carry them.
#include "master/config/pod_spec_policy.h"

#include <ostream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
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
  - pool_name: nonroot
    pod_spec_policy: {allow_run_as_root: false}
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

TEST(PodSpecPolicyConfigTest, BadKeysAreRefused) {
  for (const auto& [yaml, error] : std::initializer_list<std::pair<const char*, const char*>>{
           {"pod_spec_policy: {allow_everything: true}", "pod_spec_policy.allow_everything"},
           {"pod_spec_policy: {allowed_host_paths: [data]}",
            "pod_spec_policy.allowed_host_paths[0]: must be an absolute path"},
           {"pod_spec_policy: {allow_privileged: yes please}", "pod_spec_policy.allow_privileged"},
           {"resource_pools: [{pool_name: a, pod_spec_policy: {allow_host_ports: 1}}]",
            "resource_pools[0].pod_spec_policy.allow_host_ports"},
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
