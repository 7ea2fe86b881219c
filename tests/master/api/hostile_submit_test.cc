// Attacks through the master's real gRPC services (service_fixture.h: real Postgres): pod specs
// that would take over a node, leave the pod sandbox, undo the admin's default pod spec or jump
// the queue, hostile YAML (alias cycle, alias bomb, deep nesting), oversize configs and bad names.
// Each is INVALID_ARGUMENT naming the problem, in bounded time and memory of this process (which
// runs the master), creates no pod, burns no experiment id, and leaves the master answering. A
// pool whose policy allows them accepts the pod-spec attacks.
#include <algorithm>
#include <iterator>
#include <ostream>
#include <string>

#include "tests/master/testing/hostile_input.h"
#include "tests/master/testing/service_fixture.h"

namespace phalanx::master {
namespace {

using ::testing::HasSubstr;
using testing::Repeat;

// kMaster with a default pod spec the admin hardened (a non-root, RuntimeDefault seccomp pod with
// an audit sidecar), a hostPath allowlist in pool gpu, and a pool `open` that relaxes every rule
// an admin can relax.
constexpr char kHostileMaster[] = R"(
max_slots_per_pod: 4
preemption_timeout: 30s
task_container_defaults:
  gpu_pod_spec:
    spec:
      securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
      containers: [{name: audit, image: audit}]
resource_pools:
  - {pool_name: gpu, kubernetes_namespace: gpu-ns, pod_spec_policy: {allowed_host_paths: [/data]}}
  - {pool_name: cpu, kubernetes_namespace: cpu-ns}
  - pool_name: open
    kubernetes_namespace: gpu-ns
    pod_spec_policy:
      allowed_host_paths: [/data]
      allowed_volume_types: [nfs, gitRepo]
      host_paths_read_only: false
      allow_privileged: true
      allow_unconfined_profiles: true
      allow_custom_selinux: true
      allowed_sysctls: [kernel.msgmax]
default_aux_resource_pool: cpu
)";

enum class Via { kValidateOnly, kExperiment, kTask };

struct Attack {
  const char* name;
  Via via;
  std::string config;
  const char* error;
};

std::string PodSpec(const std::string& spec) {
  return "entrypoint: python3 train.py\nenvironment: {pod_spec: " + spec + "}\n";
}

constexpr char kRefused[] = ": refused by pod_spec_policy (";

const Attack kAttacks[] = {
    {"Privileged", Via::kTask,
     PodSpec("{spec: {containers: [{name: a, securityContext: {privileged: true}}]}}"),
     "environment.pod_spec.spec.containers[0].securityContext.privileged: refused by "
     "pod_spec_policy (allow_privileged is false in pool \"gpu\")"},
    {"PrivilegedInitContainer", Via::kExperiment,
     PodSpec("{spec: {initContainers: [{name: i, securityContext: {privileged: true}}]}}"),
     "environment.pod_spec.spec.initContainers[0].securityContext.privileged"},
    {"PrivilegeEscalation", Via::kTask,
     PodSpec("{spec: {containers: [{name: a, securityContext: {allowPrivilegeEscalation: "
             "true}}]}}"),
     "securityContext.allowPrivilegeEscalation"},
    {"SysAdmin", Via::kTask,
     PodSpec("{spec: {containers: [{name: phalanx-container, securityContext: {capabilities: "
             "{add: [SYS_ADMIN]}}}]}}"),
     "environment.pod_spec.spec.containers[0].securityContext.capabilities.add[0]"},
    {"HostNetwork", Via::kTask, PodSpec("{spec: {hostNetwork: true}}"), "spec.hostNetwork"},
    {"HostPID", Via::kValidateOnly, PodSpec("{spec: {hostPID: true}}"), "spec.hostPID"},
    {"HostIPC", Via::kTask, PodSpec("{spec: {hostIPC: true}}"), "spec.hostIPC"},
    {"HostPathRoot", Via::kTask, PodSpec("{spec: {volumes: [{name: r, hostPath: {path: /}}]}}"),
     "environment.pod_spec.spec.volumes[0].hostPath.path"},
    {"HostPort", Via::kTask,
     PodSpec("{spec: {containers: [{name: a, ports: [{containerPort: 1, hostPort: 22}]}]}}"),
     "spec.containers[0].ports[0].hostPort"},
    {"ServiceAccount", Via::kTask, PodSpec("{spec: {serviceAccountName: phalanx-master}}"),
     "spec.serviceAccountName"},
    {"AutomountToken", Via::kTask, PodSpec("{spec: {automountServiceAccountToken: true}}"),
     "spec.automountServiceAccountToken"},
    {"NodeName", Via::kTask, PodSpec("{spec: {nodeName: node-1}}"), "spec.nodeName"},
    {"SchedulerName", Via::kTask, PodSpec("{spec: {schedulerName: default-scheduler}}"),
     "spec.schedulerName"},
    {"SchedulingGates", Via::kTask, PodSpec("{spec: {schedulingGates: [{name: x}]}}"),
     "spec.schedulingGates[0]"},
    {"SystemNodeCritical", Via::kValidateOnly,
     PodSpec("{spec: {priorityClassName: system-node-critical}}"), "spec.priorityClassName"},
    {"PlacementAnnotation", Via::kTask,
     PodSpec("{metadata: {annotations: {phalanx.io/placement: node-1}}}"),
     "environment.pod_spec.metadata.annotations.phalanx.io/placement"},
    // Forged history: recent preemptions would shield the runs from preemption, a checkpoint in
    // the future would make others' runs the costlier victims.
    {"PreemptedAtAnnotation", Via::kExperiment,
     PodSpec("{metadata: {annotations: {phalanx.io/preempted-at: '2026-01-01T00:00:00Z,"
             "2026-01-01T00:01:00Z,2026-01-01T00:02:00Z'}}}"),
     "environment.pod_spec.metadata.annotations.phalanx.io/preempted-at: refused by "
     "pod_spec_policy (phalanx.io/ labels and annotations are written by phalanx only)"},
    {"CheckpointedAtAnnotation", Via::kTask,
     PodSpec("{metadata: {annotations: {phalanx.io/checkpointed-at: '2999-01-01T00:00:00Z'}}}"),
     "environment.pod_spec.metadata.annotations.phalanx.io/checkpointed-at: refused by "
     "pod_spec_policy (phalanx.io/ labels and annotations are written by phalanx only)"},
    {"QueueLabel", Via::kExperiment,
     PodSpec("{metadata: {labels: {phalanx.io/queue-position: '0'}}}"),
     "metadata.labels.phalanx.io/queue-position"},
    {"SharedFsRoot", Via::kExperiment,
     "entrypoint: x\ncheckpoint_storage: {type: shared_fs, host_path: /}\n",
     "checkpoint_storage.host_path: refused by pod_spec_policy"},
    {"NfsVolume", Via::kExperiment,
     PodSpec("{spec: {volumes: [{name: n, nfs: {server: 10.0.0.1, path: /}}]}}"),
     "environment.pod_spec.spec.volumes[0].nfs: refused by pod_spec_policy (\"nfs\" is not in "
     "allowed_volume_types of pool \"gpu\")"},
    {"GitRepoVolume", Via::kValidateOnly,
     PodSpec("{spec: {volumes: [{name: g, gitRepo: {repository: 'https://x/y.git'}}]}}"),
     "environment.pod_spec.spec.volumes[0].gitRepo: refused by pod_spec_policy"},
    {"WritableHostPath", Via::kExperiment,
     PodSpec("{spec: {volumes: [{name: d, hostPath: {path: /data/sets}}], containers: [{name: "
             "phalanx-container, volumeMounts: [{name: d, mountPath: /d}]}]}}"),
     "environment.pod_spec.spec.containers[0].volumeMounts[0].readOnly: refused by "
     "pod_spec_policy (host_paths_read_only is true in pool \"gpu\")"},
    {"BidirectionalMount", Via::kValidateOnly,
     PodSpec("{spec: {volumes: [{name: d, hostPath: {path: /data}}], containers: [{name: a, "
             "volumeMounts: [{name: d, mountPath: /d, readOnly: true, mountPropagation: "
             "Bidirectional}]}]}}"),
     "environment.pod_spec.spec.containers[0].volumeMounts[0].mountPropagation: refused by "
     "pod_spec_policy (allow_privileged is false"},
    {"SeccompUnconfined", Via::kExperiment,
     PodSpec("{spec: {securityContext: {seccompProfile: {type: Unconfined}}}}"),
     "environment.pod_spec.spec.securityContext.seccompProfile.type: refused by pod_spec_policy "
     "(allow_unconfined_profiles is false in pool \"gpu\")"},
    {"AppArmorAnnotation", Via::kExperiment,
     PodSpec("{metadata: {annotations: {container.apparmor.security.beta.kubernetes.io/"
             "phalanx-container: unconfined}}}"),
     "environment.pod_spec.metadata.annotations.container.apparmor.security.beta.kubernetes.io/"
     "phalanx-container: refused by pod_spec_policy (allow_unconfined_profiles"},
    {"SelinuxSpcT", Via::kTask,
     PodSpec("{spec: {containers: [{name: a, securityContext: {seLinuxOptions: {type: "
             "spc_t}}}]}}"),
     "environment.pod_spec.spec.containers[0].securityContext.seLinuxOptions.type: refused by "
     "pod_spec_policy (allow_custom_selinux"},
    {"ProcMountUnmasked", Via::kExperiment,
     PodSpec("{spec: {containers: [{name: a, securityContext: {procMount: Unmasked}}]}}"),
     "environment.pod_spec.spec.containers[0].securityContext.procMount: refused by "
     "pod_spec_policy (allow_privileged"},
    {"HostProcess", Via::kValidateOnly,
     PodSpec("{spec: {securityContext: {windowsOptions: {hostProcess: true}}}}"),
     "environment.pod_spec.spec.securityContext.windowsOptions.hostProcess: refused by "
     "pod_spec_policy (allow_privileged"},
    {"UnsafeSysctl", Via::kExperiment,
     PodSpec("{spec: {securityContext: {sysctls: [{name: kernel.msgmax, value: '65536'}]}}}"),
     "environment.pod_spec.spec.securityContext.sysctls[0].name: refused by pod_spec_policy "
     "(\"kernel.msgmax\" is not in Kubernetes' safe sysctls nor in allowed_sysctls"},
    {"PatchReplaceDropsTheDefaultSecurityContext", Via::kExperiment,
     PodSpec("{spec: {securityContext: {$patch: replace, runAsUser: 1000}}}"),
     "environment.pod_spec.spec.securityContext.$patch: refused by pod_spec_policy (a pod spec "
     "may not delete or replace what the pool's default pod spec sets; no key allows "
     "strategic-merge directives)"},
    {"PatchDeleteDropsTheDefaultSidecar", Via::kTask,
     PodSpec("{spec: {containers: [{name: audit, $patch: delete}]}}"),
     "environment.pod_spec.spec.containers[0].$patch: refused by pod_spec_policy"},
    {"AliasCycle", Via::kValidateOnly, "data: &a [*a]",
     "data[0]: an alias to a node that contains"},
    {"AliasCycleTask", Via::kTask, "description: &a [*a]", "an alias to a node that contains"},
    {"AliasBomb", Via::kValidateOnly, testing::AliasBomb(9), "aliases expand beyond"},
    {"AliasBombTask", Via::kTask, testing::AliasBomb(9), "aliases expand beyond"},
    {"DeepNesting", Via::kExperiment, "data: " + Repeat("[", 50000) + Repeat("]", 50000),
     "nesting deeper than 100 levels"},
    {"Oversize", Via::kValidateOnly, "data: '" + std::string(1 << 20, 'x') + "'",
     "config: 1048584 bytes, more than the limit of 131072"},
    {"NulInName", Via::kExperiment, "name: \"a\\0b\"\nentrypoint: x", "name: contains a NUL"},
    {"RawNul", Via::kExperiment, std::string("name: a\0b\nentrypoint: x", 23),
     "config: control character U+0000 at byte 7"},
    {"ControlInName", Via::kExperiment, "name: \"a\\x1bb\"\nentrypoint: x",
     "name: control character U+001B"},
    {"LongName", Via::kExperiment, "name: " + std::string(300, 'n') + "\nentrypoint: x",
     "name: 300 bytes, more than the limit of 255"},
    {"ControlInDescription", Via::kTask, "description: \"a\\rb\"\nentrypoint: x",
     "description: control character U+000D"},
    // yaml-cpp reads the escapes \_ and \N as the single bytes 0xA0 and 0x85: not UTF-8, which
    // made the JSON dump of the config throw and phalanx-master abort.
    {"NbspEscapeInData", Via::kValidateOnly, "data: {a: \"x\\_y\"}\nentrypoint: x",
     "data.a: invalid UTF-8 at byte 1 once its escapes are read"},
    {"NelEscapeInTaskPodSpec", Via::kTask, PodSpec("{metadata: {annotations: {note: \"a\\Nb\"}}}"),
     "environment.pod_spec.metadata.annotations.note: invalid UTF-8 at byte 1"},
};

// gtest names a case by its name instead of its bytes.
void PrintTo(const Attack& c, std::ostream* os) { *os << c.name; }

class HostileMasterTest : public ServiceTest {
 protected:
  std::string MasterYaml() const override { return kHostileMaster; }
};

class HostileSubmitTest : public HostileMasterTest, public ::testing::WithParamInterface<Attack> {
 protected:
  grpc::Status Submit(const Attack& a) {
    if (a.via == Via::kTask) {
      v1::LaunchTaskRequest req;
      req.set_type(v1::TASK_TYPE_COMMAND);
      req.set_config(a.config);
      req.add_entrypoint("true");
      return tasks_->LaunchTask(Ctx().get(), req, Ignored<v1::LaunchTaskResponse>());
    }
    v1::CreateExperimentRequest req;
    req.set_config(a.config);
    req.set_validate_only(a.via == Via::kValidateOnly);
    req.set_activate(true);
    return experiments_->CreateExperiment(Ctx().get(), req,
                                          Ignored<v1::CreateExperimentResponse>());
  }
};

TEST_P(HostileSubmitTest, RefusedNamingTheProblemAndNothingIsLost) {
  const Attack& a = GetParam();
  grpc::Status s;
  const testing::Cost cost = testing::Measure([&] { s = Submit(a); });
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr(a.error));
  EXPECT_LT(cost.peak_growth_kib, testing::kMaxPeakGrowthKib);
  EXPECT_LT(cost.seconds, testing::kMaxSeconds);
  EXPECT_TRUE(pods_.pods().empty());
  // The master still answers, and the refused submission burned no id.
  EXPECT_EQ(Create("name: after\nentrypoint: x\n").id(), 1);
}

