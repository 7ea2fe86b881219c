// Forecast: when each waiting gang is expected to start, by running the production admission round
// forward from a snapshot. Pure: a snapshot, options and a runtime model in, estimates out; no I/O,
// clocks or threads.
//
// Algorithm: time starts at options.admission.now_ms. Running gangs end at now + their expected
// remaining time; gangs already marked for preemption leave `preempt_exit_ms` from now and come
// back gated, as the master recreates them. Then, repeatedly:
//   1. One admission round (preemption/admission.h) at time t. A gang it admits or backfills starts
//      at s <= t (step 2): that is its estimate. Its pods are bound on the plan's nodes and it ends
//      at s + its expected duration. Victims it marks leave `preempt_exit_ms` after t, and rerun
//      their remaining work, the work since their last checkpoint and the restart overhead. A
//      gang that waits because it is patient with dear victims (preemption/rules.h) makes the
//      end of its patience an event.
//   2. t moves to the next end or exit e, and every other event up to e + max(step_ms,
//      step_fraction x (e - now)) is applied with it, so the number of rounds grows with the
//      logarithm of the horizon. A gang the round then starts gets s = the latest of those events
//      that freed one of its plan's nodes, and at least e: the time its nodes were free, which
//      keeps the step's error from adding up along a chain of gangs that wait for one another
//      (each would start late, so end late). A gang that could not start before the step's events
//      were all applied may come early, and one that started with the first of them late, by at
//      most the step; exact steps (both 0) have no error.
// It stops when every waiting gang has an estimate, when nothing is left to end (the rest wait on
// work whose end is unknown), past the horizon, or after max_rounds rounds.
// Gangs without a known runtime hold their capacity for the rest of the forecast, so whatever
// waits on them gets no estimate rather than an invented one. Infeasible gangs get none either.
#ifndef PHALANX_FORECAST_FORECAST_H_
#define PHALANX_FORECAST_FORECAST_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "core/snapshot.h"
#include "preemption/admission.h"

namespace phalanx::forecast {

// Expected work left, in ms, per gang key: for a running gang, until its run ends (0 or less: it
// is overdue and ends at the first step); for a waiting gang, how long its run lasts once started.
// A gang not listed has an unknown runtime.
using RuntimeModel = absl::flat_hash_map<std::string, int64_t>;

struct ForecastOptions {
  preemption::AdmissionOptions admission;  // The extender's options; now_ms is the start.
  int64_t preempt_exit_ms = 30'000;        // From a victim's marking until its pods are gone.
  int64_t step_ms = 60'000;
  double step_fraction = 0.05;
  int64_t horizon_ms = 30LL * 24 * 3600 * 1000;
  int max_rounds = 256;
};

enum class NoEstimate {
  kNone,        // There is an estimate.
  kInfeasible,  // It can never fit the cluster as it is.
  kUnknown,     // It waits on work whose end is unknown, or on nothing the forecast ends.
  kHorizon,     // Not within the horizon, or the round budget ran out first.
};
const char* NoEstimateText(NoEstimate n);

inline constexpr size_t kMaxAfter = 10;

struct GangEta {
  std::string gang;
  int32_t priority = 0;
  int position = 0;                 // 1-based place in the queue at the forecast's start.
  std::optional<int64_t> start_ms;  // On the caller's clock.
  NoEstimate none = NoEstimate::kNone;
  // The gangs whose end or exit was applied in the step that started it (sorted; at most
  // kMaxAfter, the first applied): "after X ends".
  std::vector<std::string> after;
};

struct ForecastResult {
  int64_t now_ms = 0;                   // Where it started.
  preemption::RoundResult first_round;  // The round at now_ms: what the extender does now.
  std::vector<GangEta> gangs;           // Every waiting gang of the snapshot, in queue order.
  int rounds = 0;
};

ForecastResult Forecast(std::shared_ptr<const core::ClusterSnapshot> snapshot,
                        const ForecastOptions& options, const RuntimeModel& runtimes);

}  // namespace phalanx::forecast

#endif  // PHALANX_FORECAST_FORECAST_H_
