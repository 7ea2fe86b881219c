// A deterministic discrete-event simulator that replays a job trace through the same engine the
// extender runs: RunAdmissionRound over a ClusterSnapshot kept up to date with SnapshotBuilder.
//
// Algorithm: events are arrivals (trace submit times), completions, victim exits and requeues, the
// end of the patience of a job the engine kept waiting for it (preemption/rules.h: a round if it
// still waits), and deadlock releases, in order of (time, kind: completion < exit < requeue <
// patience < arrival < release, job). All events of one timestamp are applied, then ONE round runs
// if any of them changed the cluster, and its decisions are applied as the extender and master
// would: admitted and backfilled gangs bind and run for their remaining work; victims are marked
// (preempt_requested, preempted_by) and exit after `preempt_exit_ms`, still holding their GPUs;
// then their pods go and come back gated with their creation time `requeue_ms` later (the master
// recreating them: rounds in between do not see the victim). Preemption costs the victim the work
// done since its last checkpoint: a run started at s and marked at m keeps floor((m - s) /
// checkpoint) checkpoints of progress; the rest, the exit time and the restart overhead (added to
// its remaining work: pods recreated, checkpoint reloaded) are lost GPU time. A victim that
// finishes before its exit simply completes. The engine sees what it would see in a cluster:
// running pods carry checkpoint_ms, the latest checkpoint of their run (s + k x checkpoint, k >= 1;
// a rerun keeps its previous run's until its first new one, as the trial's annotation would),
// refreshed before each round for the jobs that passed a checkpoint since the last refresh (a
// checkpoint triggers no round of its own), and only where the policy preempts (nothing else reads
// it); recreated pods carry their preemption history (core::Requeued); the engine's rules
// (preemption/rules.h) are SimOptions::rules, whose restart overhead is the one charged here.
//
// Policies: `phalanx` (preemption and backfill on), `fifo-gang` (both off), `priority-no-backfill`
// (preemption on, backfill off): the admission round with those switches. `greedy`: see greedy.h.
// Greedy deadlock: after a pass, if no job is running and placed pods of incomplete jobs hold GPUs,
// nothing can ever free them (arrivals only add demand): the cluster is deadlocked. The simulator
// then counts deadlocked GPU time and, after `deadlock_timeout_ms` (an operator noticing, as the
// Determined docs advise: kill one of the deadlocked experiments), kills the partially placed job
// last in queue order (lowest priority, then latest submit) and resubmits it at once: its pods are
// recreated at that time, so they queue behind everything already waiting. Repeated while the
// deadlock lasts.
// Forecast accuracy (SimOptions::forecast_every; engine policies only): at the submit time of a
// sampled job, once that time's events and arrivals are applied and before its round, the forecast
// (forecast/forecast.h) runs on the round's snapshot with the simulator's admission options, exit
// time and one runtime model per ForecastModel, keyed by gang: a running job's time to its
// completion event; a marked victim's the same, from which the forecast derives its rerun (work
// since its checkpoint and restart overhead added, as Exit charges it); a waiting job's remaining
// work. The noisy model multiplies each job's figure by NoiseFactor; the none model is empty.
#ifndef PHALANX_BENCH_REPLAY_SIMULATOR_H_
#define PHALANX_BENCH_REPLAY_SIMULATOR_H_

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "bench/replay/workload.h"
#include "core/node.h"
#include "core/snapshot.h"
#include "forecast/forecast.h"
#include "preemption/admission.h"
#include "preemption/rules.h"

