// Experiment and task configs: parsing, the slots-per-pod rule at submit time, searchers, and bad
// YAML failing with a message that names the field.
#include "master/spec/experiment_config.h"

#include <set>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/spec/searcher.h"
#include "master/spec/task_config.h"

namespace phalanx::master {
namespace {

using ::testing::HasSubstr;

MasterConfig Master() {
  return *ParseMasterConfig(R"(
max_slots_per_pod: 4
resource_pools:
  - pool_name: gpu
  - pool_name: big
    max_slots_per_pod: 8
  - pool_name: cpu
default_aux_resource_pool: cpu
checkpoint_storage: {type: s3, bucket: ckpt}
)");
}

TEST(ExperimentConfigTest, Parses) {
  absl::StatusOr<ExperimentConfig> c = ParseExperimentConfig(R"(
name: mnist
entrypoint: python3 train.py
hyperparameters:
  global_batch_size: 64
  lr: {type: log, base: 10, minval: -4, maxval: -1, count: 4}
  layers: {type: categorical, vals: [2, 3]}
searcher: {name: grid, metric: loss}
resources: {slots_per_trial: 8, priority: 42}
environment:
  image: pytorch:2
  environment_variables: [NCCL_DEBUG=TRACE]
  pod_spec:
    spec:
      priorityClassName: phalanx-high-priority
)",
                                                             Master());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->name, "mnist");
  EXPECT_EQ(c->entrypoint, (std::vector<std::string>{"sh", "-c", "python3 train.py"}));
  EXPECT_EQ(c->resources.slots, 8);
  EXPECT_EQ(c->resources.priority, 42);
  EXPECT_EQ(c->resources.resource_pool, "gpu");      // The compute pool.
  EXPECT_EQ(c->environment.gpu.image, "pytorch:2");  // One image for every device.
  EXPECT_EQ(c->environment.cpu.image, "pytorch:2");
  EXPECT_EQ(c->environment.gpu.environment_variables.at(0).first, "NCCL_DEBUG");
  EXPECT_EQ(c->environment.pod_spec["spec"]["priorityClassName"], "phalanx-high-priority");
  EXPECT_EQ(c->checkpoint_storage["bucket"], "ckpt");  // The master's.
  ASSERT_EQ(c->hyperparameters.size(), 3u);
  EXPECT_EQ(c->hyperparameters[0].first, HyperparameterPath{"global_batch_size"});  // Sorted.
  absl::StatusOr<std::vector<nlohmann::json>> trials =
      GenerateTrials(c->searcher, c->hyperparameters, 1);
  ASSERT_TRUE(trials.ok()) << trials.status();
  ASSERT_EQ(trials->size(), 8u);  // 4 lr x 2 layers.
  EXPECT_EQ((*trials)[0].dump(), R"({"global_batch_size":64,"layers":2,"lr":0.0001})");
  EXPECT_EQ((*trials)[7]["lr"], 0.1);
}

// The seeds' example experiment config (Determined's docs): `data` is the user's own, kept as
// written.
TEST(ExperimentConfigTest, ParsesTheSeedsExample) {
  absl::StatusOr<ExperimentConfig> c = ParseExperimentConfig(R"(
name: mnist_tf_const
data:
  base_url: https://s3-us-west-2.amazonaws.com/determined-ai-datasets/mnist/
  training_data: train-images-idx3-ubyte.gz
  training_labels: train-labels-idx1-ubyte.gz
  validation_set_size: 10000
hyperparameters:
  base_learning_rate: 0.001
  weight_cost: 0.0001
  global_batch_size: 64
  n_filters1: 40
  n_filters2: 40
searcher:
  name: single
  metric: error
  max_length:
    batches: 500
  smaller_is_better: true
environment:
  environment_variables:
    - A=A
    - B=B
)",
                                                             Master());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->data["training_data"], "train-images-idx3-ubyte.gz");
  EXPECT_EQ(c->data["validation_set_size"], 10000);
  EXPECT_TRUE(ParseExperimentConfig("data: [1, 2]\n", Master()).ok());
  EXPECT_TRUE(ParseExperimentConfig("name: x\n", Master())->data.is_null());
}

