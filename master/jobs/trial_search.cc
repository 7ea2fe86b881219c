// JobManager: the adaptive_asha searcher (master/search/asha.h) applied to an experiment's trials.
// A validation report of a trial's open run that reaches its target rung is recorded in the
// trial's searcher_state (ReportToSearcher); a trial that waits has its run preempted (it
// checkpoints and its gang is released). Reconcile starts the runs NextRuns picks (a promotion is
// stored with the run it starts) and ends the search's trials once it is over.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "kube/json.h"
#include "master/jobs/job_manager.h"
#include "master/spec/experiment_config.h"

namespace phalanx::master {
namespace {

std::optional<SearcherConfig> AshaSearcherOf(const JobRecord& job) {
  if (job.type != TaskType::kExperiment) return std::nullopt;
  absl::StatusOr<SearcherConfig> s = ParseStoredSearcher(job.config);
  if (!s.ok() || s->kind != SearcherConfig::Kind::kAdaptiveAsha) return std::nullopt;
  return *std::move(s);
}

// The value of `metric` in the first report of at least `length` steps that has it.
std::optional<double> RungValue(const std::vector<MetricReport>& reports, int64_t length,
                                const std::string& metric) {
  for (const MetricReport& r : reports) {
    if (r.steps < length) continue;
    for (const auto& [name, value] : r.metrics) {
      if (name == metric) return value;
    }
  }
  return std::nullopt;
}

std::string RungText(const search::TrialSearch& s, int rung) {
  return absl::StrCat("rung ", rung + 1, " of ", s.rungs.size(), " (", s.rungs[rung], ")");
}

}  // namespace

std::vector<search::SearchTrial> JobManager::SearchViewLocked(
    const std::string& job_id, const std::vector<TrialRecord>& trials) {
  absl::flat_hash_set<int64_t> running;
  for (const Alloc* a : AllocsOfJobLocked(job_id)) running.insert(a->rec.trial_id.value_or(-1));
  std::vector<search::SearchTrial> view;
  for (const TrialRecord& t : trials) {
    std::optional<search::TrialSearch> s = SearchOf(t);
    if (!s) continue;  // Not the searcher's (cannot happen for its trials): left alone.
    view.push_back({.id = t.id,
                    .search = *std::move(s),
                    .started = t.runs > 0,
                    .running = running.contains(t.id),
                    .ended = IsTerminal(t.state)});
  }
  return view;
}

absl::Status JobManager::ReportToSearcher(const AllocationRecord& rec,
                                          const std::vector<MetricReport>& reports) {
  // Without the lock first: most reports reach no rung, and only those that do read every trial.
  KUBE_ASSIGN_OR_RETURN(const TrialRecord trial, store_.GetTrial(*rec.trial_id));
  const std::optional<search::TrialSearch> mine = SearchOf(trial);
  if (!mine || mine->Reached() || IsTerminal(trial.state)) return absl::OkStatus();
  KUBE_ASSIGN_OR_RETURN(const JobRecord job, store_.GetJob(rec.job_id));
  const std::optional<SearcherConfig> asha = AshaSearcherOf(job);
  if (!asha || !RungValue(reports, mine->rungs[mine->target], asha->metric)) {
    return absl::OkStatus();
  }
  PodsAfterUnlock after(this);
  absl::MutexLock lock(&mu_);
  absl::StatusOr<Alloc*> run = FindAllocLocked(rec.id);
  if (!run.ok()) return absl::OkStatus();  // An ended run's report: the trial's run is another.
  KUBE_ASSIGN_OR_RETURN(const std::vector<TrialRecord> trials, store_.ListTrials(job.job_id));
  const std::vector<search::SearchTrial> view = SearchViewLocked(job.job_id, trials);
  const search::SearchTrial* me = nullptr;
  for (const search::SearchTrial& v : view) me = v.id == *rec.trial_id ? &v : me;
  if (me == nullptr || me->ended || me->search.Reached()) return absl::OkStatus();
  const double value = *RungValue(reports, me->search.rungs[me->search.target], asha->metric);
  KUBE_ASSIGN_OR_RETURN(
      const search::Recorded r,
      search::Record(view, me->id, value, asha->smaller_is_better, asha->asha.divisor));
  KUBE_RETURN_IF_ERROR(store_.SetSearcherState(me->id, search::ToJson(r.search)));
  ActOnVerdictLocked(**run, me->id, r);
  return absl::OkStatus();
}

void JobManager::ActOnVerdictLocked(Alloc& run, int64_t trial_id, const search::Recorded& r) {
  const int rung = static_cast<int>(r.search.results.size()) - 1;
  const std::string place = absl::StrCat("trial ", trial_id, " ranks ", r.rank + 1, " of ",
                                         r.rung_size, " at ", RungText(r.search, rung));
  switch (r.verdict) {
    case search::Verdict::kTop:
      EventLocked(absl::StrCat(run.rec.id, ": searcher: ", place, ", its last"));
      return;
    case search::Verdict::kContinue:
      EventLocked(absl::StrCat(run.rec.id, ": searcher: ", place, "; promoted to ",
                               RungText(r.search, r.search.target)));
      return;
    case search::Verdict::kWait:
      EventLocked(absl::StrCat(run.rec.id, ": searcher: ", place,
                               "; it waits for a promotion and its run ends"));
      if (run.rec.state != AllocState::kTerminating && run.rec.state != AllocState::kPreempting) {
        (void)RequestPreemptionLocked(run);
      }
      return;
  }
}

absl::StatusOr<bool> JobManager::ReconcileSearchLocked(const JobRecord& job, int cap) {
  const std::optional<SearcherConfig> asha = AshaSearcherOf(job);
  if (!asha) return false;
  KUBE_ASSIGN_OR_RETURN(std::vector<TrialRecord> trials, store_.ListTrials(job.job_id));
  std::vector<search::SearchTrial> view = SearchViewLocked(job.job_id, trials);
  std::vector<int64_t> done;  // Past their top rung.
  for (search::SearchTrial& v : view) {
    if (v.ended || v.running || !v.search.AtTop()) continue;
    done.push_back(v.id);
    v.ended = true;
  }
  if (!done.empty()) KUBE_RETURN_IF_ERROR(store_.CompleteTrials(done));
  const int open = static_cast<int>(AllocsOfJobLocked(job.job_id).size());
  const double divisor = asha->asha.divisor;
  const std::vector<search::Start> starts = search::NextRuns(view, divisor, cap - open);
  for (const search::Start& start : starts) {
    for (TrialRecord& t : trials) {
      if (t.id != start.id) continue;
      std::optional<search::TrialSearch> s = SearchOf(t);
      if (s && s->target != start.target) {  // Stored with the run it starts.
        s->target = start.target;
        t.searcher_state = search::ToJson(*s);
        EventLocked(absl::StrCat(job.job_id, ": searcher: trial ", t.id, " promoted to ",
                                 RungText(*s, s->target)));
      }
      KUBE_RETURN_IF_ERROR(StartAllocationLocked(job, t));
    }
  }
  if (!starts.empty() || !search::SearchOver(view, divisor)) return true;
  std::vector<int64_t> waiting;
  for (const search::SearchTrial& v : view) {
    if (!v.ended) waiting.push_back(v.id);
  }
  if (waiting.empty()) return true;
  EventLocked(absl::StrCat(job.job_id, ": searcher: the search is over; ", waiting.size(),
                           " trial(s) waiting for a promotion end"));
  KUBE_RETURN_IF_ERROR(store_.CompleteTrials(waiting));
  return true;
}

std::optional<search::TrialSearch> JobManager::SearchOf(const TrialRecord& trial) {
  absl::StatusOr<search::TrialSearch> s = search::TrialSearchFromJson(trial.searcher_state);
  if (!s.ok()) return std::nullopt;
  return *std::move(s);
}

absl::StatusOr<SearcherOp> JobManager::SearcherOperation(const std::string& allocation_id) {
  KUBE_ASSIGN_OR_RETURN(const AllocationRecord rec, store_.GetAllocation(allocation_id));
  if (!rec.trial_id) {
    return absl::FailedPreconditionError(absl::StrCat(allocation_id, " runs a task, not a trial"));
  }
  KUBE_ASSIGN_OR_RETURN(const TrialRecord trial, store_.GetTrial(*rec.trial_id));
  if (trial.searcher_state.empty()) {
    return absl::FailedPreconditionError(
        "only adaptive_asha trials ask for operations; the others train to the searcher's "
        "max_length (PHALANX_SEARCHER)");
  }
  KUBE_ASSIGN_OR_RETURN(const search::TrialSearch s,
                        search::TrialSearchFromJson(trial.searcher_state));
  return SearcherOp{.length = s.rungs[s.target],
                    .done = IsTerminal(trial.state) || s.Reached() || rec.preempt_requested};
}

}  // namespace phalanx::master
