// master.yaml parsing: the chart's rendering loads; bad configs fail naming the field; where task
// containers find shared_fs checkpoint storage.
#include "master/config/config.h"

#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/config/config_parts.h"

namespace phalanx::master {
namespace {

using ::testing::HasSubstr;

// A master.yaml in the form deploy/helm/phalanx/templates/master-config.yaml renders (toYaml sorts
// keys); tests/deploy/chart_test.py (RenderedConfigsLoad) feeds the chart's real renderings to
// phalanx-master --check-config.
constexpr char kChartConfig[] = R"(
auth:
  default_password: secret
checkpoint_storage:
  host_path: /tmp/checkpoints
  type: shared_fs
db:
  host: phalanx-db
  name: phalanx
  password: postgres
  port: 5432
  user: postgres
default_scheduler: phalanx
max_slots_per_pod: 4
pod_start_failure_timeout: 5m
port: 8080
preemption_timeout: 5m
resource_pools:
- kubernetes_namespace: default
  pool_name: default
- kubernetes_namespace: prod
  max_slots_per_pod: 8
  pool_name: prod_pool
  task_container_defaults:
    gpu_pod_spec:
      apiVersion: v1
      kind: Pod
      spec:
        tolerations:
        - key: pool_taint
          value: prod
slot_type: gpu
task_container_defaults:
  cpu_pod_spec:
    metadata:
      labels:
        customLabel: cpu-label
tls:
  cert: /etc/phalanx/tls/tls.crt
  key: /etc/phalanx/tls/tls.key
)";

TEST(MasterConfigTest, LoadsAConfigInTheChartsForm) {
  absl::StatusOr<MasterConfig> c = ParseMasterConfig(kChartConfig);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->port, 8080);
  EXPECT_EQ(c->db.host, "phalanx-db");
  EXPECT_EQ(c->max_slots_per_pod, 4);
  EXPECT_EQ(c->preemption_timeout, absl::Minutes(5));
  ASSERT_EQ(c->resource_pools.size(), 2u);
  const ResourcePoolConfig* prod = c->FindPool("prod_pool");
  ASSERT_NE(prod, nullptr);
  EXPECT_EQ(prod->ns, "prod");
  EXPECT_EQ(c->MaxSlotsPerPod(*prod), 8);
  EXPECT_EQ(c->MaxSlotsPerPod(c->resource_pools[0]), 4);
  EXPECT_EQ(c->DefaultPodSpec(*prod, true)["spec"]["tolerations"][0]["key"], "pool_taint");
  // The pool sets no CPU spec: the top-level one applies.
  EXPECT_EQ(c->DefaultPodSpec(*prod, false)["metadata"]["labels"]["customLabel"], "cpu-label");
  EXPECT_EQ(c->default_compute_pool, "default");
  EXPECT_EQ(c->default_aux_pool, "default");
  EXPECT_EQ(c->default_password, "secret");
  EXPECT_EQ(c->db.sslmode, "prefer");  // libpq's default when absent.
  ASSERT_TRUE(c->tls.has_value());
  EXPECT_EQ(c->tls->key, "/etc/phalanx/tls/tls.key");
}

// db.sslmode is read as written (store.cc passes it to libpq).
TEST(MasterConfigTest, DbSslModeAsWritten) {
  absl::StatusOr<MasterConfig> c =
      ParseMasterConfig("max_slots_per_pod: 4\ndb: {sslmode: verify-full}\n");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->db.sslmode, "verify-full");
}

