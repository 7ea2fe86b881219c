// Configs of commands, notebooks, shells and TensorBoards (YAML, may be empty): description,
// resources (slots, priority, resource_pool), environment and entrypoint. Validated like experiment
// configs: zero-slot tasks go to the aux pool, slots must suit the pool's max_slots_per_pod.
// Without an entrypoint, a command is an error and the others run a default that keeps serving:
//   notebook     jupyter lab --ip=0.0.0.0 --port=8888 --no-browser --allow-root (its token:
//                JUPYTER_TOKEN from environment_variables, else Jupyter's own, in the pod log)
//   tensorboard  tensorboard --host=0.0.0.0 --port=6006 --logdir=<checkpoint dir>: the master's
//                shared_fs storage as pod_builder.h mounts it (other storage types: an error)
//   shell        sleep infinity (kubectl exec into phalanx-container)
// The image must provide jupyter or tensorboard: the default image (kDefaultTaskImage) has neither.
#ifndef PHALANX_MASTER_SPEC_TASK_CONFIG_H_
#define PHALANX_MASTER_SPEC_TASK_CONFIG_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "master/config/config.h"
#include "master/config/config_parts.h"
#include "master/spec/task_type.h"

namespace phalanx::master {

struct TaskConfig {
  std::string description;
  std::vector<std::string> entrypoint;  // ParseEntrypoint's: a string runs with sh -c.
  ResourcesConfig resources;            // resource_pool resolved.
  EnvironmentConfig environment;
};

// `type` is not kExperiment. `entrypoint`, when not empty, replaces the config's.
absl::StatusOr<TaskConfig> ParseTaskConfig(absl::string_view yaml, TaskType type,
                                           const std::vector<std::string>& entrypoint,
                                           const MasterConfig& master);

// A stored task's config: its YAML and its entrypoint as the JSON array LaunchTask stored.
absl::StatusOr<TaskConfig> ParseStoredTaskConfig(absl::string_view yaml, TaskType type,
                                                 const std::string& entrypoint_json,
                                                 const MasterConfig& master);

}  // namespace phalanx::master

#endif  // PHALANX_MASTER_SPEC_TASK_CONFIG_H_
