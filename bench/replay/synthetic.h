// A seeded synthetic gang-heavy workload for the replay (phalanx-replay --synthetic=SPEC): many
// multi-node gangs, heavy-tailed durations and three priority classes under Poisson arrivals, so
// that GPUs left idle while gangs wait can be studied in the open rather than through a trace.
//
// SPEC: comma-separated key=value pairs, each key at most once, every key optional:
//   jobs=N        jobs to generate, 1..10000000 (default 3000)
//   seed=S        seed of the generator, a whole number >= 0 (default 1)
//   load=L        offered load, 0 < L <= 100: the jobs' GPU time over the cluster's GPU time
//                 during the arrival span (default 1.2: the queue grows while jobs arrive)
//   median_min=M  median duration in minutes, 1..10080 (default 30)
//   sigma=X       lognormal shape of durations, 0..5 (default 2: mean ~7x the median)
// Errors name the key (or the part that is not key=value).
//
// Generation, from one mt19937_64(seed) stream and <cmath> only (no std::*_distribution, whose
// algorithms differ between standard libraries), job after job:
//   - GPUs (share %): 1:12 2:8 3:2 4:10 6:2 8:18 16:18 24:3 32:15 48:2 64:10, so 91% powers of
//     two and 48% of 16-64 GPUs; sizes above 8 are multiples of 8, which the master's split with
//     maxSlotsPerPod 8 accepts (one draw: r % 100).
//   - class (share %): high (90) 20, medium (50) 50, low (10) 30 (one draw: r % 100).
//   - duration: lognormal with median M and shape X (Box-Muller on two uniform draws), in whole
//     seconds, clamped to [1 min, 7 days].
// Then arrivals: the first at 0, then exponential gaps (one draw each) with mean S / (jobs - 1),
// S = total GPU time / (L x cluster GPUs), so the GPU time asked over the span is L times the
// cluster's. Same spec and cluster size, same jobs.
#ifndef PHALANX_BENCH_REPLAY_SYNTHETIC_H_
#define PHALANX_BENCH_REPLAY_SYNTHETIC_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "bench/replay/trace.h"

namespace phalanx::replay {

struct SyntheticSpec {
  int64_t jobs = 3000;
  uint64_t seed = 1;
  double load = 1.2;
  double median_min = 30;
  double sigma = 2;
};

absl::StatusOr<SyntheticSpec> ParseSyntheticSpec(absl::string_view spec);
// Every key with its value, in the order above: parses back to the same spec.
std::string SyntheticSpecText(const SyntheticSpec& spec);

// The workload for a cluster of `cluster_gpus` (at least 1) GPUs, as a trace of format kSynthetic
// whose job lines are 1-based job numbers and whose jobs all carry a priority.
Trace GenerateSynthetic(const SyntheticSpec& spec, int64_t cluster_gpus);

}  // namespace phalanx::replay

#endif  // PHALANX_BENCH_REPLAY_SYNTHETIC_H_
