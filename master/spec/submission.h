// What a user submits (CreateExperiment, LaunchTask, validate_only included), checked beyond what
// parsing a stored config checks, so that a job accepted once is never refused when read again:
//   1. the config text: at most kMaxConfigBytes (a pod carries the config's data and
//      hyperparameters in its environment, where one variable holds at most 128 KiB), valid
//      UTF-8, no control characters but tab, newline and carriage return;
//   2. the config parses (experiment_config.h, task_config.h; yaml_bounds.h bounds the YAML);
//   3. names: `name` at most kMaxNameBytes, `description` at most kMaxDescriptionBytes, both
//      without control characters; entrypoint items without NUL; `data` at most kMaxConfigBytes
//      as JSON;
//   4. the pool's pod-spec policy on environment.pod_spec and checkpoint_storage
//      (pod_spec_policy.h), checked again against the new pool when an experiment changes pools.
// Errors are InvalidArgument naming the field.
#ifndef PHALANX_MASTER_SPEC_SUBMISSION_H_
#define PHALANX_MASTER_SPEC_SUBMISSION_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "master/config/config.h"
#include "master/spec/experiment_config.h"
#include "master/spec/task_config.h"
#include "master/spec/task_type.h"

namespace phalanx::master {

inline constexpr size_t kMaxConfigBytes = 128 * 1024;
inline constexpr size_t kMaxNameBytes = 255;
inline constexpr size_t kMaxDescriptionBytes = 4096;

absl::StatusOr<ExperimentConfig> ParseSubmittedExperiment(absl::string_view yaml,
                                                          const MasterConfig& master);

// Rule 4 for experiment `c` in pool `c.resources.resource_pool`.
absl::Status CheckExperimentPolicy(const ExperimentConfig& c, const MasterConfig& master);

absl::StatusOr<TaskConfig> ParseSubmittedTask(absl::string_view yaml, TaskType type,
                                              const std::vector<std::string>& entrypoint,
                                              const MasterConfig& master);

}  // namespace phalanx::master

#endif  // PHALANX_MASTER_SPEC_SUBMISSION_H_
