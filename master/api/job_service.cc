// JobService and AllocationService (see services.h).
#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "kube/json.h"
#include "master/api/proto_convert.h"
#include "master/api/services.h"
#include "master/yaml/yaml.h"

namespace phalanx::master {
namespace {

// An error naming `field` when `pool` is no configured resource pool.
absl::Status CheckPool(const MasterConfig& config, absl::string_view field,
                       const std::string& pool) {
  if (config.FindPool(pool) != nullptr) return absl::OkStatus();
  return FieldError(field, absl::StrCat("no resource pool named \"", pool, "\""));
}

// What update `u` does, for a refusal ("only alice or an admin may move it in the queue").
absl::string_view UpdateAction(const v1::QueueControl& u) {
  switch (u.action_case()) {
    case v1::QueueControl::kPriority:
      return "set its priority";
    case v1::QueueControl::kResourcePool:
      return "move it to another resource pool";
    default:
      return "move it in the queue";
  }
}

// Applies update `u` for `by`, who must own the job or be an admin. An INVALID_ARGUMENT names the
// update's field ("priority: ...").
absl::Status ApplyUpdate(JobManager& jobs, const v1::QueueControl& u, const User& by) {
  if (u.action_case() != v1::QueueControl::ACTION_NOT_SET) {
    KUBE_RETURN_IF_ERROR(jobs.CheckMayChange(u.job_id(), by, UpdateAction(u)));
  }
  switch (u.action_case()) {
    case v1::QueueControl::kAheadOf:
      return jobs.Move(u.job_id(), u.ahead_of(), /*ahead=*/true, by);
    case v1::QueueControl::kBehindOf:
      return jobs.Move(u.job_id(), u.behind_of(), /*ahead=*/false, by);
    case v1::QueueControl::kPriority:
      return jobs.SetPriority(u.job_id(), u.priority(), by);
    case v1::QueueControl::kResourcePool:
      KUBE_RETURN_IF_ERROR(CheckPool(jobs.config(), "resource_pool", u.resource_pool()));
      return jobs.SetResourcePool(u.job_id(), u.resource_pool(), by);
    default:
      return absl::InvalidArgumentError("action: required");
  }
}

}  // namespace

grpc::Status JobServiceImpl::GetJobs(grpc::ServerContext* ctx, const v1::GetJobsRequest* req,
                                     v1::GetJobsResponse* resp) {
  absl::StatusOr<User> user = auth_.Authenticate(*ctx);
  if (!user.ok()) return ToGrpcStatus(user.status());
  absl::StatusOr<std::vector<QueueState>> states =
      StatesOf<QueueState, v1::JobState>(req->states());
  if (!states.ok()) return ToGrpcStatus(states.status());
  if (absl::Status s = CheckPool(jobs_.config(), "resource_pool", req->resource_pool());
      !s.ok() && !req->resource_pool().empty()) {
    return ToGrpcStatus(s);
  }
  const int offset = std::max(0, req->offset()), limit = PageLimit(req->limit());
  JobManager::QueuePage page = jobs_.Queue(req->resource_pool(), *states, offset, limit);
  for (const QueueEntry& e : page.entries) ToProto(e, resp->add_jobs());
  resp->mutable_pagination()->set_offset(offset);
  resp->mutable_pagination()->set_limit(limit);
  resp->mutable_pagination()->set_total(page.total);
  return grpc::Status::OK;
}

grpc::Status JobServiceImpl::GetJob(grpc::ServerContext* ctx, const v1::GetJobRequest* req,
                                    v1::GetJobResponse* resp) {
  absl::StatusOr<User> user = auth_.Authenticate(*ctx);
  if (!user.ok()) return ToGrpcStatus(user.status());
  if (req->job_id().empty() || req->job_id().size() > 64) {
    return ToGrpcStatus(absl::InvalidArgumentError("job_id: a job id such as exp-12 or cmd-7"));
  }
  absl::StatusOr<QueueEntry> e = jobs_.QueueEntryOf(req->job_id());
  if (!e.ok()) return ToGrpcStatus(e.status());
  ToProto(*e, resp->mutable_job());
  return grpc::Status::OK;
}

grpc::Status JobServiceImpl::UpdateJobQueue(grpc::ServerContext* ctx,
                                            const v1::UpdateJobQueueRequest* req,
                                            v1::UpdateJobQueueResponse*) {
  absl::StatusOr<User> user = auth_.Authenticate(*ctx);
  if (!user.ok()) return ToGrpcStatus(user.status());
  for (int i = 0; i < req->updates_size(); ++i) {
    absl::Status s = ApplyUpdate(jobs_, req->updates(i), *user);
    if (absl::IsInvalidArgument(s)) {
      s = absl::InvalidArgumentError(absl::StrCat("updates[", i, "].", s.message()));
    }
    if (!s.ok()) return ToGrpcStatus(s);
  }
  return grpc::Status::OK;
}

grpc::Status JobServiceImpl::GetJobQueueStats(grpc::ServerContext* ctx,
                                              const v1::GetJobQueueStatsRequest* req,
                                              v1::GetJobQueueStatsResponse* resp) {
  absl::StatusOr<User> user = auth_.Authenticate(*ctx);
  if (!user.ok()) return ToGrpcStatus(user.status());
  std::map<std::string, v1::QueueStats> stats;
  for (int i = 0; i < req->resource_pools_size(); ++i) {
    const std::string& pool = req->resource_pools(i);
    if (absl::Status s = CheckPool(jobs_.config(), absl::StrCat("resource_pools[", i, "]"), pool);
        !s.ok()) {
      return ToGrpcStatus(s);
    }
    stats[pool].set_resource_pool(pool);
  }
  if (stats.empty()) {
    for (const ResourcePoolConfig& pool : jobs_.config().resource_pools) {
      stats[pool.name].set_resource_pool(pool.name);
    }
  }
  absl::StatusOr<std::vector<QueueEntry>> queue = jobs_.Queue("");
  if (!queue.ok()) return ToGrpcStatus(queue.status());
  for (const QueueEntry& e : *queue) {
    auto it = stats.find(e.job.resource_pool);
    if (it == stats.end()) continue;
    v1::QueueStats& s = it->second;
    if (e.state == QueueState::kQueued) s.set_queued_count(s.queued_count() + 1);
    if (e.state == QueueState::kScheduled) s.set_scheduled_count(s.scheduled_count() + 1);
    if (e.state == QueueState::kBackfilled) s.set_backfilled_count(s.backfilled_count() + 1);
    s.set_requested_slots(s.requested_slots() + e.requested_slots);
    s.set_allocated_slots(s.allocated_slots() + e.allocated_slots);
  }
  for (auto& [name, s] : stats) *resp->add_results() = std::move(s);
  return grpc::Status::OK;
}

absl::Status AllocationServiceImpl::Authorize(const grpc::ServerContext& context,
                                              const std::string& allocation_id) {
  if (jobs_.CheckAllocationToken(allocation_id, Authenticator::BearerToken(context)).ok()) {
    return absl::OkStatus();
  }
  absl::StatusOr<User> user = auth_.Authenticate(context);
  if (!user.ok()) return user.status();
  return jobs_.CheckMayChangeAllocation(allocation_id, *user);
}

grpc::Status AllocationServiceImpl::WatchPreemption(grpc::ServerContext* ctx,
                                                    const v1::WatchPreemptionRequest* req,
                                                    v1::WatchPreemptionResponse* resp) {
  if (absl::Status s = Authorize(*ctx, req->allocation_id()); !s.ok()) return ToGrpcStatus(s);
  const int seconds = req->timeout_seconds() <= 0 ? 60 : std::min(req->timeout_seconds(), 600);
  absl::StatusOr<bool> preempt =
      jobs_.WatchPreemption(req->allocation_id(), absl::Seconds(seconds));
  if (!preempt.ok()) return ToGrpcStatus(preempt.status());
  resp->set_preempt(*preempt);
  return grpc::Status::OK;
}

grpc::Status AllocationServiceImpl::AckPreemption(grpc::ServerContext* ctx,
                                                  const v1::AckPreemptionRequest* req,
                                                  v1::AckPreemptionResponse*) {
  if (absl::Status s = Authorize(*ctx, req->allocation_id()); !s.ok()) return ToGrpcStatus(s);
  return ToGrpcStatus(jobs_.AckPreemption(req->allocation_id()));
}

grpc::Status AllocationServiceImpl::ReportCheckpoint(grpc::ServerContext* ctx,
                                                     const v1::ReportCheckpointRequest* req,
                                                     v1::ReportCheckpointResponse*) {
  if (absl::Status s = Authorize(*ctx, req->allocation_id()); !s.ok()) return ToGrpcStatus(s);
  return ToGrpcStatus(
      jobs_.ReportCheckpoint(req->allocation_id(), req->uuid(), req->steps_completed()));
}

grpc::Status AllocationServiceImpl::ReportCompletion(grpc::ServerContext* ctx,
                                                     const v1::ReportCompletionRequest* req,
                                                     v1::ReportCompletionResponse*) {
  if (absl::Status s = Authorize(*ctx, req->allocation_id()); !s.ok()) return ToGrpcStatus(s);
  return ToGrpcStatus(jobs_.ReportCompletion(req->allocation_id(), req->success(), req->error()));
}

}  // namespace phalanx::master
