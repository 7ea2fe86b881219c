// JobManager: the life of one allocation, from its gated pods to TERMINATED (see job_manager.h).
#include <map>
#include <string>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/pod.h"
#include "kube/decode.h"
#include "kube/json.h"
#include "kube/status.h"
#include "master/jobs/job_manager.h"
#include "master/jobs/run_estimate.h"
#include "master/pods/pod_builder.h"
#include "master/pods/rendezvous.h"
#include "master/spec/experiment_config.h"
#include "master/spec/task_config.h"
#include "master/store/auth.h"

namespace phalanx::master {
namespace {

// The API server refused the request for good: a 4xx that asking again will not change (a missing
// namespace, an invalid or forbidden pod). Not 401 (credentials are renewed), 408, 409 (conflicts),
// 429, nor a 403 for an exceeded ResourceQuota, which clears as other pods end.
bool RefusedForGood(const absl::Status& s) {
  const int code = kube::HttpCode(s);
  if (code < 400 || code >= 500 || code == 401 || code == 408 || code == 409 || code == 429) {
    return false;
  }
  return code != 403 || !absl::StrContains(s.message(), "exceeded quota");
}

void SetEstimate(std::optional<RunEstimate> estimate, PodRequest& r) {
  if (!estimate) return;
  r.expected_runtime_s = estimate->seconds;
  r.expected_runtime_basis = std::move(estimate->basis);
}

// The pod request of a run of `trial`; `env` receives the environment it points to. `parsed` is
// the experiment's config when the caller has it parsed already, else null.
absl::StatusOr<PodRequest> AllocationPods(const MasterConfig& config, const JobRecord& job,
                                          const TrialRecord& trial, const std::string& id,
                                          const std::string& token, const ExperimentConfig* parsed,
                                          const TrialHistory& history, EnvironmentConfig& env) {
  PodRequest r{.type = job.type,
               .job_id = job.job_id,
               .allocation_id = id,
               .slots = job.slots,
               .priority = job.priority,
               .queue_position = job.queue_position,
               .pool = config.FindPool(job.resource_pool)};
  if (r.pool == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("resource pool \"", job.resource_pool, "\" is no longer configured"));
  }
  if (job.type == TaskType::kExperiment) {
    std::optional<ExperimentConfig> own;
    if (parsed == nullptr) {
      KUBE_ASSIGN_OR_RETURN(own, ParseExperimentConfig(job.config, config));
      parsed = &*own;
    }
    const ExperimentConfig& c = *parsed;
    env = c.environment;
    r.entrypoint = c.entrypoint;
    r.env = {{"PHALANX_TRIAL_ID", std::to_string(trial.id)},
             {"PHALANX_HPARAMS", trial.hparams},
             {"PHALANX_SEARCHER", c.searcher.ForTrials().dump()},
             {"PHALANX_LATEST_CHECKPOINT", trial.latest_checkpoint}};
    if (!c.data.is_null()) r.env.emplace_back("PHALANX_DATA", c.data.dump());
    r.checkpoint_storage = c.checkpoint_storage;
    SetEstimate(EstimateRun(c.resources, BudgetOf(c.searcher, trial), trial.steps_completed,
                            history.pace, job.name),
                r);
  } else {
    KUBE_ASSIGN_OR_RETURN(TaskConfig c,
                          ParseStoredTaskConfig(job.config, job.type, job.entrypoint, config));
    env = std::move(c.environment);
    r.entrypoint = std::move(c.entrypoint);
    SetEstimate(EstimateRun(c.resources, std::nullopt, 0, std::nullopt, job.name), r);
    // A TensorBoard or notebook reads the checkpoints the master's storage holds.
    r.checkpoint_storage = config.checkpoint_storage;
  }
  r.env.emplace_back("PHALANX_ALLOCATION_TOKEN", token);
  r.environment = &env;
  return r;
}

// Whether a pod of run `rec` is marked as a preemption victim: its phalanx.io/preempted-by names
// another gang (the extender names the gang itself when it only re-plans it).
bool MarkedAsVictim(const AllocationRecord& rec, const std::map<std::string, PodState>& pods) {
  const std::string own_key = absl::StrCat(rec.ns, "/", rec.id);
  return absl::c_any_of(pods, [&](const auto& named) {
    return named.second.preempt_requested && named.second.preempted_by != own_key;
  });
}

}  // namespace

