// Time integrals of the simulated cluster's state: totals for the summary and a bucketed series
// for plots. The state is piecewise constant between events.
#ifndef PHALANX_BENCH_REPLAY_TIMELINE_H_
#define PHALANX_BENCH_REPLAY_TIMELINE_H_

#include <cstdint>

#include "bench/replay/simulator.h"

namespace phalanx::replay {

struct ClusterState {
  int64_t allocated = 0;   // GPUs held by pods.
  int64_t busy = 0;        // GPUs of running jobs (all pods placed).
  int64_t queued = 0;      // Submitted jobs not running.
  int64_t fragmented = 0;  // Free GPUs while the pending head is blocked, else 0.
  bool deadlocked = false;
};

class Timeline {
 public:
  // Writes into `out`'s totals and series; times are ms since the first submit.
  Timeline(int64_t bucket_ms, int64_t last_submit_ms, SimResult& out);

  // Accounts `state` as held from the previous call's time until `t`.
  void Advance(int64_t t, const ClusterState& state);
  // Drops buckets after the one holding `end_ms`.
  void Finish(int64_t end_ms);

 private:
  Bucket& At(int64_t t);

  int64_t bucket_ms_;
  int64_t last_submit_ms_;
  SimResult& out_;
  int64_t now_ = 0;
};

}  // namespace phalanx::replay

#endif  // PHALANX_BENCH_REPLAY_TIMELINE_H_
