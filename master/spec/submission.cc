// Checks of submitted configs (see submission.h).
#include "master/spec/submission.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "kube/json.h"
#include "master/policy/pod_spec_policy.h"
#include "master/yaml/utf8.h"
#include "master/yaml/yaml.h"

namespace phalanx::master {
namespace {

// Valid UTF-8 without control characters (C0, DEL, C1), but those in `allowed`.
absl::Status CheckText(absl::string_view path, absl::string_view text, absl::string_view allowed) {
  for (size_t i = 0; i < text.size();) {
    const size_t n = Utf8Length(text, i);
    if (n == 0) return FieldError(path, absl::StrCat("invalid UTF-8 at byte ", i));
    const unsigned char c = static_cast<unsigned char>(text[i]);
    const bool c1 = n == 2 && c == 0xC2 && static_cast<unsigned char>(text[i + 1]) < 0xA0;
    if (((n == 1 && (c < 0x20 || c == 0x7F)) || c1) && allowed.find(text[i]) == allowed.npos) {
      const unsigned code = c1 ? static_cast<unsigned char>(text[i + 1]) : c;
      return FieldError(
          path, absl::StrFormat("control character U+%04X at byte %d is not allowed", code, i));
    }
    i += n;
  }
  return absl::OkStatus();
}

absl::Status CheckConfigText(absl::string_view yaml) {
  if (yaml.size() > kMaxConfigBytes) {
    return FieldError("config", absl::StrCat(yaml.size(), " bytes, more than the limit of ",
                                             kMaxConfigBytes, " (what a pod can carry)"));
  }
  return CheckText("config", yaml, "\t\n\r");
}

absl::Status CheckName(absl::string_view field, absl::string_view value, size_t max) {
  if (value.size() > max) {
    return FieldError(field, absl::StrCat(value.size(), " bytes, more than the limit of ", max));
  }
  return CheckText(field, value, "");
}

absl::Status CheckEntrypoint(const std::vector<std::string>& entrypoint) {
  for (size_t i = 0; i < entrypoint.size(); ++i) {
    if (entrypoint[i].find('\0') != std::string::npos) {
      return FieldError(absl::StrCat("entrypoint[", i, "]"), "contains a NUL character");
    }
  }
  return absl::OkStatus();
}

// Rule 4 of submission.h on the pod spec of a job in pool `resources.resource_pool`.
absl::Status CheckPolicy(const ResourcesConfig& resources, const EnvironmentConfig& environment,
                         const MasterConfig& master) {
  const ResourcePoolConfig* pool = master.FindPool(resources.resource_pool);
  if (pool == nullptr) return absl::InternalError("the resolved pool is gone");
  const bool gpu = resources.slots > 0 && master.slot_type == SlotType::kGpu;
  return CheckPodSpecPolicy(environment.pod_spec, master.DefaultPodSpec(*pool, gpu),
                            "environment.pod_spec", pool->pod_spec_policy, pool->name);
}

}  // namespace

absl::StatusOr<ExperimentConfig> ParseSubmittedExperiment(absl::string_view yaml,
                                                          const MasterConfig& master) {
  KUBE_RETURN_IF_ERROR(CheckConfigText(yaml));
  KUBE_ASSIGN_OR_RETURN(ExperimentConfig c, ParseExperimentConfig(yaml, master));
  KUBE_RETURN_IF_ERROR(CheckName("name", c.name, kMaxNameBytes));
  KUBE_RETURN_IF_ERROR(CheckEntrypoint(c.entrypoint));
  if (const size_t data = c.data.dump().size(); data > kMaxConfigBytes) {
    return FieldError("data", absl::StrCat(data, " bytes as JSON (aliases expanded), more than ",
                                           "the limit of ", kMaxConfigBytes));
  }
  KUBE_RETURN_IF_ERROR(CheckExperimentPolicy(c, master));
  return c;
}

absl::Status CheckExperimentPolicy(const ExperimentConfig& c, const MasterConfig& master) {
  KUBE_RETURN_IF_ERROR(CheckPolicy(c.resources, c.environment, master));
  const ResourcePoolConfig& pool = *master.FindPool(c.resources.resource_pool);
  return CheckCheckpointStoragePolicy(c.checkpoint_storage, master.checkpoint_storage,
                                      "checkpoint_storage", pool.pod_spec_policy, pool.name);
}

absl::StatusOr<TaskConfig> ParseSubmittedTask(absl::string_view yaml, TaskType type,
                                              const std::vector<std::string>& entrypoint,
                                              const MasterConfig& master) {
  KUBE_RETURN_IF_ERROR(CheckConfigText(yaml));
  KUBE_RETURN_IF_ERROR(CheckEntrypoint(entrypoint));
  KUBE_ASSIGN_OR_RETURN(TaskConfig c, ParseTaskConfig(yaml, type, entrypoint, master));
  KUBE_RETURN_IF_ERROR(CheckName("description", c.description, kMaxDescriptionBytes));
  KUBE_RETURN_IF_ERROR(CheckEntrypoint(c.entrypoint));
  KUBE_RETURN_IF_ERROR(CheckPolicy(c.resources, c.environment, master));
  return c;
}

}  // namespace phalanx::master
