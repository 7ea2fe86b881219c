// Nodes held for blocked gangs while they drain, so that work of their own priority may run on
// the rest of the cluster without delaying them (same-priority backfill).
//
// Algorithm: a blocked gang G holds its eligible nodes in the order most free first (free
// capacity when the round first orders G's eligible set; ties: node index), taking on each as
// many copies of G's largest member as fit in the node's drain capacity, until every member has
// one. A node's drain capacity is its allocatable capacity less what gangs ahead hold there: what
// it offers G once every pod on it has ended. If the eligible nodes cannot hold every member, G
// holds nothing. A held node is closed to the work of G's priority behind it (lower-priority
// preemptible work may still backfill there: G can take it back), so nothing started there in
// this or a later round stands between G and its nodes but what already ran on them.
#ifndef PHALANX_PREEMPTION_HOLDS_H_
#define PHALANX_PREEMPTION_HOLDS_H_

#include <vector>

#include "absl/container/flat_hash_map.h"
#include "core/gang.h"
#include "gang/planner.h"

namespace phalanx::preemption {

class DrainHolds {
 public:
  explicit DrainHolds(const gang::GangPlanner& planner);

  // Holds nodes for the blocked gang `g`, ordering them by `free`, and closes them in `open`.
  // False, holding nothing, when no hold fits.
  bool Hold(const core::Gang& g, const gang::Capacity& free, gang::Capacity& open);

 private:
  const std::vector<int>& Order(const core::Gang& g, const gang::Capacity& free);

  const gang::GangPlanner& planner_;
  gang::Capacity drain_;
  absl::flat_hash_map<const std::vector<int>*, std::vector<int>> order_;
};

}  // namespace phalanx::preemption

#endif  // PHALANX_PREEMPTION_HOLDS_H_
