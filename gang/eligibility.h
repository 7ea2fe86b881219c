// Which nodes a pod may use at all: cordon state, taints/tolerations and nodeSelector.
#ifndef PHALANX_GANG_ELIGIBILITY_H_
#define PHALANX_GANG_ELIGIBILITY_H_

#include "core/node.h"
#include "core/pod.h"

namespace phalanx::gang {

// True when `pod` may be placed on `node` by Kubernetes' rules, capacity aside: the node is not
// cordoned (or the pod tolerates node.kubernetes.io/unschedulable), every NoSchedule/NoExecute
// taint is tolerated, and every nodeSelector pair matches a node label.
bool NodeEligible(const core::PodInfo& pod, const core::Node& node);

}  // namespace phalanx::gang

#endif  // PHALANX_GANG_ELIGIBILITY_H_
