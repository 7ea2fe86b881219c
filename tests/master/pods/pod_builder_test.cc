// Pod builder golden tests (tests/master/testdata/pods_*.json; PHALANX_UPDATE_GOLDEN=1 rewrites
// them), including the seeds' empty-dir override, the rendezvous env and the run's history
// annotations as the extender decodes them.
#include "master/pods/pod_builder.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/pods/rendezvous.h"
#include "master/policy/strategic_merge.h"
#include "master/spec/task_config.h"
#include "tests/master/testing/decoded_pod.h"

namespace phalanx::master {
namespace {

using nlohmann::json;

constexpr char kMaster[] = R"(
max_slots_per_pod: 4
task_master_address: phalanx-master.phalanx.svc:8080
resource_pools:
  - pool_name: default
    kubernetes_namespace: team-a
  - pool_name: prod_pool
    kubernetes_namespace: prod
    task_container_defaults:
      gpu_pod_spec:
        apiVersion: v1
        kind: Pod
        spec:
          volumes:
            - name: secret-volume
              secret:
                secretName: prod-test-secret
          containers:
            - name: determined-container
              volumeMounts:
                - name: secret-volume
                  mountPath: /etc/secret-volume
  - pool_name: aux
    kubernetes_namespace: aux
default_aux_resource_pool: aux
task_container_defaults:
  cpu_pod_spec:
    metadata:
      labels: {customLabel: cpu-label}
  gpu_pod_spec:
    metadata:
      labels: {customLabel: gpu-label}
    spec:
      containers:
        - name: phalanx-container
          volumeMounts: [{name: example-volume, mountPath: /example-data}]
        - name: sidecar-container
          image: alpine:latest
      volumes:
        - name: example-volume
          hostPath: {path: /data}
)";

std::string Golden(const std::string& name) {
  return std::string(PHALANX_MASTER_TESTDATA) + "/" + name;
}

void ExpectGolden(const std::vector<json>& pods, const std::string& name) {
  const std::string got = json(pods).dump(2) + "\n";
  if (std::getenv("PHALANX_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(Golden(name)) << got;
    ADD_FAILURE() << "golden " << name << " rewritten: review it, then run without "
                  << "PHALANX_UPDATE_GOLDEN";
    return;
  }
  std::ifstream in(Golden(name));
  std::stringstream want;
  want << in.rdbuf();
  EXPECT_EQ(got, want.str()) << "golden " << name << " differs; got:\n" << got;
}

struct Built {
  MasterConfig master;
  TaskConfig task;
  std::vector<json> pods;
};

// The request of run exp-3-trial-7-r1 of `b`'s task, of `type` (it points into `b`).
PodRequest RequestOf(const Built& b, TaskType type) {
  return PodRequest{.type = type,
                    .job_id = "exp-3",
                    .allocation_id = "exp-3-trial-7-r1",
                    .slots = b.task.resources.slots,
                    .priority = b.task.resources.priority.value_or(kDefaultPriority),
                    .queue_position = 1700000000.25,
                    .pool = b.master.FindPool(b.task.resources.resource_pool),
                    .environment = &b.task.environment,
                    .entrypoint = b.task.entrypoint,
                    .checkpoint_storage = b.master.checkpoint_storage,
                    .env = {{"PHALANX_HPARAMS", R"({"lr":0.1})"}}};
}

// `entrypoint`: the request's; empty leaves the config's or the task type's default.
// The pods of a task of `type` configured by `task_yaml`, under `master`.
Built BuildUnder(MasterConfig master, TaskType type, const std::string& task_yaml,
                 const std::vector<std::string>& entrypoint = {"python3", "train.py"}) {
  Built b;
  b.master = std::move(master);
  absl::StatusOr<TaskConfig> task = ParseTaskConfig(task_yaml, type, entrypoint, b.master);
  EXPECT_TRUE(task.ok()) << task.status();
  b.task = *task;
  b.pods = BuildPods(RequestOf(b, type), b.master);
  return b;
}

Built Build(TaskType type, const std::string& task_yaml, const std::string& master_yaml = kMaster,
            const std::vector<std::string>& entrypoint = {"python3", "train.py"}) {
  absl::StatusOr<MasterConfig> master = ParseMasterConfig(master_yaml);
  EXPECT_TRUE(master.ok()) << master.status();
  return BuildUnder(*master, type, task_yaml, entrypoint);
}

// The value of env var `name` of the pod's task container; "" when unset.
std::string EnvValue(const json& pod, const std::string& name) {
  for (const json& var : pod["spec"]["containers"][0]["env"]) {
    if (var["name"] == name) return var.value("value", "");
  }
  return "";
}

TEST(PodBuilderTest, GpuTaskSplitsIntoPodsOfMaxSlots) {
  Built b = Build(TaskType::kExperiment, R"(
resources: {slots: 8, priority: 42}
environment:
  image: pytorch:2
  environment_variables: [NCCL_DEBUG=TRACE]
)");
  ASSERT_EQ(b.pods.size(), 2u);
  ExpectGolden(b.pods, "pods_gpu_two_pods.json");
}

// A pool whose policy forbids the service account token mount gets pods without it (the goldens);
// a pool that allows it leaves Kubernetes' default, and a spec's own choice stays.
TEST(PodBuilderTest, TokenMountFollowsThePoolsPolicy) {
  const std::string relaxed = absl::StrCat(
      "max_slots_per_pod: 4\n", "pod_spec_policy: {allow_automount_service_account_token: true}\n");
  EXPECT_FALSE(Build(TaskType::kExperiment, "resources: {slots: 1}\n", relaxed)
                   .pods[0]["spec"]
                   .contains("automountServiceAccountToken"));
  const std::string asks = R"(
resources: {slots: 1}
environment: {pod_spec: {spec: {automountServiceAccountToken: true}}}
)";
  EXPECT_EQ(
      Build(TaskType::kExperiment, asks, relaxed).pods[0]["spec"]["automountServiceAccountToken"],
      true);
  EXPECT_EQ(Build(TaskType::kExperiment, "resources: {slots: 1}\n")
                .pods[0]["spec"]["automountServiceAccountToken"],
            false);
}

TEST(PodBuilderTest, SeedEmptyDirOverride) {
  // The seeds' example: the task mounts an emptyDir at the path where the pool's default pod spec
  // mounts a secret; volumeMounts merge by mountPath, so the emptyDir replaces the secret mount.
  Built b = Build(TaskType::kExperiment, R"(
resources: {slots: 4, resource_pool: prod_pool}
environment:
  pod_spec:
    apiVersion: v1
    kind: Pod
    spec:
      volumes:
        - name: empty-dir-override
          emptyDir:
            sizeLimit: 100Mi
      containers:
        - name: determined-container
          volumeMounts:
            - name: empty-dir-override
              mountPath: /etc/secret-volume
)");
  ASSERT_EQ(b.pods.size(), 1u);
  const json& spec = b.pods[0]["spec"];
  ASSERT_EQ(spec["containers"].size(), 1u);  // The pool's spec replaced the top-level one.
  EXPECT_EQ(spec["containers"][0]["volumeMounts"][0],
            json::parse(R"({"mountPath":"/etc/secret-volume","name":"empty-dir-override"})"));
  EXPECT_EQ(spec["volumes"].size(), 3u);  // secret-volume, empty-dir-override, phalanx-checkpoints.
  EXPECT_EQ(b.pods[0]["metadata"]["namespace"], "prod");
  ExpectGolden(b.pods, "pods_seed_empty_dir_override.json");
}

TEST(PodBuilderTest, PodSpecPriorityClassWinsOverPriority) {
  Built b = Build(TaskType::kExperiment, R"(
resources: {slots: 1, priority: 90}
environment:
  pod_spec:
    spec:
      priorityClassName: phalanx-low-priority
      tolerations: [{key: gpu, operator: Exists, effect: NoSchedule}]
      nodeSelector: {accelerator: a100}
)");
  EXPECT_EQ(b.pods[0]["spec"]["priorityClassName"], "phalanx-low-priority");
  EXPECT_EQ(b.pods[0]["spec"]["tolerations"][0]["key"], "gpu");
  Built plain = Build(TaskType::kExperiment, "resources: {slots: 1, priority: 90}\n");
  EXPECT_EQ(plain.pods[0]["spec"]["priorityClassName"], "phalanx-priority-90");
}

// SpecPriorityClass names the class the merged pod specs set (directives applied), which the built
// pods carry; when it names none, they carry the class of the task's priority.
TEST(PodBuilderTest, SpecPriorityClassIsTheClassThePodSpecsGive) {
  constexpr char kClassDefault[] = R"(
max_slots_per_pod: 4
resource_pools: [{pool_name: default, kubernetes_namespace: team-a}]
task_container_defaults:
  gpu_pod_spec: {spec: {priorityClassName: phalanx-high-priority}}
)";
  struct Case {
    std::string task, master, want;
  } cases[] = {
      {"resources: {slots: 1, priority: 90}\n", kMaster, ""},
      {"environment: {pod_spec: {spec: {priorityClassName: team-class}}}\n", kMaster, "team-class"},
      {"resources: {slots: 1, priority: 90}\n", kClassDefault, "phalanx-high-priority"},
      {"environment: {pod_spec: {spec: {priorityClassName: team-class}}}\n", kClassDefault,
       "team-class"},
      {"environment: {pod_spec: {spec: {priorityClassName: null}}}\n", kClassDefault, ""},
      {"environment: {pod_spec: {spec: {$patch: replace, nodeSelector: {a: b}}}}\n", kClassDefault,
       ""},
  };
  for (const Case& c : cases) {
    Built b = Build(TaskType::kExperiment, c.task, c.master);
    const ResourcePoolConfig& pool = *b.master.FindPool(b.task.resources.resource_pool);
    EXPECT_EQ(SpecPriorityClass(pool, b.task.resources.slots, b.task.environment, b.master), c.want)
        << c.task << c.master;
    EXPECT_EQ(b.pods[0]["spec"]["priorityClassName"],
              c.want.empty()
                  ? PriorityClassFor(b.task.resources.priority.value_or(kDefaultPriority))
                  : c.want)
        << c.task;
  }
}

