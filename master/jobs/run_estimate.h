// How long a run is expected to take, for the extender's start-time forecast (pods carry it as
// phalanx.io/expected-runtime). Pure. Sources, in order:
//   1. the searcher's budget for the run and the trial's measured progress: (the steps the trial
//      trains to in this run - the steps it has done) / steps per second measured on the trial's
//      runs, else on its experiment's other trials (Store::MeasurePace);
//   2. resources.expected_runtime: for a trial whose budget is known, scaled to the steps this run
//      has left of the searcher's max_length; else as given;
//   3. the budget at the pace of the owner's recent experiments of that name;
//   4. none: unknown, and the forecast says so rather than invent a figure.
#ifndef PHALANX_MASTER_JOBS_RUN_ESTIMATE_H_
#define PHALANX_MASTER_JOBS_RUN_ESTIMATE_H_

#include <cstdint>
#include <optional>
#include <string>

#include "master/config/config_parts.h"
#include "master/spec/experiment_config.h"
#include "master/store/records.h"
#include "master/store/store.h"

namespace phalanx::master {

struct RunEstimate {
  int64_t seconds = 0;
  std::string basis;
};

// The steps trial `trial` trains to in its next run, and the searcher's whole length: adaptive
// ASHA's target rung and max_length, others' max_length; in batches (a bare N or {batches: N}),
// else unknown.
struct SearcherBudget {
  int64_t run_target = 0;
  int64_t max_length = 0;
};
std::optional<SearcherBudget> BudgetOf(const SearcherConfig& searcher, const TrialRecord& trial);

std::optional<RunEstimate> EstimateRun(const ResourcesConfig& resources,
                                       const std::optional<SearcherBudget>& budget,
                                       int64_t steps_done, const std::optional<MeasuredPace>& pace,
                                       const std::string& name);

}  // namespace phalanx::master

#endif  // PHALANX_MASTER_JOBS_RUN_ESTIMATE_H_
