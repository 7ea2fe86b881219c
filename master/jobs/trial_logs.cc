// JobManager: which pods hold a trial's logs, and reading one (see job_manager.h, TrialLogPods).
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kube/json.h"
#include "master/jobs/job_manager.h"

namespace phalanx::master {

absl::StatusOr<std::vector<LogPod>> JobManager::TrialLogPods(int64_t trial_id,
                                                             std::optional<int> rank,
                                                             const User& by) {
  KUBE_ASSIGN_OR_RETURN(const TrialRecord trial, store_.GetTrial(trial_id));
  KUBE_RETURN_IF_ERROR(CheckMayChange(trial.job_id, by, "read its trials' logs"));
  std::vector<LogPod> out;
  for (int run = std::max(1, trial.runs - 1); run <= trial.runs; ++run) {
    const std::string id = RunId(trial.job_id, trial.id, run);
    absl::StatusOr<AllocationRecord> a = store_.GetAllocation(id);
    if (absl::IsNotFound(a.status())) continue;
    if (!a.ok()) return a.status();
    for (int r = 0; r < a->pods; ++r) {
      if (rank && *rank != r) continue;
      out.push_back({.ns = a->ns, .name = absl::StrCat(id, "-", r), .run = run, .rank = r});
    }
  }
  return out;
}

absl::Status JobManager::StreamLog(const LogPod& pod, const LogOptions& options,
                                   const std::function<bool(absl::string_view)>& sink) {
  return pods_.StreamLog(pod.ns, pod.name, options, sink);
}

}  // namespace phalanx::master
