// JobManager: trial metrics (see job_manager.h, ReportMetrics): reports checked, merged by steps
// and stored in one transaction; each trial's best validation value of its searcher's metric.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "kube/json.h"
#include "master/jobs/job_manager.h"
#include "master/spec/experiment_config.h"

namespace phalanx::master {
namespace {

absl::Status CheckReports(const std::vector<MetricReport>& reports) {
  if (reports.empty()) return absl::InvalidArgumentError("reports: none given");
  if (reports.size() > kMaxMetricReportsPerCall) {
    return absl::InvalidArgumentError(absl::StrCat("reports: at most ", kMaxMetricReportsPerCall,
                                                   " per call, got ", reports.size()));
  }
  for (size_t i = 0; i < reports.size(); ++i) {
    const MetricReport& r = reports[i];
    const std::string field = absl::StrCat("reports[", i, "]");
    if (r.steps < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".steps_completed: must be at least 0, got ", r.steps));
    }
    if (r.metrics.empty() || r.metrics.size() > kMaxMetricNames) {
      return absl::InvalidArgumentError(absl::StrCat(field, ".metrics: 1 to ", kMaxMetricNames,
                                                     " names, got ", r.metrics.size()));
    }
    for (const auto& [name, value] : r.metrics) {
      if (!IsMetricName(name)) {
        return absl::InvalidArgumentError(absl::StrCat(
            field, ".metrics: a name is 1-", kMaxMetricName, " of [A-Za-z0-9_./-], got \"",
            absl::CHexEscape(name.substr(0, 64)), "\""));
      }
    }
  }
  return absl::OkStatus();
}

// One report per steps (a later report's value of a name wins), in steps order.
std::vector<MetricReport> MergedBySteps(const std::vector<MetricReport>& reports) {
  std::map<int64_t, std::map<std::string, double>> by_steps;
  for (const MetricReport& r : reports) {
    for (const auto& [name, value] : r.metrics) by_steps[r.steps][name] = value;
  }
  std::vector<MetricReport> out;
  for (auto& [steps, metrics] : by_steps) {
    out.push_back({.steps = steps, .metrics = {metrics.begin(), metrics.end()}});
  }
  return out;
}

}  // namespace

absl::Status JobManager::ReportMetrics(const std::string& allocation_id, MetricGroup group,
                                       const std::vector<MetricReport>& reports) {
  KUBE_RETURN_IF_ERROR(CheckReports(reports));
  KUBE_ASSIGN_OR_RETURN(AllocationRecord rec, store_.GetAllocation(allocation_id));
  if (!rec.trial_id || TaskTypeOfJobId(rec.job_id) != TaskType::kExperiment) {
    return absl::FailedPreconditionError(
        absl::StrCat(allocation_id, " runs a task; only trials report metrics"));
  }
  const std::vector<MetricReport> merged = MergedBySteps(reports);
  if (group == MetricGroup::kValidation) KUBE_RETURN_IF_ERROR(ReportToSearcher(rec, merged));
  return store_.AddMetrics(*rec.trial_id, allocation_id, group, merged, kMaxMetricValuesPerTrial);
}

absl::StatusOr<BestValidationValues> JobManager::BestValidation(const JobRecord& job) {
  BestValidationValues best;
  if (job.type != TaskType::kExperiment) return best;
  absl::StatusOr<SearcherConfig> searcher = ParseStoredSearcher(job.config);
  if (!searcher.ok() || searcher->metric.empty()) return best;  // Stored configs parsed before.
  const bool smaller = searcher->smaller_is_better;
  KUBE_ASSIGN_OR_RETURN(best.trials, store_.BestValidation(job.job_id, searcher->metric, smaller));
  for (const auto& [trial, value] : best.trials) {
    if (!best.experiment || (smaller ? value < *best.experiment : value > *best.experiment)) {
      best.experiment = value;
    }
  }
  return best;
}

absl::StatusOr<std::vector<MetricReport>> JobManager::GetTrialMetrics(int64_t trial_id,
                                                                      MetricGroup group,
                                                                      int64_t after_steps,
                                                                      int limit, bool* more) {
  KUBE_RETURN_IF_ERROR(store_.GetTrial(trial_id).status());
  return store_.GetMetrics(trial_id, group, after_steps, limit, kMaxMetricValuesPerPage, more);
}

}  // namespace phalanx::master
