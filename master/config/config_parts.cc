// Shared config sections (see config_parts.h).
#include "master/config/config_parts.h"

#include <filesystem>

#include "absl/algorithm/container.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "kube/json.h"
#include "master/config/pod_spec_shape.h"

namespace phalanx::master {
namespace {

struct StorageType {
  absl::string_view type;
  std::vector<absl::string_view> required;
  std::vector<absl::string_view> optional;
};

const std::vector<StorageType>& StorageTypes() {
  static const auto* types = new std::vector<StorageType>{
      {"shared_fs", {"host_path"}, {"storage_path"}},
      {"s3", {"bucket"}, {"prefix", "access_key", "secret_key", "endpoint_url"}},
      {"gcs", {"bucket"}, {"prefix"}},
      {"azure", {"container"}, {"connection_string", "account_url", "credential"}},
  };
  return *types;
}

// `path` normalized, without a trailing separator ("/a//b/" → "/a/b"; "/" stays).
std::filesystem::path Normal(const std::filesystem::path& path) {
  std::filesystem::path p = path.lexically_normal();
  return p.has_filename() || !p.has_relative_path() ? p : p.parent_path();
}

// `storage_path` (relative to `host_path`, or absolute) as a path below `host_path`: "" for
// host_path itself; nullopt when it leads out of host_path.
std::optional<std::string> StorageSubdir(const std::string& host_path,
                                         const std::string& storage_path) {
  const std::filesystem::path root = Normal(host_path);
  const std::filesystem::path sub = Normal(root / storage_path).lexically_relative(root);
  if (sub.empty() || *sub.begin() == "..") return std::nullopt;
  return sub == "." ? "" : sub.string();
}

using EnvVars = std::vector<std::pair<std::string, std::string>>;

// Variables as a list of NAME=value (or one such string) or a mapping NAME: value.
absl::StatusOr<EnvVars> ParseEnvVars(const YamlMap& env, absl::string_view key) {
  EnvVars out;
  const std::string path = env.FieldPath(key);
  if (env.Get(key).IsMap()) {
    KUBE_ASSIGN_OR_RETURN(YamlMap vars, env.Map(key));
    for (const std::string& name : vars.Keys()) {
      KUBE_ASSIGN_OR_RETURN(std::optional<std::string> value, vars.String(name));
      out.emplace_back(name, value.value_or(""));
    }
    return out;
  }
  KUBE_ASSIGN_OR_RETURN(std::vector<std::string> list, env.StringList(key));
  for (size_t i = 0; i < list.size(); ++i) {
    size_t eq = list[i].find('=');
    if (eq == std::string::npos || eq == 0) {
      return FieldError(absl::StrCat(path, "[", i, "]"),
                        absl::StrCat("expected NAME=value, got \"", list[i], "\""));
    }
    out.emplace_back(list[i].substr(0, eq), list[i].substr(eq + 1));
  }
  return out;
}

constexpr absl::string_view kRetentionCounts[] = {"save_experiment_best", "save_trial_best",
                                                  "save_trial_latest"};

absl::Status CheckRetentionCounts(const YamlMap& cs) {
  for (absl::string_view key : kRetentionCounts) {
    KUBE_ASSIGN_OR_RETURN(std::optional<int64_t> count, cs.Int(key));
    if (count && *count < 0) {
      return FieldError(cs.FieldPath(key), absl::StrCat("must be >= 0, got ", *count));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ParseImage(const YamlMap& env, absl::string_view key) {
  KUBE_ASSIGN_OR_RETURN(std::optional<std::string> image, env.String(key));
  return image.value_or(std::string(kDefaultTaskImage));
}

// Field `key` of `env` for CPU and GPU tasks, each read with `parse`: one value for both, or, when
// `by_device`, Determined's mapping by device (see EnvironmentConfig).
template <typename T, typename Parse>
absl::Status ParseForDevices(const YamlMap& env, absl::string_view key, bool by_device, Parse parse,
                             T& cpu, T& gpu) {
  if (!by_device) {
    KUBE_ASSIGN_OR_RETURN(cpu, parse(env, key));
    gpu = cpu;
    return absl::OkStatus();
  }
  KUBE_ASSIGN_OR_RETURN(YamlMap devices, env.Map(key));
  KUBE_RETURN_IF_ERROR(devices.CheckKeys({"cpu", "cuda", "gpu", "rocm"}));
  if (devices.Has("cuda") && devices.Has("gpu")) {
    return FieldError(devices.FieldPath("gpu"), "the older name of cuda: set only one of them");
  }
  KUBE_ASSIGN_OR_RETURN(cpu, parse(devices, "cpu"));
  KUBE_ASSIGN_OR_RETURN(gpu, parse(devices, devices.Has("gpu") ? "gpu" : "cuda"));
  return absl::OkStatus();
}

// Variables by device: a mapping with a list among its values ({cpu: [A=1]}), which the NAME: value
// form cannot hold.
bool VariablesByDevice(const YAML::Node& vars) {
  if (!vars.IsMap()) return false;
  for (const auto& entry : vars) {
    if (entry.second.IsSequence()) return true;
  }
  return false;
}

absl::Status CheckSharedFs(const YamlMap& cs) {
  KUBE_ASSIGN_OR_RETURN(std::string host_path, cs.RequiredString("host_path"));
  if (!absl::StartsWith(host_path, "/")) {
    return FieldError(cs.FieldPath("host_path"),
                      absl::StrCat("must be an absolute path, got \"", host_path, "\""));
  }
  KUBE_ASSIGN_OR_RETURN(std::optional<std::string> storage_path, cs.String("storage_path"));
  if (storage_path && !StorageSubdir(host_path, *storage_path)) {
    return FieldError(
        cs.FieldPath("storage_path"),
        absl::StrCat("must lie inside host_path ", host_path, ", got \"", *storage_path, "\""));
  }
  return absl::OkStatus();
}

}  // namespace

std::optional<std::string> CheckpointContainerDir(const nlohmann::json& storage) {
  if (!storage.is_object() || storage.value("type", "") != "shared_fs") return std::nullopt;
  std::optional<std::string> sub =
      StorageSubdir(storage.value("host_path", ""), storage.value("storage_path", ""));
  if (!sub) return std::nullopt;
  return sub->empty() ? std::string(kSharedFsContainerPath)
                      : absl::StrCat(kSharedFsContainerPath, "/", *sub);
}

absl::StatusOr<std::vector<std::string>> ParseEntrypoint(const YamlMap& parent) {
  if (!parent.Has("entrypoint") || !parent.Get("entrypoint").IsScalar()) {
    return parent.StringList("entrypoint");
  }
  KUBE_ASSIGN_OR_RETURN(std::string line, parent.RequiredString("entrypoint"));
  return std::vector<std::string>{"sh", "-c", line};
}

absl::StatusOr<nlohmann::json> ParsePodSpec(const YamlMap& parent, absl::string_view key) {
  if (!parent.Has(key)) return nlohmann::json();
  KUBE_ASSIGN_OR_RETURN(YamlMap pod, parent.Map(key));
  KUBE_RETURN_IF_ERROR(pod.CheckKeys({"apiVersion", "kind", "metadata", "spec"}));
  KUBE_ASSIGN_OR_RETURN(std::optional<std::string> kind, pod.String("kind"));
  if (kind && *kind != "Pod") {
    return FieldError(pod.FieldPath("kind"), absl::StrCat("must be Pod, got \"", *kind, "\""));
  }
  KUBE_ASSIGN_OR_RETURN(std::optional<std::string> api, pod.String("apiVersion"));
  if (api && *api != "v1") {
    return FieldError(pod.FieldPath("apiVersion"), absl::StrCat("must be v1, got \"", *api, "\""));
  }
  for (absl::string_view object : {"metadata", "spec"}) {
    if (absl::StatusOr<YamlMap> m = pod.Map(object); !m.ok()) return m.status();
  }
  KUBE_ASSIGN_OR_RETURN(nlohmann::json json, parent.Json(key));
  KUBE_RETURN_IF_ERROR(CheckPodSpecShape(json, parent.FieldPath(key)));
  return json;
}

absl::StatusOr<nlohmann::json> ParseCheckpointStorage(const YamlMap& parent, absl::string_view key,
                                                      const nlohmann::json& inherited) {
  if (!parent.Has(key)) return inherited;
  KUBE_ASSIGN_OR_RETURN(YamlMap cs, parent.Map(key));
  KUBE_RETURN_IF_ERROR(CheckRetentionCounts(cs));
  if (!cs.Has("type")) {
    for (const std::string& k : cs.Keys()) {
      if (!absl::c_linear_search(kRetentionCounts, k)) {
        return FieldError(cs.FieldPath("type"),
                          "required unless only save_experiment_best, save_trial_best or "
                          "save_trial_latest are set");
      }
    }
    KUBE_ASSIGN_OR_RETURN(nlohmann::json counts, parent.Json(key));
    nlohmann::json storage = inherited;
    storage.update(counts);
    return storage;
  }
  KUBE_ASSIGN_OR_RETURN(std::string type, cs.RequiredString("type"));
  for (const StorageType& t : StorageTypes()) {
    if (t.type != type) continue;
    std::vector<absl::string_view> known = {"type"};
    known.insert(known.end(), t.required.begin(), t.required.end());
    known.insert(known.end(), t.optional.begin(), t.optional.end());
    known.insert(known.end(), std::begin(kRetentionCounts), std::end(kRetentionCounts));
    KUBE_RETURN_IF_ERROR(cs.CheckKeys(known));
    for (absl::string_view required : t.required) {
      if (absl::StatusOr<std::string> v = cs.RequiredString(required); !v.ok()) return v.status();
    }
    if (type == "azure" && !cs.Has("connection_string") && !cs.Has("account_url")) {
      return FieldError(cs.path(), "azure needs connection_string or account_url");
    }
    if (type == "shared_fs") KUBE_RETURN_IF_ERROR(CheckSharedFs(cs));
    return parent.Json(key);
  }
  return FieldError(cs.FieldPath("type"),
                    absl::StrCat("must be shared_fs, s3, gcs or azure, got \"", type, "\""));
}

absl::StatusOr<ResourcesConfig> ParseResources(const YamlMap& parent, absl::string_view slots_key,
                                               int default_slots) {
  KUBE_ASSIGN_OR_RETURN(YamlMap m, parent.Map("resources"));
  const bool experiment = slots_key == "slots_per_trial";
  KUBE_RETURN_IF_ERROR(
      experiment ? m.CheckKeys({"slots_per_trial", "priority", "resource_pool", "max_slots",
                                "expected_runtime"})
                 : m.CheckKeys({"slots", "priority", "resource_pool", "expected_runtime"}));
  ResourcesConfig r;
  KUBE_ASSIGN_OR_RETURN(std::optional<int64_t> slots, m.Int(slots_key));
  if (slots && (*slots < 0 || *slots > 100000)) {
    return FieldError(m.FieldPath(slots_key),
                      absl::StrCat("must be between 0 and 100000, got ", *slots));
  }
  r.slots = static_cast<int>(slots.value_or(default_slots));
  KUBE_ASSIGN_OR_RETURN(std::optional<int64_t> priority, m.Int("priority"));
  if (priority && (*priority < 0 || *priority > 1000000)) {
    return FieldError(m.FieldPath("priority"),
                      absl::StrCat("must be between 0 and 1000000, got ", *priority));
  }
  if (priority) r.priority = static_cast<int>(*priority);
  KUBE_ASSIGN_OR_RETURN(std::optional<std::string> pool, m.String("resource_pool"));
  r.resource_pool = pool.value_or("");
  KUBE_ASSIGN_OR_RETURN(std::optional<int64_t> max_slots, m.Int("max_slots"));
  if (max_slots && *max_slots < r.slots) {
    return FieldError(m.FieldPath("max_slots"),
                      absl::StrCat("must be >= ", slots_key, " (", r.slots, "), got ", *max_slots));
  }
  if (max_slots) r.max_slots = static_cast<int>(*max_slots);
  KUBE_ASSIGN_OR_RETURN(std::optional<std::string> runtime, m.String("expected_runtime"));
  if (runtime) {
    absl::StatusOr<absl::Duration> d = ParseConfigDuration(*runtime);
    if (!d.ok()) return FieldError(m.FieldPath("expected_runtime"), d.status().message());
    if (*d < absl::Seconds(1) || *d > kMaxExpectedRuntime) {
      return FieldError(m.FieldPath("expected_runtime"),
                        absl::StrCat("must be from 1s to 366 days, got \"", *runtime, "\""));
    }
    r.expected_runtime = *d;
  }
  return r;
}

absl::StatusOr<EnvironmentConfig> ParseEnvironment(const YamlMap& parent) {
  KUBE_ASSIGN_OR_RETURN(YamlMap m, parent.Map("environment"));
  KUBE_RETURN_IF_ERROR(m.CheckKeys({"image", "environment_variables", "pod_spec"}));
  EnvironmentConfig e;
  KUBE_RETURN_IF_ERROR(
      ParseForDevices(m, "image", m.Get("image").IsMap(), ParseImage, e.cpu.image, e.gpu.image));
  KUBE_RETURN_IF_ERROR(
      ParseForDevices(m, "environment_variables", VariablesByDevice(m.Get("environment_variables")),
                      ParseEnvVars, e.cpu.environment_variables, e.gpu.environment_variables));
  KUBE_ASSIGN_OR_RETURN(e.pod_spec, ParsePodSpec(m, "pod_spec"));
  return e;
}

absl::StatusOr<const ResourcePoolConfig*> ResolvePool(const MasterConfig& master,
                                                      ResourcesConfig& resources,
                                                      absl::string_view slots_field) {
  if (resources.resource_pool.empty()) {
    resources.resource_pool =
        resources.slots == 0 ? master.default_aux_pool : master.default_compute_pool;
  }
  const ResourcePoolConfig* pool = master.FindPool(resources.resource_pool);
  if (pool == nullptr) {
    return FieldError("resources.resource_pool",
                      absl::StrCat("no resource pool named \"", resources.resource_pool, "\""));
  }
  const int max = master.MaxSlotsPerPod(*pool);
  if (resources.slots > max && resources.slots % max != 0) {
    return FieldError(
        slots_field, absl::StrCat(resources.slots, " slots are not divisible by max_slots_per_pod ",
                                  max, " of resource pool \"", pool->name, "\": use at most ", max,
                                  " or a multiple of ", max));
  }
  return pool;
}

}  // namespace phalanx::master
