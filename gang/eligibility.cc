// Node eligibility by Kubernetes' NodeUnschedulable, TaintToleration and NodeSelector rules.
#include "gang/eligibility.h"

#include <algorithm>

namespace phalanx::gang {
namespace {

bool Tolerated(const core::PodInfo& pod, const core::Taint& taint) {
  return std::any_of(pod.tolerations.begin(), pod.tolerations.end(),
                     [&](const core::Toleration& t) { return t.Tolerates(taint); });
}

}  // namespace

bool NodeAdmits(const core::PodInfo& pod, const core::Node& node) {
  if (node.unschedulable && !Tolerated(pod, core::Taint{"node.kubernetes.io/unschedulable", "",
                                                        core::TaintEffect::kNoSchedule})) {
    return false;
  }
  for (const core::Taint& taint : node.taints) {
    if (taint.effect == core::TaintEffect::kPreferNoSchedule) continue;
    if (!Tolerated(pod, taint)) return false;
  }
  return true;
}

bool NodeEligible(const core::PodInfo& pod, const core::Node& node) {
  if (!NodeAdmits(pod, node)) return false;
  for (const auto& [key, value] : pod.node_selector) {
    const std::string* have = core::FindLabel(node.labels, key);
    if (have == nullptr || *have != value) return false;
  }
  return true;
}

}  // namespace phalanx::gang
