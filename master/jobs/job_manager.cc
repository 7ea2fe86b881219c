// JobManager: submitting jobs, job-level commands and Reconcile (see job_manager.h).
#include "master/jobs/job_manager.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "kube/json.h"
#include "master/pods/pod_builder.h"
#include "master/spec/experiment_config.h"
#include "master/spec/searcher.h"
#include "master/spec/submission.h"
#include "master/spec/task_config.h"

namespace phalanx::master {
namespace {

// A class the pod specs name (SpecPriorityClass) wins over resources.priority (pod_builder.h); the
// queue shows its value when it is one of phalanx's classes (PriorityOfClass).
int EffectivePriority(const ResourcesConfig& resources, const EnvironmentConfig& environment,
                      const MasterConfig& config) {
  const ResourcePoolConfig* pool = config.FindPool(resources.resource_pool);
  if (pool != nullptr) {
    if (std::optional<int> p =
            PriorityOfClass(SpecPriorityClass(*pool, resources.slots, environment, config))) {
      return *p;
    }
  }
  return resources.priority.value_or(kDefaultPriority);
}

// The resources and environment `job` was submitted with.
struct JobSpec {
  ResourcesConfig resources;
  EnvironmentConfig environment;
};
absl::StatusOr<JobSpec> StoredSpecOf(const JobRecord& job, const MasterConfig& config) {
  if (job.type == TaskType::kExperiment) {
    KUBE_ASSIGN_OR_RETURN(ExperimentConfig c, ParseExperimentConfig(job.config, config));
    return JobSpec{std::move(c.resources), std::move(c.environment)};
  }
  KUBE_ASSIGN_OR_RETURN(TaskConfig c,
                        ParseStoredTaskConfig(job.config, job.type, job.entrypoint, config));
  return JobSpec{std::move(c.resources), std::move(c.environment)};
}

// The class the pod specs of a job in `pool_name` name (SpecPriorityClass), "" if none.
std::string SpecClassIn(const std::string& pool_name, int slots, const EnvironmentConfig& env,
                        const MasterConfig& config) {
  const ResourcePoolConfig* pool = config.FindPool(pool_name);
  return pool == nullptr ? "" : SpecPriorityClass(*pool, slots, env, config);
}

// The class the pod specs of `job` name, "" if none.
absl::StatusOr<std::string> SpecClassOf(const JobRecord& job, const MasterConfig& config) {
  KUBE_ASSIGN_OR_RETURN(const JobSpec spec, StoredSpecOf(job, config));
  return SpecClassIn(job.resource_pool, job.slots, spec.environment, config);
}

// A job without its id (the store's number comes with its submission), submitted now.
JobRecord NewJob(TaskType type, const std::string& name, const User& user,
                 const ResourcesConfig& resources, const EnvironmentConfig& environment,
                 const std::string& yaml, const MasterConfig& config) {
  const absl::Time now = absl::Now();
  return JobRecord{.type = type,
                   .name = name,
                   .username = user.username,
                   .resource_pool = resources.resource_pool,
                   .priority = EffectivePriority(resources, environment, config),
                   .queue_position = absl::ToUnixMicros(now) / 1e6,
                   .slots = resources.slots,
                   .config = yaml,
                   .submit_ms = absl::ToUnixMillis(now)};
}

// How many trials of an experiment may hold allocations at once.
int ConcurrencyCap(const ExperimentConfig& c, int slots) {
  const SearcherConfig& s = c.searcher;
  int cap = std::numeric_limits<int>::max();
  if (s.kind == SearcherConfig::Kind::kAdaptiveAsha) {
    cap = search::DefaultConcurrency(s.asha, search::PlanBrackets(s.asha));
  }
  cap = s.max_concurrent_trials.value_or(cap);
  if (c.resources.max_slots && slots > 0) cap = std::min(cap, *c.resources.max_slots / slots);
  return std::max(cap, 1);
}

int ConcurrencyCap(const JobRecord& job, const MasterConfig& config) {
  if (job.type != TaskType::kExperiment) return 1;
  absl::StatusOr<ExperimentConfig> c = ParseExperimentConfig(job.config, config);
  return c.ok() ? ConcurrencyCap(*c, job.slots) : std::numeric_limits<int>::max();
}

// Deals the trials of an adaptive_asha search to its brackets, each at its first rung.
void StartSearch(const search::AshaParams& params, std::vector<TrialRecord>& trials) {
  const std::vector<search::Bracket> brackets = search::PlanBrackets(params);
  const std::vector<int> dealt = search::AssignBrackets(brackets);
  for (size_t i = 0; i < trials.size() && i < dealt.size(); ++i) {
    trials[i].searcher_state =
        search::ToJson({.bracket = dealt[i], .rungs = brackets[dealt[i]].rungs});
  }
}

RunState FinalState(const std::vector<TrialRecord>& trials) {
  RunState out = RunState::kCompleted;
  for (const TrialRecord& t : trials) {
    if (t.state == RunState::kError) return RunState::kError;
    if (t.state == RunState::kCanceled) out = RunState::kCanceled;
  }
  return out;
}

}  // namespace

JobManager::JobManager(MasterConfig config, Store& store, PodClient& pods)
    : config_(std::move(config)), store_(store), pods_(pods) {}

absl::StatusOr<JobView> JobManager::CreateExperiment(const std::string& yaml, const User& user,
                                                     bool activate) {
  KUBE_ASSIGN_OR_RETURN(ExperimentConfig c, ParseSubmittedExperiment(yaml, config_));
  JobRecord job =
      NewJob(TaskType::kExperiment, c.name, user, c.resources, c.environment, yaml, config_);
  job.state = activate ? RunState::kActive : RunState::kPaused;
  // Without experiment_seed, random trials are drawn from the submission time (the trials' values
  // are stored, so the experiment stays reproducible from its records).
  KUBE_ASSIGN_OR_RETURN(std::vector<nlohmann::json> hparams,
                        GenerateTrials(c.searcher, c.hyperparameters,
                                       c.seed.value_or(static_cast<uint64_t>(job.submit_ms))));
  std::vector<TrialRecord> trials;
  for (const nlohmann::json& h : hparams)
    trials.push_back({.hparams = h.dump(), .state = job.state});
  if (c.searcher.kind == SearcherConfig::Kind::kAdaptiveAsha) StartSearch(c.searcher.asha, trials);
  const int cap = activate ? ConcurrencyCap(c, job.slots) : 0;
  return Submit(std::move(job), std::move(trials), cap, &c);
}

absl::StatusOr<JobView> JobManager::LaunchTask(TaskType type, const std::string& yaml,
                                               const std::vector<std::string>& entrypoint,
                                               const User& user) {
  if (type == TaskType::kExperiment) {
    return absl::InvalidArgumentError("type: use CreateExperiment for experiments");
  }
  KUBE_ASSIGN_OR_RETURN(TaskConfig c, ParseSubmittedTask(yaml, type, entrypoint, config_));
  JobRecord job = NewJob(type, c.description, user, c.resources, c.environment, yaml, config_);
  job.entrypoint = nlohmann::json(c.entrypoint).dump();
  return Submit(std::move(job), {TrialRecord{.hparams = "{}"}}, /*cap=*/1);
}

absl::Status JobManager::CheckRunsQuotaLocked(const JobRecord& job, int runs) {
  const ResourcePoolConfig* pool = config_.FindPool(job.resource_pool);
  const int pods = pool == nullptr ? 0 : runs * PodCount(job.slots, config_.MaxSlotsPerPod(*pool));
  const bool experiment = job.type == TaskType::kExperiment;
  return CheckQuotasLocked(job.username, experiment ? 1 : 0, experiment ? runs : 0, pods);
}

absl::Status JobManager::NumberLocked(JobRecord& job, std::vector<TrialRecord>& trials) {
  if (!last_ids_) {
    KUBE_ASSIGN_OR_RETURN(last_ids_, store_.LastJobIds());
  }
  int64_t& number = job.type == TaskType::kExperiment ? last_ids_->experiment : last_ids_->task;
  job.job_id = absl::StrCat(IdPrefix(job.type), "-", ++number);
  for (TrialRecord& t : trials) {
    t.id = ++last_ids_->trial;
    t.job_id = job.job_id;
  }
  return absl::OkStatus();
}

absl::StatusOr<JobView> JobManager::Submit(JobRecord job, std::vector<TrialRecord> trials, int cap,
                                           const ExperimentConfig* parsed) {
  // Numbered and prepared under the lock, stored outside it (so that submissions made at once are
  // committed together, and nothing else waits on the disk behind them), opened under it again,
  // and their pods created outside it. The job, its trials and their first runs are stored in one
  // commit; only then do the pods start. A run that cannot be built here is left to Reconcile
  // (Tick), which records why.
  PodsAfterUnlock cleanup(this);  // Deletes the pods of a run undone below.
  Submission sub{.job = std::move(job), .trials = std::move(trials)};
  sub.job.num_trials = static_cast<int>(sub.trials.size());
  {
    absl::MutexLock lock(&mu_);
    if (sub.job.state == RunState::kActive) {
      KUBE_RETURN_IF_ERROR(CheckRunsQuotaLocked(sub.job, std::min<int>(cap, sub.trials.size())));
    }
    KUBE_RETURN_IF_ERROR(NumberLocked(sub.job, sub.trials));
    submitting_.insert(sub.job.job_id);
    for (TrialRecord& t : sub.trials) {
      if (static_cast<int>(sub.launches.size()) >= cap) break;
      absl::StatusOr<Launch> launch = PrepareRunLocked(sub.job, t, /*history=*/{}, parsed);
      if (!launch.ok()) {
        sub.unprepared = true;
        continue;
      }
      t = launch->run.trial;
      sub.allocations.push_back(launch->run.allocation);
      sub.launches.push_back(*std::move(launch));
    }
  }
  absl::Status stored = store_.InsertJob(sub.job, sub.trials, sub.allocations);
  JobView view;
  {
    absl::MutexLock lock(&mu_);
    submitting_.erase(sub.job.job_id);
    if (!stored.ok()) {
      if (absl::IsAlreadyExists(stored)) last_ids_.reset();  // Another writer numbered jobs.
      return stored;
    }
    view = OpenSubmittedLocked(sub);
  }
  absl::Status first = StartLaunches(sub.launches);
  if (!first.ok()) {
    return absl::Status(first.code(),
                        absl::StrCat(view.job.job_id, " was submitted but ", first.message()));
  }
  return view;
}

JobView JobManager::OpenSubmittedLocked(const Submission& sub) {
  const JobRecord& job = sub.job;
  if (sub.unprepared) retry_jobs_.insert(job.job_id);
  JobView view{.job = job};
  EventLocked(absl::StrCat(job.job_id, " submitted by ", job.username, ": ", sub.trials.size(),
                           " trial(s), ", job.slots, " slot(s) each, priority ", job.priority,
                           ", pool ", job.resource_pool,
                           job.state == RunState::kActive ? "" : ", paused"));
  if (job.state == RunState::kActive) active_jobs_.Put(job);
  for (const TrialRecord& t : sub.trials) view.trials.push_back({.trial = t});
  for (const Launch& launch : sub.launches) {
    for (TrialView& tv : view.trials) {
      if (tv.trial.id == launch.run.trial.id) tv.allocation = launch.run.allocation;
    }
    AddAllocLocked(launch.alloc);
  }
  return view;
}

absl::StatusOr<JobView> JobManager::GetJob(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  JobView view;
  KUBE_ASSIGN_OR_RETURN(view.job, store_.GetJob(job_id));
  KUBE_ASSIGN_OR_RETURN(std::vector<TrialRecord> trials, store_.ListTrials(job_id));
  std::vector<Alloc*> allocs = AllocsOfJobLocked(job_id);
  for (TrialRecord& t : trials) {
    TrialView tv{.trial = std::move(t)};
    for (Alloc* a : allocs) {
      if (a->rec.trial_id == tv.trial.id) tv.allocation = a->rec;
    }
    view.trials.push_back(std::move(tv));
  }
  return view;
}

absl::StatusOr<std::pair<std::vector<JobRecord>, int>> JobManager::ListJobs(
    const JobFilter& filter) {
  return store_.ListJobs(filter);
}

absl::StatusOr<JobRecord> JobManager::GetActiveJobLocked(const std::string& job_id,
                                                         bool allow_paused) {
  if (submitting_.contains(job_id)) {
    return absl::UnavailableError(absl::StrCat(job_id, " is still being submitted; try again"));
  }
  KUBE_ASSIGN_OR_RETURN(JobRecord job, store_.GetJob(job_id));
  if (job.state == RunState::kActive || (allow_paused && job.state == RunState::kPaused)) {
    return job;
  }
  return absl::FailedPreconditionError(absl::StrCat(job_id, " is ", RunStateName(job.state)));
}

absl::Status JobManager::Pause(const std::string& job_id, const User& by) {
  PodsAfterUnlock start(this);
  absl::MutexLock lock(&mu_);
  KUBE_ASSIGN_OR_RETURN(JobRecord job, GetActiveJobLocked(job_id, /*allow_paused=*/false));
  if (job.type != TaskType::kExperiment) {
    return absl::FailedPreconditionError(absl::StrCat(job_id, ": only experiments can be paused (",
                                                      TaskTypeName(job.type),
                                                      "s are not preemptible)"));
  }
  job.state = RunState::kPaused;
  KUBE_RETURN_IF_ERROR(UpdateJobLocked(job));
  EventLocked(absl::StrCat(job_id, " paused by ", by.username));
  return ReconcileLocked(job_id);
}

absl::Status JobManager::Activate(const std::string& job_id, const User& by) {
  PodsAfterUnlock start(this);
  absl::MutexLock lock(&mu_);
  KUBE_ASSIGN_OR_RETURN(JobRecord job, GetActiveJobLocked(job_id, /*allow_paused=*/true));
  KUBE_ASSIGN_OR_RETURN(std::vector<TrialRecord> trials, store_.ListTrials(job_id));
  if (job.state == RunState::kPaused) {
    const int paused = static_cast<int>(absl::c_count_if(
        trials, [](const TrialRecord& t) { return t.state == RunState::kPaused; }));
    KUBE_RETURN_IF_ERROR(CheckRunsQuotaLocked(job, std::min(ConcurrencyCap(job, config_), paused)));
  }
  job.state = RunState::kActive;
  KUBE_RETURN_IF_ERROR(UpdateJobLocked(job));
  EventLocked(absl::StrCat(job_id, " activated by ", by.username));
  for (const TrialRecord& t : trials) {
    if (t.state == RunState::kPaused)
      KUBE_RETURN_IF_ERROR(SetTrialStateLocked(t.id, RunState::kActive));
  }
  return ReconcileLocked(job_id);
}

absl::Status JobManager::Kill(const std::string& job_id, const User& by) {
  PodsAfterUnlock start(this);
  absl::MutexLock lock(&mu_);
  KUBE_ASSIGN_OR_RETURN(JobRecord job, GetActiveJobLocked(job_id, /*allow_paused=*/true));
  job.state = RunState::kCanceled;
  KUBE_RETURN_IF_ERROR(UpdateJobLocked(job));
  EventLocked(absl::StrCat(job_id, " killed by ", by.username));
  return ReconcileLocked(job_id);
}

absl::Status JobManager::SetPriority(const std::string& job_id, int priority, const User& by) {
  if (priority < 0 || priority > 1000000) {
    return absl::InvalidArgumentError("priority: must be between 0 and 1000000");
  }
  PodsAfterUnlock start(this);
  absl::MutexLock lock(&mu_);
  KUBE_ASSIGN_OR_RETURN(JobRecord job, GetActiveJobLocked(job_id, /*allow_paused=*/true));
  KUBE_ASSIGN_OR_RETURN(const std::string spec_class, SpecClassOf(job, config_));
  if (!spec_class.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        job_id, "'s pod spec names priorityClassName \"", spec_class,
        "\", which sets its pods' priority; its priority can only change with that class"));
  }
  std::vector<Alloc*> allocs = AllocsOfJobLocked(job_id);
  for (Alloc* a : allocs) {
    if (job.type != TaskType::kExperiment && a->rec.state != AllocState::kPending) {
      return absl::FailedPreconditionError(
          absl::StrCat(job_id,
                       " is already scheduled, and tasks are not preemptible: its "
                       "priority can only change while it is queued"));
    }
  }
  const int from = job.priority;
  job.priority = priority;
  KUBE_RETURN_IF_ERROR(UpdateJobLocked(job));
  EventLocked(absl::StrCat(job_id, " priority ", from, " -> ", priority, " by ", by.username));
  // Pod priority is immutable: queued gangs are replaced by gangs of the new priority. Scheduled
  // experiment gangs keep running and pick it up on their next run.
  for (Alloc* a : allocs) {
    if (a->rec.state == AllocState::kPending) KUBE_RETURN_IF_ERROR(TerminateLocked(*a));
  }
  return ReconcileLocked(job_id);
}

