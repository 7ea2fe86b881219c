// The kube-scheduler extender v1 wire format: request parsing and reply encoding.
// Keys are Go field names (PascalCase, no json tags upstream); like Go's decoder, parsing matches
// keys case-insensitively. Embedded Pods and Nodes use ordinary Kubernetes JSON.
#ifndef PHALANX_SCHEDULER_EXTENDER_WIRE_H_
#define PHALANX_SCHEDULER_EXTENDER_WIRE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/pod.h"
#include "kube/placement_key.h"
#include "scheduler_extender/verbs.h"

namespace phalanx::extender {

// ExtenderArgs: the pod and its candidate nodes, as NodeNames (nodeCacheCapable) or a NodeList
// (whose items are kept as raw JSON to be returned unchanged).
struct ExtenderArgs {
  core::PodInfo pod;
  bool node_names_mode = true;
  std::vector<std::string> nodes;      // Candidate node names, in request order.
  std::vector<std::string> node_json;  // NodeList mode: each item's JSON, same order.
};

struct PreemptArgs {
  core::PodInfo pod;
  VictimMap victims;  // From NodeNameToMetaVictims, or NodeNameToVictims (full pods).
};

struct BindArgs {
  std::string pod_name;
  std::string pod_namespace;
  std::string pod_uid;
  std::string node;
};

// Parse errors are InvalidArgument and say what is wrong and where. The pod is decoded with `key`
// (kube::DecodePod): a placement or mark it did not sign is left out; null takes them as written.
absl::StatusOr<ExtenderArgs> ParseExtenderArgs(absl::string_view body,
                                               const kube::PlacementKey* key);
absl::StatusOr<PreemptArgs> ParsePreemptArgs(absl::string_view body, const kube::PlacementKey* key);
absl::StatusOr<BindArgs> ParseBindArgs(absl::string_view body);

// ExtenderFilterResult in the mode of the request.
std::string EncodeFilterResult(const ExtenderArgs& args, const FilterOutcome& outcome);
// A filter reply that reports `error` (kube-scheduler treats it as a failed filter).
std::string EncodeFilterError(absl::string_view error);
// HostPriorityList: a bare array pairing `hosts` with their `scores`, in order.
std::string EncodeHostPriorities(const std::vector<std::string>& hosts,
                                 const std::vector<int64_t>& scores);
// ExtenderPreemptionResult: always NodeNameToMetaVictims.
std::string EncodePreemptResult(const VictimMap& victims);
// ExtenderBindingResult.
std::string EncodeBindResult(absl::string_view error);

}  // namespace phalanx::extender

#endif  // PHALANX_SCHEDULER_EXTENDER_WIRE_H_
