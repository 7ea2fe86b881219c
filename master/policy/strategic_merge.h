// Kubernetes strategic merge of Pod objects, as Determined merges a task's pod_spec over the
// default pod spec (strategicpatch.StrategicMergePatch):
//   * objects merge key by key; a null in the patch deletes the key, and where the base has
//     nothing to delete it is dropped at any depth (Kubernetes' IgnoreUnmatchedNulls), as are the
//     base's own nulls;
//   * lists with a patch merge key merge element by element on that key, base order first, new
//     elements appended: containers, initContainers, ephemeralContainers, volumes,
//     imagePullSecrets, schedulingGates, resourceClaims (name), hostAliases (ip),
//     topologySpreadConstraints (topologyKey), ownerReferences (uid); in containers: env (name),
//     volumeMounts (mountPath), volumeDevices (devicePath), ports (containerPort);
//   * volumes keep the patch's source (retainKeys): a patch volume that names a source replaces the
//     base volume of the same name rather than mixing two sources;
//   * every other list (tolerations, args, command, envFrom, ...) and every scalar is replaced, as
//     written (a directive inside such a list is not applied);
//   * the directive `$patch: replace` in a mapping keeps only the patch's mapping, and as an item
//     of a list merged by key makes the list the patch's other items; `$patch: delete` in a
//     mapping leaves it empty, and in an item of a list merged by key removes the base item of
//     that key. Kubernetes' other directives ($retainKeys, $setElementOrder/...,
//     $deleteFromPrimitiveList/...) are refused when the config is read (pod_spec_shape.h). A
//     user's pod spec may carry none of them, `$patch` included (pod_spec_policy.h, rule 0).
#ifndef PHALANX_MASTER_POLICY_STRATEGIC_MERGE_H_
#define PHALANX_MASTER_POLICY_STRATEGIC_MERGE_H_

#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace phalanx::master {

inline constexpr absl::string_view kPatchDirective = "$patch";

// Whether `key` is one of Kubernetes' strategic-merge directives: `$patch`, `$retainKeys`,
// `$setElementOrder/<list>` or `$deleteFromPrimitiveList/<list>`.
bool IsMergeDirective(absl::string_view key);

// `patch` merged over `base`; both are Pod objects ({metadata, spec}) or null.
nlohmann::json StrategicMergePod(const nlohmann::json& base, const nlohmann::json& patch);

}  // namespace phalanx::master

#endif  // PHALANX_MASTER_POLICY_STRATEGIC_MERGE_H_