namespace phalanx::replay {

enum class Policy { kPhalanx, kFifoGang, kPriorityNoBackfill, kGreedy };
absl::StatusOr<Policy> ParsePolicy(absl::string_view name);
const char* PolicyName(Policy p);

// What the forecast is told of runtimes: the simulator's exact figures, each off by a per-job
// factor, or nothing.
enum class ForecastModel { kExact, kNoisy, kNone };
inline constexpr int kForecastModels = 3;
const char* ForecastModelName(ForecastModel m);
// The noisy model's factor for job `job` under `seed`: uniform in [0.5, 2), the same for a job
// throughout a run.
double NoiseFactor(uint64_t seed, int job);

struct SimOptions {
  Policy policy = Policy::kPhalanx;
  int32_t max_slots_per_pod = 8;
  int64_t checkpoint_interval_ms = 30 * 60 * 1000;
  // Given to the engine as AdmissionOptions::rules (every policy but greedy); its
  // restart_overhead_ms is also what a preempted job's rerun costs here.
  preemption::PreemptionRules rules;
  int64_t preempt_exit_ms = 30 * 1000;
  int64_t requeue_ms = 0;  // From a victim's exit until its recreated pods are in the queue.
  int64_t deadlock_timeout_ms = 60 * 60 * 1000;
  int64_t bucket_ms = 60 * 60 * 1000;  // Resolution of the time series.
  // Called every `progress_rounds` rounds (0: never) with the simulated time (ms since the first
  // submit), the rounds so far and the jobs waiting, for progress lines on long runs.
  int64_t progress_rounds = 0;
  std::function<void(int64_t t_ms, int64_t rounds, int64_t queued)> progress;
  // Called, when set, with the snapshot and options of every admission round before it runs (not
  // for greedy): what the engine sees, for tests.
  std::function<void(const core::ClusterSnapshot&, const preemption::AdmissionOptions&)>
      observe_round;
  // Forecast every Nth accepted job's start at its submission (the first, the N+1th...; 0: never;
  // not for greedy), into SimResult::forecasts.
  int64_t forecast_every = 0;
  uint64_t forecast_seed = 1;  // Of NoiseFactor.
  // The forecast's step coalescing (forecast::ForecastOptions; both 0: exact steps).
  int64_t forecast_step_ms = forecast::ForecastOptions{}.step_ms;
  double forecast_step_fraction = forecast::ForecastOptions{}.step_fraction;
};

// One sampled job's forecast start per ForecastModel, ms since the trace's first submit, -1 when
// the forecast gave none.
struct ForecastSample {
  int job = 0;
  std::array<int64_t, kForecastModels> start_ms{-1, -1, -1};
};

// Per job; times are ms since the trace's first submit, -1 when it never happened.
struct JobOutcome {
  int64_t first_start_ms = -1;
  int64_t end_ms = -1;
  int64_t start_order = -1;  // Rank of its first start among all jobs (0-based).
  int starts = 0;
  int preemptions = 0;
  std::vector<std::string> nodes;  // Node of each pod (by pod index) in its last run.
};

// Time-weighted sums over one bucket of the time series (GPU-ms and job-ms).
struct Bucket {
  int64_t allocated_gpu_ms = 0;  // GPUs held by pods (running, exiting, or placed and waiting).
  int64_t busy_gpu_ms = 0;       // GPUs of jobs that run (all pods placed).
  int64_t queued_job_ms = 0;     // Jobs submitted and not running (greedy: partially placed too).
  int64_t max_queued = 0;
};

struct SimResult {
  std::vector<JobOutcome> jobs;  // Indexed like the input jobs.
  std::vector<Bucket> series;    // Bucket i covers [i, i+1) * bucket_ms.
  int64_t cluster_gpus = 0;
  int64_t last_submit_ms = 0;
  int64_t end_ms = 0;  // Last completion: the makespan, as the first submit is 0.
  int64_t rounds = 0;
  int64_t preemptions = 0;  // Victim exits.
  int64_t lost_gpu_ms = 0;  // Work lost to preemption, victims' exit time, restart overhead.
  int64_t deadlocks = 0;    // Times the cluster entered a deadlock.
  int64_t releases = 0;     // Jobs killed and resubmitted to end one.
  int64_t deadlocked_gpu_ms = 0;
  int64_t held_idle_gpu_ms = 0;  // GPUs held by partially placed jobs, deadlocked or not.
  // Greedy: jobs that held placed pods for at least `deadlock_timeout_ms` before their last pod was
  // placed (stalled without a global deadlock), and the longest such hold.
  int64_t long_partial_holds = 0;
  int64_t max_partial_hold_ms = 0;
  int64_t fragmented_gpu_ms = 0;  // Free GPUs while the pending head is blocked.
  int64_t allocated_gpu_ms = 0;   // Over [0, end_ms].
  int64_t allocated_gpu_ms_until_last_submit = 0;
  int64_t waiting_ms = 0;                // Time during which some submitted job waits.
  int64_t allocated_gpu_ms_waiting = 0;  // GPUs held during that time.
  int64_t busy_gpu_ms = 0;
  int64_t unfinished = 0;  // Accepted jobs that never completed (none unless something is wrong).
  std::vector<ForecastSample> forecasts;  // In submit order.
};

absl::StatusOr<SimResult> Simulate(const std::vector<Job>& jobs,
                                   const std::vector<core::Node>& nodes, const SimOptions& options);

}  // namespace phalanx::replay

#endif  // PHALANX_BENCH_REPLAY_SIMULATOR_H_
