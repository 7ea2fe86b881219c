// Which nodes a pod may use at all: cordon state, taints/tolerations, nodeSelector, required node
// affinity and the nodes it avoids (core::PodInfo::avoid_nodes).
#ifndef PHALANX_GANG_ELIGIBILITY_H_
#define PHALANX_GANG_ELIGIBILITY_H_

#include "absl/strings/string_view.h"
#include "core/node.h"
#include "core/pod.h"

namespace phalanx::gang {

// True when `node` takes `pod` by Kubernetes' NodeUnschedulable and TaintToleration rules: the node
// is not cordoned (or the pod tolerates node.kubernetes.io/unschedulable), and every NoSchedule or
// NoExecute taint is tolerated.
bool NodeAdmits(const core::PodInfo& pod, const core::Node& node);

// True when `node` matches what `pod` asks of its labels and name: the node is not one the pod
// avoids, every nodeSelector pair but the one keyed `ignored_key` matches a node label, and the
// node matches one term of the pod's required node affinity (if it has any): every requirement of
// the term holds (In, NotIn, Exists, DoesNotExist; Gt and Lt on integer label values; matchFields
// on the node's name).
bool NodeMatches(const core::PodInfo& pod, const core::Node& node,
                 absl::string_view ignored_key = "");

// True when `pod` may be placed on `node` by Kubernetes' rules, capacity aside: NodeAdmits and
// NodeMatches.
bool NodeEligible(const core::PodInfo& pod, const core::Node& node);

}  // namespace phalanx::gang

#endif  // PHALANX_GANG_ELIGIBILITY_H_
