// Drain holds for blocked gangs (algorithm in holds.h).
#include "preemption/holds.h"

#include <algorithm>
#include <utility>

#include "preemption/rules.h"

namespace phalanx::preemption {

DrainHolds::DrainHolds(const gang::GangPlanner& planner) : planner_(planner) {}

std::vector<int> DrainHolds::Order(const core::Gang& g, const gang::Capacity& free) const {
  const core::ClusterSnapshot& snap = planner_.snapshot();
  const gang::SlotPolicy& slots = planner_.slots();
  std::vector<int> order = planner_.EligibleNodes(g);
  std::vector<int64_t> staying(free.size());
  for (int n : order) {
    int64_t taken = slots.SlotsOf(snap.node(n).allocatable) - slots.SlotsOf(free[n]);
    for (const core::ClusterSnapshot::Occupant& o : snap.Occupants(n)) {
      if (o.gang->priority > g.priority) break;  // Occupants come lowest priority first.
      if (Reclaimable(*o.gang, g)) taken -= slots.SlotsOf(o.held);
    }
    staying[n] = taken;
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return staying[a] < staying[b]; });
  return order;
}

std::vector<int> DrainHolds::Hold(const core::Gang& g, const gang::Capacity& free,
                                  gang::Capacity& open) {
  if (drain_.empty()) drain_ = gang::AllocatableCapacity(planner_.snapshot());
  const core::Resources unit = gang::LargestMember(g, planner_.slots());
  int64_t needed = gang::CopiesNeeded(g, planner_.slots());
  std::vector<std::pair<int, int64_t>> taken;  // (node, copies)
  for (int n : Order(g, free)) {
    int64_t copies = std::min(needed, unit.CopiesThatFit(drain_[n]));
    if (copies == 0) continue;
    taken.emplace_back(n, copies);
    needed -= copies;
    if (needed == 0) break;
  }
  std::vector<int> held;
  if (needed > 0) return held;
  for (const auto& [n, copies] : taken) {
    for (int64_t c = 0; c < copies; ++c) drain_[n] -= unit;
    open[n] = core::Resources();
    held.push_back(n);
  }
  return held;
}

}  // namespace phalanx::preemption