absl::Status JobManager::SetResourcePool(const std::string& job_id, const std::string& pool,
                                         const User& by) {
  PodsAfterUnlock start(this);
  absl::MutexLock lock(&mu_);
  KUBE_ASSIGN_OR_RETURN(JobRecord job, GetActiveJobLocked(job_id, /*allow_paused=*/true));
  if (job.type != TaskType::kExperiment) {
    return absl::FailedPreconditionError("only experiments can change resource pools");
  }
  ResourcesConfig resources{.slots = job.slots, .resource_pool = pool};
  KUBE_ASSIGN_OR_RETURN(const ResourcePoolConfig* target,
                        ResolvePool(config_, resources, "resource_pool"));
  // The target pool's pod-spec policy holds for the stored config, as at submission.
  KUBE_ASSIGN_OR_RETURN(ExperimentConfig moved, ParseExperimentConfig(job.config, config_));
  moved.resources.resource_pool = target->name;
  if (absl::Status s = CheckExperimentPolicy(moved, config_); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat(job_id, " cannot move to pool \"", target->name,
                                               "\": ", s.message()));
  }
  std::vector<Alloc*> allocs = AllocsOfJobLocked(job_id);
  for (Alloc* a : allocs) {
    if (a->rec.state == AllocState::kPending) continue;
    return absl::FailedPreconditionError(
        job.state == RunState::kPaused
            ? absl::StrCat(job_id, " is paused, but its trials are still stopping (", a->rec.id,
                           " is ", AllocStateName(a->rec.state),
                           "); change its pool once they have stopped")
            : absl::StrCat(job_id, " has scheduled trials; pause it before changing its pool"));
  }
  // When a pod spec class sets the priority in either pool, the new pool's pods decide it, as at
  // submission; otherwise the job keeps its priority (set-priority's included).
  KUBE_ASSIGN_OR_RETURN(JobSpec spec, StoredSpecOf(job, config_));
  const bool class_sets_priority =
      !SpecClassIn(job.resource_pool, job.slots, spec.environment, config_).empty() ||
      !SpecClassIn(target->name, job.slots, spec.environment, config_).empty();
  const std::string from = job.resource_pool;
  job.resource_pool = target->name;
  if (class_sets_priority) {
    spec.resources.resource_pool = job.resource_pool;
    job.priority = EffectivePriority(spec.resources, spec.environment, config_);
  }
  KUBE_RETURN_IF_ERROR(UpdateJobLocked(job));
  EventLocked(absl::StrCat(job_id, " resource pool ", from, " -> ", job.resource_pool, " by ",
                           by.username));
  for (Alloc* a : allocs) KUBE_RETURN_IF_ERROR(TerminateLocked(*a));
  return ReconcileLocked(job_id);
}

