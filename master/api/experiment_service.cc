// ExperimentService (see services.h).
#include <algorithm>

#include "master/api/proto_convert.h"
#include "master/api/redact.h"
#include "master/api/services.h"
#include "master/spec/experiment_config.h"
#include "master/spec/submission.h"

namespace phalanx::master {
namespace {

// Runs `action` on the experiment's job for an authenticated caller who owns it or is an admin
// (`what` says what the action does, for the refusal): action(job_id, user).
template <typename Action>
grpc::Status WithExperiment(const Authenticator& auth, JobManager& jobs, grpc::ServerContext* ctx,
                            int64_t id, absl::string_view what, Action action) {
  absl::StatusOr<User> user = auth.Authenticate(*ctx);
  if (!user.ok()) return ToGrpcStatus(user.status());
  const std::string job_id = ExperimentJobId(id);
  if (absl::Status s = jobs.CheckMayChange(job_id, *user, what); !s.ok()) return ToGrpcStatus(s);
  return ToGrpcStatus(action(job_id, *user));
}

// `job` as `user` may see it: secrets redacted unless they own it or are an admin.
JobRecord Visible(JobRecord job, const User& user) {
  if (!OwnsOrAdmin(job, user)) job.config = RedactSecrets(job.config);
  return job;
}

}  // namespace

grpc::Status ExperimentServiceImpl::CreateExperiment(grpc::ServerContext* ctx,
                                                     const v1::CreateExperimentRequest* req,
                                                     v1::CreateExperimentResponse* resp) {
  absl::StatusOr<User> user = auth_.Authenticate(*ctx);
  if (!user.ok()) return ToGrpcStatus(user.status());
  if (req->validate_only()) {  // All that creating checks short of storing.
    return ToGrpcStatus(ParseSubmittedExperiment(req->config(), jobs_.config()).status());
  }
  absl::StatusOr<JobView> view = jobs_.CreateExperiment(req->config(), *user, req->activate());
  if (!view.ok()) return ToGrpcStatus(view.status());
  ToProto(view->job, resp->mutable_experiment());
  return grpc::Status::OK;
}

grpc::Status ExperimentServiceImpl::GetExperiment(grpc::ServerContext* ctx,
                                                  const v1::GetExperimentRequest* req,
                                                  v1::GetExperimentResponse* resp) {
  absl::StatusOr<User> user = auth_.Authenticate(*ctx);
  if (!user.ok()) return ToGrpcStatus(user.status());
  absl::StatusOr<JobView> view = jobs_.GetJob(ExperimentJobId(req->id()));
  if (!view.ok()) return ToGrpcStatus(view.status());
  if (view->job.type != TaskType::kExperiment) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "no such experiment");
  }
  ToProto(Visible(view->job, *user), resp->mutable_experiment());
  const bool redact = !OwnsOrAdmin(view->job, *user);
  for (const TrialView& t : view->trials) {
    v1::Trial* trial = resp->add_trials();
    ToProto(t, req->id(), trial);
    if (redact) trial->set_hparams_json(RedactJsonSecrets(trial->hparams_json()));
  }
  absl::StatusOr<BestValidationValues> best = jobs_.BestValidation(view->job);
  if (!best.ok()) return ToGrpcStatus(best.status());
  ToProto(*best, resp);
  return grpc::Status::OK;
}

grpc::Status ExperimentServiceImpl::ListExperiments(grpc::ServerContext* ctx,
                                                    const v1::ListExperimentsRequest* req,
                                                    v1::ListExperimentsResponse* resp) {
  absl::StatusOr<User> user = auth_.Authenticate(*ctx);
  if (!user.ok()) return ToGrpcStatus(user.status());
  JobFilter filter{.types = {TaskType::kExperiment},
                   .name_substring = req->name(),
                   .username = req->username(),
                   .resource_pool = req->resource_pool(),
                   .offset = std::max(0, req->offset()),
                   .limit = PageLimit(req->limit())};
  absl::StatusOr<std::vector<RunState>> states =
      StatesOf<RunState, v1::ExperimentState>(req->states());
  if (!states.ok()) return ToGrpcStatus(states.status());
  filter.states = *std::move(states);
  auto jobs = jobs_.ListJobs(filter);
  if (!jobs.ok()) return ToGrpcStatus(jobs.status());
  for (const JobRecord& job : jobs->first) {
    v1::Experiment* exp = resp->add_experiments();
    ToProto(Visible(job, *user), exp);
    absl::StatusOr<BestValidationValues> best = jobs_.BestValidation(job);
    if (!best.ok()) return ToGrpcStatus(best.status());
    if (best->experiment) exp->set_best_validation_metric(*best->experiment);
  }
  resp->mutable_pagination()->set_offset(filter.offset);
  resp->mutable_pagination()->set_limit(filter.limit);
  resp->mutable_pagination()->set_total(jobs->second);
  return grpc::Status::OK;
}

grpc::Status ExperimentServiceImpl::PauseExperiment(grpc::ServerContext* ctx,
                                                    const v1::PauseExperimentRequest* req,
                                                    v1::PauseExperimentResponse*) {
  return WithExperiment(auth_, jobs_, ctx, req->id(), "pause it",
                        [&](const std::string& id, const User& by) { return jobs_.Pause(id, by); });
}

grpc::Status ExperimentServiceImpl::ActivateExperiment(grpc::ServerContext* ctx,
                                                       const v1::ActivateExperimentRequest* req,
                                                       v1::ActivateExperimentResponse*) {
  return WithExperiment(
      auth_, jobs_, ctx, req->id(), "activate it",
      [&](const std::string& id, const User& by) { return jobs_.Activate(id, by); });
}

grpc::Status ExperimentServiceImpl::KillExperiment(grpc::ServerContext* ctx,
                                                   const v1::KillExperimentRequest* req,
                                                   v1::KillExperimentResponse*) {
  return WithExperiment(auth_, jobs_, ctx, req->id(), "kill it",
                        [&](const std::string& id, const User& by) { return jobs_.Kill(id, by); });
}

grpc::Status ExperimentServiceImpl::SetExperimentPriority(
    grpc::ServerContext* ctx, const v1::SetExperimentPriorityRequest* req,
    v1::SetExperimentPriorityResponse*) {
  return WithExperiment(auth_, jobs_, ctx, req->id(), "set its priority",
                        [&](const std::string& id, const User& by) {
                          return jobs_.SetPriority(id, req->priority(), by);
                        });
}

}  // namespace phalanx::master