// Task pods get the PEM they trust to reach the master: tls.ca's, else the certificate's.
TEST(MasterConfigTest, LoadReadsWhatTaskPodsTrust) {
  char dir[] = "/tmp/phalanx-config-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string d = dir;
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(d + "/" + name) << text;
    return d + "/" + name;
  };
  const std::string cert = write("tls.crt", "CERT PEM");
  const std::string ca = write("ca.crt", "CA PEM");
  const std::string base = "max_slots_per_pod: 4\ntls: {cert: " + cert + ", key: /k";
  absl::StatusOr<MasterConfig> c = LoadMasterConfig(write("a.yaml", base + "}\n"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->tls->task_trust_pem, "CERT PEM");
  c = LoadMasterConfig(write("b.yaml", base + ", ca: " + ca + "}\n"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->tls->task_trust_pem, "CA PEM");
  c = LoadMasterConfig(write("c.yaml", base + ", ca: " + d + "/missing}\n"));
  EXPECT_THAT(c.status().message(), ::testing::HasSubstr("c.yaml: tls.ca: "));
  std::system(("rm -rf " + d).c_str());
}

// Determined's forms of a port range, and one port, read as "MIN:MAX".
TEST(MasterConfigTest, PortRangesInEveryForm) {
  for (const auto& [written, read] :
       std::vector<std::pair<std::string, std::string>>{{"\"1024:2047\"", "1024:2047"},
                                                        {"1024-2047", "1024:2047"},
                                                        {"12355", "12355:12355"},
                                                        {"\"1:65535\"", "1:65535"}}) {
    absl::StatusOr<MasterConfig> c = ParseMasterConfig(absl::StrCat(
        "max_slots_per_pod: 4\ntask_container_defaults: {gloo_port_range: ", written, "}\n"));
    ASSERT_TRUE(c.ok()) << written << ": " << c.status();
    EXPECT_EQ(c->task_container_defaults.gloo_port_range, read) << written;
    EXPECT_EQ(c->task_container_defaults.nccl_port_range, "");
  }
}

TEST(MasterConfigTest, CpuSlots) {
  absl::StatusOr<MasterConfig> c = ParseMasterConfig(
      "max_slots_per_pod: 2\nslot_type: cpu\nslot_resource_requests: {cpu: 7.5}\n");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->slot_type, SlotType::kCpu);
  EXPECT_EQ(c->cpu_milli_per_slot, 7500);
  EXPECT_EQ(c->resource_pools.at(0).name, "default");
}

// metrics_server: the limits of the /metrics HTTP server; unset keys keep the server's defaults.
TEST(MasterConfigTest, MetricsServerLimits) {
  absl::StatusOr<MasterConfig> c = ParseMasterConfig(
      "max_slots_per_pod: 2\nmetrics_server: {max_connections: 50, idle_timeout_seconds: 95}\n");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->metrics_server.max_connections, 50);
  EXPECT_EQ(c->metrics_server.max_connections_per_peer, std::nullopt);
  EXPECT_EQ(c->metrics_server.idle_timeout_seconds, 95);
  c = ParseMasterConfig("max_slots_per_pod: 2\nmetrics_server: {max_connections_per_peer: 0}\n");
  EXPECT_THAT(c.status().message(),
              ::testing::HasSubstr("metrics_server.max_connections_per_peer: must be between 1"));
  c = ParseMasterConfig("max_slots_per_pod: 2\nmetrics_server: {max_conns: 5}\n");
  EXPECT_THAT(c.status().message(), ::testing::HasSubstr("max_conns"));
}

// How long a pod may fail to start a container before its run fails, and how long past its grace
// period a pod may stay terminating on a node that is down: 5m unless set.
TEST(MasterConfigTest, PodTimeouts) {
  for (auto [key, field] : std::vector<std::pair<std::string, absl::Duration MasterConfig::*>>{
           {"pod_start_failure_timeout", &MasterConfig::pod_start_failure_timeout},
           {"terminating_pod_timeout", &MasterConfig::terminating_pod_timeout}}) {
    absl::StatusOr<MasterConfig> c = ParseMasterConfig("max_slots_per_pod: 2\n");
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ((*c).*field, absl::Minutes(5)) << key;
    c = ParseMasterConfig(absl::StrCat("max_slots_per_pod: 2\n", key, ": 90\n"));
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ((*c).*field, absl::Seconds(90)) << key;
    c = ParseMasterConfig(absl::StrCat("max_slots_per_pod: 2\n", key, ": 0s\n"));
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ((*c).*field, absl::ZeroDuration()) << key;
  }
}

