// The pod-spec policy: parsing and the checks of submitted pod specs (see pod_spec_policy.h).
#include "master/policy/pod_spec_policy.h"

#include <filesystem>
#include <optional>
#include <string>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "kube/json.h"
#include "master/policy/pod_security_fields.h"
#include "master/policy/pod_volume_policy.h"
#include "master/policy/policy_refusal.h"
#include "master/policy/priority_classes.h"
#include "master/policy/strategic_merge.h"

namespace phalanx::master {
namespace {

using nlohmann::json;

// Whether a container of `list` named `name` is the task container (the pod builder's, or the
// seeds' name for it), which gets the job's slots.
bool IsTaskContainer(absl::string_view list, const nlohmann::json& name) {
  return list == "containers" && (name == "phalanx-container" || name == "determined-container");
}

// Whether resource `name` is a GPU (or another accelerator a slot stands for).
bool IsGpuResource(absl::string_view name) {
  return absl::StartsWith(name, "nvidia.com/") || absl::StartsWith(name, "amd.com/") ||
         absl::StartsWith(name, "gpu.intel.com/") || absl::EndsWith(name, "/gpu");
}

// Upper case without CAP_: "cap_sys_admin" and "SYS_ADMIN" are one capability.
std::string Capability(absl::string_view name) {
  std::string upper = absl::AsciiStrToUpper(name);
  absl::string_view v = upper;
  absl::ConsumePrefix(&v, "CAP_");
  return std::string(v);
}

// `path` without `.`, `..` and a trailing separator; nullopt unless absolute.
std::optional<std::filesystem::path> CleanPath(absl::string_view path) {
  if (!absl::StartsWith(path, "/")) return std::nullopt;
  std::filesystem::path p = std::filesystem::path(std::string(path)).lexically_normal();
  return p.has_filename() || !p.has_relative_path() ? p : p.parent_path();
}

// Whether `path` (clean, absolute) is `prefix` or lies below it.
bool Under(const std::filesystem::path& path, absl::string_view prefix) {
  std::optional<std::filesystem::path> root = CleanPath(prefix);
  if (!root) return false;
  const std::filesystem::path rel = path.lexically_relative(*root);
  return !rel.empty() && *rel.begin() != "..";
}

bool UnderAny(const std::filesystem::path& path, const std::vector<std::string>& prefixes) {
  return absl::c_any_of(prefixes, [&](const std::string& p) { return Under(path, p); });
}

// A list of absolute paths at `key`, normalized.
absl::Status ParsePaths(const YamlMap& m, absl::string_view key, std::vector<std::string>& out) {
  if (!m.Has(key)) return absl::OkStatus();
  KUBE_ASSIGN_OR_RETURN(std::vector<std::string> paths, m.StringList(key));
  out.clear();
  for (size_t i = 0; i < paths.size(); ++i) {
    std::optional<std::filesystem::path> p = CleanPath(paths[i]);
    if (!p) {
      return FieldError(absl::StrCat(m.FieldPath(key), "[", i, "]"),
                        absl::StrCat("must be an absolute path, got \"", paths[i], "\""));
    }
    out.push_back(p->string());
  }
  return absl::OkStatus();
}

// allowed_volume_types: Kubernetes volume sources, hostPath excepted (allowed_host_paths' alone).
absl::Status ParseVolumeTypes(const YamlMap& m, std::vector<std::string>& out) {
  constexpr absl::string_view kKey = "allowed_volume_types";
  if (!m.Has(kKey)) return absl::OkStatus();
  KUBE_ASSIGN_OR_RETURN(out, m.StringList(kKey));
  for (size_t i = 0; i < out.size(); ++i) {
    const std::string at = absl::StrCat(m.FieldPath(kKey), "[", i, "]");
    if (out[i] == "hostPath") {
      return FieldError(at, "hostPath volumes are allowed by allowed_host_paths alone");
    }
    if (!IsVolumeSource(out[i])) {
      return FieldError(at, absl::StrCat("\"", out[i],
                                         "\" is not a Kubernetes volume source (as spelled in a "
                                         "volume: nfs, persistentVolumeClaim, configMap, ...)"));
    }
  }
  return absl::OkStatus();
}

absl::Status ParseFlag(const YamlMap& m, absl::string_view key, bool& out) {
  KUBE_ASSIGN_OR_RETURN(std::optional<bool> v, m.Bool(key));
  if (v) out = *v;
  return absl::OkStatus();
}

// Rule 0: the first strategic-merge directive key in `v` (at `path`) is refused.
absl::Status NoMergeDirectives(const json& v, const std::string& path) {
  if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i) {
      KUBE_RETURN_IF_ERROR(NoMergeDirectives(v[i], absl::StrCat(path, "[", i, "]")));
    }
  }
  if (!v.is_object()) return absl::OkStatus();
  for (const auto& [key, value] : v.items()) {
    const std::string at = absl::StrCat(path, ".", key);
    if (IsMergeDirective(key)) {
      return PolicyRefusal::Never(
          at,
          "a pod spec may not delete or replace what the pool's default pod spec sets; no "
          "key allows strategic-merge directives");
    }
    KUBE_RETURN_IF_ERROR(NoMergeDirectives(value, at));
  }
  return absl::OkStatus();
}

