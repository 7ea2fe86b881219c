// JobManager: who may change a job (its owner and admins; see job_manager.h).
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "kube/json.h"
#include "master/jobs/job_manager.h"

namespace phalanx::master {
namespace {

// "experiment 3" (as the CLI numbers experiments), "command cmd-7".
std::string Describe(const JobRecord& job) {
  if (job.type == TaskType::kExperiment) {
    return absl::StrCat("experiment ", absl::StripPrefix(job.job_id, "exp-"));
  }
  return absl::StrCat(TaskTypeName(job.type), " ", job.job_id);
}

}  // namespace

absl::Status JobManager::CheckMayChange(const std::string& job_id, const User& by,
                                        absl::string_view action) {
  // The owner of a job never changes, so no lock is needed between this check and the change.
  KUBE_ASSIGN_OR_RETURN(JobRecord job, store_.GetJob(job_id));
  if (OwnsOrAdmin(job, by)) return absl::OkStatus();
  return absl::PermissionDeniedError(absl::StrCat(Describe(job), " belongs to ", job.username,
                                                  "; only ", job.username, " or an admin may ",
                                                  action));
}

absl::Status JobManager::CheckMayChangeAllocation(const std::string& allocation_id,
                                                  const User& by) {
  KUBE_ASSIGN_OR_RETURN(AllocationRecord a, store_.GetAllocation(allocation_id));
  return CheckMayChange(
      a.job_id, by,
      absl::StrCat("act for its allocation ", allocation_id, " (or that allocation's own token)"));
}

}  // namespace phalanx::master