// `priorityClassName:` with no value (null) has no class to delete where no default pod spec sets
// one, and a null in a default pod spec means unset: either way the pods take the class of the
// task's priority.
TEST(PodBuilderTest, NullPriorityClassTakesTheClassOfThePriority) {
  const std::string task = "resources: {priority: 42}\n";
  const std::string null_class = "environment: {pod_spec: {spec: {priorityClassName: }}}\n";
  const std::string null_default =
      "max_slots_per_pod: 4\ntask_container_defaults: {gpu_pod_spec: {spec: {priorityClassName: "
      "null}}}\n";
  for (const auto& [task_yaml, master_yaml] :
       {std::pair{task + null_class, std::string("max_slots_per_pod: 4\n")},
        std::pair{task + null_class, std::string(kMaster)}, std::pair{task, null_default}}) {
    Built b = Build(TaskType::kExperiment, task_yaml, master_yaml);
    ASSERT_EQ(b.pods.size(), 1u);
    EXPECT_EQ(b.pods[0]["spec"]["priorityClassName"], "phalanx-priority-42") << master_yaml;
  }
}

// shared_fs storage: a hostPath volume of host_path at Determined's container path, and the
// directory below it where checkpoints go; a pod_spec volume mounted at that path wins.
TEST(PodBuilderTest, SharedFsCheckpointStorageIsMounted) {
  const std::string master = std::string(kMaster) +
                             "checkpoint_storage: {type: shared_fs, host_path: /mnt/ckpt, "
                             "storage_path: runs}\n";
  Built b = Build(TaskType::kExperiment, "resources: {slots: 8}\n", master);
  ASSERT_EQ(b.pods.size(), 2u);
  for (const json& pod : b.pods) {
    const json& spec = pod["spec"];
    const json& c = spec["containers"][0];
    ASSERT_EQ(c["name"], "phalanx-container");
    EXPECT_EQ(c["volumeMounts"], json::parse(R"([
      {"name": "example-volume", "mountPath": "/example-data"},
      {"name": "phalanx-checkpoints", "mountPath": "/determined_shared_fs"}])"));
    EXPECT_EQ(spec["volumes"].back(), json::parse(R"({"name": "phalanx-checkpoints",
      "hostPath": {"path": "/mnt/ckpt", "type": "DirectoryOrCreate"}})"));
    const json& env = c["env"];
    EXPECT_NE(std::find(env.begin(), env.end(),
                        json{{"name", "PHALANX_CHECKPOINT_DIR"},
                             {"value", "/determined_shared_fs/runs"}}),
              env.end())
        << env;
    EXPECT_NE(
        std::find(env.begin(), env.end(),
                  json{{"name", "PHALANX_CHECKPOINT_STORAGE"},
                       {"value",
                        R"({"host_path":"/mnt/ckpt","storage_path":"runs","type":"shared_fs"})"}}),
        env.end())
        << env;
  }
  Built own = Build(TaskType::kNotebook, R"(
environment:
  pod_spec:
    spec:
      volumes: [{name: nfs, nfs: {server: nfs.local, path: /ckpt}}]
      containers:
        - name: phalanx-container
          volumeMounts: [{name: nfs, mountPath: /determined_shared_fs}]
)",
                    master);
  const json& spec = own.pods[0]["spec"];
  EXPECT_EQ(spec["containers"][0]["volumeMounts"], json::parse(R"([
    {"name": "example-volume", "mountPath": "/example-data"},
    {"name": "nfs", "mountPath": "/determined_shared_fs"}])"));
  EXPECT_EQ(spec["volumes"].size(), 2u) << spec["volumes"];  // example-volume and nfs.
}

