// JobManager: per-user quotas of master.yaml, checked at submit and activation (see job_manager.h).
#include "absl/strings/str_cat.h"
#include "kube/json.h"
#include "master/jobs/job_manager.h"

namespace phalanx::master {
namespace {

// RESOURCE_EXHAUSTED when `have` + `adding` exceeds `limit` (0: unlimited).
absl::Status Check(absl::string_view quota, absl::string_view what, const std::string& user,
                   int limit, int have, int adding) {
  if (limit == 0 || adding == 0 || have + adding <= limit) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat("quota ", quota, " is ", limit, ": ", user,
                                                   " has ", have, " ", what, " and this would add ",
                                                   adding, "; finish, pause or kill some first"));
}

}  // namespace

absl::Status JobManager::CheckQuotasLocked(const std::string& user, int experiments, int trials,
                                           int pods) {
  const QuotaConfig& q = config_.quotas;
  if (q.max_active_experiments_per_user == 0 && q.max_active_trials_per_user == 0 &&
      q.max_queued_pods_per_user == 0) {
    return absl::OkStatus();
  }
  int have_experiments = 0, have_trials = 0, have_pods = 0;
  active_jobs_.ForEach("", [&](const JobRecord& job) {
    if (job.username == user && job.type == TaskType::kExperiment) ++have_experiments;
    return true;
  });
  for (const auto& [id, a] : allocs_) {
    const JobRecord* job = active_jobs_.Find(a.rec.job_id);
    if (job == nullptr || job->username != user) continue;
    if (job->type == TaskType::kExperiment && a.rec.state != AllocState::kTerminating &&
        a.rec.state != AllocState::kTerminated) {
      ++have_trials;
    }
    if (a.rec.state == AllocState::kPending) have_pods += a.rec.pods;
  }
  KUBE_RETURN_IF_ERROR(Check("max_active_experiments_per_user", "active experiment(s)", user,
                             q.max_active_experiments_per_user, have_experiments, experiments));
  KUBE_RETURN_IF_ERROR(Check("max_active_trials_per_user", "active trial(s)", user,
                             q.max_active_trials_per_user, have_trials, trials));
  return Check("max_queued_pods_per_user", "queued pod(s)", user, q.max_queued_pods_per_user,
               have_pods, pods);
}

}  // namespace phalanx::master
