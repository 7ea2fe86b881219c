// Nodes as the scheduler sees them: allocatable resources, labels, taints, cordon state.
#ifndef PHALANX_CORE_NODE_H_
#define PHALANX_CORE_NODE_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/resources.h"

namespace phalanx::core {

enum class TaintEffect { kNoSchedule, kPreferNoSchedule, kNoExecute };

struct Taint {
  std::string key;
  std::string value;
  TaintEffect effect = TaintEffect::kNoSchedule;
};

struct Toleration {
  enum class Operator { kEqual, kExists };
  std::string key;  // Empty with kExists tolerates every taint.
  Operator op = Operator::kEqual;
  std::string value;
  bool any_effect = true;  // An empty effect in the pod spec matches every effect.
  TaintEffect effect = TaintEffect::kNoSchedule;

  bool Tolerates(const Taint& t) const;
  bool operator==(const Toleration&) const = default;
};

// Label pairs sorted by key.
using Labels = std::vector<std::pair<std::string, std::string>>;

// A requirement of a node selector term (Kubernetes' NodeSelectorRequirement): on a node label
// (matchExpressions), or, when `on_name`, on the node's name (matchFields on metadata.name).
struct NodeRequirement {
  enum class Operator { kIn, kNotIn, kExists, kDoesNotExist, kGt, kLt };
  std::string key;
  Operator op = Operator::kIn;
  std::vector<std::string> values;  // Sorted: In and NotIn look a value up by binary search.
  bool on_name = false;
  bool operator==(const NodeRequirement&) const = default;
};

// A node selector term: a node matches when every requirement holds (an empty term matches none).
struct NodeSelectorTerm {
  std::vector<NodeRequirement> requirements;
  bool operator==(const NodeSelectorTerm&) const = default;
};

struct Node {
  std::string name;
  Resources allocatable;
  Labels labels;
  std::vector<Taint> taints;
  bool unschedulable = false;
};

// The value of `key` in sorted `labels`, or nullptr.
const std::string* FindLabel(const Labels& labels, absl::string_view key);

}  // namespace phalanx::core

#endif  // PHALANX_CORE_NODE_H_