// max_restarts: Determined's default, 5, unless the config says otherwise.
// resources.expected_runtime: a duration ("90m", "1h30m") or whole seconds, for the forecast.
TEST(ExperimentConfigTest, ExpectedRuntime) {
  absl::StatusOr<ExperimentConfig> c =
      ParseExperimentConfig("resources: {expected_runtime: 1h30m}\n", Master());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->resources.expected_runtime, absl::Minutes(90));
  c = ParseExperimentConfig("resources: {expected_runtime: 600}\n", Master());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->resources.expected_runtime, absl::Minutes(10));
  c = ParseExperimentConfig("resources: {}\n", Master());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->resources.expected_runtime);
  absl::StatusOr<TaskConfig> t = ParseTaskConfig("resources: {expected_runtime: 2h}\n",
                                                 TaskType::kCommand, {"true"}, Master());
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->resources.expected_runtime, absl::Hours(2));
}

TEST(ExperimentConfigTest, MaxRestarts) {
  EXPECT_EQ(ParseExperimentConfig("name: x\n", Master())->max_restarts, 5);
  EXPECT_EQ(ParseExperimentConfig("max_restarts: 0\n", Master())->max_restarts, 0);
  EXPECT_EQ(ParseExperimentConfig("max_restarts: 12\n", Master())->max_restarts, 12);
}

// Determined's checkpoint retention counts: alone, they apply to the master's storage; with a type,
// to the experiment's own.
TEST(ExperimentConfigTest, CheckpointRetentionCounts) {
  absl::StatusOr<ExperimentConfig> c = ParseExperimentConfig(
      "checkpoint_storage: {save_trial_best: 2, save_experiment_best: 1, save_trial_latest: 0}\n",
      Master());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->checkpoint_storage, nlohmann::json::parse(R"({"type": "s3", "bucket": "ckpt",
      "save_trial_best": 2, "save_experiment_best": 1, "save_trial_latest": 0})"));
  c = ParseExperimentConfig(
      "checkpoint_storage: {type: gcs, bucket: own, prefix: p, save_trial_latest: 3}\n", Master());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->checkpoint_storage, nlohmann::json::parse(R"({"type": "gcs", "bucket": "own",
      "prefix": "p", "save_trial_latest": 3})"));
  // The master's own counts apply to its default storage alike.
  absl::StatusOr<MasterConfig> master =
      ParseMasterConfig("max_slots_per_pod: 4\ncheckpoint_storage: {save_trial_best: 5}\n");
  ASSERT_TRUE(master.ok()) << master.status();
  EXPECT_EQ(master->checkpoint_storage, nlohmann::json::parse(R"({"type": "shared_fs",
      "host_path": "/tmp/checkpoints", "save_trial_best": 5})"));
}

TEST(ExperimentConfigTest, RandomSearcherIsSeeded) {
  ExperimentConfig c = *ParseExperimentConfig(R"(
hyperparameters:
  lr: {type: double, minval: 0.1, maxval: 0.2}
  n: {type: int, minval: 1, maxval: 3}
searcher: {name: random, max_trials: 5}
)",
                                              Master());
  auto a = *GenerateTrials(c.searcher, c.hyperparameters, 7);
  auto b = *GenerateTrials(c.searcher, c.hyperparameters, 7);
  ASSERT_EQ(a.size(), 5u);
  EXPECT_EQ(a, b);
  for (const auto& t : a) {
    EXPECT_GE(t["lr"].get<double>(), 0.1);
    EXPECT_LE(t["n"].get<int>(), 3);
  }
}

TEST(ExperimentConfigTest, AdaptiveAshaAsDetermined) {
  ExperimentConfig c = *ParseExperimentConfig(R"(
hyperparameters:
  lr: {type: log, minval: -4, maxval: -1}
searcher:
  name: adaptive_asha
  metric: validation_loss
  smaller_is_better: false
  max_trials: 16
  max_length: {batches: 1000}
  num_rungs: 3
  divisor: 3
  mode: aggressive
  max_concurrent_trials: 4
)",
                                              Master());
  EXPECT_EQ(c.searcher.kind, SearcherConfig::Kind::kAdaptiveAsha);
  EXPECT_EQ(c.searcher.asha.max_trials, 16);
  EXPECT_EQ(c.searcher.asha.max_length, 1000);
  EXPECT_EQ(c.searcher.asha.max_rungs, 3);
  EXPECT_EQ(c.searcher.asha.divisor, 3);
  EXPECT_EQ(c.searcher.asha.mode, search::AshaMode::kAggressive);
  EXPECT_EQ(c.searcher.ForTrials()["name"], "adaptive_asha");
  EXPECT_EQ(c.searcher.ForTrials()["max_length"]["batches"], 1000);
  // Its trials are random samples, as many as max_trials.
  EXPECT_EQ(GenerateTrials(c.searcher, c.hyperparameters, 1)->size(), 16u);
  // Determined's defaults: divisor 4, max_rungs 5, standard.
  c = *ParseExperimentConfig(
      "searcher: {name: adaptive_asha, metric: l, max_trials: 2, max_length: 7}\n", Master());
  EXPECT_EQ(c.searcher.asha.max_length, 7);
  EXPECT_EQ(c.searcher.asha.divisor, 4);
  EXPECT_EQ(c.searcher.asha.max_rungs, 5);
  EXPECT_EQ(c.searcher.asha.mode, search::AshaMode::kStandard);
}

