// Time integrals of the cluster state (timeline.h).
#include "bench/replay/timeline.h"

#include <algorithm>

namespace phalanx::replay {

Timeline::Timeline(int64_t bucket_ms, int64_t last_submit_ms, SimResult& out)
    : bucket_ms_(std::max<int64_t>(bucket_ms, 1)), last_submit_ms_(last_submit_ms), out_(out) {}

Bucket& Timeline::At(int64_t t) {
  size_t i = static_cast<size_t>(t / bucket_ms_);
  if (out_.series.size() <= i) out_.series.resize(i + 1);
  return out_.series[i];
}

void Timeline::Advance(int64_t t, const ClusterState& s) {
  Bucket& first = At(now_);
  first.max_queued = std::max(first.max_queued, s.queued);
  if (t <= now_) return;
  const int64_t dt = t - now_;
  const int64_t idle_held = s.allocated - s.busy;
  out_.allocated_gpu_ms += s.allocated * dt;
  out_.busy_gpu_ms += s.busy * dt;
  out_.held_idle_gpu_ms += idle_held * dt;
  out_.fragmented_gpu_ms += s.fragmented * dt;
  if (s.queued > 0) {
    out_.waiting_ms += dt;
    out_.allocated_gpu_ms_waiting += s.allocated * dt;
  }
  if (s.deadlocked) out_.deadlocked_gpu_ms += idle_held * dt;
  if (now_ < last_submit_ms_) {
    out_.allocated_gpu_ms_until_last_submit += s.allocated * (std::min(t, last_submit_ms_) - now_);
  }
  for (int64_t from = now_; from < t;) {
    const int64_t to = std::min(t, (from / bucket_ms_ + 1) * bucket_ms_);
    Bucket& b = At(from);
    b.allocated_gpu_ms += s.allocated * (to - from);
    b.busy_gpu_ms += s.busy * (to - from);
    b.queued_job_ms += s.queued * (to - from);
    b.max_queued = std::max(b.max_queued, s.queued);
    from = to;
  }
  now_ = t;
}

void Timeline::Finish(int64_t end_ms) {
  size_t keep = static_cast<size_t>(end_ms / bucket_ms_) + 1;
  if (out_.series.size() > keep) out_.series.resize(keep);
}

}  // namespace phalanx::replay