absl::StatusOr<JobManager::Launch> JobManager::PrepareRunLocked(const JobRecord& job,
                                                                TrialRecord trial,
                                                                const TrialHistory& history,
                                                                const ExperimentConfig* parsed) {
  trial.runs += 1;
  const std::string id =
      RunId(job.job_id,
            job.type == TaskType::kExperiment ? std::optional<int64_t>(trial.id) : std::nullopt,
            trial.runs);
  const std::string token = NewToken();
  EnvironmentConfig env;
  absl::StatusOr<PodRequest> request =
      AllocationPods(config_, job, trial, id, token, parsed, history, env);
  if (!request.ok()) {
    return absl::Status(request.status().code(),
                        absl::StrCat("trial ", trial.id, ": ", request.status().message()));
  }
  request->checkpoint_ms = history.checkpoint_ms;
  request->preempted_ms = history.preempted_ms;
  Launch launch{.pods = BuildPods(*request, config_)};
  if (launch.pods.size() > 1) launch.service = RunService(request->pool->ns, id, job.job_id);
  launch.alloc = Alloc{.rec = {.id = id,
                               .job_id = job.job_id,
                               .trial_id = trial.id,
                               .run = trial.runs,
                               .ns = request->pool->ns,
                               .pods = static_cast<int>(launch.pods.size()),
                               .token_hash = TokenHash(token)}};
  for (const nlohmann::json& pod : launch.pods) {
    launch.alloc.pod_names.push_back(pod["metadata"]["name"]);
  }
  launch.run = {.trial = std::move(trial), .allocation = launch.alloc.rec};
  launch.queue_position = job.queue_position;
  return launch;
}

void JobManager::LaunchLocked(Launch launch) {
  AddAllocLocked(launch.alloc);
  queued_launches_.push_back(std::move(launch));
}

absl::Status JobManager::StartedLocked(const Alloc& launched, const absl::Status& created) {
  const std::string& id = launched.rec.id;
  auto it = allocs_.find(id);
  if (it == allocs_.end()) {  // Ended while its pods were being created: they go too.
    DeleteRunLaterLocked(launched);
    return absl::OkStatus();
  }
  Alloc& a = it->second;
  if (a.rec.state == AllocState::kTerminating) return TerminateLocked(a);  // Deletes them again.
  if (!created.ok()) {
    // Undo, and Reconcile the job at the next Tick: it starts a new run of the trial, unless the
    // API server refused the pods for good: then the trial is in ERROR, with the refusal as why.
    const std::string why = absl::StrCat("creating pods of ", id, ": ", created.message());
    const bool for_good = RefusedForGood(created);
    absl::Status undo =
        for_good ? SetTrialStateLocked(*a.rec.trial_id, RunState::kError, why) : absl::OkStatus();
    retry_jobs_.insert(a.rec.job_id);
    undo.Update(TerminateLocked(a));
    return absl::Status(
        created.code(),
        absl::StrCat(why, for_good ? "; refused for good, the trial is in ERROR" : "",
                     undo.ok() ? "" : "; cleanup failed"));
  }
  EventLocked(absl::StrCat(id, ": run started, ", a.pod_names.size(), " gated pod(s) created"));
  return absl::OkStatus();
}

absl::Status JobManager::StartAllocationLocked(const JobRecord& job, TrialRecord trial) {
  TrialHistory history;  // A trial's first run has none.
  if (trial.runs > 0) {
    KUBE_ASSIGN_OR_RETURN(history, store_.GetTrialHistory(trial.id, core::kMaxPreemptionHistory));
  }
  if (job.type == TaskType::kExperiment) {  // Advisory: a failed read leaves it unknown.
    absl::StatusOr<std::optional<MeasuredPace>> pace = store_.MeasurePace(trial.id, job);
    if (pace.ok()) history.pace = *pace;
  }
  absl::StatusOr<Launch> launch = PrepareRunLocked(job, trial, history);
  if (!launch.ok()) {
    trial.runs += 1;
    trial.state = RunState::kError;
    trial.error = std::string(launch.status().message());
    KUBE_RETURN_IF_ERROR(store_.UpdateTrial(trial));
    return launch.status();
  }
  KUBE_RETURN_IF_ERROR(store_.StartRun(launch->run));
  LaunchLocked(*std::move(launch));
  return absl::OkStatus();
}