TEST(ExperimentConfigTest, SingleSearcherTakesMidpoints) {
  ExperimentConfig c = *ParseExperimentConfig(
      "hyperparameters: {n: {type: int, minval: 2, maxval: 6}, o: {type: const, val: adam}}\n",
      Master());
  auto trials = *GenerateTrials(c.searcher, c.hyperparameters, 0);
  ASSERT_EQ(trials.size(), 1u);
  EXPECT_EQ(trials[0].dump(), R"({"n":4,"o":"adam"})");
}

// Determined's nested hyperparameters: a mapping without `type` holds more of them. Searchers
// search the typed ones inside it, and trials get them nested as written.
TEST(ExperimentConfigTest, NestedHyperparametersAreSearched) {
  constexpr char kSpace[] = R"(
hyperparameters:
  layers: 2
  optimizer:
    lr: {type: double, minval: 0.001, maxval: 0.1, count: 3}
    momentum: 0.9
    kind: {type: categorical, vals: [sgd, adam]}
    betas: {b1: {type: const, val: 0.9}}
)";
  ExperimentConfig grid =
      *ParseExperimentConfig(std::string(kSpace) + "searcher: {name: grid}\n", Master());
  absl::StatusOr<std::vector<nlohmann::json>> trials =
      GenerateTrials(grid.searcher, grid.hyperparameters, 0);
  ASSERT_TRUE(trials.ok()) << trials.status();
  ASSERT_EQ(trials->size(), 6u);  // 2 kinds x 3 lr.
  EXPECT_EQ((*trials)[0].dump(),
            R"({"layers":2,"optimizer":{"betas":{"b1":0.9},"kind":"sgd","lr":0.001,)"
            R"("momentum":0.9}})");
  EXPECT_EQ((*trials)[5]["optimizer"]["kind"], "adam");
  EXPECT_EQ((*trials)[5]["optimizer"]["lr"], 0.1);

  ExperimentConfig random = *ParseExperimentConfig(
      std::string(kSpace) + "searcher: {name: random, max_trials: 20}\n", Master());
  trials = GenerateTrials(random.searcher, random.hyperparameters, 3);
  ASSERT_TRUE(trials.ok()) << trials.status();
  std::set<double> lrs;
  for (const nlohmann::json& t : *trials) {
    const double lr = t["optimizer"]["lr"].get<double>();
    EXPECT_GE(lr, 0.001);
    EXPECT_LE(lr, 0.1);
    lrs.insert(lr);
    EXPECT_EQ(t["optimizer"]["momentum"], 0.9);
  }
  EXPECT_GT(lrs.size(), 1u);
}

TEST(ExperimentConfigTest, PoolOverridesMaxSlotsPerPod) {
  EXPECT_TRUE(
      ParseExperimentConfig("resources: {slots_per_trial: 16, resource_pool: big}\n", Master())
          .ok());
  EXPECT_TRUE(ParseExperimentConfig("resources: {slots_per_trial: 3}\n", Master()).ok());
}

struct BadConfig {
  std::string name;
  std::string yaml;
  std::string message;
};

class BadExperimentConfigTest : public ::testing::TestWithParam<BadConfig> {};

