// The Pod Security "baseline" fields of a user's pod spec that no other rule of the pod-spec
// policy covers (rules 2a, 11c and 16c of pod_spec_policy.h), as Kubernetes' Pod Security Standards
// define them: seccomp and AppArmor profiles (fields and legacy annotations), SELinux options,
// Windows HostProcess, /proc mount type and sysctls.
#ifndef PHALANX_MASTER_POLICY_POD_SECURITY_FIELDS_H_
#define PHALANX_MASTER_POLICY_POD_SECURITY_FIELDS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "master/policy/pod_spec_policy.h"
#include "master/policy/policy_refusal.h"
#include "nlohmann/json.hpp"

namespace phalanx::master {

// Rule 2a: the pod's `annotations` (at `path`) set no seccomp or AppArmor profile but the
// runtime's default or a localhost one, unless allow_unconfined_profiles.
absl::Status CheckProfileAnnotations(const nlohmann::json& annotations, const std::string& path,
                                     const PodSpecPolicy& policy, const PolicyRefusal& refusal);

// Rule 11c: the pod-level `securityContext` (at `path`).
absl::Status CheckPodSecurityFields(const nlohmann::json& security, const std::string& path,
                                    const PodSpecPolicy& policy, const PolicyRefusal& refusal);

// Rule 16c: a container's `securityContext` (at `path`).
absl::Status CheckContainerSecurityFields(const nlohmann::json& security, const std::string& path,
                                          const PodSpecPolicy& policy,
                                          const PolicyRefusal& refusal);

// A sysctl name with `.` separators, as the kubelet reads "net/ipv4/tcp_syncookies" (a name whose
// first separator is `/` has its `/` and `.` swapped).
std::string CanonicalSysctl(absl::string_view name);

}  // namespace phalanx::master

#endif  // PHALANX_MASTER_POLICY_POD_SECURITY_FIELDS_H_
