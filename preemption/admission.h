// One admission round: decides, for every pending gang in queue order, admit / backfill / preempt /
// wait / infeasible, over a snapshot. Pure: same snapshot and options, same decisions.
//
// Algorithm, per pending gang G in queue order (see queue.h), with `free` the capacity left after
// the decisions made so far this round, and `open` = `free` less the nodes that the first blocked
// gang of G's priority holds as they drain (holds.h; only with backfill on):
//   1. Incomplete gangs wait; gangs that can never fit, or with a pod whose phalanx labels cannot
//      be read, are infeasible and block nobody.
//   2. Capacity G may count on = open + capacity of victims already marked for G in earlier rounds.
//      A G with such victims is planned on that larger capacity first, so that it keeps to the
//      nodes its victims free (the ones reserved for it) whichever of their pods exits first; the
//      plan starts at once if it fits on `open` alone, else G waits for its victims (PREEMPT with
//      no new victims). Otherwise, or if that fails, G is planned on `open` alone; if that fails,
//      G may backfill provisionally (with backfill and preemption on, rules.h
//      MayBackfillProvisionally) on `free`, the held nodes included, as the holder's to take back;
//      if that fails too and preemption is on, victims are chosen (victims.h, rules.h) and
//      marked: PREEMPT, unless G is still patient with them (rules.h WaitsToPreempt) and no set
//      without dear victims frees enough either: then G waits until patient_until_ms at most, its
//      shape is not taken to fail, and the victims it would take are not taken by later gangs.
//   3. A plan is allowed only if, for every gang B that waits ahead of G and may use one of the
//      plan's nodes where G takes what B is short of (rules.h MayPassOn), backfill is on and either
//      B has G's priority or B could later reclaim G (preemption on, G preemptible). Such a plan on
//      free capacity is BACKFILL, otherwise ADMIT; a BACKFILL on a node some blocked gang holds
//      names that gang (backfilled_behind), which may reclaim it whatever their priorities. A plan
//      on free capacity that is not allowed is made again off the nodes of the gangs G may not
//      pass; if that fails too, G waits. A gang that waits joins the waiting gangs that block later
//      work and, if it found no plan and backfill is on, holds nodes as they drain.
//   4. Every plan reserves its capacity: free = min(free, capacity G counted on - plan).
// So a blocked head is never passed by work it could not take back, and capacity freed for a
// preemptor is held for it until its victims exit. Without backfill the queue is strict: nothing
// passes a waiting gang on nodes it may use but what takes none of what it is short of there.
#ifndef PHALANX_PREEMPTION_ADMISSION_H_
#define PHALANX_PREEMPTION_ADMISSION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/snapshot.h"
#include "gang/planner.h"
#include "gang/slots.h"
#include "preemption/rules.h"

namespace phalanx::preemption {

struct AdmissionOptions {
  gang::SlotPolicy slots;
  bool preemption = true;
  bool backfill = true;
  int64_t now_ms = 0;  // The caller's clock, for lost-work costs.
  // Capacity held outside the snapshot, per node index (the extender's filter-time reservations
  // for gangs other tools create); nothing is planned on it.
  gang::Capacity held;
  PreemptionRules rules;
};

enum class Verdict { kAdmit, kBackfill, kPreempt, kWait, kInfeasible };
const char* VerdictName(Verdict v);

struct Assignment {
  std::string pod_uid;
  std::string pod_name;
  std::string node;
};

struct GangDecision {
  std::string gang;
  Verdict verdict = Verdict::kWait;
  int position = 0;  // 1-based place in the pending queue.
  int32_t priority = 0;
  int64_t slots = 0;                 // Slots the gang requests.
  std::vector<Assignment> plan;      // For admit, backfill and preempt (the reserved nodes).
  std::vector<std::string> victims;  // Gang keys newly marked for preemption.
  std::string backfilled_behind;     // BACKFILL on nodes this blocked gang holds (rules.h).
  // WAIT because it is patient with its victims (rules.h WaitsToPreempt): when its patience ends.
  int64_t patient_until_ms = 0;
  std::string reason;
};

struct RoundResult {
  std::vector<GangDecision> decisions;  // Queue order.
};

RoundResult RunAdmissionRound(const core::ClusterSnapshot& snapshot,
                              const AdmissionOptions& options);

}  // namespace phalanx::preemption

#endif  // PHALANX_PREEMPTION_ADMISSION_H_