TEST_P(BadExperimentConfigTest, FailsNamingTheField) {
  absl::StatusOr<ExperimentConfig> c = ParseExperimentConfig(GetParam().yaml, Master());
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(c.status().message()), HasSubstr(GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadExperimentConfigTest,
    ::testing::ValuesIn(std::vector<BadConfig>{
        {"NotDivisible", "resources: {slots_per_trial: 6}\n",
         "resources.slots_per_trial: 6 slots are not divisible by max_slots_per_pod 4 of "
         "resource pool \"gpu\""},
        {"NotDivisibleInPool", "resources: {slots_per_trial: 12, resource_pool: big}\n",
         "12 slots are not divisible by max_slots_per_pod 8 of resource pool \"big\""},
        {"UnknownPool", "resources: {resource_pool: tpu}\n",
         "resources.resource_pool: no resource pool named \"tpu\""},
        {"SlotsWrongType", "resources: {slots_per_trial: two}\n",
         "resources.slots_per_trial: expected an integer, got \"two\""},
        {"NegativeSlots", "resources: {slots_per_trial: -1}\n",
         "resources.slots_per_trial: must be between 0 and 100000, got -1"},
        {"TooManySlots", "resources: {slots_per_trial: 200000}\n",
         "resources.slots_per_trial: must be between 0 and 100000, got 200000"},
        {"TaskSlotsKey", "resources: {slots: 2}\n", "resources.slots: unknown field"},
        {"ExpectedRuntimeWord", "resources: {expected_runtime: soon}\n",
         "resources.expected_runtime: expected a duration such as 5m, 90s or 1h, got \"soon\""},
        {"ExpectedRuntimeZero", "resources: {expected_runtime: 0s}\n",
         "resources.expected_runtime: must be from 1s to 366 days, got \"0s\""},
        {"ExpectedRuntimeNegative", "resources: {expected_runtime: -5m}\n",
         "resources.expected_runtime: must not be negative"},
        {"ExpectedRuntimeTooLong", "resources: {expected_runtime: 9000h}\n",
         "resources.expected_runtime: must be from 1s to 366 days, got \"9000h\""},
        {"ExpectedRuntimeList", "resources: {expected_runtime: [1h]}\n",
         "resources.expected_runtime: expected a string"},
        {"NegativeMaxRestarts", "max_restarts: -1\n", "max_restarts: must be 0 to 1000000"},
        {"MaxRestartsType", "max_restarts: many\n", "max_restarts: expected an integer"},
        {"UnknownTopLevel", "name: x\nhyperparameter: {}\n", "hyperparameter: unknown field"},
        {"UnknownEnvironmentKey", "environment: {images: x}\n",
         "environment.images: unknown field"},
        {"PriorityType", "resources: {priority: high}\n",
         "resources.priority: expected an integer"},
        {"SearcherName", "searcher: {name: asha}\n",
         "searcher.name: must be single, grid, random or adaptive_asha"},
        {"RandomNeedsMaxTrials", "searcher: {name: random}\n",
         "searcher.max_trials: required for the random and adaptive_asha searchers"},
        {"GridMaxTrials", "searcher: {name: grid, max_trials: 5}\n",
         "searcher.max_trials: only for the random and adaptive_asha searchers"},
        {"SingleMaxTrials", "searcher: {max_trials: 2}\n",
         "searcher.max_trials: only for the random and adaptive_asha searchers"},
        {"AshaNeedsMaxTrials", "searcher: {name: adaptive_asha, metric: l, max_length: 9}\n",
         "searcher.max_trials: required"},
        {"AshaNeedsMaxLength", "searcher: {name: adaptive_asha, metric: l, max_trials: 9}\n",
         "searcher.max_length: required for adaptive_asha"},
        {"AshaNeedsMetric", "searcher: {name: adaptive_asha, max_trials: 9, max_length: 9}\n",
         "searcher.metric: required for adaptive_asha"},
        {"AshaMetricName",
         "searcher: {name: adaptive_asha, metric: val loss, max_trials: 9, max_length: 9}\n",
         "searcher.metric: a metric name is 1-128 of [A-Za-z0-9_./-]"},
        {"AshaLengthUnit",
         "searcher: {name: adaptive_asha, metric: l, max_trials: 9, max_length: {steps: 9}}\n",
         "searcher.max_length: the unit must be batches, records or epochs, got \"steps\""},
        {"AshaLengthZero",
         "searcher: {name: adaptive_asha, metric: l, max_trials: 9, max_length: {epochs: 0}}\n",
         "searcher.max_length: required for adaptive_asha: an integer from 1 to 10^12"},
        {"AshaLengthHuge",
         "searcher: {name: adaptive_asha, metric: l, max_trials: 9, max_length: 1e300}\n",
         "searcher.max_length: required for adaptive_asha: an integer from 1 to 10^12"},
        {"AshaDivisorOne",
         "searcher: {name: adaptive_asha, metric: l, max_trials: 9, max_length: 9, divisor: 1}\n",
         "searcher.divisor: must be > 1 and at most 100"},
        {"AshaDivisorNan",
         "searcher: {name: adaptive_asha, metric: l, max_trials: 9, max_length: 9, divisor: "
         ".nan}\n",
         "searcher.divisor: expected a number, got \".nan\""},
        {"AshaDivisorHuge",
         "searcher: {name: adaptive_asha, metric: l, max_trials: 9, max_length: 9, divisor: 1e9}\n",
         "searcher.divisor: must be > 1 and at most 100"},
        {"AshaRungs",
         "searcher: {name: adaptive_asha, metric: l, max_trials: 9, max_length: 9, max_rungs: 0}\n",
         "searcher.max_rungs: must be 1 to 20"},
        {"AshaRungsTwice",
         "searcher: {name: adaptive_asha, metric: l, max_trials: 9, max_length: 9, max_rungs: 2, "
         "num_rungs: 2}\n",
         "searcher.num_rungs: another name for max_rungs: give one of them"},
        {"AshaMode",
         "searcher: {name: adaptive_asha, metric: l, max_trials: 9, max_length: 9, mode: wild}\n",
         "searcher.mode: must be aggressive, standard or conservative, got \"wild\""},
        {"AshaKeyOnRandom", "searcher: {name: random, max_trials: 2, divisor: 3}\n",
         "searcher.divisor: only for the adaptive_asha searcher"},
        {"DuplicateKey", "resources: {slots_per_trial: 4}\nresources: {slots_per_trial: 8}\n",
         "resources: duplicate key"},
        {"NestedDuplicateKey",
         "environment:\n  pod_spec:\n    spec: {priorityClassName: a, priorityClassName: b}\n",
         "environment.pod_spec.spec.priorityClassName: duplicate key"},
        {"DuplicateKeyInList", "hyperparameters: {lr: {type: categorical, vals: [{a: 1, a: 2}]}}\n",
         "hyperparameters.lr.vals[0].a: duplicate key"},
        // Found by config_yaml_fuzzer: converting 3.67e112 to an int64 was undefined behaviour.
        {"IntRangeBeyondInt64", "hyperparameters: {n: {type: int, minval: 1, maxval: 3.67e112}}\n",
         "hyperparameters.n: minval and maxval must be integers within +-2^53 for type int"},
        {"IntRangeBeyondExactDoubles",
         "hyperparameters: {n: {type: int, minval: 1, maxval: 1152921504606846976}}\n",
         "hyperparameters.n: minval and maxval must be integers within +-2^53 for type int"},
        {"IntRangeNotWhole", "hyperparameters: {n: {type: int, minval: 1, maxval: 2.5}}\n",
         "hyperparameters.n: minval and maxval must be integers within +-2^53 for type int"},
        {"HpType", "hyperparameters: {lr: {type: float, minval: 1, maxval: 2}}\n",
         "hyperparameters.lr.type: must be const, int, double, log or categorical"},
        {"HpMissingMax", "hyperparameters: {lr: {type: double, minval: 1}}\n",
         "hyperparameters.lr.maxval: required"},
        {"NestedHpType", "hyperparameters: {opt: {lr: {type: float, minval: 1, maxval: 2}}}\n",
         "hyperparameters.opt.lr.type: must be const, int, double, log or categorical"},
        {"HpUnknownKey", "hyperparameters: {lr: {type: double, minval: 1, maxval: 2, step: 1}}\n",
         "hyperparameters.lr.step: unknown field"},
        {"EnvVarForm", "environment: {environment_variables: [NOEQUALS]}\n",
         "environment.environment_variables[0]: expected NAME=value"},
        {"PodSpecNotMap", "environment: {pod_spec: [1]}\n",
         "environment.pod_spec: expected a mapping"},
        {"PodSpecContainerName", "environment: {pod_spec: {spec: {containers: [{name: 1}]}}}\n",
         "environment.pod_spec.spec.containers[0].name: expected a string, got 1"},
        {"PodSpecContainerNameMissing",
         "environment: {pod_spec: {spec: {initContainers: [{image: x}]}}}\n",
         "environment.pod_spec.spec.initContainers[0].name: required"},
        {"PodSpecContainers", "environment: {pod_spec: {spec: {containers: 3}}}\n",
         "environment.pod_spec.spec.containers: expected a sequence, got 3"},
        {"PodSpecPriorityClass", "environment: {pod_spec: {spec: {priorityClassName: 5}}}\n",
         "environment.pod_spec.spec.priorityClassName: expected a string, got 5"},
        {"PodSpecGate", "environment: {pod_spec: {spec: {schedulingGates: [x]}}}\n",
         "environment.pod_spec.spec.schedulingGates[0]: expected a mapping, got \"x\""},
        {"PodSpecVolumeName", "environment: {pod_spec: {spec: {volumes: [{name: 2}]}}}\n",
         "environment.pod_spec.spec.volumes[0].name: expected a string, got 2"},
        {"PodSpecEnvName",
         "environment: {pod_spec: {spec: {containers: [{name: c, env: [{name: true}]}]}}}\n",
         "environment.pod_spec.spec.containers[0].env[0].name: expected a string, got true"},
        {"PodSpecMountPath",
         "environment: {pod_spec: {spec: {containers: [{name: c, volumeMounts: [{name: v}]}]}}}\n",
         "environment.pod_spec.spec.containers[0].volumeMounts[0].mountPath: required"},
        {"PodSpecResources",
         "environment: {pod_spec: {spec: {containers: [{name: c, resources: {limits: 4}}]}}}\n",
         "environment.pod_spec.spec.containers[0].resources.limits: expected a mapping, got 4"},
        {"PodSpecLabel", "environment: {pod_spec: {metadata: {labels: {version: 1}}}}\n",
         "environment.pod_spec.metadata.labels.version: expected a string (quote it), got 1"},
        {"PodSpecRetainKeys",
         "environment: {pod_spec: {spec: {volumes: [{name: v, $retainKeys: [name]}]}}}\n",
         "environment.pod_spec.spec.volumes[0].$retainKeys: unsupported patch directive"},
        {"PodSpecSetElementOrder",
         "environment: {pod_spec: {spec: {$setElementOrder/containers: [{name: a}]}}}\n",
         "environment.pod_spec.spec.$setElementOrder/containers: unsupported patch directive"},
        {"PodSpecPatchMerge", "environment: {pod_spec: {spec: {affinity: {$patch: merge}}}}\n",
         "environment.pod_spec.spec.affinity.$patch: must be replace or delete, got \"merge\""},
        {"StorageRetentionNegative", "checkpoint_storage: {save_trial_best: -1}\n",
         "checkpoint_storage.save_trial_best: must be >= 0, got -1"},
        {"StorageRetentionType",
         "checkpoint_storage: {type: s3, bucket: b, save_trial_latest: x}\n",
         "checkpoint_storage.save_trial_latest: expected an integer, got \"x\""},
        {"StorageWithoutType", "checkpoint_storage: {bucket: b, save_trial_best: 1}\n",
         "checkpoint_storage.type: required unless only save_experiment_best, save_trial_best or "
         "save_trial_latest are set"},
        {"ImageDevice", "environment: {image: {tpu: x}}\n",
         "environment.image.tpu: unknown field (known: cpu, cuda, gpu, rocm)"},
        {"ImageCudaAndGpu", "environment: {image: {cuda: a, gpu: b}}\n",
         "environment.image.gpu: the older name of cuda: set only one of them"},
        {"EnvVarDeviceForm", "environment: {environment_variables: {cuda: [NOEQUALS]}}\n",
         "environment.environment_variables.cuda[0]: expected NAME=value"},
        {"GridNeedsCounts",
         "hyperparameters: {lr: {type: double, minval: 1, maxval: 2}}\nsearcher: {name: grid}\n",
         "hyperparameters.lr.count: required for the grid searcher"},
        {"GridTooLarge",
         "hyperparameters: {a: {type: int, minval: 1, maxval: 200, count: 200}, b: {type: int, "
         "minval: 1, maxval: 200, count: 200}}\nsearcher: {name: grid}\n",
         "hyperparameters: the grid has more than 10000 trials"},
        {"MaxSlots", "resources: {slots_per_trial: 4, max_slots: 2}\n",
         "resources.max_slots: must be >= slots_per_trial (4)"},
        {"NotAMap", "- a\n- b\n", "config: expected a mapping"},
    }),
    [](const auto& info) { return info.param.name; });

TEST(TaskConfigTest, ZeroSlotTasksGoToTheAuxPool) {
  absl::StatusOr<TaskConfig> tb =
      ParseTaskConfig("", TaskType::kTensorboard, {"tensorboard", "--logdir=s3://ckpt"}, Master());
  ASSERT_TRUE(tb.ok()) << tb.status();
  EXPECT_EQ(tb->resources.slots, 0);
  EXPECT_EQ(tb->resources.resource_pool, "cpu");
  absl::StatusOr<TaskConfig> nb = ParseTaskConfig("", TaskType::kNotebook, {}, Master());
  ASSERT_TRUE(nb.ok()) << nb.status();
  EXPECT_EQ(nb->resources.resource_pool, "gpu");
}

TEST(TaskConfigTest, CommandsNeedAnEntrypoint) {
  absl::StatusOr<TaskConfig> c = ParseTaskConfig("", TaskType::kCommand, {}, Master());
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("entrypoint: required"));
  c = ParseTaskConfig("resources: {slots: 5}\n", TaskType::kCommand, {"sleep", "1"}, Master());
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(std::string(c.status().message()),
              HasSubstr("resources.slots: 5 slots are not divisible by max_slots_per_pod 4"));
}

