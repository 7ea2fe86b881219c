// TaskService (see services.h).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "master/api/proto_convert.h"
#include "master/api/redact.h"
#include "master/api/services.h"

namespace phalanx::master {
namespace {

// The task `id` as `user` may see it (storage secrets redacted unless they own it or are an
// admin), or NOT_FOUND when it is unknown or an experiment.
absl::StatusOr<JobView> GetTaskView(JobManager& jobs, const std::string& id, const User& user) {
  absl::StatusOr<JobView> view = jobs.GetJob(id);
  if (view.ok() && view->job.type == TaskType::kExperiment) {
    return absl::NotFoundError(absl::StrCat(id, " is an experiment, not a task"));
  }
  if (view.ok() && !OwnsOrAdmin(view->job, user))
    view->job.config = RedactSecrets(view->job.config);
  return view;
}

}  // namespace

grpc::Status TaskServiceImpl::LaunchTask(grpc::ServerContext* ctx, const v1::LaunchTaskRequest* req,
                                         v1::LaunchTaskResponse* resp) {
  absl::StatusOr<User> user = auth_.Authenticate(*ctx);
  if (!user.ok()) return ToGrpcStatus(user.status());
  std::optional<TaskType> type = FromProto(req->type());
  if (!type || *type == TaskType::kExperiment) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "type: must be COMMAND, NOTEBOOK, SHELL or TENSORBOARD");
  }
  std::vector<std::string> entrypoint(req->entrypoint().begin(), req->entrypoint().end());
  absl::StatusOr<JobView> view = jobs_.LaunchTask(*type, req->config(), entrypoint, *user);
  if (!view.ok()) return ToGrpcStatus(view.status());
  ToProto(*view, resp->mutable_task());
  return grpc::Status::OK;
}

grpc::Status TaskServiceImpl::GetTask(grpc::ServerContext* ctx, const v1::GetTaskRequest* req,
                                      v1::GetTaskResponse* resp) {
  absl::StatusOr<User> user = auth_.Authenticate(*ctx);
  if (!user.ok()) return ToGrpcStatus(user.status());
  absl::StatusOr<JobView> view = GetTaskView(jobs_, req->id(), *user);
  if (!view.ok()) return ToGrpcStatus(view.status());
  ToProto(*view, resp->mutable_task());
  return grpc::Status::OK;
}

grpc::Status TaskServiceImpl::ListTasks(grpc::ServerContext* ctx, const v1::ListTasksRequest* req,
                                        v1::ListTasksResponse* resp) {
  absl::StatusOr<User> user = auth_.Authenticate(*ctx);
  if (!user.ok()) return ToGrpcStatus(user.status());
  JobFilter filter{.offset = std::max(0, req->offset()), .limit = PageLimit(req->limit())};
  if (req->type() == v1::TASK_TYPE_UNSPECIFIED) {
    filter.types = {TaskType::kCommand, TaskType::kNotebook, TaskType::kShell,
                    TaskType::kTensorboard};
  } else if (std::optional<TaskType> type = FromProto(req->type());
             type && *type != TaskType::kExperiment) {
    filter.types = {*type};
  } else {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "type: must be COMMAND, NOTEBOOK, SHELL, TENSORBOARD or unspecified "
                        "(experiments are listed by ExperimentService)");
  }
  absl::StatusOr<std::vector<RunState>> states = StatesOf<RunState, v1::TaskState>(req->states());
  if (!states.ok()) return ToGrpcStatus(states.status());
  filter.states = *std::move(states);
  auto jobs = jobs_.ListJobs(filter);
  if (!jobs.ok()) return ToGrpcStatus(jobs.status());
  for (const JobRecord& job : jobs->first) {
    absl::StatusOr<JobView> view = GetTaskView(jobs_, job.job_id, *user);
    if (view.ok()) ToProto(*view, resp->add_tasks());
  }
  resp->mutable_pagination()->set_offset(filter.offset);
  resp->mutable_pagination()->set_limit(filter.limit);
  resp->mutable_pagination()->set_total(jobs->second);
  return grpc::Status::OK;
}

grpc::Status TaskServiceImpl::KillTask(grpc::ServerContext* ctx, const v1::KillTaskRequest* req,
                                       v1::KillTaskResponse*) {
  absl::StatusOr<User> user = auth_.Authenticate(*ctx);
  if (!user.ok()) return ToGrpcStatus(user.status());
  if (absl::StatusOr<JobView> view = GetTaskView(jobs_, req->id(), *user); !view.ok()) {
    return ToGrpcStatus(view.status());
  }
  if (absl::Status s = jobs_.CheckMayChange(req->id(), *user, "kill it"); !s.ok()) {
    return ToGrpcStatus(s);
  }
  return ToGrpcStatus(jobs_.Kill(req->id(), *user));
}

grpc::Status TaskServiceImpl::SetTaskPriority(grpc::ServerContext* ctx,
                                              const v1::SetTaskPriorityRequest* req,
                                              v1::SetTaskPriorityResponse*) {
  absl::StatusOr<User> user = auth_.Authenticate(*ctx);
  if (!user.ok()) return ToGrpcStatus(user.status());
  if (absl::StatusOr<JobView> view = GetTaskView(jobs_, req->id(), *user); !view.ok()) {
    return ToGrpcStatus(view.status());
  }
  if (absl::Status s = jobs_.CheckMayChange(req->id(), *user, "set its priority"); !s.ok()) {
    return ToGrpcStatus(s);
  }
  return ToGrpcStatus(jobs_.SetPriority(req->id(), req->priority(), *user));
}

}  // namespace phalanx::master
