// The kinds of jobs the master runs, their names in the pod contract (label phalanx.io/task-type)
// and the prefixes of their ids ("exp-12", "cmd-7", "nb-3", "shell-2", "tb-1").
#ifndef PHALANX_MASTER_SPEC_TASK_TYPE_H_
#define PHALANX_MASTER_SPEC_TASK_TYPE_H_

#include <optional>

#include "absl/strings/string_view.h"

namespace phalanx::master {

enum class TaskType { kExperiment, kCommand, kNotebook, kShell, kTensorboard };

// "experiment", "command", "notebook", "shell", "tensorboard".
absl::string_view TaskTypeName(TaskType type);
std::optional<TaskType> TaskTypeFromName(absl::string_view name);
// "exp", "cmd", "nb", "shell", "tb".
absl::string_view IdPrefix(TaskType type);
// The type of the job numbered `job_id` ("exp-12": kExperiment); nullopt for no such id.
std::optional<TaskType> TaskTypeOfJobId(absl::string_view job_id);
// Slots of a task whose config sets none: 0 for TensorBoards, else 1.
int DefaultSlots(TaskType type);

}  // namespace phalanx::master

#endif  // PHALANX_MASTER_SPEC_TASK_TYPE_H_
