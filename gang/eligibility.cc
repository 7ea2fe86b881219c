// Node eligibility by Kubernetes' NodeUnschedulable, TaintToleration, NodeSelector and required
// NodeAffinity rules.
#include "gang/eligibility.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/numbers.h"

namespace phalanx::gang {
namespace {

bool Tolerated(const core::PodInfo& pod, const core::Taint& taint) {
  return std::any_of(pod.tolerations.begin(), pod.tolerations.end(),
                     [&](const core::Toleration& t) { return t.Tolerates(taint); });
}

// Gt and Lt compare integers; a value that is not one matches nothing, as in Kubernetes.
bool Compares(const std::string* have, const core::NodeRequirement& r) {
  int64_t label = 0, bound = 0;
  if (have == nullptr || r.values.size() != 1 || !absl::SimpleAtoi(*have, &label) ||
      !absl::SimpleAtoi(r.values[0], &bound)) {
    return false;
  }
  return r.op == core::NodeRequirement::Operator::kGt ? label > bound : label < bound;
}

bool Holds(const core::NodeRequirement& r, const core::Node& node) {
  const std::string* have = r.on_name ? &node.name : core::FindLabel(node.labels, r.key);
  const bool listed =
      have != nullptr && std::binary_search(r.values.begin(), r.values.end(), *have);
  switch (r.op) {
    case core::NodeRequirement::Operator::kIn:
      return listed;
    case core::NodeRequirement::Operator::kNotIn:
      return !listed;
    case core::NodeRequirement::Operator::kExists:
      return have != nullptr;
    case core::NodeRequirement::Operator::kDoesNotExist:
      return have == nullptr;
    case core::NodeRequirement::Operator::kGt:
    case core::NodeRequirement::Operator::kLt:
      return Compares(have, r);
  }
  return false;
}

bool TermMatches(const core::NodeSelectorTerm& term, const core::Node& node) {
  return !term.requirements.empty() &&
         std::all_of(term.requirements.begin(), term.requirements.end(),
                     [&](const core::NodeRequirement& r) { return Holds(r, node); });
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

bool NodeMatches(const core::PodInfo& pod, const core::Node& node, absl::string_view ignored_key) {
  if (std::binary_search(pod.avoid_nodes.begin(), pod.avoid_nodes.end(), node.name)) return false;
  for (const auto& [key, value] : pod.node_selector) {
    if (key == ignored_key) continue;
    const std::string* have = core::FindLabel(node.labels, key);
    if (have == nullptr || *have != value) return false;
  }
  return pod.node_affinity.empty() ||
         std::any_of(pod.node_affinity.begin(), pod.node_affinity.end(),
                     [&](const core::NodeSelectorTerm& t) { return TermMatches(t, node); });
}

bool NodeEligible(const core::PodInfo& pod, const core::Node& node) {
  return NodeAdmits(pod, node) && NodeMatches(pod, node);
}

}  // namespace phalanx::gang
