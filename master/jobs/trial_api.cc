// JobManager: the trial process's calls (preemption signal, checkpoints, completion), the
// preemption timeout and retries of what failed (Tick), and start-up recovery (see job_manager.h).
#include <functional>
#include <set>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "kube/json.h"
#include "master/jobs/job_manager.h"
#include "master/store/auth.h"

namespace phalanx::master {

namespace {

constexpr size_t kMaxCheckpointId = 128;

// A checkpoint id names a directory or object key in the checkpoint storage: 1 to 128 of
// [A-Za-z0-9._-], starting with a letter or digit, with no ".." (so never a path out of it).
absl::Status CheckCheckpointId(absl::string_view id) {
  if (id.empty()) return absl::InvalidArgumentError("uuid: required");
  if (id.size() > kMaxCheckpointId) {
    return absl::InvalidArgumentError(
        absl::StrCat("uuid: at most ", kMaxCheckpointId, " characters, got ", id.size()));
  }
  const bool chars_ok = absl::c_all_of(
      id, [](char c) { return absl::ascii_isalnum(c) || c == '.' || c == '_' || c == '-'; });
  if (!chars_ok || !absl::ascii_isalnum(id.front()) || absl::StrContains(id, "..")) {
    return absl::InvalidArgumentError(
        absl::StrCat("uuid: must be letters, digits, '.', '_' and '-', starting with a letter or "
                     "digit, without \"..\"; got \"",
                     absl::CEscape(id.substr(0, 64)), "\""));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status JobManager::CheckAllocationToken(const std::string& allocation_id,
                                              const std::string& token) {
  absl::MutexLock lock(&mu_);
  KUBE_ASSIGN_OR_RETURN(Alloc * a, FindAllocLocked(allocation_id));
  if (a->rec.token_hash != TokenHash(token)) {
    return absl::UnauthenticatedError("not the token of this allocation");
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> JobManager::WatchPreemption(const std::string& allocation_id,
                                                 absl::Duration timeout) {
  std::function<bool()> signalled = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = allocs_.find(allocation_id);
    return it == allocs_.end() || it->second.rec.preempt_requested ||
           it->second.rec.state == AllocState::kTerminating;
  };
  mu_.LockWhenWithTimeout(absl::Condition(&signalled, &std::function<bool()>::operator()), timeout);
  absl::StatusOr<Alloc*> a = FindAllocLocked(allocation_id);
  const bool preempt =
      a.ok() && ((*a)->rec.preempt_requested || (*a)->rec.state == AllocState::kTerminating);
  absl::Status status = a.status();
  mu_.Unlock();
  if (!status.ok()) return status;
  return preempt;
}

absl::Status JobManager::AckPreemption(const std::string& allocation_id) {
  PodsAfterUnlock start(this);
  absl::MutexLock lock(&mu_);
  KUBE_ASSIGN_OR_RETURN(Alloc * a, FindAllocLocked(allocation_id));
  if (!a->rec.preempt_requested) {
    return absl::FailedPreconditionError(absl::StrCat(allocation_id, " is not being preempted"));
  }
  return AckLocked(*a);
}

absl::Status JobManager::AckLocked(Alloc& a) {
  a.rec.preempt_acked = true;
  ++stats_.preemptions_acknowledged;
  EventLocked(absl::StrCat(a.rec.id, ": preemption acknowledged; deleting its pods"));
  KUBE_RETURN_IF_ERROR(TerminateLocked(a));
  return ReconcileDirtyLocked();
}

absl::Status JobManager::ReportCheckpoint(const std::string& allocation_id, const std::string& uuid,
                                          int64_t steps_completed) {
  KUBE_RETURN_IF_ERROR(CheckCheckpointId(uuid));
  PodsAfterUnlock annotate(this);
  absl::MutexLock lock(&mu_);
  KUBE_ASSIGN_OR_RETURN(AllocationRecord rec, store_.GetAllocation(allocation_id));
  KUBE_ASSIGN_OR_RETURN(const int64_t reported_ms,
                        store_.AddCheckpoint(allocation_id, *rec.trial_id, uuid, steps_completed));
  // Stored: the pods learn its time after the call has released the lock, at best effort.
  if (auto it = allocs_.find(allocation_id); it != allocs_.end()) {
    AnnotateCheckpointLaterLocked(it->second, reported_ms);
  }
  return absl::OkStatus();
}

absl::Status JobManager::ReportCompletion(const std::string& allocation_id, bool success,
                                          const std::string& error) {
  PodsAfterUnlock start(this);
  absl::MutexLock lock(&mu_);
  KUBE_ASSIGN_OR_RETURN(Alloc * a, FindAllocLocked(allocation_id));
  KUBE_ASSIGN_OR_RETURN(TrialRecord trial, store_.GetTrial(*a->rec.trial_id));
  // As for pod phases (UpdateFromPodsLocked): a trial that already ended (killed, say) keeps its
  // state, and a failure while the run is being preempted is the preemption's doing (the trial
  // resumes later). A searched trial before its last rung is not complete either: a success
  // while its run is being preempted (the searcher's wait, the extender, a pause) acknowledges
  // the preemption, and one while it waits for a promotion changes nothing. The pods exit on
  // their own; their phases then end the allocation.
  const std::optional<search::TrialSearch> searched = SearchOf(trial);
  const bool before_top = searched && !searched->AtTop();
  if (success && before_top && a->rec.state == AllocState::kPreempting) {
    EventLocked(absl::StrCat(allocation_id, ": reported success before its last rung; trial ",
                             trial.id, " stays ", RunStateName(trial.state)));
    return AckLocked(*a);
  }
  if (IsTerminal(trial.state) || (!success && a->rec.preempt_requested) ||
      (success && before_top && searched->Reached())) {
    EventLocked(absl::StrCat(allocation_id, ": reported ", success ? "success" : "failure",
                             "; trial ", trial.id, " stays ", RunStateName(trial.state)));
    return absl::OkStatus();
  }
  return SetTrialStateLocked(trial.id, success ? RunState::kCompleted : RunState::kError,
                             success ? "" : error);
}

void JobManager::Tick(absl::Time now) {
  PodsAfterUnlock start(this);
  absl::MutexLock lock(&mu_);
  std::vector<Alloc*> expired;
  for (auto& [id, a] : allocs_) {
    if (a.rec.state == AllocState::kPreempting &&
        now - a.preempt_at >= config_.preemption_timeout) {
      expired.push_back(&a);
    }
  }
  stats_.preemptions_timed_out += static_cast<int64_t>(expired.size());
  for (Alloc* a : expired) {
    EventLocked(absl::StrCat(a->rec.id, ": preemption not acknowledged within ",
                             absl::FormatDuration(config_.preemption_timeout),
                             "; deleting its pods"));
    (void)TerminateLocked(*a);
  }
  FailStalledStartsLocked(now);
  QueueStuckPodsLocked(now);
  RetryLocked();
}

void JobManager::RetryLocked() {
  queued_deletions_.insert(queued_deletions_.end(), failed_deletions_.begin(),
                           failed_deletions_.end());
  failed_deletions_.clear();
  for (const std::string& job_id : relabel_jobs_) {
    absl::StatusOr<JobRecord> job = GetActiveJobLocked(job_id, /*allow_paused=*/true);
    if (job.ok()) RelabelLaterLocked(*job);
  }
  relabel_jobs_.clear();
  for (const std::string& id : std::exchange(unstored_outcomes_, {})) {
    if (auto it = allocs_.find(id); it != allocs_.end()) UpdateFromPodsLocked(it->second);
  }
  for (const std::string& id : std::exchange(unstored_ends_, {})) {
    if (auto it = allocs_.find(id); it != allocs_.end()) (void)StoreEndLocked(it->second);
  }
  dirty_jobs_.merge(retry_jobs_);
  retry_jobs_.clear();
  (void)ReconcileDirtyLocked();
}

absl::Status JobManager::Recover() {
  PodsAfterUnlock start(this);
  absl::MutexLock lock(&mu_);
  KUBE_ASSIGN_OR_RETURN(std::vector<AllocationRecord> open, store_.ListOpenAllocations());
  for (AllocationRecord& rec : open) {
    Alloc a{.rec = std::move(rec)};
    for (int rank = 0; rank < a.rec.pods; ++rank) {
      a.pod_names.push_back(absl::StrCat(a.rec.id, "-", rank));
    }
    if (a.rec.preempt_ms) a.preempt_at = absl::FromUnixMillis(*a.rec.preempt_ms);
    if (a.rec.start_failing_ms) a.start_failing_at = absl::FromUnixMillis(*a.rec.start_failing_ms);
    AddAllocLocked(std::move(a));
  }
  std::set<std::string> namespaces;
  for (const ResourcePoolConfig& pool : config_.resource_pools) namespaces.insert(pool.ns);
  for (const std::string& ns : namespaces) {
    KUBE_ASSIGN_OR_RETURN(std::vector<PodState> pods, pods_.ListPods(ns));
    for (const PodState& pod : pods) {
      auto it = allocs_.find(pod.allocation_id);
      if (it != allocs_.end()) {
        it->second.pods[pod.name] = pod;
      } else if (!pod.deleting()) {
        KUBE_RETURN_IF_ERROR(pods_.DeletePod(pod.ns, pod.name));  // An orphan.
      }
    }
    KUBE_RETURN_IF_ERROR(RecoverServicesLocked(ns));
  }
  std::vector<Alloc*> all;
  for (auto& [id, a] : allocs_) all.push_back(&a);
  for (Alloc* a : all) {
    const bool missing = a->pods.size() < a->pod_names.size();
    // A gang with missing pods cannot run; its trial starts again under a new allocation.
    if (a->rec.state == AllocState::kTerminating || missing) {
      KUBE_RETURN_IF_ERROR(TerminateLocked(*a));
    } else {
      UpdateFromPodsLocked(*a);
    }
  }
  absl::StatusOr<std::pair<std::vector<JobRecord>, int>> jobs =
      store_.ListJobs({.states = {RunState::kActive, RunState::kPaused}, .limit = 100000});
  if (!jobs.ok()) return jobs.status();
  for (const JobRecord& job : jobs->first) {
    if (job.state == RunState::kActive) active_jobs_.Put(job);
    dirty_jobs_.insert(job.job_id);
  }
  // Open runs of jobs that ended (a kill whose pods were not all stopped) are stopped now.
  for (const auto& [id, a] : allocs_) dirty_jobs_.insert(a.rec.job_id);
  return ReconcileDirtyLocked();
}

}  // namespace phalanx::master
