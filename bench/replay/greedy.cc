// One pod-by-pod pass of the greedy baseline (algorithm in greedy.h).
#include "bench/replay/greedy.h"

#include <algorithm>

#include "gang/planner.h"
#include "preemption/queue.h"

namespace phalanx::replay {

GreedyPass RunGreedyPass(const core::ClusterSnapshot& snapshot, const gang::SlotPolicy& slots) {
  GreedyPass pass;
  gang::GangPlanner planner(snapshot, slots);
  gang::Capacity free = gang::FreeCapacity(snapshot);
  // The most slots free on one node: a pod asking for more cannot fit anywhere, so the planner is
  // not asked (an exact shortcut: pods request nothing but slots here).
  auto most_free = [&] {
    int64_t most = 0;
    for (const core::Resources& r : free) most = std::max(most, slots.SlotsOf(r));
    return most;
  };
  int64_t most = most_free();
  std::vector<core::Gang> pending = snapshot.Gangs(core::ClusterSnapshot::GangFilter::kPending);
  for (const core::Gang* g : preemption::PendingQueue(pending)) {
    gang::GangPlan plan;
    if (slots.SlotsOf(g->total) <= most) plan = planner.Plan(*g, free);
    if (!plan.placed()) {
      if (pass.blocked_head.empty()) pass.blocked_head = g->members.front()->uid;
      continue;
    }
    gang::GangPlanner::Reserve(*g, plan, free);
    most = most_free();
    for (size_t m = 0; m < plan.nodes.size(); ++m) {
      pass.placed.push_back({g->members[m]->uid, snapshot.node(plan.nodes[m]).name});
    }
  }
  return pass;
}

}  // namespace phalanx::replay