// Checks one pod spec against one policy in one pool.
class Checker : public PolicyRefusal {
 public:
  Checker(const PodSpecPolicy& policy, absl::string_view pool)
      : PolicyRefusal(pool), policy_(policy) {}

  absl::Status Metadata(const json& meta, const std::string& path) const {
    if (!meta.is_object()) return absl::OkStatus();
    for (const auto& [key, value] : meta.items()) {
      const std::string at = absl::StrCat(path, ".", key);
      if (key == "labels" || key == "annotations") {
        KUBE_RETURN_IF_ERROR(NoPhalanxKeys(value, at));
        if (key == "annotations") {
          KUBE_RETURN_IF_ERROR(CheckProfileAnnotations(value, at, policy_, *this));
        }
      } else if (key != "name" && key != "namespace" && key != "generateName") {
        return Never(at, "a pod spec's metadata may carry labels and annotations only");
      }
    }
    return absl::OkStatus();
  }

  absl::Status Spec(const json& spec, const std::string& path) const {
    if (!spec.is_object()) return absl::OkStatus();
    for (const char* ns : {"hostNetwork", "hostPID", "hostIPC"}) {
      if (IsTrue(spec, ns) && !policy_.allow_host_namespaces) {
        return Refuse(absl::StrCat(path, ".", ns), "allow_host_namespaces");
      }
    }
    KUBE_RETURN_IF_ERROR(Placement(spec, path));
    KUBE_RETURN_IF_ERROR(ServiceAccount(spec, path));
    KUBE_RETURN_IF_ERROR(HostPaths(spec, path));
    KUBE_RETURN_IF_ERROR(CheckVolumeTypes(spec, path, policy_, *this));
    const json& security = JsonField(spec, "securityContext");
    KUBE_RETURN_IF_ERROR(RunAsUser(security, path + ".securityContext"));
    KUBE_RETURN_IF_ERROR(SecretVolumes(spec, path));
    KUBE_RETURN_IF_ERROR(NoGpus(JsonField(spec, "resources"), path + ".resources"));
    KUBE_RETURN_IF_ERROR(
        CheckPodSecurityFields(security, path + ".securityContext", policy_, *this));
    for (absl::string_view list : kContainerLists) {
      const json& containers = JsonField(spec, list);
      if (!containers.is_array()) continue;
      for (size_t i = 0; i < containers.size(); ++i) {
        const json& c = containers[i];
        KUBE_RETURN_IF_ERROR(Container(c, absl::StrCat(path, ".", list, "[", i, "]"),
                                       IsTaskContainer(list, JsonField(c, "name"))));
      }
    }
    return absl::OkStatus();
  }

 private:
  static bool IsTrue(const json& parent, absl::string_view key) {
    return JsonField(parent, key) == true;
  }
  static bool IsSet(const json& v) { return !v.is_null() && v != "" && v != 0; }