absl::Status JobManager::ReconcileLocked(const std::string& job_id) {
  absl::Status s = ReconcileOnceLocked(job_id);
  if (!s.ok() && !absl::IsNotFound(s)) retry_jobs_.insert(job_id);
  return s;
}

absl::Status JobManager::ReconcileOnceLocked(const std::string& job_id) {
  KUBE_ASSIGN_OR_RETURN(JobRecord job, store_.GetJob(job_id));
  ShowLocked(job);
  if (job.state == RunState::kCanceled) {
    // The pods go first (they hold GPUs), then the trials end; either is tried again if it fails.
    const absl::Status stopped = StopAllocationsLocked(job);
    KUBE_ASSIGN_OR_RETURN(std::vector<TrialRecord> trials, store_.ListTrials(job_id));
    for (const TrialRecord& t : trials) {
      if (!IsTerminal(t.state))
        KUBE_RETURN_IF_ERROR(SetTrialStateLocked(t.id, RunState::kCanceled));
    }
    return stopped;
  }
  if (job.state != RunState::kActive) return StopAllocationsLocked(job);
  const int cap = ConcurrencyCap(job, config_);
  KUBE_ASSIGN_OR_RETURN(const bool searched, ReconcileSearchLocked(job, cap));
  KUBE_ASSIGN_OR_RETURN(std::vector<TrialRecord> trials, store_.ListTrials(job_id));
  std::vector<Alloc*> allocs = AllocsOfJobLocked(job_id);
  int open = static_cast<int>(allocs.size());
  bool all_done = true;
  for (const TrialRecord& t : trials) {
    all_done = all_done && IsTerminal(t.state);
    bool has_alloc = false;
    for (Alloc* a : allocs) has_alloc = has_alloc || a->rec.trial_id == t.id;
    if (searched || t.state != RunState::kActive || has_alloc || open >= cap) continue;
    KUBE_RETURN_IF_ERROR(StartAllocationLocked(job, t));
    ++open;
  }
  if (!all_done || open > 0) return absl::OkStatus();
  job.state = FinalState(trials);
  return UpdateJobLocked(job);
}

