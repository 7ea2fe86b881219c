// JobManager: the master's state machine for experiments, tasks and their allocations.
//
// The store (Postgres) holds the truth; the manager keeps the open allocations and their observed
// pods in memory, behind one mutex. Every change is written to the store before the call returns.
// Pods are created and deleted after the mutex is released (StartLaunches, DoQueuedPodWork).
//
// Life of a job. A task is a job with exactly one trial, so both follow the same rules:
//   1. Reconcile(job) is the single place that decides what should run: an ACTIVE job gets one
//      allocation (a gang of gated pods, pod_builder.h) for each ACTIVE trial that has none, up to
//      searcher.max_concurrent_trials; a PAUSED or CANCELED job's allocations are stopped.
//   2. Pod phases drive the allocation: PENDING → SCHEDULED (all bound) → RUNNING (all running).
//      All pods Succeeded: the trial is COMPLETED; a pod Failed: the trial starts again from its
//      latest checkpoint while its experiment's max_restarts allow (counted over all its trials),
//      else it is in ERROR; a task's is in ERROR at once. (Unless the allocation was being
//      preempted: then it was stopped, not failed, and it resumes; a trial that finished meanwhile
//      reported it, ReportCompletion.) Finished pods are deleted once
//      the outcome is stored; until then (the store refused it) the allocation stays open, and
//      the next Tick stores it.
//      A pod that cannot start a container fails the run too, for good (it would fail the same way
//      again), with kubelet's reason and message as why: at once for an InvalidImageName, and for
//      ErrImagePull, ImagePullBackOff, CreateContainerConfigError or CreateContainerError (a
//      registry outage or a Secret created late can clear them) once that has lasted
//      pod_start_failure_timeout. Meanwhile the queue shows it as the job's pending reason
//      (start_failures.cc). A pod deleted or evicted by anyone but the master (a drain, node
//      pressure, a taint, a node shutdown) loses the run, whatever its phase: the allocation ends
//      and the trial resumes. A pod the kubelet evicts for its own limits (ephemeral storage, an
//      emptyDir's sizeLimit) fails the run instead: it would go the same way again. Pods the API
//      server refuses for good (a 4xx such as a missing namespace or an invalid pod) put the trial
//      in ERROR with the refusal as why; other refusals start a new run at the next Tick.
//   3. Preemption (label phalanx.io/preempt=requested from the extender, or a pause): the trial is
//      signalled (WatchPreemption answers true); its pods are deleted after AckPreemption or after
//      preemption_timeout. Non-experiment tasks are never preempted: their marks are ignored
//      once all their pods are bound; a run marked before that (re-planned by the extender) is
//      recreated. A run marked as a victim (phalanx.io/preempted-by names another gang; the
//      extender names the gang itself when it only re-plans it) is stored as one, with the time:
//      the trial's preemption history, which the pods of its later runs carry
//      (phalanx.io/preempted-at, the newest core::kMaxPreemptionHistory times; pod_builder.h)
//      for the extender's anti-thrash rules. Re-plans and pauses (the owner's doing) are not in
//      it.
//   4. An allocation whose pods are all gone is TERMINATED; Reconcile then starts the next run of
//      an ACTIVE trial (gated again, with its latest checkpoint and the time it was reported,
//      phalanx.io/checkpointed-at) or marks it PAUSED. ReportCheckpoint patches that time on the
//      pods of the reporting run too, after the checkpoint is stored: a patch the API server
//      refuses is logged and counted, and the run's next checkpoint patches again. A pod still
//      terminating terminating_pod_timeout past its grace period on a node that is gone or not
//      Ready is force-deleted (stuck_pods.cc): no kubelet would ever confirm its end.
//   5. Queue edits: priority changes recreate the gated pods of queued allocations (pod priority is
//      immutable); moves patch label phalanx.io/queue-position on every pod of the job.
//   6. Recover() at start-up re-attaches to pods by label, deletes pods of no open allocation, and
//      replaces allocations whose pods went missing. Pod names are "<allocation>-<rank>", so a
//      retried create can never duplicate a pod.
//   7. A run of several pods has a headless Service of the allocation's name (rendezvous.h),
//      created before its pods and deleted with them (run_services.cc). Recover() deletes those
//      of no open allocation and creates those missing.
#ifndef PHALANX_MASTER_JOBS_JOB_MANAGER_H_
#define PHALANX_MASTER_JOBS_JOB_MANAGER_H_

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "master/config/config.h"
#include "master/jobs/active_jobs.h"
#include "master/pods/pod_client.h"
#include "master/search/asha.h"
#include "master/store/records.h"
#include "master/store/store.h"