  static absl::Status NoPhalanxKeys(const json& map, const std::string& path) {
    if (!map.is_object()) return absl::OkStatus();
    for (const auto& [key, value] : map.items()) {
      const absl::string_view prefix = absl::string_view(key).substr(0, key.find('/'));
      if (key.find('/') != std::string::npos &&
          (prefix == "phalanx.io" || absl::EndsWith(prefix, ".phalanx.io"))) {
        return Never(absl::StrCat(path, ".", key),
                     "phalanx.io/ labels and annotations are written by phalanx only");
      }
      if (prefix == "app.kubernetes.io") {
        return Never(absl::StrCat(path, ".", key),
                     "app.kubernetes.io/ labels and annotations identify the chart's components");
      }
    }
    return absl::OkStatus();
  }

  // Rules 4-7: where and in which order the pod runs is the master's and the scheduler's.
  static absl::Status Placement(const json& spec, const std::string& path) {
    if (IsSet(JsonField(spec, "nodeName"))) {
      return Never(path + ".nodeName", "the scheduler places pods");
    }
    const json& scheduler = JsonField(spec, "schedulerName");
    if (IsSet(scheduler) && !IsSeedSchedulerName(scheduler)) {
      return Never(path + ".schedulerName",
                   "the master names the scheduler; only Determined's coscheduler and "
                   "preemption are accepted, and replaced");
    }
    const json& gates = JsonField(spec, "schedulingGates");
    if (gates.is_array() && !gates.empty()) {
      return Never(path + ".schedulingGates[0]", "scheduling gates are the master's");
    }
    const json& cls = JsonField(spec, "priorityClassName");
    if (cls.is_string() && !cls.get_ref<const std::string&>().empty() &&
        !PriorityOfClass(MapSeedPriorityClass(cls.get<std::string>()))) {
      return Never(path + ".priorityClassName",
                   absl::StrCat("\"", cls.get<std::string>(),
                                "\" is not a phalanx task class: phalanx-high-priority, "
                                "phalanx-medium-priority, phalanx-low-priority, "
                                "phalanx-priority-<priority> or Determined's "
                                "determined-{high,medium,low}-priority"));
    }
    return absl::OkStatus();
  }

  absl::Status ServiceAccount(const json& spec, const std::string& path) const {
    for (const char* key : {"serviceAccountName", "serviceAccount"}) {
      const json& name = JsonField(spec, key);
      if (!name.is_string() || name == "" || name == "default") continue;
      if (!absl::c_linear_search(policy_.allowed_service_accounts, name.get<std::string>())) {
        return NotListed(absl::StrCat(path, ".", key), name.get<std::string>(),
                         "allowed_service_accounts");
      }
    }
    if (IsTrue(spec, "automountServiceAccountToken") &&
        !policy_.allow_automount_service_account_token) {
      return Refuse(path + ".automountServiceAccountToken",
                    "allow_automount_service_account_token");
    }
    return absl::OkStatus();
  }

  absl::Status HostPaths(const json& spec, const std::string& path) const {
    const json& volumes = JsonField(spec, "volumes");
    if (!volumes.is_array()) return absl::OkStatus();
    for (size_t i = 0; i < volumes.size(); ++i) {
      const json& host_path = JsonField(volumes[i], "hostPath");
      if (host_path.is_null()) continue;
      const std::string at = absl::StrCat(path, ".volumes[", i, "].hostPath.path");
      const json& p = JsonField(host_path, "path");
      const std::string text = JsonText(p);
      std::optional<std::filesystem::path> clean = CleanPath(text);
      if (!clean || !UnderAny(*clean, policy_.allowed_host_paths)) {
        return NotListed(at, text, "allowed_host_paths");
      }
    }
    return absl::OkStatus();
  }

  absl::Status SecretName(const json& name, const std::string& path) const {
    const std::string text = JsonText(name);
    if (absl::c_linear_search(policy_.allowed_secrets, text)) return absl::OkStatus();
    return NotListed(path, text, "allowed_secrets");
  }

