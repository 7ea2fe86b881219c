// Victim selection: the cheapest set of WHOLE lower-priority gangs whose removal lets a gang fit.
//
// Algorithm: candidates are running gangs that are preemptible, not already marked, of strictly
// lower priority than the preemptor, with a pod on a node the preemptor may use. They are ordered
// by cost: backfilled gangs first, then fewest lost slot-seconds (slots x time running), then
// lowest priority, then newest creation, then gang key. Candidates are added in that order until
// the preemptor's largest member fits as many times as it has members on the eligible nodes; then
// the chosen gangs are dropped again, most expensive first, wherever the rest still suffice.
// Finally the gang is planned on the capacity plus what the victims free; without a plan, nothing
// is preempted.
#ifndef PHALANX_PREEMPTION_VICTIMS_H_
#define PHALANX_PREEMPTION_VICTIMS_H_

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "core/gang.h"
#include "gang/planner.h"

namespace phalanx::preemption {

struct VictimChoice {
  std::vector<const core::Gang*> victims;              // In cost order.
  std::vector<std::pair<int, core::Resources>> freed;  // What they release, per node index.
  gang::GangPlan plan;                                 // The preemptor's plan on cap + freed.
};

// `cap` is the capacity the preemptor may already count on. `candidates` are running gangs not yet
// claimed this round; ineligible ones are skipped here.
std::optional<VictimChoice> ChooseVictims(const gang::GangPlanner& planner,
                                          const core::Gang& preemptor, const gang::Capacity& cap,
                                          const std::vector<const core::Gang*>& candidates,
                                          int64_t now_ms);

}  // namespace phalanx::preemption

#endif  // PHALANX_PREEMPTION_VICTIMS_H_