absl::Status JobManager::UpdateJobLocked(const JobRecord& job) {
  if (absl::Status s = store_.UpdateJob(job); !s.ok()) {
    // The commit's outcome may be unknown: the next tick reconciles the job as it was stored.
    if (absl::IsUnavailable(s)) retry_jobs_.insert(job.job_id);
    return s;
  }
  ShowLocked(job);
  return absl::OkStatus();
}

void JobManager::ShowLocked(const JobRecord& job) {
  if (job.state == RunState::kActive) {
    active_jobs_.Put(job);
  } else {
    active_jobs_.Erase(job.job_id);
  }
}

absl::Status JobManager::StopAllocationsLocked(const JobRecord& job) {
  // A pause lets running trials checkpoint first; anything else (a kill, a finished job) deletes
  // the pods at once, also of allocations already checkpointing.
  absl::Status first;
  for (Alloc* a : AllocsOfJobLocked(job.job_id)) {
    const AllocState s = a->rec.state;
    const bool graceful = job.state == RunState::kPaused && s != AllocState::kPending;
    if (s == AllocState::kTerminating || (graceful && s == AllocState::kPreempting)) continue;
    first.Update(graceful ? RequestPreemptionLocked(*a) : TerminateLocked(*a));
  }
  return first;
}

}  // namespace phalanx::master