  absl::Status SecretVolumes(const json& spec, const std::string& path) const {
    const json& volumes = JsonField(spec, "volumes");
    for (size_t i = 0; volumes.is_array() && i < volumes.size(); ++i) {
      const std::string at = absl::StrCat(path, ".volumes[", i, "]");
      const json& secret = JsonField(volumes[i], "secret");
      if (!secret.is_null()) {
        KUBE_RETURN_IF_ERROR(
            SecretName(JsonField(secret, "secretName"), at + ".secret.secretName"));
      }
      const json& sources = JsonField(JsonField(volumes[i], "projected"), "sources");
      for (size_t j = 0; sources.is_array() && j < sources.size(); ++j) {
        const std::string src = absl::StrCat(at, ".projected.sources[", j, "]");
        if (const json& s = JsonField(sources[j], "secret"); !s.is_null()) {
          KUBE_RETURN_IF_ERROR(SecretName(JsonField(s, "name"), src + ".secret.name"));
        }
        if (!JsonField(sources[j], "serviceAccountToken").is_null() &&
            !policy_.allow_automount_service_account_token) {
          return Refuse(src + ".serviceAccountToken", "allow_automount_service_account_token");
        }
      }
    }
    return absl::OkStatus();
  }

  // Rule 16a.
  absl::Status SecretEnv(const json& c, const std::string& path) const {
    const json& env = JsonField(c, "env");
    for (size_t j = 0; env.is_array() && j < env.size(); ++j) {
      const json& ref = JsonField(JsonField(env[j], "valueFrom"), "secretKeyRef");
      if (!ref.is_null()) {
        KUBE_RETURN_IF_ERROR(
            SecretName(JsonField(ref, "name"),
                       absl::StrCat(path, ".env[", j, "].valueFrom.secretKeyRef.name")));
      }
      const json& name = JsonField(env[j], "name");
      if (name == "NVIDIA_VISIBLE_DEVICES" || name == "NVIDIA_DRIVER_CAPABILITIES") {
        return Never(absl::StrCat(path, ".env[", j, "].name"),
                     "the master sets which GPUs a pod sees");
      }
    }
    const json& from = JsonField(c, "envFrom");
    for (size_t j = 0; from.is_array() && j < from.size(); ++j) {
      const json& ref = JsonField(from[j], "secretRef");
      if (!ref.is_null()) {
        KUBE_RETURN_IF_ERROR(SecretName(JsonField(ref, "name"),
                                        absl::StrCat(path, ".envFrom[", j, "].secretRef.name")));
      }
    }
    return absl::OkStatus();
  }

  // Rule 11b and the GPU half of 16b: `resources` asks for no GPU.
  static absl::Status NoGpus(const json& resources, const std::string& path) {
    for (const char* kind : {"requests", "limits"}) {
      const json& amounts = JsonField(resources, kind);
      if (!amounts.is_object()) continue;
      for (const auto& [name, value] : amounts.items()) {
        if (IsGpuResource(name)) {
          return Never(absl::StrCat(path, ".", kind, ".", name),
                       "GPUs are the job's slots (resources.slots_per_trial or slots), given to "
                       "phalanx-container");
        }
      }
    }
    return absl::OkStatus();
  }

  absl::Status RunAsUser(const json& security, const std::string& path) const {
    if (JsonField(security, "runAsUser") == 0 && !policy_.allow_run_as_root) {
      return Refuse(path + ".runAsUser", "allow_run_as_root");
    }
    return absl::OkStatus();
  }

