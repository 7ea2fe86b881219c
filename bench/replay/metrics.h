// What a replay tells a user about a policy: allocation, job completion time, queueing delay by
// priority class, makespan, preemptions, deadlocks and fragmentation.
//
// Definitions (times from the trace's first submit):
// - allocation: GPUs held by pods, time-averaged over [0, makespan] (and over [0, last submit]),
//   as a percentage of the cluster's GPUs. `busy` counts only jobs whose pods are all placed.
//   Over a whole replay it is pinned by the trace (GPU time = work + preemption losses; makespan =
//   last submit + drain), so "while jobs wait" (averaged only over the time some submitted job is
//   waiting) is where policies differ: idle GPUs while work waits are the scheduler's doing.
//   "GPUs idle while jobs wait" is its complement (GPUs no pod holds during that time), 0 when no
//   job ever waits.
// - JCT: completion - submit. Queueing delay: first start - submit. Percentiles are nearest-rank.
// - fragmentation: free GPUs while the pending head is blocked (it cannot be placed on them),
//   time-averaged over [0, makespan].
// - thrash: the most times one job was preempted, and the jobs preempted kManyPreemptions times or
//   more. Lost GPU time: work since the last checkpoint, exit time and restart overhead
//   (simulator.h).
// - forecast error of a sampled job (SimOptions::forecast_every), per runtime model:
//   |forecast start - first start| / max(wait, 1 min), over the sampled jobs with an estimate that
//   started; also over those of them that waited over a minute.
#ifndef PHALANX_BENCH_REPLAY_METRICS_H_
#define PHALANX_BENCH_REPLAY_METRICS_H_

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "bench/replay/priority.h"
#include "bench/replay/simulator.h"
#include "bench/replay/workload.h"

namespace phalanx::replay {

inline constexpr int kManyPreemptions = 3;

// The forecast error of one runtime model over a run's sampled jobs; p50 and p90 are ratios
// (0.25: 25%), nearest-rank.
struct ForecastError {
  int64_t sampled = 0;
  int64_t no_estimate = 0;
  int64_t measured = 0;  // With an estimate, and started.
  double p50 = 0;
  double p90 = 0;
  int64_t waited = 0;  // Of the measured, those that waited over a minute.
  double waited_p50 = 0;
  double waited_p90 = 0;
};

struct Summary {
  std::string policy;
  int64_t accepted = 0;
  int64_t completed = 0;
  int64_t unfinished = 0;
  double allocation_pct = 0;
  double allocation_until_last_submit_pct = 0;
  double busy_pct = 0;
  double allocation_waiting_pct = 0;
  double idle_waiting_pct = 0;
  // The most any policy reaches without wasting work: the trace's work over the shortest possible
  // makespan (from the first submit, at least to the latest submit + duration and to the work
  // divided by the cluster's GPUs), on the whole cluster.
  double allocation_bound_pct = 0;
  double waiting_hours = 0;
  double jct_mean_s = 0;
  int64_t jct_p50_ms = 0;
  int64_t jct_p99_ms = 0;
  std::array<int64_t, kPriorityClasses> class_jobs{};
  std::array<int64_t, kPriorityClasses> wait_p50_ms{};
  std::array<int64_t, kPriorityClasses> wait_p95_ms{};
  int64_t makespan_ms = 0;
  int64_t preemptions = 0;
  int64_t max_job_preemptions = 0;
  int64_t jobs_preempted_many = 0;  // kManyPreemptions times or more.
  double lost_gpu_hours = 0;
  int64_t deadlocks = 0;
  int64_t releases = 0;
  double deadlocked_gpu_hours = 0;
  double held_idle_gpu_hours = 0;
  int64_t long_partial_holds = 0;
  double max_partial_hold_hours = 0;
  double fragmented_gpus = 0;
  int64_t rounds = 0;
  std::array<ForecastError, kForecastModels> forecast{};  // By ForecastModel.
};

// Nearest-rank percentile `p` (0..100] of `values` (sorted here); 0 when empty.
int64_t Percentile(std::vector<int64_t> values, double p);

// Per ForecastModel, over result.forecasts.
std::array<ForecastError, kForecastModels> ForecastErrors(const std::vector<Job>& jobs,
                                                          const SimResult& result);

Summary Summarize(Policy policy, const std::vector<Job>& jobs, const SimResult& result);

// JCT quantiles for a CDF plot: (fraction, JCT ms) at `points` evenly spaced fractions.
std::vector<std::pair<double, int64_t>> JctQuantiles(const std::vector<Job>& jobs,
                                                     const SimResult& result, int points);

}  // namespace phalanx::replay

#endif  // PHALANX_BENCH_REPLAY_METRICS_H_
