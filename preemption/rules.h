// What the admission round may do to running work, as rules that admission.cc, victims.cc and
// holds.cc only ask:
//   - Reclaimable: may gang `by` take `victim` back? (1) `victim` is preemptible and of lower
//     priority, or (2) it was backfilled on `by`'s held nodes (provisional backfill: it passed `by`
//     and is its first victim, whatever their priorities).
//   - CostOf: what preempting a gang loses, ordered: backfilled gangs first, then fewest lost
//     slot-seconds (slots x (now - max(run start, last checkpoint)) + slots x restart overhead),
//     then lowest priority, then newest creation, then gang key (a total order).
//   - ProtectionTier (anti-thrash): kNeverVictim for a gang preempted preemption_limit times
//     (AtPreemptionLimit); else 0 for a gang backfilled behind the preemptor; else 1 for a run
//     younger than min_run_ms or a gang preempted max_preemptions times (Thrashed); else 0.
//     Preemptions count within window_ms, or over the job's whole life when it is 0 (the newest
//     core::kMaxPreemptionHistory are known). Tier-1 gangs are victims only when no set of tier-0
//     gangs frees enough. So a gang is preempted at most preemption_limit times, and more than
//     max_preemptions times only to start a gang nothing else could make room for. A Thrashed
//     gang is not backfilled on nodes held for a blocked gang, and one at the limit does not pass
//     a blocked gang of higher priority (admission.cc), since neither could be taken back freely.
//   - WaitsToPreempt (patience): a gang younger than patience_ms (since its creation) does not
//     take victims of which one, those backfilled behind it left out, would lose more than
//     patience_loss_ms
//     of work (LostWorkMs: since its run started or its last checkpoint). It looks for a set
//     without such victims, and without protected ones (admission.cc); failing that, it waits as a
//     blocked gang, for capacity to free or the victims to checkpoint, and the victims it would
//     take are kept from the round's other preemptors. Once that old, it preempts as without the
//     rule. So a preemptor waits at most patience_ms (from its pods' creation) for dear victims,
//     and is never kept from taking back what passed it.
//   - MayPassOn: may a gang take `takes` on a node where a waiting head needs `unit` per member
//     and `free` is left? Yes when it takes nothing of a resource the head is short of there (free
//     below one member's request) and leaves at least one member's request of every other
//     resource the head asks for.
#ifndef PHALANX_PREEMPTION_RULES_H_
#define PHALANX_PREEMPTION_RULES_H_

#include <compare>
#include <cstdint>
#include <string_view>

#include "core/gang.h"
#include "core/resources.h"
#include "gang/slots.h"

namespace phalanx::preemption {

struct PreemptionRules {
  bool provisional_backfill = true;
  int64_t restart_overhead_ms = 60'000;  // Charged to every victim (pods recreated, reloaded).
  int64_t min_run_ms = 5 * 60'000;       // Younger runs are a last resort.
  int32_t max_preemptions = 3;           // Then a last resort; 0: no such tier.
  int32_t preemption_limit = 5;          // Then never a victim; 0: no limit.
  int64_t window_ms = 0;                 // Where both count; 0: the job's whole life.
  int64_t patience_ms = 30 * 60'000;     // Waits this long before dear victims; 0: never.
  int64_t patience_loss_ms = 5 * 60'000;  // Victims losing more work are dear.
};

bool Reclaimable(const core::Gang& victim, const core::Gang& by);

// Lower is cheaper; fields compare in order.
struct VictimCost {
  bool not_backfilled = true;
  int64_t lost_slot_s = 0;
  int32_t priority = 0;
  int64_t minus_creation_ms = 0;
  std::string_view key;
  auto operator<=>(const VictimCost&) const = default;
};
VictimCost CostOf(const core::Gang& g, const gang::SlotPolicy& slots, const PreemptionRules& r,
                  int64_t now_ms);

// Times `g` was preempted within the window ending at `now_ms`; whether that reaches
// max_preemptions or preemption_limit (Thrashed), or preemption_limit.
int32_t RecentPreemptions(const core::Gang& g, const PreemptionRules& r, int64_t now_ms);
bool Thrashed(const core::Gang& g, const PreemptionRules& r, int64_t now_ms);
bool AtPreemptionLimit(const core::Gang& g, const PreemptionRules& r, int64_t now_ms);
inline constexpr int kNeverVictim = 2;
int ProtectionTier(const core::Gang& victim, const core::Gang& by, const PreemptionRules& r,
                   int64_t now_ms);
// Work `victim` loses if preempted at `now_ms`: the time since its run started or, if later, since
// its last checkpoint; 0 for a gang that has not started.
int64_t LostWorkMs(const core::Gang& victim, int64_t now_ms);
// Whether `by`, younger than patience_ms, waits rather than take victims of which the dearest
// (those backfilled behind it left out) loses `dearest_loss_ms`.
bool WaitsToPreempt(const core::Gang& by, int64_t dearest_loss_ms, const PreemptionRules& r,
                    int64_t now_ms);
bool MayBackfillProvisionally(const core::Gang& g, const PreemptionRules& r, int64_t now_ms);

bool MayPassOn(const core::Resources& takes, const core::Resources& unit,
               const core::Resources& free);

}  // namespace phalanx::preemption

#endif  // PHALANX_PREEMPTION_RULES_H_
