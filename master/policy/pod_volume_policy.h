// The pod-spec policy's rules on volumes and mounts (rules 10a, 16d and 17a of pod_spec_policy.h):
// which volume sources a user's pod spec may use, and how its containers may mount them.
#ifndef PHALANX_MASTER_POLICY_POD_VOLUME_POLICY_H_
#define PHALANX_MASTER_POLICY_POD_VOLUME_POLICY_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "master/policy/pod_spec_policy.h"
#include "master/policy/policy_refusal.h"
#include "nlohmann/json.hpp"

namespace phalanx::master {

// Whether `name` is a Kubernetes volume source field (nfs, configMap, ...).
bool IsVolumeSource(absl::string_view name);

// Rule 10a: each source of each of `spec.volumes` (the user's pod spec's `spec`, at `path`) but
// hostPath (rule 10) is in allowed_volume_types.
absl::Status CheckVolumeTypes(const nlohmann::json& spec, const std::string& path,
                              const PodSpecPolicy& policy, const PolicyRefusal& refusal);

// Rule 16d: no mount of container `c` (at `path`) has mountPropagation Bidirectional, unless
// allow_privileged.
absl::Status CheckMountPropagation(const nlohmann::json& c, const std::string& path,
                                   const PodSpecPolicy& policy, const PolicyRefusal& refusal);

// Rule 17a: with host_paths_read_only, every mount in `merged` (the user's `pod`, at `path`,
// merged over the pool's default pod) of a hostPath volume is readOnly, unless both the mount and
// the volume are the default pod's alone (the user's pod spec names neither).
absl::Status CheckHostPathMounts(const nlohmann::json& pod, const nlohmann::json& merged,
                                 absl::string_view path, const PodSpecPolicy& policy,
                                 const PolicyRefusal& refusal);

}  // namespace phalanx::master

#endif  // PHALANX_MASTER_POLICY_POD_VOLUME_POLICY_H_
