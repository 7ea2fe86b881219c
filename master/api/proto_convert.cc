// Records ↔ phalanx.v1 messages (see proto_convert.h).
#include "master/api/proto_convert.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "master/search/asha.h"

namespace phalanx::master {
namespace {

v1::AllocationState ToProto(AllocState s) {
  return static_cast<v1::AllocationState>(static_cast<int>(s) + 1);
}

// RunState values in order: ACTIVE, PAUSED, COMPLETED, CANCELED, ERROR.
v1::ExperimentState ExperimentStateOf(RunState s) {
  return static_cast<v1::ExperimentState>(static_cast<int>(s) + 1);
}
v1::TrialState TrialStateOf(RunState s) {
  return static_cast<v1::TrialState>(static_cast<int>(s) + 1);
}

v1::TaskState TaskStateOf(RunState s) {
  switch (s) {
    case RunState::kCompleted:
      return v1::TASK_STATE_COMPLETED;
    case RunState::kCanceled:
      return v1::TASK_STATE_CANCELED;
    case RunState::kError:
      return v1::TASK_STATE_ERROR;
    default:
      return v1::TASK_STATE_ACTIVE;
  }
}

}  // namespace

grpc::Status ToGrpcStatus(const absl::Status& status) {
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

int PageLimit(int requested) { return requested <= 0 ? 100 : std::min(requested, 1000); }

std::string ExperimentJobId(int64_t id) { return absl::StrCat("exp-", id); }

int64_t ExperimentNumber(const std::string& job_id) {
  int64_t n = 0;
  (void)absl::SimpleAtoi(absl::string_view(job_id).substr(job_id.find('-') + 1), &n);
  return n;
}

std::optional<TaskType> FromProto(v1::TaskType type) {
  if (type == v1::TASK_TYPE_UNSPECIFIED || !v1::TaskType_IsValid(type)) return std::nullopt;
  return static_cast<TaskType>(static_cast<int>(type) - 1);
}

v1::TaskType ToProto(TaskType type) {
  return static_cast<v1::TaskType>(static_cast<int>(type) + 1);
}

std::optional<RunState> FromProto(v1::ExperimentState state) {
  if (state == v1::EXPERIMENT_STATE_UNSPECIFIED || !v1::ExperimentState_IsValid(state)) {
    return std::nullopt;
  }
  return static_cast<RunState>(static_cast<int>(state) - 1);
}

std::optional<RunState> FromProto(v1::TaskState state) {
  switch (state) {
    case v1::TASK_STATE_ACTIVE:
      return RunState::kActive;
    case v1::TASK_STATE_COMPLETED:
      return RunState::kCompleted;
    case v1::TASK_STATE_CANCELED:
      return RunState::kCanceled;
    case v1::TASK_STATE_ERROR:
      return RunState::kError;
    default:
      return std::nullopt;
  }
}

void ToProto(const User& user, v1::User* out) {
  out->set_id(user.id);
  out->set_username(user.username);
  out->set_admin(user.admin);
}

void ToProto(const JobRecord& job, v1::Experiment* out) {
  out->set_id(ExperimentNumber(job.job_id));
  out->set_name(job.name);
  out->set_state(ExperimentStateOf(job.state));
  out->set_job_id(job.job_id);
  out->set_resource_pool(job.resource_pool);
  out->set_priority(job.priority);
  out->set_slots_per_trial(job.slots);
  out->set_num_trials(job.num_trials);
  out->set_username(job.username);
  out->set_submit_time_ms(job.submit_ms);
  out->set_config(job.config);
}

void ToProto(const TrialView& t, int64_t experiment_id, v1::Trial* out) {
  out->set_id(t.trial.id);
  out->set_experiment_id(experiment_id);
  out->set_state(TrialStateOf(t.trial.state));
  out->set_hparams_json(t.trial.hparams);
  out->set_runs(t.trial.runs);
  out->set_restarts(t.trial.restarts);
  out->set_latest_checkpoint(t.trial.latest_checkpoint);
  out->set_error(t.trial.error);
  if (t.allocation) {
    out->set_allocation_id(t.allocation->id);
    out->set_allocation_state(ToProto(t.allocation->state));
  }
  if (absl::StatusOr<search::TrialSearch> s = search::TrialSearchFromJson(t.trial.searcher_state);
      s.ok()) {
    out->set_searcher_progress(search::Progress(*s, IsTerminal(t.trial.state)));
  }
}

void ToProto(const JobView& task, v1::Task* out) {
  const JobRecord& job = task.job;
  out->set_id(job.job_id);
  out->set_type(ToProto(job.type));
  out->set_state(TaskStateOf(job.state));
  out->set_name(job.name);
  out->set_slots(job.slots);
  out->set_priority(job.priority);
  out->set_resource_pool(job.resource_pool);
  out->set_username(job.username);
  out->set_submit_time_ms(job.submit_ms);
  out->set_config(job.config);
  if (!task.trials.empty()) out->set_error(task.trials[0].trial.error);
  if (!task.trials.empty() && task.trials[0].allocation) {
    out->set_allocation_id(task.trials[0].allocation->id);
    out->set_allocation_state(ToProto(task.trials[0].allocation->state));
  }
}

std::optional<QueueState> FromProto(v1::JobState state) {
  switch (state) {
    case v1::JOB_STATE_QUEUED:
      return QueueState::kQueued;
    case v1::JOB_STATE_SCHEDULED:
      return QueueState::kScheduled;
    case v1::JOB_STATE_SCHEDULED_BACKFILLED:
      return QueueState::kBackfilled;
    default:
      return std::nullopt;
  }
}

std::optional<MetricGroup> FromProto(v1::MetricGroup group) {
  switch (group) {
    case v1::METRIC_GROUP_TRAINING:
      return MetricGroup::kTraining;
    case v1::METRIC_GROUP_VALIDATION:
      return MetricGroup::kValidation;
    default:
      return std::nullopt;
  }
}

MetricReport FromProto(const v1::MetricReport& report) {
  MetricReport out{.steps = report.steps_completed()};
  for (const auto& [name, value] : report.metrics()) out.metrics.emplace_back(name, value);
  return out;
}

void ToProto(const MetricReport& report, v1::MetricReport* out) {
  out->set_steps_completed(report.steps);
  for (const auto& [name, value] : report.metrics) (*out->mutable_metrics())[name] = value;
}

void ToProto(const BestValidationValues& best, v1::GetExperimentResponse* out) {
  if (best.experiment) out->mutable_experiment()->set_best_validation_metric(*best.experiment);
  for (v1::Trial& trial : *out->mutable_trials()) {
    if (auto it = best.trials.find(trial.id()); it != best.trials.end()) {
      trial.set_best_validation_metric(it->second);
    }
  }
}

v1::JobState ToProto(QueueState s) {
  return s == QueueState::kQueued      ? v1::JOB_STATE_QUEUED
         : s == QueueState::kScheduled ? v1::JOB_STATE_SCHEDULED
                                       : v1::JOB_STATE_SCHEDULED_BACKFILLED;
}

void ToProto(const QueueEntry& e, v1::Job* out) {
  out->set_job_id(e.job.job_id);
  out->set_type(ToProto(e.job.type));
  out->set_entity_id(e.job.type == TaskType::kExperiment
                         ? std::to_string(ExperimentNumber(e.job.job_id))
                         : e.job.job_id);
  out->set_name(e.job.name);
  out->set_username(e.job.username);
  out->set_resource_pool(e.job.resource_pool);
  out->set_priority(e.job.priority);
  out->set_queue_position(e.job.queue_position);
  out->set_position(e.position);
  out->set_jobs_ahead(e.jobs_ahead);
  out->set_state(ToProto(e.state));
  out->set_requested_slots(e.requested_slots);
  out->set_allocated_slots(e.allocated_slots);
  out->set_preemptible(e.job.type == TaskType::kExperiment);
  out->set_pending_reason(e.pending_reason);
  out->set_submit_time_ms(e.job.submit_ms);
  for (int p : e.running_priorities) out->add_running_priorities(p);
  out->set_eta_ms(e.eta_ms);
  out->set_eta_note(e.eta_note);
  out->set_eta_basis(e.eta_basis);
  if (!e.what_if) return;
  v1::WhatIf* w = out->mutable_what_if();
  if (e.what_if->slots) w->set_slots(*e.what_if->slots);
  if (e.what_if->priority) w->set_priority(*e.what_if->priority);
  if (e.what_if->pool) w->set_pool(*e.what_if->pool);
  for (auto [refs, add] : {std::pair{&e.what_if->victims, &v1::WhatIf::add_victims},
                           std::pair{&e.what_if->ahead, &v1::WhatIf::add_ahead}}) {
    for (const GangRef& r : *refs) {
      v1::JobRef* ref = (w->*add)();
      ref->set_gang(r.gang);
      ref->set_job_id(r.job_id);
      ref->set_username(r.username);
    }
  }
}

}  // namespace phalanx::master
