// The admission loop: turns admission rounds into writes on pods through the API server.
// - ADMIT/BACKFILL: first every member gets phalanx.io/placement (signed in
//   phalanx.io/placement-signature, kube/placement_key.h) and a kubernetes.io/hostname
//   nodeSelector while still gated (so the plan survives a crash as reserved capacity), then every
//   member's phalanx.io/admission gate is removed. kube-scheduler never sees an unplanned member.
// - PREEMPT: every pod of each victim gang gets label phalanx.io/preempt=requested and annotation
//   phalanx.io/preempted-by (signed in phalanx.io/preempt-signature); the master tears them down.
//   Pods the master did not create (no phalanx.io/job-id) are deleted by the loop itself, as
//   kube-scheduler's preemption would.
// - WAIT/INFEASIBLE: phalanx.io/pending-reason on gated pods, written when it changes, at most
//   every 10 s per gang; beside it, the forecaster's phalanx.io/eta and phalanx.io/what-if
//   (forecaster.h OutlookDue: at most every minute, an estimate when it moved enough).
// - Recovery: gated gangs whose members all carry a placement are ungated; gated gangs with only
//   some placed members get the rest planned around the pinned ones (pins cannot be removed), or,
//   when that does not fit, are marked for the master to recreate.
// - Re-planning: a gang with a member planned on a node that is gone, closed to it or full
//   (preemption/stranded.h) is marked for the master to recreate, before recovery could ungate it;
//   so is a gang with a member kube-scheduler keeps refusing on its planned node (refusals.h),
//   whose work then avoids that node: its gated pods get phalanx.io/avoid-nodes before they are
//   planned.
// Marks for recreation name the gang itself in phalanx.io/preempted-by; gangs phalanx-master did
// not create are evicted as well. Pins name the node's kubernetes.io/hostname label (its name when
// it has none).
// With several scheduler replicas, only the leader (leadership.h) runs rounds; a round stops its
// writes when leadership is lost, and what it left half done is recovered as after a crash.
// A round runs only once the informer shows the previous round's writes (or they time out), so
// nothing is planned twice. A gang whose writes fail (a pod the extender may not patch, say) is
// logged and counted; the round goes on with the other gangs, and the next round tries again.
#ifndef PHALANX_SCHEDULER_EXTENDER_ADMISSION_LOOP_H_
#define PHALANX_SCHEDULER_EXTENDER_ADMISSION_LOOP_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "core/snapshot.h"
#include "kube/client.h"
#include "kube/placement_key.h"
#include "preemption/admission.h"
#include "scheduler_extender/forecaster.h"
#include "scheduler_extender/metrics.h"
#include "scheduler_extender/refusals.h"
#include "scheduler_extender/reservations.h"

namespace phalanx::extender {

struct LoopDeps {
  kube::Client* client = nullptr;
  // Signs each placement and mark written (kube/placement_key.h); null: they go unsigned.
  const kube::PlacementKey* placement_key = nullptr;
  Metrics* metrics = nullptr;
  ReservationBook* reservations = nullptr;  // Filter-time seats: rounds plan around them.
  std::function<std::shared_ptr<const core::ClusterSnapshot>()> snapshot;
  // Blocks until the cache changes after `version` or `timeout_ms` passes; returns the version.
  std::function<uint64_t(uint64_t version, int64_t timeout_ms)> wait_for_change;
  std::function<int64_t()> now_ms;
  // The forecaster's latest outlook (forecaster.h); empty or null: no estimates.
  std::function<std::shared_ptr<const Outlook>()> outlook;
  // Whether this replica leads (leadership.h); null: always. A follower runs no round, and a
  // round stops writing once it no longer leads.
  std::function<bool()> leads;
  // The cache's pods resourceVersion (Informer::pods_resource_version), read before each
  // snapshot: /debug/queue says which cluster state its round saw. Null: not said.
  std::function<std::string()> cache_version;
};

class AdmissionLoop {
 public:
  AdmissionLoop(preemption::AdmissionOptions options, int64_t resync_ms, LoopDeps deps,
                Refusals refusals)
      : options_(std::move(options)),
        resync_ms_(resync_ms),
        deps_(std::move(deps)),
        refusals_(std::move(refusals)) {}

  // Recovers half-done admissions, runs one round on `snap` and applies it. `seen_version`: the
  // pods resourceVersion `snap` holds every change up to, shown in DebugQueueJson ("" if unknown).
  preemption::RoundResult RunOnce(const core::ClusterSnapshot& snap,
                                  absl::string_view seen_version = "");
  // Rounds until `stop` is set, while this replica leads.
  void Run(const std::atomic<bool>& stop);
  // The last round as JSON: queue order, each gang's state, position, reason and nodes; and
  // "seen_version", when known: the pods resourceVersion that the last round whose writes were
  // all sent saw every change up to.
  std::string DebugQueueJson();