absl::Status JobManager::RequestPreemptionLocked(Alloc& a) {
  if (a.rec.state == AllocState::kPending) {  // Nothing to checkpoint.
    EventLocked(absl::StrCat(a.rec.id, ": marked for preemption before it ran; deleting its pods"));
    return TerminateLocked(a);
  }
  EventLocked(absl::StrCat(a.rec.id, ": preemption requested; waiting for the trial to checkpoint ",
                           "and acknowledge"));
  a.rec.preempt_requested = true;
  a.rec.state = AllocState::kPreempting;
  ++stats_.preemptions_requested;
  a.preempt_at = absl::Now();
  return store_.UpdateAllocation(a.rec);
}

absl::Status JobManager::TerminateLocked(Alloc& a) {
  a.rec.state = AllocState::kTerminating;
  DeleteRunLaterLocked(a);
  return StoreEndLocked(a);
}

absl::Status JobManager::StoreEndLocked(Alloc& a) {
  if (absl::Status s = store_.UpdateAllocation(a.rec); !s.ok()) {
    StoreEndLaterLocked(a, s);
    return s;
  }
  FinishIfGoneLocked(a);
  return absl::OkStatus();
}

void JobManager::StoreEndLaterLocked(const Alloc& a, const absl::Status& refused) {
  EventLocked(absl::StrCat(a.rec.id, ": storing its end: ", refused.message(),
                           "; tried again at the next tick"));
  unstored_ends_.insert(a.rec.id);
}

void JobManager::FinishIfGoneLocked(Alloc& a) {
  if (a.rec.state != AllocState::kTerminating || !a.pods.empty()) return;
  AllocationRecord ended = a.rec;
  ended.state = AllocState::kTerminated;
  if (absl::Status s = store_.UpdateAllocation(ended); !s.ok()) {
    StoreEndLaterLocked(a, s);
    return;
  }
  EventLocked(absl::StrCat(a.rec.id, ": run ended, its pods are gone"));
  dirty_jobs_.insert(a.rec.job_id);
  absl::StatusOr<JobRecord> job = store_.GetJob(a.rec.job_id);
  absl::StatusOr<TrialRecord> trial = store_.GetTrial(*a.rec.trial_id);
  if (job.ok() && trial.ok() && job->state == RunState::kPaused &&
      trial->state == RunState::kActive) {
    (void)SetTrialStateLocked(trial->id, RunState::kPaused);
  }
  ForgetAllocLocked(a.rec.id);
}

absl::Status JobManager::ReconcileDirtyLocked() {
  absl::Status result;
  while (!dirty_jobs_.empty()) {
    const std::string job_id = *dirty_jobs_.begin();
    dirty_jobs_.erase(dirty_jobs_.begin());
    result.Update(ReconcileLocked(job_id));
  }
  return result;
}

absl::Status JobManager::SetTrialStateLocked(int64_t trial_id, RunState state,
                                             const std::string& error) {
  KUBE_ASSIGN_OR_RETURN(TrialRecord trial, store_.GetTrial(trial_id));
  trial.state = state;
  if (!error.empty()) trial.error = error;
  return store_.UpdateTrial(trial);
}

absl::StatusOr<std::string> JobManager::StoreOutcomeLocked(const Alloc& a,
                                                           const std::string& error) {
  const std::string what = error.empty() ? "every pod succeeded" : error;
  // While preemption is requested, pods exit either way as the trial checkpoints and stops: the
  // trial resumes, unless it reported its completion (ReportCompletion stored it COMPLETED).
  if (a.rec.preempt_requested) return what;
  KUBE_ASSIGN_OR_RETURN(TrialRecord trial, store_.GetTrial(*a.rec.trial_id));
  if (IsTerminal(trial.state)) return what;
  const std::optional<search::TrialSearch> searched = SearchOf(trial);
  if (error.empty() && searched && searched->Reached() && !searched->AtTop()) {
    return absl::StrCat(what, "; the trial waits at a rung");
  }
  if (error.empty() || (searched && searched->AtTop())) {  // A search's last rung is in: done.
    trial.state = RunState::kCompleted;
    KUBE_RETURN_IF_ERROR(store_.UpdateTrial(trial));
    return what;
  }
  const std::string resumes = "the trial resumes from its latest checkpoint";
  if (trial.restarted_after == a.rec.id) {  // Counted before, though its answer was lost.
    return absl::StrCat(what, "; restarted: ", resumes);
  }
  // A container that cannot start would fail the same way again: only runs that ran restart.
  RestartBudget budget;
  if (a.fail_why.empty()) {
    KUBE_ASSIGN_OR_RETURN(budget, RestartBudgetLocked(trial.job_id));
  }
  if (budget.used < budget.max) {  // The trial stays ACTIVE: Reconcile starts its next run.
    KUBE_RETURN_IF_ERROR(store_.CountRestart(trial.id, a.rec.id));
    return absl::StrCat(what, "; restart ", budget.used + 1, " of the experiment's max_restarts ",
                        budget.max, ": ", resumes);
  }
  std::string why = what;
  if (budget.max > 0) {
    absl::StrAppend(&why, "; the experiment's max_restarts (", budget.max, ") are used up");
  }
  trial.state = RunState::kError;
  trial.error = absl::StrCat(a.rec.id, ": ", why);
  KUBE_RETURN_IF_ERROR(store_.UpdateTrial(trial));
  return why;
}