TEST(PodBuilderTest, ObjectStorageIsNotMounted) {
  Built b = Build(TaskType::kExperiment, "resources: {slots: 1}\n",
                  "max_slots_per_pod: 4\ncheckpoint_storage: {type: s3, bucket: ckpt}\n");
  const json& c = b.pods[0]["spec"]["containers"][0];
  EXPECT_FALSE(c.contains("volumeMounts")) << c;
  EXPECT_FALSE(b.pods[0]["spec"].contains("volumes"));
  for (const json& var : c["env"]) EXPECT_NE(var["name"], "PHALANX_CHECKPOINT_DIR");
}

// Also: the default TensorBoard entrypoint reads the mounted shared_fs checkpoints.
// Task pods reach a master that serves TLS through https://, trusting the PEM LoadMasterConfig
// read.
TEST(PodBuilderTest, TasksReachATlsMasterWithWhatItTrusts) {
  Built plain = Build(TaskType::kExperiment, "");
  EXPECT_EQ(EnvValue(plain.pods[0], "PHALANX_MASTER"), "phalanx-master.phalanx.svc:8080");
  EXPECT_EQ(EnvValue(plain.pods[0], "PHALANX_MASTER_CA"), "");
  absl::StatusOr<MasterConfig> master =
      ParseMasterConfig(std::string(kMaster) + "tls: {cert: /tls/tls.crt, key: /tls/tls.key}\n");
  ASSERT_TRUE(master.ok()) << master.status();
  master->tls->task_trust_pem = "CA PEM";
  Built tls = BuildUnder(*master, TaskType::kExperiment, "");
  EXPECT_EQ(EnvValue(tls.pods[0], "PHALANX_MASTER"), "https://phalanx-master.phalanx.svc:8080");
  EXPECT_EQ(EnvValue(tls.pods[0], "PHALANX_MASTER_CA"), "CA PEM");
}