namespace phalanx::master {

struct ExperimentConfig;
struct SearcherConfig;

// Bounds of trial metrics (ReportMetrics): reports per call, names per report, a name's length,
// the values a trial keeps in each group, and the values of a page GetTrialMetrics answers.
inline constexpr size_t kMaxMetricReportsPerCall = 1000;
inline constexpr size_t kMaxMetricNames = 64;
inline constexpr int64_t kMaxMetricValuesPerTrial = 200000;
inline constexpr size_t kMaxMetricValuesPerPage = 20000;

// What an adaptive_asha trial's run is to do (SearcherOperation).
struct SearcherOp {
  int64_t length = 0;  // Train to this length, then report the searcher's metric.
  bool done = false;   // Nothing more for this run: it ends (checkpointed).
};

// A pod of a trial's run, whose log may be read (TrialLogPods).
struct LogPod {
  std::string ns;
  std::string name;  // "<run id>-<rank>".
  int run = 0;
  int rank = 0;
};

struct TrialView {
  TrialRecord trial;
  std::optional<AllocationRecord> allocation;  // The open one, if any.
};

struct JobView {
  JobRecord job;
  std::vector<TrialView> trials;  // Tasks: their one trial.
};

// An experiment's best validation values of its searcher's metric (smallest, or largest when
// smaller_is_better is false), finite values only.
struct BestValidationValues {
  std::map<int64_t, double> trials;  // By trial id, those that reported one.
  std::optional<double> experiment;  // The best of them.
};

enum class QueueState { kQueued, kScheduled, kBackfilled };

// A gang a what-if answer names, and its job when the master created it.
struct GangRef {
  std::string gang;  // "namespace/gang".
  std::string job_id;
  std::string username;
};
// What would start a waiting job now (forecast/what_if.h, as the extender wrote it).
struct WhatIfAnswer {
  std::optional<int64_t> slots;
  std::optional<int32_t> priority;
  std::vector<GangRef> victims;
  std::optional<std::string> pool;  // It starts now in this resource pool.
  std::vector<GangRef> ahead;
};

// One ACTIVE job in its pool's queue.
struct QueueEntry {
  JobRecord job;       // Without config and entrypoint.
  int position = 0;    // 0-based, in queue order within the pool.
  int jobs_ahead = 0;  // Queued jobs ahead of it in the pool.
  QueueState state = QueueState::kQueued;
  int requested_slots = 0;
  int allocated_slots = 0;
  std::string pending_reason;
  // The priorities its bound pods carry that are not job.priority, ascending: runs that started
  // before a priority change keep the priority they started with (a pod's priority is fixed).
  std::vector<int> running_priorities;
  // The extender's forecast for its waiting run (job_outlook.cc).
  int64_t eta_ms = 0;     // 0: none.
  std::string eta_note;   // Why none ("" with no forecast yet).
  std::string eta_basis;  // Of the run's expected runtime.
  std::optional<WhatIfAnswer> what_if;
};

// What the manager did since start, and its open allocations now (for metrics).
struct ManagerStats {
  std::map<std::string, int> open_allocations;  // By AllocStateName.
  int64_t preemptions_requested = 0;            // Allocations signalled to checkpoint and stop.
  int64_t preemptions_acknowledged = 0;         // ... that acknowledged in time.
  int64_t preemptions_timed_out = 0;            // ... whose pods went after preemption_timeout.
  int64_t pod_events = 0;                       // Pod observations from the watch.
  int64_t pods_force_deleted = 0;  // Stuck terminating on a node that is down (stuck_pods.cc).
  // Pods a reported checkpoint's time could not be patched on (phalanx.io/checkpointed-at).
  int64_t checkpoint_annotation_failures = 0;
};

class JobManager {
 public:
  // `store` and `pods` must outlive the manager.
  JobManager(MasterConfig config, Store& store, PodClient& pods);