absl::StatusOr<JobManager::RestartBudget> JobManager::RestartBudgetLocked(
    const std::string& job_id) {
  if (TaskTypeOfJobId(job_id) != TaskType::kExperiment) return RestartBudget{};
  KUBE_ASSIGN_OR_RETURN(JobRecord job, store_.GetJob(job_id));
  // A stored config that no longer parses cannot build the next run either.
  absl::StatusOr<ExperimentConfig> config = ParseExperimentConfig(job.config, config_);
  if (!config.ok()) return RestartBudget{};
  KUBE_ASSIGN_OR_RETURN(std::vector<TrialRecord> trials, store_.ListTrials(job_id));
  RestartBudget budget{.max = config->max_restarts};
  for (const TrialRecord& t : trials) budget.used += t.restarts;
  return budget;
}

void JobManager::UpdateFromPodsLocked(Alloc& a) {
  AllocState& s = a.rec.state;
  if (s == AllocState::kTerminating || s == AllocState::kTerminated) return;
  bool marked = false, lost = false, failed = false, all_seen = a.pods.size() == a.pod_names.size();
  bool all_bound = all_seen, all_running = all_seen, all_succeeded = all_seen;
  for (const auto& [name, pod] : a.pods) {
    if (!pod.over_own_limit.empty() && a.fail_why.empty()) {
      a.fail_why = absl::StrCat("pod ", pod.ns, "/", name,
                                " was evicted for its own limits: ", pod.over_own_limit);
    }
    marked = marked || pod.preempt_requested;
    lost = lost || pod.deleting() || pod.disrupted;
    failed = failed || pod.phase == core::PodPhase::kFailed;
    all_bound = all_bound && pod.bound();
    all_running = all_running && pod.phase == core::PodPhase::kRunning;
    all_succeeded = all_succeeded && pod.phase == core::PodPhase::kSucceeded;
  }
  // A task is never preempted, but one marked before all its pods are bound (the extender found
  // its planned node gone or full) loses nothing: it is recreated like a pending trial. (The type
  // comes from the id: a mark arriving while the database cannot be read is not sent again.)
  const bool experiment = TaskTypeOfJobId(a.rec.job_id) == TaskType::kExperiment;
  if (lost && experiment && a.fail_why.empty()) {
    // Deleted or evicted by someone else (a drain, node pressure, a taint, a node shutdown): how
    // its containers then exit is the cluster's doing, not the trial's, which resumes from its
    // checkpoint. A task has none (a command may not be safe to run twice): its pods' phases
    // decide, as for any failure.
    RunLostLocked(a, "a pod is being deleted or evicted by the cluster");
    return;
  }
  NoteStartFailuresLocked(a);
  if (failed || all_succeeded || !a.fail_why.empty()) {
    const std::string error = !a.fail_why.empty() ? a.fail_why : failed ? "a pod failed" : "";
    absl::StatusOr<std::string> outcome = StoreOutcomeLocked(a, error);
    if (!outcome.ok()) {
      EventLocked(absl::StrCat(a.rec.id, ": storing its trial's outcome: ",
                               outcome.status().message(), "; tried again at the next tick"));
      unstored_outcomes_.insert(a.rec.id);
      return;
    }
    EventLocked(absl::StrCat(a.rec.id, ": ", *outcome));
    (void)TerminateLocked(a);
    return;
  }
  if (s != AllocState::kPreempting) {
    const AllocState next = all_running ? AllocState::kRunning
                            : all_bound ? AllocState::kScheduled
                                        : AllocState::kPending;
    if (next != s) {
      s = next;
      (void)store_.UpdateAllocation(a.rec);
    }
  }
  if (marked && (experiment || s == AllocState::kPending) && s != AllocState::kPreempting) {
    // A victim's run is one of its trial's preemptions (a re-plan is not), stored with the
    // preemption's request or with the run's end.
    a.rec.victim = MarkedAsVictim(a.rec, a.pods);
    (void)RequestPreemptionLocked(a);
  }
}