TEST(PodBuilderTest, ZeroSlotTensorboardGoesToAuxWithoutGpus) {
  Built b = Build(TaskType::kTensorboard, "", kMaster, /*entrypoint=*/{});
  ASSERT_EQ(b.pods.size(), 1u);
  ExpectGolden(b.pods, "pods_tensorboard_zero_slots.json");
}

TEST(PodBuilderTest, CpuSlotsRequestCpus) {
  Built b = Build(TaskType::kCommand, "resources: {slots: 4}\n",
                  "max_slots_per_pod: 2\nslot_type: cpu\nslot_resource_requests: {cpu: 7.5}\n");
  ASSERT_EQ(b.pods.size(), 2u);
  ExpectGolden(b.pods, "pods_cpu_slots.json");
}

TEST(PodBuilderTest, StringEntrypointRunsInAShell) {
  Built b = Build(TaskType::kCommand, "entrypoint: python3 train.py --epochs 3 && echo done\n",
                  kMaster, /*entrypoint=*/{});
  EXPECT_EQ(b.pods[0]["spec"]["containers"][0]["command"],
            json::parse(R"(["sh", "-c", "python3 train.py --epochs 3 && echo done"])"));
}

// Determined's image and environment_variables by device ({cpu: ..., cuda: ...}; gpu is cuda's
// older name): GPU tasks take the cuda ones; zero-slot tasks and tasks of cpu slots the cpu ones.
// A device left out gets the default image and no variables.
TEST(PodBuilderTest, ImageAndVariablesByDevice) {
  const std::string env = R"(
environment:
  image: {cpu: "img:cpu", cuda: "img:cuda", rocm: "img:rocm"}
  environment_variables: {cpu: [DEVICE=cpu], cuda: [DEVICE=cuda, NCCL_DEBUG=INFO]}
)";
  const std::string cpu_master =
      "max_slots_per_pod: 2\nslot_type: cpu\nslot_resource_requests: {cpu: 1}\n";
  struct Case {
    Built built;
    std::string image, device;
  } cases[] = {
      {Build(TaskType::kExperiment, "resources: {slots: 4}\n" + env), "img:cuda", "cuda"},
      {Build(TaskType::kTensorboard, env, kMaster, {"tensorboard"}), "img:cpu", "cpu"},
      {Build(TaskType::kCommand, "resources: {slots: 2}\n" + env, cpu_master), "img:cpu", "cpu"},
      {Build(TaskType::kExperiment, "environment: {image: {gpu: img:gpu}}\n"), "img:gpu", ""},
      {Build(TaskType::kTensorboard, "environment: {image: {gpu: img:gpu}}\n", kMaster,
             {"tensorboard"}),
       std::string(kDefaultTaskImage), ""},
  };
  for (const Case& c : cases) {
    const json& pod = c.built.pods.at(0);
    EXPECT_EQ(pod["spec"]["containers"][0]["image"], c.image);
    EXPECT_EQ(EnvValue(pod, "DEVICE"), c.device) << c.image;
    EXPECT_EQ(EnvValue(pod, "NCCL_DEBUG"), c.device == "cuda" ? "INFO" : "") << c.image;
  }
}

