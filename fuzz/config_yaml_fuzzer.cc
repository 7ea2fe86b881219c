// Fuzzes the YAML -> config path: each input is read as master.yaml (ParseMasterConfig), and as a
// submitted experiment config and command config (ParseSubmittedExperiment, ParseSubmittedTask:
// what CreateExperiment and LaunchTask run, validate_only included), the last two against a fixed
// master.yaml with pools, pod specs and checkpoint storage. Beyond no
// crash, no undefined behaviour and no exception escaping, it asserts: errors are InvalidArgument;
// what an accepted experiment hands on (its data, searcher, hyperparameters, pod spec, storage and
// entrypoint) serialises as the master stores and sends it (dump() does not throw); a searcher
// CheckTrials accepts generates its trials (single and small random searches).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "master/config/config.h"
#include "master/spec/experiment_config.h"
#include "master/spec/searcher.h"
#include "master/spec/submission.h"
#include "master/spec/task_config.h"
#include "master/spec/task_type.h"
#include "nlohmann/json.hpp"

namespace {

using namespace phalanx::master;

const MasterConfig& Master() {
  static const MasterConfig* master = new MasterConfig(*ParseMasterConfig(R"(
max_slots_per_pod: 4
resource_pools:
  - pool_name: gpu
    task_container_defaults:
      gpu_pod_spec: {spec: {tolerations: [{key: gpu, operator: Exists}]}}
  - pool_name: cpu
default_aux_resource_pool: cpu
checkpoint_storage: {type: shared_fs, host_path: /mnt/ckpt, storage_path: phalanx}
task_container_defaults:
  cpu_pod_spec:
    spec:
      containers: [{name: determined-container, env: [{name: A, value: "1"}]}]
)"));
  return *master;
}

void Check(const absl::Status& status) {
  if (!status.ok() && !absl::IsInvalidArgument(status)) std::abort();
}

void CheckExperiment(const ExperimentConfig& c) {
  (void)c.data.dump();
  (void)c.searcher.ForTrials().dump();
  (void)c.environment.pod_spec.dump();
  (void)c.checkpoint_storage.dump();
  (void)nlohmann::json(c.entrypoint).dump();
  for (const auto& [path, h] : c.hyperparameters) {
    (void)h.val.dump();
    for (const nlohmann::json& v : h.vals) (void)v.dump();
  }
  if (!CheckTrials(c.searcher, c.hyperparameters).ok()) return;
  if (c.searcher.kind == SearcherConfig::Kind::kGrid || c.searcher.max_trials > 16) return;
  absl::StatusOr<std::vector<nlohmann::json>> trials =
      GenerateTrials(c.searcher, c.hyperparameters, c.seed.value_or(0));
  if (!trials.ok()) std::abort();
  for (const nlohmann::json& t : *trials) (void)t.dump();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view yaml(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<MasterConfig> master = ParseMasterConfig(yaml);
  Check(master.status());

  absl::StatusOr<ExperimentConfig> experiment = ParseSubmittedExperiment(yaml, Master());
  Check(experiment.status());
  if (experiment.ok()) CheckExperiment(*experiment);

  absl::StatusOr<TaskConfig> task = ParseSubmittedTask(yaml, TaskType::kCommand, {}, Master());
  Check(task.status());
  if (task.ok()) (void)task->environment.pod_spec.dump();
  return 0;
}