absl::StatusOr<JobManager::Alloc*> JobManager::FindAllocLocked(const std::string& id) {
  auto it = allocs_.find(id);
  if (it == allocs_.end()) {
    return absl::NotFoundError(absl::StrCat("allocation \"", id, "\" is not open"));
  }
  return &it->second;
}

void JobManager::SetEventLog(std::function<void(const std::string&)> log) {
  absl::MutexLock lock(&mu_);
  event_log_ = std::move(log);
}

void JobManager::EventLocked(const std::string& line) {
  if (event_log_) event_log_(line);
}

ManagerStats JobManager::Stats() {
  absl::MutexLock lock(&mu_);
  ManagerStats out = stats_;
  for (const auto& [id, a] : allocs_)
    ++out.open_allocations[std::string(AllocStateName(a.rec.state))];
  return out;
}

std::vector<JobManager::Alloc*> JobManager::AllocsOfJobLocked(const std::string& job_id) {
  auto it = job_allocs_.find(job_id);
  return it == job_allocs_.end() ? std::vector<Alloc*>() : it->second;
}

JobManager::Alloc& JobManager::AddAllocLocked(Alloc a) {
  const std::string id = a.rec.id;
  auto [it, added] = allocs_.insert_or_assign(id, std::move(a));
  if (added) job_allocs_[it->second.rec.job_id].push_back(&it->second);
  return it->second;
}

void JobManager::ForgetAllocLocked(const std::string& id) {
  auto it = allocs_.find(id);
  if (it == allocs_.end()) return;
  auto of_job = job_allocs_.find(it->second.rec.job_id);
  std::erase(of_job->second, &it->second);
  if (of_job->second.empty()) job_allocs_.erase(of_job);
  allocs_.erase(it);
}

void JobManager::OnPod(const PodState& pod) {
  PodsAfterUnlock start(this);
  absl::MutexLock lock(&mu_);
  ++stats_.pod_events;
  auto it = allocs_.find(pod.allocation_id);
  if (it == allocs_.end()) {
    if (!pod.deleting()) DeleteLaterLocked(pod.ns, pod.name);  // An orphan.
    return;
  }
  it->second.pods[pod.name] = pod;
  UpdateFromPodsLocked(it->second);
  (void)ReconcileDirtyLocked();
}

void JobManager::OnPodDeleted(const std::string& ns, const std::string& name) {
  PodsAfterUnlock start(this);
  absl::MutexLock lock(&mu_);
  ++stats_.pod_events;
  const size_t dash = name.rfind('-');
  auto it = allocs_.find(name.substr(0, dash));
  if (dash == std::string::npos || it == allocs_.end() || it->second.rec.ns != ns) return;
  PodGoneLocked(it->second, name);
  (void)ReconcileDirtyLocked();
}

void JobManager::OnPodsListed(const std::string& ns, const std::set<std::string>& listed) {
  PodsAfterUnlock start(this);
  absl::MutexLock lock(&mu_);
  std::vector<std::pair<std::string, std::string>> gone;  // Allocation id, pod name.
  for (const auto& [id, a] : allocs_) {
    if (a.rec.ns != ns) continue;
    for (const auto& [name, pod] : a.pods) {
      if (!listed.contains(name)) gone.emplace_back(id, name);
    }
  }
  for (const auto& [id, name] : gone) {
    // An allocation ends (and is forgotten) with its last pod.
    if (auto it = allocs_.find(id); it != allocs_.end()) PodGoneLocked(it->second, name);
  }
  (void)ReconcileDirtyLocked();
}

void JobManager::PodGoneLocked(Alloc& a, const std::string& name) {
  a.pods.erase(name);
  if (a.rec.state != AllocState::kTerminating) {
    RunLostLocked(a, absl::StrCat("pod ", name, " was deleted behind the master's back"));
  } else {
    FinishIfGoneLocked(a);
  }
}

void JobManager::RunLostLocked(Alloc& a, const std::string& why) {
  EventLocked(absl::StrCat(a.rec.id, ": ", why, "; the run is lost"));
  (void)TerminateLocked(a);
}

}  // namespace phalanx::master