// A null label or annotation deletes the default pod spec's of that key (and is dropped where there
// is none), as a null does anywhere in a strategic merge.
TEST(PodBuilderTest, NullLabelDeletesTheDefaultOne) {
  Built b = Build(TaskType::kExperiment, R"(
environment:
  pod_spec:
    metadata:
      labels: {customLabel: null, other: null}
      annotations: {note: null}
)");
  const json& meta = b.pods.at(0)["metadata"];
  EXPECT_FALSE(meta["labels"].contains("customLabel")) << meta;
  EXPECT_FALSE(meta["labels"].contains("other")) << meta;
  EXPECT_FALSE(meta.contains("annotations") && meta["annotations"].contains("note")) << meta;
}

TEST(PodBuilderTest, DefaultSchedulerLeavesPodsUngated) {
  Built b = Build(TaskType::kShell, "", "max_slots_per_pod: 4\ndefault_scheduler: default\n");
  const json& spec = b.pods[0]["spec"];
  EXPECT_FALSE(spec.contains("schedulingGates"));
  EXPECT_FALSE(spec.contains("schedulerName"));
  EXPECT_EQ(b.pods[0]["metadata"]["labels"]["phalanx.io/preemptible"], "false");
}

// A pool default pod spec that writes the history annotations itself (an admin's mistake): the
// master's values replace them, or remove them when the run has no history.
constexpr char kHistoryInDefaults[] = R"(
max_slots_per_pod: 4
task_container_defaults:
  gpu_pod_spec:
    metadata:
      annotations:
        phalanx.io/checkpointed-at: "2020-01-01T00:00:00Z"
        phalanx.io/preempted-at: "not a time"
        phalanx.io/expected-runtime: "1"
        phalanx.io/expected-runtime-basis: "the admin's guess"
        note: kept
)";

using phalanx::testing::Decoded;

