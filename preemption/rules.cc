// The rules of what the round may do to running work (see rules.h).
#include "preemption/rules.h"

#include <algorithm>

namespace phalanx::preemption {

bool Reclaimable(const core::Gang& victim, const core::Gang& by) {
  if (!victim.preemptible) return false;
  return victim.priority < by.priority || victim.backfilled_behind == by.key;
}

VictimCost CostOf(const core::Gang& g, const gang::SlotPolicy& slots, const PreemptionRules& r,
                  int64_t now_ms) {
  return {.not_backfilled = !g.backfilled,
          .lost_slot_s =
              slots.SlotsOf(g.total) * ((LostWorkMs(g, now_ms) + r.restart_overhead_ms) / 1000),
          .priority = g.priority,
          .minus_creation_ms = -g.creation_ms,
          .key = g.key};
}

int32_t RecentPreemptions(const core::Gang& g, const PreemptionRules& r, int64_t now_ms) {
  return static_cast<int32_t>(std::count_if(
      g.preempted_ms.begin(), g.preempted_ms.end(),
      [&](int64_t t) { return t <= now_ms && (r.window_ms == 0 || now_ms - t < r.window_ms); }));
}

bool AtPreemptionLimit(const core::Gang& g, const PreemptionRules& r, int64_t now_ms) {
  return r.preemption_limit > 0 && RecentPreemptions(g, r, now_ms) >= r.preemption_limit;
}

bool Thrashed(const core::Gang& g, const PreemptionRules& r, int64_t now_ms) {
  return (r.max_preemptions > 0 && RecentPreemptions(g, r, now_ms) >= r.max_preemptions) ||
         AtPreemptionLimit(g, r, now_ms);
}

int ProtectionTier(const core::Gang& victim, const core::Gang& by, const PreemptionRules& r,
                   int64_t now_ms) {
  if (AtPreemptionLimit(victim, r, now_ms)) return kNeverVictim;
  if (!victim.backfilled_behind.empty() && victim.backfilled_behind == by.key) return 0;
  const bool young = victim.start_ms > 0 && now_ms - victim.start_ms < r.min_run_ms;
  return young || Thrashed(victim, r, now_ms) ? 1 : 0;
}

int64_t LostWorkMs(const core::Gang& victim, int64_t now_ms) {
  const int64_t since = std::max(victim.start_ms, victim.checkpoint_ms);
  return victim.start_ms > 0 && now_ms > since ? now_ms - since : 0;
}

bool WaitsToPreempt(const core::Gang& by, int64_t dearest_loss_ms, const PreemptionRules& r,
                    int64_t now_ms) {
  return now_ms - by.creation_ms < r.patience_ms && dearest_loss_ms > r.patience_loss_ms;
}

bool MayBackfillProvisionally(const core::Gang& g, const PreemptionRules& r, int64_t now_ms) {
  return r.provisional_backfill && g.preemptible && !Thrashed(g, r, now_ms);
}

bool MayPassOn(const core::Resources& takes, const core::Resources& unit,
               const core::Resources& free) {
  return unit.Where(takes).FitsIn(free - takes);
}

}  // namespace phalanx::preemption
