// Parsing and validation of task configs (see task_config.h).
#include "master/spec/task_config.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "kube/json.h"
#include "master/yaml/yaml.h"
#include "nlohmann/json.hpp"

namespace phalanx::master {
namespace {

// The entrypoint of a task whose config and request give none.
absl::StatusOr<std::vector<std::string>> DefaultEntrypoint(TaskType type,
                                                           const MasterConfig& master) {
  switch (type) {
    case TaskType::kNotebook:
      return std::vector<std::string>{"jupyter",     "lab",          "--ip=0.0.0.0",
                                      "--port=8888", "--no-browser", "--allow-root"};
    case TaskType::kShell:
      return std::vector<std::string>{"sleep", "infinity"};
    case TaskType::kTensorboard: {
      const nlohmann::json& storage = master.checkpoint_storage;
      if (std::optional<std::string> dir = CheckpointContainerDir(storage)) {
        return std::vector<std::string>{"tensorboard", "--host=0.0.0.0", "--port=6006",
                                        absl::StrCat("--logdir=", *dir)};
      }
      return FieldError(
          "entrypoint",
          absl::StrCat("required: the default TensorBoard reads shared_fs checkpoint storage only, "
                       "and the master's is ",
                       storage.is_object() ? storage.value("type", "") : "unset"));
    }
    default:
      return FieldError("entrypoint", "required: the command to run");
  }
}

}  // namespace

absl::StatusOr<TaskConfig> ParseTaskConfig(absl::string_view yaml, TaskType type,
                                           const std::vector<std::string>& entrypoint,
                                           const MasterConfig& master) {
  KUBE_ASSIGN_OR_RETURN(YAML::Node node, ParseYaml(yaml));
  KUBE_ASSIGN_OR_RETURN(YamlMap root, YamlMap::Of(node, ""));
  KUBE_RETURN_IF_ERROR(root.CheckKeys({"description", "entrypoint", "resources", "environment"}));
  TaskConfig c;
  KUBE_ASSIGN_OR_RETURN(std::optional<std::string> description, root.String("description"));
  c.description = description.value_or(std::string(TaskTypeName(type)));
  KUBE_ASSIGN_OR_RETURN(c.entrypoint, ParseEntrypoint(root));
  if (!entrypoint.empty()) c.entrypoint = entrypoint;
  if (c.entrypoint.empty()) {
    KUBE_ASSIGN_OR_RETURN(c.entrypoint, DefaultEntrypoint(type, master));
  }
  KUBE_ASSIGN_OR_RETURN(c.resources, ParseResources(root, "slots", DefaultSlots(type)));
  KUBE_ASSIGN_OR_RETURN(c.environment, ParseEnvironment(root));
  absl::StatusOr<const ResourcePoolConfig*> pool =
      ResolvePool(master, c.resources, "resources.slots");
  if (!pool.ok()) return pool.status();
  return c;
}

absl::StatusOr<TaskConfig> ParseStoredTaskConfig(absl::string_view yaml, TaskType type,
                                                 const std::string& entrypoint_json,
                                                 const MasterConfig& master) {
  const nlohmann::json entrypoint = nlohmann::json::parse(entrypoint_json, nullptr, false);
  if (!entrypoint.is_array()) return absl::DataLossError("the stored entrypoint is not a list");
  return ParseTaskConfig(yaml, type, entrypoint.get<std::vector<std::string>>(), master);
}

}  // namespace phalanx::master