struct BadConfig {
  std::string name;
  std::string yaml;
  std::string message;
};

class BadMasterConfigTest : public ::testing::TestWithParam<BadConfig> {};

TEST_P(BadMasterConfigTest, FailsNamingTheField) {
  absl::StatusOr<MasterConfig> c = ParseMasterConfig(GetParam().yaml);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(c.status().message()), HasSubstr(GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadMasterConfigTest,
    ::testing::ValuesIn(std::vector<BadConfig>{
        {"MissingMaxSlots", "port: 8080\n", "max_slots_per_pod: required"},
        {"WrongType", "max_slots_per_pod: four\n",
         "max_slots_per_pod: expected an integer, got \"four\""},
        {"Zero", "max_slots_per_pod: 0\n", "max_slots_per_pod: must be between 1 and 1000000"},
        {"AboveCap", "max_slots_per_pod: 2000000\n",
         "max_slots_per_pod: must be between 1 and 1000000, got 2000000"},
        {"PortRange", "max_slots_per_pod: 4\nport: 70000\n",
         "port: must be between 1 and 65535, got 70000"},
        {"MetricsPortRange", "max_slots_per_pod: 4\nmetrics_port: 0\n",
         "metrics_port: must be between 1 and 65535, got 0"},
        {"DbPortRange", "max_slots_per_pod: 4\ndb: {port: 65536}\n",
         "db.port: must be between 1 and 65535, got 65536"},
        {"UnknownTopLevel", "max_slots_per_pod: 4\nmaxSlotsPerPod: 4\n",
         "maxSlotsPerPod: unknown field"},
        {"UnknownDbKey", "max_slots_per_pod: 4\ndb: {hostname: x}\n", "db.hostname: unknown field"},
        {"DbNotAMap", "max_slots_per_pod: 4\ndb: [1]\n", "db: expected a mapping"},
        {"DbSslModeUnknown", "max_slots_per_pod: 4\ndb: {sslmode: on}\n",
         "db.sslmode: must be one of disable, allow, prefer, require, verify-ca, verify-full, got "
         "\"on\""},
        {"DbSslModeNotAString", "max_slots_per_pod: 4\ndb: {sslmode: [require]}\n",
         "db.sslmode: expected a string"},
        {"BadSlotType", "max_slots_per_pod: 4\nslot_type: tpu\n",
         "slot_type: must be gpu or cpu, got \"tpu\""},
        {"CpuWithoutRequests", "max_slots_per_pod: 4\nslot_type: cpu\n",
         "slot_resource_requests.cpu: required when slot_type is cpu"},
        {"BadScheduler", "max_slots_per_pod: 4\ndefault_scheduler: coscheduler\n",
         "default_scheduler: must be phalanx or default"},
        {"BadTimeout", "max_slots_per_pod: 4\npreemption_timeout: soon\n",
         "preemption_timeout: expected a duration"},
        {"PodStartFailureTimeoutNotAString",
         "max_slots_per_pod: 4\npod_start_failure_timeout: [5m]\n",
         "pod_start_failure_timeout: expected a string, got a sequence"},
        {"PodStartFailureTimeoutNotADuration",
         "max_slots_per_pod: 4\npod_start_failure_timeout: soon\n",
         "pod_start_failure_timeout: expected a duration"},
        {"PodStartFailureTimeoutNegative", "max_slots_per_pod: 4\npod_start_failure_timeout: -1m\n",
         "pod_start_failure_timeout: must not be negative"},
        {"TerminatingPodTimeoutNotADuration",
         "max_slots_per_pod: 4\nterminating_pod_timeout: later\n",
         "terminating_pod_timeout: expected a duration"},
        {"PoolWithoutName", "max_slots_per_pod: 4\nresource_pools: [{kubernetes_namespace: x}]\n",
         "resource_pools[0].pool_name: required"},
        {"DuplicatePool",
         "max_slots_per_pod: 4\nresource_pools: [{pool_name: a}, {pool_name: a}]\n",
         "resource_pools[1].pool_name: \"a\" appears twice"},
        {"PoolNameNotALabelValue",
         "max_slots_per_pod: 4\nresource_pools: [{pool_name: A100 GPUs}]\n",
         "resource_pools[0].pool_name: must be 1-63 letters, digits, '-', '_' or '.', beginning "
         "and ending with a letter or digit (it labels the pool's pods), got \"A100 GPUs\""},
        {"PoolNameTooLong",
         absl::StrCat("max_slots_per_pod: 4\nresource_pools: [{pool_name: ", std::string(64, 'a'),
                      "}]\n"),
         "resource_pools[0].pool_name: must be 1-63 letters"},
        {"PoolNamespaceNotADnsLabel",
         "max_slots_per_pod: 4\nresource_pools: [{pool_name: a, kubernetes_namespace: Team_A}]\n",
         "resource_pools[0].kubernetes_namespace: must be a namespace name: 1-63 lowercase "
         "letters, digits or '-', beginning and ending with a letter or digit, got \"Team_A\""},
        {"PoolNamespaceEndsWithADash",
         "max_slots_per_pod: 4\nresource_pools: [{pool_name: a, kubernetes_namespace: ml-}]\n",
         "resource_pools[0].kubernetes_namespace: must be a namespace name"},
        {"PoolMaxSlots",
         "max_slots_per_pod: 4\nresource_pools: [{pool_name: a, max_slots_per_pod: -2}]\n",
         "resource_pools[0].max_slots_per_pod: must be between 1 and 1000000, got -2"},
        {"UnknownAuxPool", "max_slots_per_pod: 4\ndefault_aux_resource_pool: cpu\n",
         "default_aux_resource_pool: no resource pool named \"cpu\""},
        {"PodSpecKind",
         "max_slots_per_pod: 4\ntask_container_defaults: {gpu_pod_spec: {kind: Deployment}}\n",
         "task_container_defaults.gpu_pod_spec.kind: must be Pod"},
        {"PodSpecUnknownKey",
         "max_slots_per_pod: 4\ntask_container_defaults: {cpu_pod_spec: {containers: []}}\n",
         "task_container_defaults.cpu_pod_spec.containers: unknown field"},
        {"PoolPodSpecVolumeName",
         "max_slots_per_pod: 4\nresource_pools: [{pool_name: a, task_container_defaults: "
         "{gpu_pod_spec: {spec: {volumes: [{secret: {secretName: s}}]}}}}]\n",
         "resource_pools[0].task_container_defaults.gpu_pod_spec.spec.volumes[0].name: required"},
        {"GlooPortRangeReversed",
         "max_slots_per_pod: 4\ntask_container_defaults: {gloo_port_range: \"2000:1000\"}\n",
         "task_container_defaults.gloo_port_range: must be \"MIN:MAX\" (or \"MIN-MAX\", or one "
         "port), ports 1-65535 with MIN <= MAX, got \"2000:1000\""},
        {"NcclPortRangeAboveMax",
         "max_slots_per_pod: 4\ntask_container_defaults: {nccl_port_range: 1024-65536}\n",
         "task_container_defaults.nccl_port_range: must be \"MIN:MAX\""},
        {"PoolPortRangeNotAPort",
         "max_slots_per_pod: 4\nresource_pools: [{pool_name: a, task_container_defaults: "
         "{nccl_port_range: \"1:2:3\"}}]\n",
         "resource_pools[0].task_container_defaults.nccl_port_range: must be \"MIN:MAX\""},
        {"PortRangeSigned",
         "max_slots_per_pod: 4\ntask_container_defaults: {gloo_port_range: \"+1:2\"}\n",
         "task_container_defaults.gloo_port_range: must be"},
        {"StorageType", "max_slots_per_pod: 4\ncheckpoint_storage: {type: ftp}\n",
         "checkpoint_storage.type: must be shared_fs, s3, gcs or azure"},
        {"StorageBucket", "max_slots_per_pod: 4\ncheckpoint_storage: {type: s3}\n",
         "checkpoint_storage.bucket: required"},
        {"StorageRelativeHostPath",
         "max_slots_per_pod: 4\ncheckpoint_storage: {type: shared_fs, host_path: ckpt}\n",
         "checkpoint_storage.host_path: must be an absolute path, got \"ckpt\""},
        {"StoragePathOutsideHostPath",
         "max_slots_per_pod: 4\ncheckpoint_storage: {type: shared_fs, host_path: /mnt/ckpt, "
         "storage_path: ../etc}\n",
         "checkpoint_storage.storage_path: must lie inside host_path /mnt/ckpt, got \"../etc\""},
        {"StorageAbsolutePathOutsideHostPath",
         "max_slots_per_pod: 4\ncheckpoint_storage: {type: shared_fs, host_path: /mnt/ckpt, "
         "storage_path: /mnt/ckpt2}\n",
         "checkpoint_storage.storage_path: must lie inside host_path"},
        {"TlsKey", "max_slots_per_pod: 4\ntls: {cert: /a}\n", "tls.key: required"},
        {"Syntax", "max_slots_per_pod: [4\n", "invalid YAML at line"},
        {"DuplicateKey", "max_slots_per_pod: 4\nmax_slots_per_pod: 8\n",
         "max_slots_per_pod: duplicate key"},
        {"DuplicatePoolKey",
         "max_slots_per_pod: 4\nresource_pools: [{pool_name: a, pool_name: b}]\n",
         "resource_pools[0].pool_name: duplicate key"},
    }),
    [](const auto& info) { return info.param.name; });

// Task containers mount shared_fs storage at /determined_shared_fs and write below storage_path,
// which is relative to host_path or an absolute path inside it.
TEST(CheckpointContainerDirTest, IsTheMountPlusStoragePath) {
  using nlohmann::json;
  const struct {
    json storage;
    std::optional<std::string> want;
  } cases[] = {
      {{{"type", "shared_fs"}, {"host_path", "/tmp/checkpoints"}}, "/determined_shared_fs"},
      {{{"type", "shared_fs"}, {"host_path", "/mnt/c/"}, {"storage_path", "a/b/"}},
       "/determined_shared_fs/a/b"},
      {{{"type", "shared_fs"}, {"host_path", "/mnt/c"}, {"storage_path", "/mnt/c/x/../y"}},
       "/determined_shared_fs/y"},
      {{{"type", "shared_fs"}, {"host_path", "/mnt/c"}, {"storage_path", "/mnt/c"}},
       "/determined_shared_fs"},
      {{{"type", "shared_fs"}, {"host_path", "/mnt/c"}, {"storage_path", "../d"}}, std::nullopt},
      {{{"type", "s3"}, {"bucket", "b"}}, std::nullopt},
      {nullptr, std::nullopt},
  };
  for (const auto& c : cases) EXPECT_EQ(CheckpointContainerDir(c.storage), c.want) << c.storage;
}

TEST(ConfigDurationTest, Forms) {
  EXPECT_EQ(*ParseConfigDuration("90"), absl::Seconds(90));
  EXPECT_EQ(*ParseConfigDuration("1h30m"), absl::Minutes(90));
  EXPECT_FALSE(ParseConfigDuration("-5s").ok());
}

}  // namespace
}  // namespace phalanx::master
