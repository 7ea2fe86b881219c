// Drain holds for blocked gangs (algorithm in holds.h).
#include "preemption/holds.h"

#include <algorithm>
#include <utility>

namespace phalanx::preemption {

DrainHolds::DrainHolds(const gang::GangPlanner& planner)
    : planner_(planner), drain_(gang::AllocatableCapacity(planner.snapshot())) {}

const std::vector<int>& DrainHolds::Order(const core::Gang& g, const gang::Capacity& free) {
  const std::vector<int>* eligible = &planner_.EligibleNodes(g);
  auto [it, fresh] = order_.try_emplace(eligible, *eligible);
  if (fresh) {
    const gang::SlotPolicy& slots = planner_.slots();
    std::vector<int64_t> free_slots(free.size());
    for (int n : *eligible) free_slots[n] = slots.SlotsOf(free[n]);
    std::stable_sort(it->second.begin(), it->second.end(),
                     [&](int a, int b) { return free_slots[a] > free_slots[b]; });
  }
  return it->second;
}

bool DrainHolds::Hold(const core::Gang& g, const gang::Capacity& free, gang::Capacity& open) {
  const core::Resources unit = gang::LargestMember(g, planner_.slots());
  int64_t needed = static_cast<int64_t>(g.members.size());
  std::vector<std::pair<int, int64_t>> taken;  // (node, copies)
  for (int n : Order(g, free)) {
    int64_t copies = std::min(needed, unit.CopiesThatFit(drain_[n]));
    if (copies == 0) continue;
    taken.emplace_back(n, copies);
    needed -= copies;
    if (needed == 0) break;
  }
  if (needed > 0) return false;
  for (const auto& [n, copies] : taken) {
    for (int64_t c = 0; c < copies; ++c) drain_[n] -= unit;
    open[n] = core::Resources();
  }
  return true;
}

}  // namespace phalanx::preemption