  absl::Status Recover();

  // The stored job and its trials, with the allocations of the runs it started.
  absl::StatusOr<JobView> CreateExperiment(const std::string& yaml, const User& user,
                                           bool activate);
  absl::StatusOr<JobView> LaunchTask(TaskType type, const std::string& yaml,
                                     const std::vector<std::string>& entrypoint, const User& user);
  absl::StatusOr<JobView> GetJob(const std::string& job_id);
  absl::StatusOr<std::pair<std::vector<JobRecord>, int>> ListJobs(const JobFilter& filter);

  // The changes below are made for `by`, and the event log names them once stored.
  absl::Status Pause(const std::string& job_id, const User& by);
  absl::Status Activate(const std::string& job_id, const User& by);
  // Kills the job: its runs end and their pods are deleted once the call has released the lock
  // (a deletion the API server refuses is logged and tried again at the next Tick).
  absl::Status Kill(const std::string& job_id, const User& by);
  absl::Status SetPriority(const std::string& job_id, int priority, const User& by);
  // Moves `job_id` just ahead of (or behind) `anchor`, which must share its pool and priority.
  absl::Status Move(const std::string& job_id, const std::string& anchor, bool ahead,
                    const User& by);
  // Experiments only, while none of their allocations is scheduled.
  absl::Status SetResourcePool(const std::string& job_id, const std::string& pool, const User& by);
  // ACTIVE jobs of `pool` (every pool when empty), pools by name, each in queue order.
  absl::StatusOr<std::vector<QueueEntry>> Queue(const std::string& pool);
  // The entries [offset, offset + limit) of Queue(pool) restricted to `states` (all when empty),
  // and how many match in all; only the page is copied out.
  struct QueuePage {
    std::vector<QueueEntry> entries;
    int total = 0;
  };
  QueuePage Queue(const std::string& pool, const std::vector<QueueState>& states, int offset,
                  int limit);
  // The entry of ACTIVE job `job_id`, NOT_FOUND when it is in no queue.
  absl::StatusOr<QueueEntry> QueueEntryOf(const std::string& job_id);

  // ownership.cc. OK when `by` owns the job or is an admin; else PERMISSION_DENIED naming the
  // owner: "experiment 3 belongs to alice; only alice or an admin may <action>".
  absl::Status CheckMayChange(const std::string& job_id, const User& by, absl::string_view action);
  // The same for the job of an allocation (open or ended).
  absl::Status CheckMayChangeAllocation(const std::string& allocation_id, const User& by);