// The run's history: the checkpoint time, and the newest core::kMaxPreemptionHistory preemption
// times oldest first, whatever order they came in, on every pod of the gang, as the extender reads
// them back.
TEST(PodBuilderTest, PodsCarryTheRunsHistoryForTheExtender) {
  Built b = Build(TaskType::kExperiment, "resources: {slots: 8}", kHistoryInDefaults);
  PodRequest r = RequestOf(b, TaskType::kExperiment);
  r.checkpoint_ms = 1764385475123;  // 2025-11-29T03:04:35.123Z
  std::vector<int64_t> newest;
  for (int64_t i = 20; i >= 1; --i) {  // Newest first, 20 of them.
    r.preempted_ms.push_back(1764300000000 + i * 60'000);
    if (i > 20 - core::kMaxPreemptionHistory) newest.insert(newest.begin(), r.preempted_ms.back());
  }
  r.expected_runtime_s = 5400;
  r.expected_runtime_basis = "resources.expected_runtime";
  const std::vector<json> pods = BuildPods(r, b.master);
  ASSERT_EQ(pods.size(), 2u);
  for (const json& pod : pods) {
    const json& annotations = pod["metadata"]["annotations"];
    EXPECT_EQ(annotations["phalanx.io/expected-runtime"], "5400");
    EXPECT_EQ(annotations["phalanx.io/expected-runtime-basis"], "resources.expected_runtime");
    EXPECT_EQ(Decoded(pod).expected_runtime_ms, 5'400'000);
    EXPECT_EQ(annotations["phalanx.io/checkpointed-at"], "2025-11-29T03:04:35.123+00:00");
    EXPECT_THAT(annotations["phalanx.io/preempted-at"].get<std::string>(),
                ::testing::StartsWith("2025-11-28T03:25:00.000+00:00,2025-11-28T03:26:00.000"));
    EXPECT_EQ(annotations["note"], "kept");
    const core::PodInfo info = Decoded(pod);
    EXPECT_EQ(info.contract_error, "");
    EXPECT_EQ(info.checkpoint_ms, r.checkpoint_ms);
    EXPECT_EQ(info.preempted_ms, newest);
  }
}

// A first run carries no history, nor an expected runtime it does not have, whatever the defaults
// say.
TEST(PodBuilderTest, PodsWithoutHistoryCarryNone) {
  Built b = Build(TaskType::kExperiment, "resources: {slots: 4}", kHistoryInDefaults);
  ASSERT_EQ(b.pods.size(), 1u);
  const json& annotations = b.pods[0]["metadata"]["annotations"];
  EXPECT_EQ(annotations, json({{"note", "kept"}}));
  const core::PodInfo info = Decoded(b.pods[0]);
  EXPECT_EQ(info.contract_error, "");
  EXPECT_EQ(info.checkpoint_ms, 0);
  EXPECT_TRUE(info.preempted_ms.empty());
  EXPECT_EQ(info.expected_runtime_ms, -1);
}

constexpr char kRendezvousMaster[] = R"(
max_slots_per_pod: 8
task_container_defaults: {gloo_port_range: "30000-30099", nccl_port_range: "31000:31999"}
resource_pools:
  - pool_name: default
    kubernetes_namespace: team-a
  - pool_name: own-ranges
    kubernetes_namespace: team-b
    task_container_defaults: {nccl_port_range: "32000"}
)";

// The pods of a run of `slots` slots under kRendezvousMaster, and its Service.
std::vector<json> RendezvousPods(int slots, const std::string& pool = "default") {
  return Build(TaskType::kExperiment,
               absl::StrCat("resources: {slots: ", slots, ", resource_pool: ", pool, "}\n"),
               kRendezvousMaster)
      .pods;
}

// A 16-slot trial at 8 slots per pod: both pods resolve through the run's Service by the names
// their env gives, and agree on everything but their rank.
TEST(RendezvousTest, PodsOfARunFindEachOtherThroughItsService) {
  const std::vector<json> pods = RendezvousPods(16);
  ASSERT_EQ(pods.size(), 2u);
  const json service = RunService("team-a", "exp-3-trial-7-r1", "exp-3");
  EXPECT_EQ(service["metadata"]["name"], "exp-3-trial-7-r1");
  EXPECT_EQ(service["metadata"]["namespace"], "team-a");
  EXPECT_EQ(service["spec"]["clusterIP"], "None");
  EXPECT_EQ(service["spec"]["publishNotReadyAddresses"], true);
  EXPECT_EQ(service["spec"]["ports"][0]["port"], kRendezvousPort);
  const std::string chief = "exp-3-trial-7-r1-0.exp-3-trial-7-r1.team-a.svc";
  for (int rank = 0; rank < 2; ++rank) {
    const json& pod = pods[rank];
    SCOPED_TRACE(pod["metadata"]["name"]);
    for (const auto& [key, value] : service["spec"]["selector"].items()) {
      EXPECT_EQ(pod["metadata"]["labels"][key], value) << key;
    }
    EXPECT_EQ(pod["spec"]["hostname"], pod["metadata"]["name"]);
    EXPECT_EQ(pod["spec"]["subdomain"], service["metadata"]["name"]);
    EXPECT_EQ(EnvValue(pod, "PHALANX_POD_RANK"), std::to_string(rank));
    EXPECT_EQ(EnvValue(pod, "PHALANX_NUM_PODS"), "2");
    EXPECT_EQ(EnvValue(pod, "PHALANX_SLOTS_PER_POD"), "8");
    EXPECT_EQ(EnvValue(pod, "PHALANX_WORLD_SIZE"), "16");
    EXPECT_EQ(EnvValue(pod, "PHALANX_CHIEF_ADDR"), chief);
    EXPECT_EQ(EnvValue(pod, "MASTER_ADDR"), chief);
    EXPECT_EQ(EnvValue(pod, "PHALANX_CHIEF_PORT"), "12355");
    EXPECT_EQ(EnvValue(pod, "MASTER_PORT"), "12355");
    EXPECT_EQ(EnvValue(pod, "PHALANX_PEER_ADDRS"),
              absl::StrCat(chief, ",exp-3-trial-7-r1-1.exp-3-trial-7-r1.team-a.svc"));
    EXPECT_EQ(EnvValue(pod, "GLOO_PORT_RANGE"), "30000:30099");
    EXPECT_EQ(EnvValue(pod, "NCCL_PORT_RANGE"), "31000:31999");
  }
}