 private:
  absl::Status Admit(const core::ClusterSnapshot& snap, const preemption::GangDecision& d);
  using Annotations = std::vector<std::pair<std::string, std::optional<std::string>>>;
  // Writes each of `pods` its seat's node as phalanx.io/placement and hostname pin, beside
  // `annotations`, then (if `ungate`) lifts the gates. The seats are held in the book until the
  // cache shows them (or kWriteWaitMs pass), so that filter does not pass other pods on capacity
  // planned but not yet visible; they are dropped when a write fails. Nothing is written when the
  // seats no longer fit beside the book's (HoldUntilSeen).
  absl::Status Place(const core::ClusterSnapshot& snap, const std::string& gang,
                     const std::vector<const core::PodInfo*>& pods,
                     std::vector<ReservationBook::Seat> seats, Annotations annotations,
                     bool ungate);
  // Reserves `seats` of `gang` in the book for kWriteWaitMs from now. With `check`, only when they
  // still fit on `snap` beside the live seats (a foreign gang may have reserved some since the
  // round read the book: ReservationBook::ReserveIfRoom); false then, and the gang waits for the
  // next round.
  bool HoldUntilSeen(const core::ClusterSnapshot& snap, const std::string& gang,
                     std::vector<ReservationBook::Seat> seats, bool check);
  // Labels every pod of gang `key` phalanx.io/preempt=requested, annotated preempted-by `by`: the
  // master tears the gang down and recreates it gated.
  absl::Status MarkGang(const core::ClusterSnapshot& snap, const std::string& key,
                        const std::string& by);
  // Marks `g` for recreation (marked by itself); its pods are evicted when phalanx-master did not
  // create them (nobody else would act on the mark).
  absl::Status Recreate(const core::ClusterSnapshot& snap, const core::Gang& g);
  // Deletes every pod of `g` for gang `by`, as kube-scheduler's preemption would.
  absl::Status Evict(const core::Gang& g, const std::string& by);
  // Marks each victim gang; the pods of those phalanx-master did not create (nobody else would act
  // on the mark) are evicted as well.
  absl::Status MarkVictims(const core::ClusterSnapshot& snap, const preemption::GangDecision& d);
  // Marks the stranded gangs (preemption/stranded.h) and those with a member refused for too long
  // (refusals.h) for recreation, marked by themselves; returns their keys.
  absl::flat_hash_set<std::string> Replan(const core::ClusterSnapshot& snap);
  // Brings phalanx.io/avoid-nodes of gated pods in line with what their work avoids
  // (Refusals::Annotation); returns their gangs, which wait for the cache to show it.
  absl::flat_hash_set<std::string> NoteAvoidedNodes(const core::ClusterSnapshot& snap);
  absl::Status NoteReason(const core::ClusterSnapshot& snap, const preemption::GangDecision& d);
  // Finishes admissions a crash left half done, except those of `stranded` gangs.
  void Recover(const core::ClusterSnapshot& snap, const absl::flat_hash_set<std::string>& stranded);
  // Ungates the gated members of `g`.
  absl::Status UngateGang(const core::Gang& g);
  // Logs and counts `st`, the outcome of gang `gang`'s writes, when it failed.
  void Check(absl::string_view gang, const absl::Status& st);
  // Plans the unplaced members of a gang whose admission stopped halfway on `free`, and takes
  // what it planned from `free`.
  absl::Status CompletePlacement(const core::ClusterSnapshot& snap, const core::Gang& g,
                                 gang::Capacity& free);
  // Capacity of the filter-time reservations, per node of `snap`.
  gang::Capacity Held(const core::ClusterSnapshot& snap);
  absl::Status Ungate(const core::PodInfo& pod);
  absl::Status MergePatch(const core::PodInfo& pod, const std::string& patch);
  // True while a write of the last round is not yet visible in `snap` (and not timed out).
  bool AwaitingWrites(const core::ClusterSnapshot& snap);
  void Publish(const preemption::RoundResult& r, double seconds);
  bool Leads() const { return !deps_.leads || deps_.leads(); }
  // Aborted once this replica no longer leads: every write checks it first, so a round that
  // loses the lead stops at its next write (a half-done gang is recovered from pod state).
  absl::Status StillLeading() const;
  // Publishes that this replica follows.
  void Follow();

  preemption::AdmissionOptions options_;
  int64_t resync_ms_;
  LoopDeps deps_;
  Refusals refusals_;
  struct WrittenReason {
    std::string reason;
    int64_t at_ms = 0;
    WrittenOutlook outlook;
  };
  // The latest outlook's entry for `gang`, or null.
  const GangOutlook* OutlookOf(const std::string& gang);
  std::shared_ptr<const Outlook> outlook_;  // Read at the start of each round.
  absl::flat_hash_map<std::string, WrittenReason> reasons_;  // gang -> last reason written
  absl::flat_hash_map<std::string, bool> awaited_;  // pod uid -> expects a placement (else a mark)
  int64_t awaited_since_ms_ = 0;
  absl::flat_hash_set<std::string> held_;  // Gangs with seats in the book until their writes show.
  absl::Mutex mu_;
  std::string queue_json_ ABSL_GUARDED_BY(mu_) = "{\"gangs\":[]}";
  // The seen_version of the last round whose writes were all sent.
  std::string applied_version_ ABSL_GUARDED_BY(mu_);
};

}  // namespace phalanx::extender

#endif  // PHALANX_SCHEDULER_EXTENDER_ADMISSION_LOOP_H_