  // The trial process's calls; `token` is the allocation's token (PHALANX_ALLOCATION_TOKEN).
  absl::Status CheckAllocationToken(const std::string& allocation_id, const std::string& token);
  absl::StatusOr<bool> WatchPreemption(const std::string& allocation_id, absl::Duration timeout);
  absl::Status AckPreemption(const std::string& allocation_id);
  absl::Status ReportCheckpoint(const std::string& allocation_id, const std::string& uuid,
                                int64_t steps_completed);
  absl::Status ReportCompletion(const std::string& allocation_id, bool success,
                                const std::string& error);
  // trial_metrics.cc: stores the run's trial's metric reports (Store::AddMetrics), merged by
  // steps. INVALID_ARGUMENT naming the field for none, more than kMaxMetricReportsPerCall, negative
  // steps, or a report without names, with more than kMaxMetricNames or a name that is not 1-128
  // of [A-Za-z0-9_./-]; RESOURCE_EXHAUSTED past kMaxMetricValuesPerTrial values in the group.
  absl::Status ReportMetrics(const std::string& allocation_id, MetricGroup group,
                             const std::vector<MetricReport>& reports);
  // trial_search.cc: the run's operation: its trial's target rung; FAILED_PRECONDITION for a
  // trial of another searcher (they train to max_length) or a task.
  absl::StatusOr<SearcherOp> SearcherOperation(const std::string& allocation_id);
  // trial_logs.cc: the pods of the trial's last two runs (a run's pods exist until they are
  // deleted, some time after it ends), every rank or `rank` alone, by run then rank; pods that
  // are gone are the reader's to skip. PERMISSION_DENIED unless `by` owns the experiment or is an
  // admin; NotFound for no such trial.
  absl::StatusOr<std::vector<LogPod>> TrialLogPods(int64_t trial_id, std::optional<int> rank,
                                                   const User& by);
  // PodClient::StreamLog of the pod; needs no lock.
  absl::Status StreamLog(const LogPod& pod, const LogOptions& options,
                         const std::function<bool(absl::string_view)>& sink);
  // The best validation values of the experiment's searcher metric (none for tasks, or without a
  // metric).
  absl::StatusOr<BestValidationValues> BestValidation(const JobRecord& job);
  // The trial's reports (Store::GetMetrics); NotFound for no such trial.
  absl::StatusOr<std::vector<MetricReport>> GetTrialMetrics(int64_t trial_id, MetricGroup group,
                                                            int64_t after_steps, int limit,
                                                            bool* more);

  // Kubernetes observations (from the pod watcher).
  void OnPod(const PodState& pod);
  void OnPodDeleted(const std::string& ns, const std::string& name);
  // A list of the managed pods of `ns` (the watch's first, or a relist): every pod the manager
  // holds there that `listed` lacks is gone, as if its deletion had been watched. (Pods deleted
  // before the watch began, as Recover deletes them, send no event.)
  void OnPodsListed(const std::string& ns, const std::set<std::string>& listed);
  // Preemption timeouts, pod start failures that lasted pod_start_failure_timeout, pods stuck
  // terminating on a node that is down (force-deleted), then RetryLocked.
  void Tick(absl::Time now);

  const MasterConfig& config() const { return config_; }
  ManagerStats Stats();
  // Where the life cycle goes, one line per event ("exp-3-trial-3-r1: preemption requested; ..."):
  // submissions, runs started or whose pods could not be created, preemptions requested,
  // acknowledged or timed out, pods that cannot start a container (or start after all), a run's
  // pods all succeeded or one failed, runs lost or ended.
  // phalanx-master logs them; none by default. Called with the manager's lock held.
  void SetEventLog(std::function<void(const std::string&)> log);

 private:
  struct Alloc {
    AllocationRecord rec;
    std::vector<std::string> pod_names;
    std::map<std::string, PodState> pods;  // Observed, by name.
    absl::Time preempt_at = absl::InfiniteFuture();
    // A pod container that cannot start for now ("pod ns/name cannot start container c: Reason:
    // message"), empty when none; since when one has not.
    std::string start_failure;
    absl::Time start_failing_at = absl::InfiniteFuture();
    // Why the run fails though no pod did (its pods cannot start), or why a pod was evicted for
    // its own limits; empty otherwise.
    std::string fail_why;
  };

