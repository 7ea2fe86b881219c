// Victim selection: the cheapest set of WHOLE gangs the preemptor may take back whose removal lets
// it fit.
//
// Algorithm: candidates are running gangs the preemptor may reclaim (rules.h: preemptible and of
// lower priority, or backfilled behind it), not already marked, with a pod on a node the
// preemptor may use; they are read from the snapshot's per-node occupants of those nodes only.
// Candidates of protection tier 1 (rules.h: young runs, gangs preempted often) are left out
// unless no set of tier-0 candidates frees enough; then the search runs again with them, clearing
// nodes without protected candidates first and dropping protected victims first. A
// candidate's cost is CostOf (rules.h: backfilled first, then fewest lost slot-seconds since the
// run's start or last checkpoint plus the restart overhead, then lowest priority, newest creation,
// gang key). Eligible nodes are cleared in order (nodes whose candidates are all backfilled first,
// then lowest lost work per extra copy of the preemptor's largest member the node gains, then node
// index; nodes that gain nothing are skipped), taking every candidate on each, until that member
// fits as many times as the preemptor has members; then the chosen gangs are dropped again, most
// expensive first, wherever the rest still suffice. Finally the gang is planned on the capacity
// plus what the victims free; without a plan, nothing is preempted.
#ifndef PHALANX_PREEMPTION_VICTIMS_H_
#define PHALANX_PREEMPTION_VICTIMS_H_

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "core/gang.h"
#include "gang/planner.h"
#include "preemption/rules.h"

namespace phalanx::preemption {

struct VictimChoice {
  std::vector<const core::Gang*> victims;              // In cost order.
  std::vector<std::pair<int, core::Resources>> freed;  // What they release, per node index.
  gang::GangPlan plan;                                 // The preemptor's plan on cap + freed.
};

// `cap` is the capacity the preemptor may already count on. Gangs in `claimed` (victims taken
// earlier this round) are not candidates, nor are nodes marked in `closed` (if given) cleared.
// Victims point into the planner's snapshot.
std::optional<VictimChoice> ChooseVictims(const gang::GangPlanner& planner,
                                          const core::Gang& preemptor, const gang::Capacity& cap,
                                          const absl::flat_hash_set<const core::Gang*>& claimed,
                                          const PreemptionRules& rules, int64_t now_ms,
                                          const std::vector<bool>* closed = nullptr);

}  // namespace phalanx::preemption

#endif  // PHALANX_PREEMPTION_VICTIMS_H_
