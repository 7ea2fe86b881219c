// JobManager: the job queue view and moves within it (see job_manager.h). Order is the extender's
// (preemption/queue.h): priority desc, queue position asc, submission time, job id.
#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "kube/decode.h"
#include "kube/json.h"
#include "master/jobs/job_manager.h"
#include "master/pods/pod_builder.h"
#include "master/yaml/yaml.h"

namespace phalanx::master {
namespace {

// The job as the queue shows it: everything but its config and entrypoint (not copied per call).
JobRecord Summary(const JobRecord& job) {
  return JobRecord{.job_id = job.job_id,
                   .type = job.type,
                   .name = job.name,
                   .username = job.username,
                   .resource_pool = job.resource_pool,
                   .priority = job.priority,
                   .queue_position = job.queue_position,
                   .slots = job.slots,
                   .state = job.state,
                   .submit_ms = job.submit_ms};
}

// The position as the label carries it, so that the store and the pods agree.
double Rounded(double position) {
  double v = position;
  (void)absl::SimpleAtod(FormatQueuePosition(position), &v);
  return v;
}

}  // namespace

JobManager::QueueRow JobManager::RowLocked(const JobRecord& job) {
  QueueRow row{.job = &job};
  const std::vector<Alloc*> allocs = AllocsOfJobLocked(job.job_id);
  bool queued = allocs.empty(), backfilled = false;
  if (allocs.empty()) row.requested_slots = job.slots;
  for (const Alloc* a : allocs) {
    row.requested_slots += job.slots;
    queued = queued || a->pods.size() < a->pod_names.size();
    for (const auto& [name, pod] : a->pods) {
      if (pod.bound()) row.allocated_slots += job.slots / std::max(a->rec.pods, 1);
      if (pod.bound() && pod.priority != job.priority) row.running_priorities.insert(pod.priority);
      queued = queued || !pod.bound();
      backfilled = backfilled || pod.backfilled;
      if (row.pending_reason == nullptr && !pod.pending_reason.empty()) {
        row.pending_reason = &pod.pending_reason;
      }
      if (row.outlook == nullptr && !pod.bound() && (!pod.eta.empty() || !pod.what_if.empty())) {
        row.outlook = &pod;
      }
    }
    if (row.pending_reason == nullptr && !a->start_failure.empty()) {
      row.pending_reason = &a->start_failure;
    }
  }
  row.state = queued       ? QueueState::kQueued
              : backfilled ? QueueState::kBackfilled
                           : QueueState::kScheduled;
  return row;
}

void JobManager::ForEachRowLocked(const std::string& pool,
                                  const std::function<bool(const QueueRow&)>& visit) {
  const std::string* row_pool = nullptr;
  int position = 0, queued_ahead = 0;
  active_jobs_.ForEach(pool, [&](const JobRecord& job) {
    if (row_pool == nullptr || *row_pool != job.resource_pool) {
      row_pool = &job.resource_pool;
      position = 0;
      queued_ahead = 0;
    }
    QueueRow row = RowLocked(job);
    row.position = position++;
    row.jobs_ahead = queued_ahead;
    if (row.state == QueueState::kQueued) ++queued_ahead;
    return visit(row);
  });
}

absl::StatusOr<std::vector<QueueEntry>> JobManager::Queue(const std::string& pool) {
  return Queue(pool, {}, 0, std::numeric_limits<int>::max()).entries;
}

JobManager::QueuePage JobManager::Queue(const std::string& pool,
                                        const std::vector<QueueState>& states, int offset,
                                        int limit) {
  absl::MutexLock lock(&mu_);
  QueuePage page;
  const int64_t page_end = int64_t{offset} + limit;
  ForEachRowLocked(pool, [&](const QueueRow& row) {
    if (!states.empty() && std::find(states.begin(), states.end(), row.state) == states.end()) {
      return true;
    }
    const int index = page.total++;
    if (index >= offset && index < page_end) page.entries.push_back(EntryLocked(row));
    // With every state wanted, the rows past the page only count toward the total.
    return !states.empty() || index + 1 < page_end;
  });
  if (states.empty()) page.total = active_jobs_.Count(pool);
  return page;
}

QueueEntry JobManager::EntryLocked(const QueueRow& row) {
  QueueEntry e{
      .job = Summary(*row.job),
      .position = row.position,
      .jobs_ahead = row.jobs_ahead,
      .state = row.state,
      .requested_slots = row.requested_slots,
      .allocated_slots = row.allocated_slots,
      .pending_reason = row.pending_reason ? *row.pending_reason : "",
      .running_priorities = {row.running_priorities.begin(), row.running_priorities.end()}};
  if (row.outlook != nullptr) OutlookLocked(*row.outlook, e);
  return e;
}

absl::StatusOr<QueueEntry> JobManager::QueueEntryOf(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  const JobRecord* job = active_jobs_.Find(job_id);
  if (job == nullptr) {
    return absl::NotFoundError(absl::StrCat("job ", job_id, " is not in a queue"));
  }
  std::optional<QueueEntry> found;
  ForEachRowLocked(job->resource_pool, [&](const QueueRow& row) {
    if (row.job->job_id != job_id) return true;
    found = EntryLocked(row);
    return false;
  });
  if (!found) return absl::NotFoundError(absl::StrCat("job ", job_id, " is not in a queue"));
  return *std::move(found);
}

absl::Status JobManager::Move(const std::string& job_id, const std::string& anchor_id, bool ahead,
                              const User& by) {
  PodsAfterUnlock relabel(this);
  absl::MutexLock lock(&mu_);
  KUBE_ASSIGN_OR_RETURN(JobRecord job, GetActiveJobLocked(job_id, /*allow_paused=*/false));
  KUBE_ASSIGN_OR_RETURN(JobRecord anchor, GetActiveJobLocked(anchor_id, /*allow_paused=*/false));
  if (job_id == anchor_id)
    return FieldError(ahead ? "ahead_of" : "behind_of", "a job cannot move relative to itself");
  if (job.resource_pool != anchor.resource_pool || job.priority != anchor.priority) {
    return absl::FailedPreconditionError(
        absl::StrCat("moves reorder jobs of one pool and priority: ", job_id, " is ",
                     job.resource_pool, "/", job.priority, ", ", anchor_id, " is ",
                     anchor.resource_pool, "/", anchor.priority, "; change the priority instead"));
  }
  std::vector<const JobRecord*> peers;  // Same priority, queue order, without the moved job.
  active_jobs_.ForEach(job.resource_pool, [&](const JobRecord& j) {
    if (j.priority == job.priority && j.job_id != job_id) peers.push_back(&j);
    return j.priority >= job.priority;
  });
  auto at = std::find_if(peers.begin(), peers.end(),
                         [&](const JobRecord* j) { return j->job_id == anchor_id; });
  if (at == peers.end()) {
    return absl::InternalError(absl::StrCat(anchor_id, " is active but not in the queue"));
  }
  const JobRecord* neighbour = nullptr;
  if (ahead && at != peers.begin()) neighbour = *(at - 1);
  if (!ahead && at + 1 != peers.end()) neighbour = *(at + 1);
  const double target = neighbour == nullptr
                            ? anchor.queue_position + (ahead ? -1.0 : 1.0)
                            : (anchor.queue_position + neighbour->queue_position) / 2;
  job.queue_position = Rounded(target);
  if (job.queue_position == anchor.queue_position ||
      (neighbour != nullptr && job.queue_position == neighbour->queue_position)) {
    return absl::FailedPreconditionError("no room between those queue positions");
  }
  KUBE_RETURN_IF_ERROR(UpdateJobLocked(job));
  EventLocked(absl::StrCat(job_id, " moved ", ahead ? "ahead of " : "behind ", anchor_id, " by ",
                           by.username));
  RelabelLaterLocked(job);
  return absl::OkStatus();
}

}  // namespace phalanx::master
