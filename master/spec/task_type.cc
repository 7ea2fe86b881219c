// Names and id prefixes of task types (see task_type.h).
#include "master/spec/task_type.h"

#include <array>

namespace phalanx::master {
namespace {

struct TypeInfo {
  TaskType type;
  absl::string_view name;
  absl::string_view prefix;
};

constexpr std::array<TypeInfo, 5> kTypes = {{
    {TaskType::kExperiment, "experiment", "exp"},
    {TaskType::kCommand, "command", "cmd"},
    {TaskType::kNotebook, "notebook", "nb"},
    {TaskType::kShell, "shell", "shell"},
    {TaskType::kTensorboard, "tensorboard", "tb"},
}};

const TypeInfo& Info(TaskType type) { return kTypes[static_cast<int>(type)]; }

}  // namespace

absl::string_view TaskTypeName(TaskType type) { return Info(type).name; }
absl::string_view IdPrefix(TaskType type) { return Info(type).prefix; }
int DefaultSlots(TaskType type) { return type == TaskType::kTensorboard ? 0 : 1; }

std::optional<TaskType> TaskTypeFromName(absl::string_view name) {
  for (const TypeInfo& info : kTypes) {
    if (info.name == name) return info.type;
  }
  return std::nullopt;
}

std::optional<TaskType> TaskTypeOfJobId(absl::string_view job_id) {
  const size_t dash = job_id.rfind('-');
  if (dash == absl::string_view::npos) return std::nullopt;
  for (const TypeInfo& info : kTypes) {
    if (info.prefix == job_id.substr(0, dash)) return info.type;
  }
  return std::nullopt;
}

}  // namespace phalanx::master
