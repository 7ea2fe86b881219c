// Nodes held for a blocked gang while they drain, so that work of its own priority may run on the
// rest of the cluster without delaying it (same-priority backfill).
//
// Algorithm: a blocked gang G holds its eligible nodes in the order of the slots that will still
// be taken there once G has taken back what it may preempt (capacity in use or planned this
// round, less the running gangs it may reclaim (rules.h); fewest first; ties: node index),
// taking on each as many copies of G's largest member as fit in the node's drain capacity, until
// every member has one. A node's drain capacity is its allocatable capacity less what gangs ahead
// hold there: what it offers G once every pod on it has ended. If the eligible nodes cannot hold
// every member, G holds nothing. A held node is closed to plain admission of the work of G's
// priority behind it; work may still backfill there only as G's to take back (provisional
// backfill, or lower-priority preemptible work), so nothing started there in this or a later round
// stands between G and its nodes but what already ran on them; and work G may reclaim coming and
// going does not move the hold.
#ifndef PHALANX_PREEMPTION_HOLDS_H_
#define PHALANX_PREEMPTION_HOLDS_H_

#include <vector>

#include "core/gang.h"
#include "gang/planner.h"

namespace phalanx::preemption {

class DrainHolds {
 public:
  explicit DrainHolds(const gang::GangPlanner& planner);

  // Holds nodes for the blocked gang `g` (`free`: what this round has left) and closes them in
  // `open`. Returns the held node indexes, none when no hold fits.
  std::vector<int> Hold(const core::Gang& g, const gang::Capacity& free, gang::Capacity& open);

 private:
  std::vector<int> Order(const core::Gang& g, const gang::Capacity& free) const;

  const gang::GangPlanner& planner_;
  gang::Capacity drain_;  // Filled by the first hold of the round.
};

}  // namespace phalanx::preemption

#endif  // PHALANX_PREEMPTION_HOLDS_H_
