// A run's expected duration (run_estimate.h).
#include "master/jobs/run_estimate.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "master/search/asha.h"

namespace phalanx::master {
namespace {

// max_length as batches: N or {batches: N}.
std::optional<int64_t> Batches(const nlohmann::json& max_length) {
  const nlohmann::json* n = &max_length;
  if (max_length.is_object()) {
    if (max_length.size() != 1 || !max_length.contains("batches")) return std::nullopt;
    n = &max_length["batches"];
  }
  if (!n->is_number_integer() || n->get<int64_t>() < 1) return std::nullopt;
  return n->get<int64_t>();
}

std::string SourceText(MeasuredPace::Source s, const std::string& name) {
  switch (s) {
    case MeasuredPace::Source::kTrial:
      return "this trial";
    case MeasuredPace::Source::kExperiment:
      return "this experiment's trials";
    case MeasuredPace::Source::kOwnerHistory:
      return absl::StrCat("the owner's recent experiments named \"", name, "\"");
  }
  return "";
}

// At the measured pace, when the budget is known and the figure stays in range.
std::optional<RunEstimate> AtPace(const std::optional<SearcherBudget>& budget, int64_t left,
                                  const std::optional<MeasuredPace>& pace,
                                  const std::string& name) {
  if (!budget || !pace || !(pace->steps_per_second > 0)) return std::nullopt;
  const double seconds = std::ceil(static_cast<double>(left) / pace->steps_per_second);
  if (seconds > absl::ToDoubleSeconds(kMaxExpectedRuntime)) return std::nullopt;
  return RunEstimate{static_cast<int64_t>(seconds),
                     absl::StrFormat("%d batches left at %.3g batches/s measured on %s", left,
                                     pace->steps_per_second, SourceText(pace->source, name))};
}

}  // namespace

std::optional<SearcherBudget> BudgetOf(const SearcherConfig& searcher, const TrialRecord& trial) {
  const std::optional<int64_t> max_length = Batches(searcher.max_length);
  if (!max_length) return std::nullopt;
  if (searcher.kind != SearcherConfig::Kind::kAdaptiveAsha || trial.searcher_state.empty()) {
    return SearcherBudget{*max_length, *max_length};
  }
  absl::StatusOr<search::TrialSearch> s = search::TrialSearchFromJson(trial.searcher_state);
  if (!s.ok()) return std::nullopt;
  return SearcherBudget{s->rungs[s->target], *max_length};
}

std::optional<RunEstimate> EstimateRun(const ResourcesConfig& resources,
                                       const std::optional<SearcherBudget>& budget,
                                       int64_t steps_done, const std::optional<MeasuredPace>& pace,
                                       const std::string& name) {
  const int64_t left =
      budget ? std::max<int64_t>(budget->run_target - std::max<int64_t>(steps_done, 0), 0) : 0;
  const bool own = pace && pace->source != MeasuredPace::Source::kOwnerHistory;
  if (own) {
    if (std::optional<RunEstimate> e = AtPace(budget, left, pace, name)) return e;
  }
  if (!resources.expected_runtime) return own ? std::nullopt : AtPace(budget, left, pace, name);
  const int64_t given = absl::ToInt64Seconds(*resources.expected_runtime);
  if (!budget) return RunEstimate{given, "resources.expected_runtime"};
  const double share = static_cast<double>(left) / static_cast<double>(budget->max_length);
  return RunEstimate{static_cast<int64_t>(std::ceil(static_cast<double>(given) * share)),
                     absl::StrCat("resources.expected_runtime for ", budget->max_length,
                                  " batches, ", left, " left")};
}

}  // namespace phalanx::master
