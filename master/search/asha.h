// adaptive_asha: asynchronous successive halving (ASHA; Li et al., "A System for Massively Parallel
// Hyperparameter Tuning", MLSys 2020) in brackets, as Determined's adaptive_asha searcher offers
// it. Pure: the job manager passes the experiment's trials and applies what comes back.
//
// Brackets (PlanBrackets). R = min(max_rungs, 1 + floor(log_divisor(max_length)),
// 1 + floor(log_divisor(max_trials))). The mode picks the brackets' rung counts: aggressive {R};
// standard {floor((R-1)/2)+1 .. R}; conservative {1 .. R}; most rungs first. Rung i of a bracket of
// n rungs trains to max(floor(max_length / divisor^(n-1-i)), 1), rungs of equal length merged (a
// divisor under 2 and a short max_length). A bracket's share of max_trials is proportional to
// divisor^(n-1)/n (at least 1, the rest to the first bracket; taken back from the largest when
// the minimums pass max_trials), so that each bracket gets about the same budget. Trials are
// dealt to brackets in turn (AssignBrackets).
//
// The rule, within a bracket and rung k: of the n trials that reported a result at rung k, the
// best floor(n / divisor) are promotable; a trial promotable that has not been promoted yet is
// promoted to rung k+1 (Li et al.'s get_job). A result ranks by its value (smaller is better
// after orientation; NaN last, and never promoted), then by trial id.
// - Record: a trial reaching its target rung continues in its run when it is promotable then
//   (even if a trial waiting at a higher rung is promotable too: Li et al. would give that one
//   the worker; continuing saves a stop and a restore); else it waits (its run ends and its gang
//   is released) and may be promoted later, as more results arrive, by NextRuns. Its top rung
//   ends it.
// - NextRuns, for free run slots, in this order: runs lost before reaching their target (id
//   order), then promotions (highest rung first, then bracket order, then rank), then trials never
//   started (id order).
// - The search is over when no run is open and NextRuns has nothing: trials still waiting end.
#ifndef PHALANX_MASTER_SEARCH_ASHA_H_
#define PHALANX_MASTER_SEARCH_ASHA_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace phalanx::master::search {

enum class AshaMode { kAggressive, kStandard, kConservative };

struct AshaParams {
  int max_trials = 1;
  int64_t max_length = 1;  // In the searcher's unit (batches, records or epochs).
  double divisor = 4;
  int max_rungs = 5;
  AshaMode mode = AshaMode::kStandard;
};

// Bounds a stored state is checked against (max_rungs is at most 20).
inline constexpr int64_t kMaxBrackets = 64;

struct Bracket {
  std::vector<int64_t> rungs;  // The length each rung trains to, ascending; the last is max_length.
  int max_trials = 0;
};

std::vector<Bracket> PlanBrackets(const AshaParams& params);
// The bracket of each of the search's trials, in creation order: dealt in turn to the brackets
// that have trials left.
std::vector<int> AssignBrackets(const std::vector<Bracket>& brackets);
// How many trials run at once when max_concurrent_trials is unset (Determined's default: per
// bracket, the larger of the last bracket's trials and the divisor), at most max_trials.
int DefaultConcurrency(const AshaParams& params, const std::vector<Bracket>& brackets);

// What the searcher keeps with each trial (stored as JSON, ToJson / TrialSearchFromJson).
struct TrialSearch {
  int bracket = 0;
  std::vector<int64_t> rungs;  // Its bracket's.
  int target = 0;              // The rung it may train to.
  // Its result at rungs 0, 1, ..., oriented so that smaller is better; nullopt for NaN (worst).
  std::vector<std::optional<double>> results;

  // Reached its target rung and not promoted (yet), or its top rung.
  bool Reached() const { return results.size() > static_cast<size_t>(target); }
  bool AtTop() const { return results.size() >= rungs.size(); }
};
std::string ToJson(const TrialSearch& s);
// For users: "rung 2 of 3 (100): training", "...: waiting for a promotion", "...: done" (its top
// rung), "...: not promoted" (the search ended with it waiting), "...: ended before it".
std::string Progress(const TrialSearch& s, bool ended);
absl::StatusOr<TrialSearch> TrialSearchFromJson(absl::string_view json);

// A trial of the search as the job manager sees it.
struct SearchTrial {
  int64_t id = 0;
  TrialSearch search;
  bool started = false;  // It had a run.
  bool running = false;  // It has an open run.
  bool ended = false;    // COMPLETED, ERROR or CANCELED.
};

enum class Verdict { kContinue, kWait, kTop };
struct Recorded {
  TrialSearch search;  // The trial's, with the result and any promotion.
  Verdict verdict = Verdict::kWait;
  int rank = 0;       // 0-based, in its rung, among
  int rung_size = 0;  // the trials with a result there.
};
// The trial `id` of `trials` reports `value` (as reported: `smaller_is_better` orients it) at its
// target rung, which it had not reported yet. FAILED_PRECONDITION if it already had.
absl::StatusOr<Recorded> Record(const std::vector<SearchTrial>& trials, int64_t id, double value,
                                bool smaller_is_better, double divisor);

struct Start {
  int64_t id = 0;
  int target = 0;  // The rung its run trains to (a promotion raises it).
};
// The runs to start in at most `free` slots, in the order above.
std::vector<Start> NextRuns(const std::vector<SearchTrial>& trials, double divisor, int free);
// No run is open and NextRuns has nothing: the trials not ended are done.
bool SearchOver(const std::vector<SearchTrial>& trials, double divisor);

}  // namespace phalanx::master::search

#endif  // PHALANX_MASTER_SEARCH_ASHA_H_
