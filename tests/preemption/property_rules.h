// The scheduling rules of DESIGN.md restated for the property test, independently of the engine
// (no queue comparator, planner, eligibility or victim code of it is called), and the checks of
// an admission round against them.
#ifndef PHALANX_TESTS_PREEMPTION_PROPERTY_RULES_H_
#define PHALANX_TESTS_PREEMPTION_PROPERTY_RULES_H_

#include "core/node.h"
#include "core/pod.h"
#include "core/snapshot.h"
#include "preemption/admission.h"

namespace phalanx::preemption::property {

// Whether `pod` may use `node`, for what the random worlds generate: a cordoned node or one the pod
// avoids takes no pod, every nodeSelector pair must be a node label, and every taint must be
// tolerated by key and value (or by key with Exists).
bool Eligible(const core::PodInfo& pod, const core::Node& node);

// Checks the round `r` that the engine decided on `snap` with `opts` (gtest failures):
//  - decisions: one per pending gang, in queue order (priority desc, queue position asc,
//    creation asc, gang key); plans cover every member on existing eligible nodes, and only
//    ADMIT, BACKFILL and PREEMPT carry one;
//  - capacity: running pods plus started plans fit every node; running pods not marked for
//    preemption plus every plan (preemptors' too) fit every node;
//  - (a) the first gang not started that can run (complete, feasible) is admitted if it fits in
//    what is free, preempts if it fits once victims it may take leave (all running preemptible
//    gangs of lower priority or backfilled behind it; those already marked for it), and waits
//    otherwise; its victims are a minimal set. So a provisional backfill delays the head it
//    passed no longer than until it exits once marked;
//  - (b) without backfill, no gang starts taking what a waiting gang ahead of it is short of on a
//    node that gang may use (short: the node's free amount, less the starting gang's, is below
//    that gang's pod request, for a resource the starting gang takes);
//  - (c) with backfill, a gang that does is BACKFILL and has that gang's priority or is
//    preemptible with preemption on; one that uses no node of a waiting gang is ADMIT;
//  - (d) victims: only with preemption on, whole running unmarked preemptible gangs of lower
//    priority or backfilled behind their preemptor, each on a node its preemptor may use; a
//    PREEMPT without new victims has victims marked for it earlier;
//  - (e) INFEASIBLE exactly when the gang breaks maxSlotsPerPod or cannot fit on its eligible
//    nodes of the empty cluster; an incomplete gang waits;
//  - (f) a BACKFILL naming a gang it was backfilled behind names a gang waiting ahead of it, and
//    was preempted fewer than max_preemptions times in the window; one of that gang's priority or
//    higher is preemptible;
//  - (g) anti-thrash: when the first gang to run takes a protected victim (a run younger than
//    min_run_ms, or preempted max_preemptions times in the window; never one backfilled behind
//    it), the unprotected ones it may take could not free enough. So no gang is preempted more
//    than max_preemptions times in a window but to start a gang nothing else can make room for;
//  - (h) preemption limit: a gang preempted preemption_limit times in the window is no victim
//    (checked with (d): the first gang to run waits when only such gangs could free enough), and
//    does not pass a waiting gang of higher priority (checked with (c));
//  - (i) patience: a gang younger than patience_ms takes no victim that would lose more than
//    patience_loss_ms (backfilled behind it: any); the first gang to run that could preempt waits
//    only when it is that young and such a victim is among those it may take, and says until when;
//    no other decision names such a time.
// A waiting gang is a complete, feasible gang that neither starts nor preempts.
// Returns how often the round met the cases the checks are about.
struct Coverage {
  int first_fits = 0;      // (a) The first gang to run fits in free capacity,
  int first_preempts = 0;  // or must preempt,
  int first_waits = 0;     // or must wait.
  int behind_waiting = 0;  // (b, c) Gangs that start behind a waiting gang,
  int passing = 0;         // on a node it may use.
  int victims = 0;         // (d)
  int infeasible = 0;      // (e)
  int incomplete = 0;
  int provisional = 0;       // (f) BACKFILLs behind a waiting gang of their priority or lower,
  int reclaimed = 0;         // (d) victims backfilled behind their preemptor.
  int protected_spared = 0;  // (g) First gangs that preempt while protected victims run,
  int protected_taken = 0;   // and those that take one.
  int at_limit_spared = 0;   // (h) First gangs to run beside a gang at its preemption limit.
  int patient_waits = 0;     // (i) First gangs to run that wait on their patience,
  int patient_preempts = 0;  // and victims of young preemptors.

  Coverage& operator+=(const Coverage& o);
};
// The rules' settings the random worlds are drawn against (property_world.h).
PreemptionRules PropertyRules();

Coverage CheckRound(const core::ClusterSnapshot& snap, const AdmissionOptions& opts,
                    const RoundResult& r);

// Every gang wholly holds capacity or wholly not, and is wholly marked for preemption or not.
void CheckWholeGangs(const core::ClusterSnapshot& snap);

}  // namespace phalanx::preemption::property

#endif  // PHALANX_TESTS_PREEMPTION_PROPERTY_RULES_H_
