// The Pod Security baseline fields of a user's pod spec (see pod_security_fields.h).
#include "master/policy/pod_security_fields.h"

#include "absl/algorithm/container.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "kube/json.h"

namespace phalanx::master {
namespace {

using nlohmann::json;

// Kubernetes' safe sysctls (Pod Security baseline, "Sysctls").
constexpr absl::string_view kSafeSysctls[] = {"kernel.shm_rmid_forced",
                                              "net.ipv4.ip_local_port_range",
                                              "net.ipv4.ip_unprivileged_port_start",
                                              "net.ipv4.tcp_syncookies",
                                              "net.ipv4.ping_group_range",
                                              "net.ipv4.ip_local_reserved_ports",
                                              "net.ipv4.tcp_keepalive_time",
                                              "net.ipv4.tcp_fin_timeout",
                                              "net.ipv4.tcp_keepalive_intvl",
                                              "net.ipv4.tcp_keepalive_probes"};

// SELinux types a container may run as (Pod Security baseline, "SELinux").
constexpr absl::string_view kSelinuxTypes[] = {"container_t", "container_init_t", "container_kvm_t",
                                               "container_engine_t"};

bool IsUnset(const json& v) { return v.is_null() || v == ""; }

bool OneOf(const json& v, absl::Span<const absl::string_view> values) {
  return v.is_string() && absl::c_linear_search(values, v.get<std::string>());
}

// seccompProfile, appArmorProfile and seLinuxOptions, which pods and containers share, and
// windowsOptions.hostProcess.
absl::Status SharedFields(const json& security, const std::string& path,
                          const PodSpecPolicy& policy, const PolicyRefusal& refusal) {
  for (const char* profile : {"seccompProfile", "appArmorProfile"}) {
    const json& type = JsonField(JsonField(security, profile), "type");
    if (!type.is_null() && !OneOf(type, {"RuntimeDefault", "Localhost"}) &&
        !policy.allow_unconfined_profiles) {
      return refusal.Refuse(absl::StrCat(path, ".", profile, ".type"), "allow_unconfined_profiles");
    }
  }
  const json& selinux = JsonField(security, "seLinuxOptions");
  if (!policy.allow_custom_selinux) {
    const json& type = JsonField(selinux, "type");
    if (!IsUnset(type) && !OneOf(type, kSelinuxTypes)) {
      return refusal.Refuse(path + ".seLinuxOptions.type", "allow_custom_selinux");
    }
    for (const char* key : {"user", "role"}) {
      if (!IsUnset(JsonField(selinux, key))) {
        return refusal.Refuse(absl::StrCat(path, ".seLinuxOptions.", key), "allow_custom_selinux");
      }
    }
  }
  if (JsonField(JsonField(security, "windowsOptions"), "hostProcess") == true &&
      !policy.allow_privileged) {
    return refusal.Refuse(path + ".windowsOptions.hostProcess", "allow_privileged");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckProfileAnnotations(const json& annotations, const std::string& path,
                                     const PodSpecPolicy& policy, const PolicyRefusal& refusal) {
  if (!annotations.is_object() || policy.allow_unconfined_profiles) return absl::OkStatus();
  for (const auto& [key, value] : annotations.items()) {
    const bool apparmor = absl::StartsWith(key, "container.apparmor.security.beta.kubernetes.io/");
    const bool seccomp = key == "seccomp.security.alpha.kubernetes.io/pod" ||
                         absl::StartsWith(key, "container.seccomp.security.alpha.kubernetes.io/");
    if (!apparmor && !seccomp) continue;
    const std::string text = value.is_string() ? value.get<std::string>() : "";
    const bool allowed = IsUnset(value) || absl::StartsWith(text, "localhost/") ||
                         text == "runtime/default" || (seccomp && text == "docker/default");
    if (!allowed) {
      return refusal.Refuse(absl::StrCat(path, ".", key), "allow_unconfined_profiles");
    }
  }
  return absl::OkStatus();
}

absl::Status CheckPodSecurityFields(const json& security, const std::string& path,
                                    const PodSpecPolicy& policy, const PolicyRefusal& refusal) {
  KUBE_RETURN_IF_ERROR(SharedFields(security, path, policy, refusal));
  const json& sysctls = JsonField(security, "sysctls");
  for (size_t i = 0; sysctls.is_array() && i < sysctls.size(); ++i) {
    const json& name = JsonField(sysctls[i], "name");
    const std::string text = JsonText(name);
    const std::string canonical = CanonicalSysctl(text);
    if (name.is_string() && (absl::c_linear_search(kSafeSysctls, canonical) ||
                             absl::c_linear_search(policy.allowed_sysctls, canonical))) {
      continue;
    }
    return refusal.NotListed(absl::StrCat(path, ".sysctls[", i, "].name"), text,
                             "Kubernetes' safe sysctls nor in allowed_sysctls");
  }
  return absl::OkStatus();
}

absl::Status CheckContainerSecurityFields(const json& security, const std::string& path,
                                          const PodSpecPolicy& policy,
                                          const PolicyRefusal& refusal) {
  KUBE_RETURN_IF_ERROR(SharedFields(security, path, policy, refusal));
  const json& proc_mount = JsonField(security, "procMount");
  if (!proc_mount.is_null() && proc_mount != "Default" && !policy.allow_privileged) {
    return refusal.Refuse(path + ".procMount", "allow_privileged");
  }
  return absl::OkStatus();
}

std::string CanonicalSysctl(absl::string_view name) {
  std::string out(name);
  const size_t separator = out.find_first_of("./");
  if (separator == std::string::npos || out[separator] == '.') return out;
  for (char& c : out) c = c == '/' ? '.' : c == '.' ? '/' : c;
  return out;
}

}  // namespace phalanx::master