  absl::Status Container(const json& c, const std::string& path, bool task) const {
    const json& security = JsonField(c, "securityContext");
    const std::string sc = path + ".securityContext";
    if (IsTrue(security, "privileged") && !policy_.allow_privileged) {
      return Refuse(sc + ".privileged", "allow_privileged");
    }
    if (IsTrue(security, "allowPrivilegeEscalation") && !policy_.allow_privilege_escalation) {
      return Refuse(sc + ".allowPrivilegeEscalation", "allow_privilege_escalation");
    }
    const json& add = JsonField(JsonField(security, "capabilities"), "add");
    for (size_t i = 0; add.is_array() && i < add.size(); ++i) {
      const std::string name = JsonText(add[i]);
      if (!absl::c_linear_search(policy_.allowed_capabilities, Capability(name))) {
        return NotListed(absl::StrCat(sc, ".capabilities.add[", i, "]"), name,
                         "allowed_capabilities");
      }
    }
    KUBE_RETURN_IF_ERROR(RunAsUser(security, sc));
    const json& ports = JsonField(c, "ports");
    for (size_t i = 0; ports.is_array() && i < ports.size(); ++i) {
      if (IsSet(JsonField(ports[i], "hostPort")) && !policy_.allow_host_ports) {
        return Refuse(absl::StrCat(path, ".ports[", i, "].hostPort"), "allow_host_ports");
      }
    }
    KUBE_RETURN_IF_ERROR(SecretEnv(c, path));
    if (!task) {
      KUBE_RETURN_IF_ERROR(NoGpus(JsonField(c, "resources"), path + ".resources"));
    }
    KUBE_RETURN_IF_ERROR(CheckContainerSecurityFields(security, sc, policy_, *this));
    return CheckMountPropagation(c, path, policy_, *this);
  }

  const PodSpecPolicy& policy_;
};