// A run of one pod needs no Service: its chief is itself.
TEST(RendezvousTest, ARunOfOnePodIsItsOwnChief) {
  const std::vector<json> pods = RendezvousPods(4);
  ASSERT_EQ(pods.size(), 1u);
  EXPECT_FALSE(pods[0]["spec"].contains("hostname"));
  EXPECT_FALSE(pods[0]["spec"].contains("subdomain"));
  EXPECT_EQ(EnvValue(pods[0], "MASTER_ADDR"), "localhost");
  EXPECT_EQ(EnvValue(pods[0], "PHALANX_PEER_ADDRS"), "localhost");
  EXPECT_EQ(EnvValue(pods[0], "PHALANX_WORLD_SIZE"), "4");
  EXPECT_EQ(EnvValue(Build(TaskType::kTensorboard, "", kMaster, {}).pods[0], "PHALANX_WORLD_SIZE"),
            "1");
}

// A pool's range replaces the top-level one of its kind; the other kind falls back.
TEST(RendezvousTest, APoolsPortRangeReplacesTheTopLevelOne) {
  const std::vector<json> pods = RendezvousPods(16, "own-ranges");
  ASSERT_EQ(pods.size(), 2u);
  EXPECT_EQ(EnvValue(pods[1], "NCCL_PORT_RANGE"), "32000:32000");
  EXPECT_EQ(EnvValue(pods[1], "GLOO_PORT_RANGE"), "30000:30099");
  EXPECT_EQ(EnvValue(pods[1], "MASTER_ADDR"), "exp-3-trial-7-r1-0.exp-3-trial-7-r1.team-b.svc");
  EXPECT_EQ(
      EnvValue(Build(TaskType::kExperiment, "resources: {slots: 1}\n").pods[0], "NCCL_PORT_RANGE"),
      "");
}

TEST(PriorityClassTest, EveryPriorityHasAClassOfExactlyItsValue) {
  EXPECT_EQ(PriorityClassFor(50), "phalanx-medium-priority");
  EXPECT_EQ(PriorityClassFor(100), "phalanx-high-priority");
  EXPECT_EQ(PriorityClassFor(1), "phalanx-low-priority");
  EXPECT_EQ(PriorityClassFor(42), "phalanx-priority-42");
  EXPECT_EQ(PriorityClassFor(0), "phalanx-priority-0");
  for (int p : {0, 1, 42, 50, 100, 1000000}) EXPECT_EQ(PriorityOfClass(PriorityClassFor(p)), p);
  EXPECT_EQ(PriorityOfClass("custom"), std::nullopt);
  // Only the names PriorityClassFor gives: no other spelling of a value.
  for (const char* other : {"phalanx-priority-050", "phalanx-priority-50", "phalanx-priority-+7",
                            "phalanx-priority-", "phalanx-priority-x"}) {
    EXPECT_EQ(PriorityOfClass(other), std::nullopt) << other;
  }
}

}  // namespace
}  // namespace phalanx::master
