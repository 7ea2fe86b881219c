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
//    what is free, preempts if it fits once victims it may take leave (all lower-priority
//    preemptible running gangs; those already marked for it), and waits otherwise; its victims
//    are a minimal set;
//  - (b) without backfill, no gang starts on a node a waiting gang ahead of it may use;
//  - (c) with backfill, a gang that does is BACKFILL and has that gang's priority or is
//    preemptible with preemption on; one that does not is ADMIT;
//  - (d) victims: only with preemption on, whole running unmarked gangs of lower priority, all
//    preemptible, each on a node its preemptor may use; a PREEMPT without new victims has
//    victims marked for it earlier;
//  - (e) INFEASIBLE exactly when the gang breaks maxSlotsPerPod or cannot fit on its eligible
//    nodes of the empty cluster; an incomplete gang waits.
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
  Coverage& operator+=(const Coverage& o);
};
Coverage CheckRound(const core::ClusterSnapshot& snap, const AdmissionOptions& opts,
                    const RoundResult& r);

// Every gang wholly holds capacity or wholly not, and is wholly marked for preemption or not.
void CheckWholeGangs(const core::ClusterSnapshot& snap);

}  // namespace phalanx::preemption::property

#endif  // PHALANX_TESTS_PREEMPTION_PROPERTY_RULES_H_