  // job_manager.cc
  struct Submission;  // Numbered and prepared, below.
  // Numbers the job and its trials, stores them with the first runs of at most `cap` trials, then
  // creates their pods; `parsed` as for PrepareRunLocked. Takes mu_ itself: not across the commit
  // or the pod creations.
  absl::StatusOr<JobView> Submit(JobRecord job, std::vector<TrialRecord> trials, int cap,
                                 const ExperimentConfig* parsed = nullptr) ABSL_LOCKS_EXCLUDED(mu_);
  // Records the stored submission and opens its runs' allocations; Submit then starts them with
  // StartLaunches.
  JobView OpenSubmittedLocked(const Submission& sub) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // CheckQuotasLocked for `job` becoming ACTIVE with `runs` runs opened at once.
  absl::Status CheckRunsQuotaLocked(const JobRecord& job, int runs)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status NumberLocked(JobRecord& job, std::vector<TrialRecord>& trials)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // ReconcileOnceLocked; a job it fails for is tried again at the next Tick.
  absl::Status ReconcileLocked(const std::string& job_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status ReconcileOnceLocked(const std::string& job_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // trial_api.cc: what failed before, again (API server or database errors): pod deletions, queue
  // labels, run outcomes and allocation ends the store refused, and Reconcile of the jobs marked
  // for it.
  void RetryLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status StopAllocationsLocked(const JobRecord& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // store_.UpdateJob, keeping active_jobs_ in step; a commit of unknown outcome marks the job to
  // be reconciled from what was stored.
  absl::Status UpdateJobLocked(const JobRecord& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Puts `job` as stored in active_jobs_ (or takes it out).
  void ShowLocked(const JobRecord& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<JobRecord> GetActiveJobLocked(const std::string& job_id, bool allow_paused)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // trial_search.cc (adaptive_asha; see search/asha.h).
  // The experiment's trials as the searcher sees them.
  std::vector<search::SearchTrial> SearchViewLocked(const std::string& job_id,
                                                    const std::vector<TrialRecord>& trials)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // When the open run `rec` of a searched trial reports a validation value of the searcher's
  // metric that reaches its target rung: stores the result in the trial's searcher_state
  // (search::Record) and acts on the verdict. The reports themselves are the caller's to store.
  // Takes mu_ (only then: the checks before it read one trial).
  absl::Status ReportToSearcher(const AllocationRecord& rec,
                                const std::vector<MetricReport>& reports) ABSL_LOCKS_EXCLUDED(mu_);
  // Logs the verdict; a trial that waits has its run preempted (it checkpoints; its gang goes).
  void ActOnVerdictLocked(Alloc& run, int64_t trial_id, const search::Recorded& r)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // For an ACTIVE adaptive_asha experiment (else false, nothing done): completes the trials past
  // their top rung, starts the runs search::NextRuns picks within `cap` open runs, and completes
  // the trials left once the search is over; true.
  absl::StatusOr<bool> ReconcileSearchLocked(const JobRecord& job, int cap)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The trial's adaptive search state; nullopt for other searchers' trials.
  static std::optional<search::TrialSearch> SearchOf(const TrialRecord& trial);
  // job_queue.cc
  // A queue entry that points into active_jobs_ and allocs_ (valid while mu_ is held).
  struct QueueRow {
    const JobRecord* job = nullptr;
    const std::string* pending_reason = nullptr;
    const PodState* outlook = nullptr;  // A waiting pod with the extender's forecast on it.
    QueueState state = QueueState::kQueued;
    int position = 0, jobs_ahead = 0, requested_slots = 0, allocated_slots = 0;
    std::set<int> running_priorities;  // QueueEntry's.
  };
  // The rows of ForEach(pool) in order, positions counted per pool, until `visit` returns false.
  void ForEachRowLocked(const std::string& pool, const std::function<bool(const QueueRow&)>& visit)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  QueueRow RowLocked(const JobRecord& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  QueueEntry EntryLocked(const QueueRow& row) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // job_outlook.cc: the row's forecast in `entry`, gangs resolved to their jobs.
  void OutlookLocked(const PodState& pod, QueueEntry& entry) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  GangRef GangRefLocked(const std::string& gang) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A run ready to start: what the store records, then the allocation and pods to create.
  struct Launch {
    StartedRun run;
    Alloc alloc;
    std::vector<nlohmann::json> pods;
    nlohmann::json service;     // The run's headless Service; null for a run of one pod.
    double queue_position = 0;  // The job's, as labelled on `pods`.
  };
  struct Submission {
    JobRecord job;
    std::vector<TrialRecord> trials;
    std::vector<AllocationRecord> allocations;  // Of `launches`, as stored.
    std::vector<Launch> launches;
    bool unprepared = false;  // A run could not be built: Reconcile records why.
  };

  // allocations.cc
  // Builds the next run of `trial` (no I/O), its pods carrying `history`.
  // `parsed`: the experiment's config if already parsed (else it is parsed from job.config).
  absl::StatusOr<Launch> PrepareRunLocked(const JobRecord& job, TrialRecord trial,
                                          const TrialHistory& history,
                                          const ExperimentConfig* parsed = nullptr)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Opens the stored run's allocation and queues it for DoQueuedPodWork.
  void LaunchLocked(Launch launch) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Creates the pods of `launches` without the lock (against the API server each pod is a round
  // trip, and a gang's would hold up every other call: GetJobs, pod events, kills), several at
  // once, then takes it to finish each with StartedLocked, logging failures. The first failure,
  // if any.
  absl::Status StartLaunches(const std::vector<Launch>& launches) ABSL_LOCKS_EXCLUDED(mu_);
  // Deletes the pods DeleteLaterLocked queued, sets the labels RelabelLaterLocked and the
  // annotations AnnotateCheckpointLaterLocked queued, then StartLaunches of the runs LaunchLocked
  // queued, until no queue holds anything. Public methods that can open or end runs, or patch
  // pods, call it once their lock is released, through a PodsAfterUnlock declared before their
  // MutexLock.
  void DoQueuedPodWork() ABSL_LOCKS_EXCLUDED(mu_);
  class PodsAfterUnlock {
   public:
    explicit PodsAfterUnlock(JobManager* manager) : manager_(manager) {}
    ~PodsAfterUnlock() { manager_->DoQueuedPodWork(); }

   private:
    JobManager* manager_;
  };
  // Creates the Service (run_services.cc) and then the pods of every launch, kApiRequestsAtOnce
  // at a time; for each launch, the Service's failure or the first of its pods' (AlreadyExists is
  // none), or OK. Needs no lock.
  std::vector<absl::Status> CreatePods(const std::vector<Launch>& launches);
  struct PodRef {
    std::string ns;
    std::string name;
    bool service = false;  // A run's Service, not a pod (in deletions only).
  };
  // run_services.cc
  // For each launch, OK or why its Service could not be created (AlreadyExists is OK).
  std::vector<absl::Status> CreateServices(const std::vector<Launch>& launches);
  // Queues the deletion of the run's pods and, for several pods, of its Service.
  void DeleteRunLaterLocked(const Alloc& a) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // At start: deletes the Services in `ns` of no open allocation and creates those missing for
  // the open allocations of several pods that are not ending.
  absl::Status RecoverServicesLocked(const std::string& ns) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Queues the pod's deletion for DoQueuedPodWork (against the API server each deletion is a
  // round trip, and a gang's would hold up every other call).
  void DeleteLaterLocked(const std::string& ns, const std::string& name)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Deletes `pods` (and Services) without the lock, several at once; a deletion that fails (other
  // than NotFound) is logged and queued again by the next Tick.
  void DeletePods(const std::vector<PodRef>& pods) ABSL_LOCKS_EXCLUDED(mu_);
  // A pod's label phalanx.io/queue-position, to be set to its job's position.
  struct Relabel {
    PodRef pod;
    std::string job_id;
    std::string position;
  };
  // Queues the label of every pod of `job`'s open allocations for DoQueuedPodWork.
  void RelabelLaterLocked(const JobRecord& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sets the labels without the lock, several at once; when one fails (other than NotFound) its
  // job is logged and relabelled at the next Tick, from the position it has then.
  void SetQueueLabels(const std::vector<Relabel>& labels) ABSL_LOCKS_EXCLUDED(mu_);
  // A pod's annotation phalanx.io/checkpointed-at, to be set to `at`.
  struct CheckpointTime {
    PodRef pod;
    std::string at;
  };
  // Queues that annotation, the time `ms`, for every pod of `a` unless it is ending.
  void AnnotateCheckpointLaterLocked(const Alloc& a, int64_t ms) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sets the annotations without the lock, several at once; one that fails (other than NotFound)
  // is logged and counted, not retried: the run's next checkpoint writes a newer time.
  void SetCheckpointTimes(const std::vector<CheckpointTime>& times) ABSL_LOCKS_EXCLUDED(mu_);
  // After an opened allocation's pods were created (`created`, possibly without the lock): logs
  // the start, or undoes the run on failure (see 2. above); deletes the pods again when the
  // allocation ended meanwhile.
  absl::Status StartedLocked(const Alloc& launched, const absl::Status& created)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Reads the trial's history (for a trial that ran before), prepares, stores, launches; a trial
  // whose run cannot be built is in ERROR.
  absl::Status StartAllocationLocked(const JobRecord& job, TrialRecord trial)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status RequestPreemptionLocked(Alloc& a) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The preempted run's trial acknowledged: its pods go, then ReconcileDirtyLocked.
  absl::Status AckLocked(Alloc& a) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Queues the deletion of the allocation's pods, whatever the store says, then StoreEndLocked.
  absl::Status TerminateLocked(Alloc& a) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Stores the TERMINATING allocation, then FinishIfGoneLocked; a write the store refuses is
  // returned and, with FinishIfGoneLocked's, made again by the next Tick (StoreEndLaterLocked).
  absl::Status StoreEndLocked(Alloc& a) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void StoreEndLaterLocked(const Alloc& a, const absl::Status& refused)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A non-empty `error` is recorded as why the trial is in `state`.
  absl::Status SetTrialStateLocked(int64_t trial_id, RunState state, const std::string& error = "")
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void UpdateFromPodsLocked(Alloc& a) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Stores the outcome of the run whose pods all ended, or that failed, as its trial's state (see
  // 2. above): COMPLETED when `error` is empty, else ERROR with `error` as why, or ACTIVE again
  // while the experiment's max_restarts last (not for a container that cannot start). Answers
  // what happened, for the event log.
  absl::StatusOr<std::string> StoreOutcomeLocked(const Alloc& a, const std::string& error)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // An experiment's max_restarts and the restarts its trials have used (none for tasks).
  struct RestartBudget {
    int max = 0;
    int used = 0;
  };
  absl::StatusOr<RestartBudget> RestartBudgetLocked(const std::string& job_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // quotas.cc: RESOURCE_EXHAUSTED naming the quota, its limit and the user's count when `user`
  // would exceed a master.yaml quota by adding `experiments` active experiments, `trials` trials
  // with open runs and `pods` queued pods (see QuotaConfig).
  absl::Status CheckQuotasLocked(const std::string& user, int experiments, int trials, int pods)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // start_failures.cc
  // Updates the allocation's start_failure from its pods (an event when one appears or clears),
  // and sets fail_why when a pod cannot start for good.
  void NoteStartFailuresLocked(Alloc& a) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Stores whether a pod of the run cannot start (the store keeps since when), when that changed.
  void StoreStartFailingLocked(Alloc& a, bool failing) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Fails the runs whose start_failure has lasted pod_start_failure_timeout at `now`.
  void FailStalledStartsLocked(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // stuck_pods.cc
  // A pod terminating_pod_timeout past its deletion deadline, still there.
  struct StuckPod {
    PodRef pod;
    std::string node;
    absl::Duration past;  // How long past its deadline.
  };
  enum class Stuck { kNew, kAwaitingKubelet, kFailing, kForceDeleted };
  // Queues the stuck pods at `now` for ForceDeleteStuck (once for each that was force-deleted).
  void QueueStuckPodsLocked(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Force-deletes each pod whose node is down. Says once that a pod waits for its kubelet, and once
  // that reading its node or deleting it fails (both are tried again at every Tick).
  void ForceDeleteStuck(const std::vector<StuckPod>& stuck) ABSL_LOCKS_EXCLUDED(mu_);
  // TERMINATING with no pod left: TERMINATED (stays TERMINATING when the store refuses), forgotten,
  // and its job marked for Reconcile.
  void FinishIfGoneLocked(Alloc& a) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Reconciles the jobs marked by FinishIfGoneLocked until none is left.
  absl::Status ReconcileDirtyLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<Alloc*> FindAllocLocked(const std::string& allocation_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::vector<Alloc*> AllocsOfJobLocked(const std::string& job_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Inserts into (or replaces in) allocs_ and job_allocs_; removes from both.
  Alloc& AddAllocLocked(Alloc a) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ForgetAllocLocked(const std::string& id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  void EventLocked(const std::string& line) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Pod `name` of allocation `a` is gone (OnPodDeleted, OnPodsListed).
  void PodGoneLocked(Alloc& a, const std::string& name) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A pod of the open allocation was deleted or evicted by someone else: the allocation ends
  // without an outcome for its trial, which starts again from its latest checkpoint (Reconcile).
  void RunLostLocked(Alloc& a, const std::string& why) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const MasterConfig config_;
  Store& store_;
  PodClient& pods_;
  absl::Mutex mu_;
  // Open allocations by id; Alloc pointers stay valid across inserts. Changed only through
  // AddAllocLocked and ForgetAllocLocked, which keep job_allocs_ in step.
  std::map<std::string, Alloc> allocs_ ABSL_GUARDED_BY(mu_);
  // Each job's open allocations, in the order they were added.
  absl::flat_hash_map<std::string, std::vector<Alloc*>> job_allocs_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<std::string> dirty_jobs_ ABSL_GUARDED_BY(mu_);
  // Jobs numbered by a submission that has not opened them yet (Submit stores them without the
  // lock): no command may act on them before, or it would miss their runs.
  absl::flat_hash_set<std::string> submitting_ ABSL_GUARDED_BY(mu_);
  // Jobs whose last Reconcile or submission could not start every run: Tick tries them again.
  absl::flat_hash_set<std::string> retry_jobs_ ABSL_GUARDED_BY(mu_);
  // Runs opened whose pods are not created yet, and pods to delete (DoQueuedPodWork).
  std::vector<Launch> queued_launches_ ABSL_GUARDED_BY(mu_);
  std::vector<PodRef> queued_deletions_ ABSL_GUARDED_BY(mu_);
  // Deletions that failed: Tick queues them again.
  std::vector<PodRef> failed_deletions_ ABSL_GUARDED_BY(mu_);
  std::vector<Relabel> queued_labels_ ABSL_GUARDED_BY(mu_);
  std::vector<CheckpointTime> queued_checkpoint_times_ ABSL_GUARDED_BY(mu_);
  std::vector<StuckPod> queued_stuck_ ABSL_GUARDED_BY(mu_);
  // Stuck pods (by "namespace/name") as ForceDeleteStuck left them; pruned when they go.
  std::map<std::string, Stuck> stuck_ ABSL_GUARDED_BY(mu_);
  // Jobs whose pods' labels could not all be set: Tick relabels them.
  absl::flat_hash_set<std::string> relabel_jobs_ ABSL_GUARDED_BY(mu_);
  // Allocations whose pods all ended but whose trial's outcome the store refused: they stay open
  // and Tick stores it again (UpdateFromPodsLocked), before they end.
  absl::flat_hash_set<std::string> unstored_outcomes_ ABSL_GUARDED_BY(mu_);
  // Ending allocations whose state the store refused: Tick stores it again (StoreEndLocked).
  absl::flat_hash_set<std::string> unstored_ends_ ABSL_GUARDED_BY(mu_);
  // ACTIVE jobs as stored (every job write goes through the manager): the queue's source.
  ActiveJobs active_jobs_ ABSL_GUARDED_BY(mu_);
  // The last ids handed out; read from the store before the first submission and again after a
  // submission collided with stored ids.
  std::optional<Store::LastIds> last_ids_ ABSL_GUARDED_BY(mu_);
  ManagerStats stats_ ABSL_GUARDED_BY(mu_);  // open_allocations is filled in by Stats().
  std::function<void(const std::string&)> event_log_ ABSL_GUARDED_BY(mu_);
};

}  // namespace phalanx::master

#endif  // PHALANX_MASTER_JOBS_JOB_MANAGER_H_