// Rule 17 on the user's `pod` and `merged`, it merged over the default one.
absl::Status CheckNonRoot(const json& pod, const json& merged, absl::string_view path,
                          const Checker& checker) {
  const json pod_level = merged.value("/spec/securityContext/runAsNonRoot"_json_pointer, json());
  const std::string pod_path = absl::StrCat(path, ".spec.securityContext.runAsNonRoot");
  bool task_container = false;
  for (absl::string_view list : kContainerLists) {
    const json::json_pointer at(absl::StrCat("/spec/", list));
    if (!merged.contains(at) || !merged[at].is_array()) continue;
    for (const json& c : merged[at]) {
      if (!c.is_object()) continue;
      const std::string name = c.value("name", "");
      task_container = task_container || IsTaskContainer(list, name);
      const json own = c.value("/securityContext/runAsNonRoot"_json_pointer, json());
      if ((own.is_null() ? pod_level : own) == true) continue;
      const std::optional<size_t> i =
          FindItem(JsonField(JsonField(pod, "spec"), list), "name", json(name));
      return checker.Refuse(
          i ? absl::StrCat(path, ".spec.", list, "[", *i, "].securityContext.runAsNonRoot")
            : pod_path,
          "allow_run_as_root");
    }
  }
  if (!task_container && pod_level != true) return checker.Refuse(pod_path, "allow_run_as_root");
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<PodSpecPolicy> ParsePodSpecPolicy(const YamlMap& parent, absl::string_view key,
                                                 const PodSpecPolicy& base) {
  KUBE_ASSIGN_OR_RETURN(YamlMap m, parent.Map(key));
  KUBE_RETURN_IF_ERROR(
      m.CheckKeys({"allow_privileged", "allow_privilege_escalation", "allowed_capabilities",
                   "allow_host_namespaces", "allow_host_ports", "allowed_host_paths",
                   "allowed_service_accounts", "allow_automount_service_account_token",
                   "allow_run_as_root", "allowed_shared_fs_host_paths", "allowed_secrets",
                   "allowed_volume_types", "host_paths_read_only", "allow_unconfined_profiles",
                   "allow_custom_selinux", "allowed_sysctls"}));
  PodSpecPolicy p = base;
  for (const auto& [name, flag] : std::initializer_list<std::pair<absl::string_view, bool*>>{
           {"allow_privileged", &p.allow_privileged},
           {"allow_privilege_escalation", &p.allow_privilege_escalation},
           {"allow_host_namespaces", &p.allow_host_namespaces},
           {"allow_host_ports", &p.allow_host_ports},
           {"allow_automount_service_account_token", &p.allow_automount_service_account_token},
           {"allow_run_as_root", &p.allow_run_as_root},
           {"host_paths_read_only", &p.host_paths_read_only},
           {"allow_unconfined_profiles", &p.allow_unconfined_profiles},
           {"allow_custom_selinux", &p.allow_custom_selinux}}) {
    KUBE_RETURN_IF_ERROR(ParseFlag(m, name, *flag));
  }
  if (m.Has("allowed_capabilities")) {
    KUBE_ASSIGN_OR_RETURN(std::vector<std::string> caps, m.StringList("allowed_capabilities"));
    p.allowed_capabilities.clear();
    for (const std::string& c : caps) p.allowed_capabilities.push_back(Capability(c));
  }
  if (m.Has("allowed_service_accounts")) {
    KUBE_ASSIGN_OR_RETURN(p.allowed_service_accounts, m.StringList("allowed_service_accounts"));
  }
  if (m.Has("allowed_secrets")) {
    KUBE_ASSIGN_OR_RETURN(p.allowed_secrets, m.StringList("allowed_secrets"));
  }
  if (m.Has("allowed_sysctls")) {
    KUBE_ASSIGN_OR_RETURN(std::vector<std::string> sysctls, m.StringList("allowed_sysctls"));
    p.allowed_sysctls.clear();
    for (const std::string& s : sysctls) p.allowed_sysctls.push_back(CanonicalSysctl(s));
  }
  KUBE_RETURN_IF_ERROR(ParseVolumeTypes(m, p.allowed_volume_types));
  KUBE_RETURN_IF_ERROR(ParsePaths(m, "allowed_host_paths", p.allowed_host_paths));
  KUBE_RETURN_IF_ERROR(
      ParsePaths(m, "allowed_shared_fs_host_paths", p.allowed_shared_fs_host_paths));
  return p;
}

absl::Status CheckPodSpecPolicy(const json& pod, const json& default_pod, absl::string_view path,
                                const PodSpecPolicy& policy, absl::string_view pool) {
  const Checker checker(policy, pool);
  KUBE_RETURN_IF_ERROR(NoMergeDirectives(pod, std::string(path)));
  if (pod.is_object()) {
    if (auto meta = pod.find("metadata"); meta != pod.end()) {
      KUBE_RETURN_IF_ERROR(checker.Metadata(*meta, absl::StrCat(path, ".metadata")));
    }
    if (auto spec = pod.find("spec"); spec != pod.end()) {
      KUBE_RETURN_IF_ERROR(checker.Spec(*spec, absl::StrCat(path, ".spec")));
    }
  }
  json merged = StrategicMergePod(default_pod, pod);
  if (!merged.is_object()) merged = json::object();
  if (!policy.allow_run_as_root) {
    KUBE_RETURN_IF_ERROR(CheckNonRoot(pod, merged, path, checker));
  }
  return CheckHostPathMounts(pod, merged, path, policy, checker);
}

absl::Status CheckCheckpointStoragePolicy(const json& storage, const json& master_storage,
                                          absl::string_view path, const PodSpecPolicy& policy,
                                          absl::string_view pool) {
  auto host_path = [](const json& s) -> std::optional<std::filesystem::path> {
    if (!s.is_object() || s.value("type", "") != "shared_fs") return std::nullopt;
    return CleanPath(s.value("host_path", ""));
  };
  const std::optional<std::filesystem::path> wanted = host_path(storage);
  if (!wanted || wanted == host_path(master_storage) ||
      UnderAny(*wanted, policy.allowed_shared_fs_host_paths)) {
    return absl::OkStatus();
  }
  return FieldError(absl::StrCat(path, ".host_path"),
                    absl::StrCat("refused by pod_spec_policy (\"", storage.value("host_path", ""),
                                 "\" is neither the master's checkpoint_storage host_path nor "
                                 "under allowed_shared_fs_host_paths of pool \"",
                                 pool, "\")"));
}

bool IsSeedSchedulerName(const json& name) { return name == "coscheduler" || name == "preemption"; }

}  // namespace phalanx::master