// An entrypoint given as one string is a shell command line, run with sh -c as Determined runs it;
// a list is the command and its arguments. Kubernetes would exec the string as one file name.
TEST(TaskConfigTest, StringEntrypointRunsInAShell) {
  using Strings = std::vector<std::string>;
  const Strings shell = {"sh", "-c", "python3 train.py --epochs 3"};
  for (TaskType type :
       {TaskType::kCommand, TaskType::kNotebook, TaskType::kShell, TaskType::kTensorboard}) {
    absl::StatusOr<TaskConfig> c =
        ParseTaskConfig("entrypoint: python3 train.py --epochs 3\n", type, {}, Master());
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->entrypoint, shell) << TaskTypeName(type);
  }
  absl::StatusOr<ExperimentConfig> e =
      ParseExperimentConfig("entrypoint: python3 train.py --epochs 3\n", Master());
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->entrypoint, shell);
  e = ParseExperimentConfig("entrypoint: [python3, train.py, --epochs, '3']\n", Master());
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->entrypoint, (Strings{"python3", "train.py", "--epochs", "3"}));
}

// Without an entrypoint, notebooks, shells and TensorBoards run one that keeps serving; the
// TensorBoard reads the shared_fs checkpoint directory that task pods mount.
TEST(TaskConfigTest, DefaultEntrypointsKeepServing) {
  const MasterConfig master = *ParseMasterConfig(R"(
max_slots_per_pod: 4
checkpoint_storage: {type: shared_fs, host_path: /mnt/ckpt, storage_path: runs}
)");
  using Strings = std::vector<std::string>;
  const std::pair<TaskType, Strings> cases[] = {
      {TaskType::kNotebook,
       {"jupyter", "lab", "--ip=0.0.0.0", "--port=8888", "--no-browser", "--allow-root"}},
      {TaskType::kShell, {"sleep", "infinity"}},
      {TaskType::kTensorboard,
       {"tensorboard", "--host=0.0.0.0", "--port=6006", "--logdir=/determined_shared_fs/runs"}},
  };
  for (const auto& [type, want] : cases) {
    absl::StatusOr<TaskConfig> c = ParseTaskConfig("", type, {}, master);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->entrypoint, want) << TaskTypeName(type);
    c = ParseTaskConfig("entrypoint: [python3, serve.py]\n", type, {}, master);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->entrypoint, (Strings{"python3", "serve.py"})) << TaskTypeName(type);
    c = ParseTaskConfig("entrypoint: [python3, serve.py]\n", type, {"bash"}, master);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->entrypoint, Strings{"bash"}) << TaskTypeName(type);
  }
  // Object storage is not mounted: a TensorBoard of it needs its own entrypoint.
  absl::StatusOr<TaskConfig> tb = ParseTaskConfig("", TaskType::kTensorboard, {}, Master());
  ASSERT_FALSE(tb.ok());
  EXPECT_THAT(std::string(tb.status().message()),
              HasSubstr("entrypoint: required: the default TensorBoard reads shared_fs checkpoint "
                        "storage only, and the master's is s3"));
}

}  // namespace
}  // namespace phalanx::master