INSTANTIATE_TEST_SUITE_P(Attacks, HostileSubmitTest, ::testing::ValuesIn(kAttacks),
                         [](const auto& info) { return std::string(info.param.name); });

// Pool `open` relaxes the rules an admin can relax: the same pod specs are accepted there.
TEST_F(HostileMasterTest, APoolThatAllowsThemAcceptsThePodSpecAttacks) {
  for (const char* name :
       {"NfsVolume", "GitRepoVolume", "WritableHostPath", "BidirectionalMount", "SeccompUnconfined",
        "AppArmorAnnotation", "SelinuxSpcT", "ProcMountUnmasked", "HostProcess", "UnsafeSysctl"}) {
    const Attack& a =
        *std::find_if(std::begin(kAttacks), std::end(kAttacks),
                      [&](const Attack& attack) { return std::string(attack.name) == name; });
    v1::CreateExperimentRequest req;
    req.set_config(a.config + "resources: {resource_pool: open}\n");
    req.set_validate_only(true);
    const grpc::Status s =
        experiments_->CreateExperiment(Ctx().get(), req, Ignored<v1::CreateExperimentResponse>());
    EXPECT_TRUE(s.ok()) << name << ": " << s.error_message();
  }
  // No pool relaxes the merge directives.
  v1::CreateExperimentRequest req;
  req.set_config(PodSpec("{spec: {containers: [{name: audit, $patch: delete}]}}") +
                 "resources: {resource_pool: open}\n");
  req.set_validate_only(true);
  const grpc::Status s =
      experiments_->CreateExperiment(Ctx().get(), req, Ignored<v1::CreateExperimentResponse>());
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_THAT(s.error_message(),
              HasSubstr("spec.containers[0].$patch: refused by pod_spec_policy"));
}

// What the seeds write is accepted, and the pods carry phalanx's class and scheduler.
TEST_F(ServiceTest, SeedPriorityClassAndSchedulerAreMapped) {
  Create(
      PodSpec("{spec: {priorityClassName: determined-medium-priority, schedulerName: "
              "coscheduler}}"));
  ASSERT_FALSE(pods_.pods().empty());
  for (const auto& [key, pod] : pods_.pods()) {
    EXPECT_EQ(pod["spec"]["priorityClassName"], "phalanx-medium-priority") << key;
    EXPECT_EQ(pod["spec"]["schedulerName"], "phalanx") << key;
  }
}

}  // namespace
}  // namespace phalanx::master
