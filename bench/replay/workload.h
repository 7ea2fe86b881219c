// The simulated cluster and jobs: node lists from a spec like "125x8" or "64x8,32x4", and trace
// jobs turned into gangs of pods exactly as the master splits them.
//
// Splitting (Determined's assignResources, which the master follows): a job of S GPUs with
// maxSlotsPerPod M gets one pod of S GPUs when S <= M, else S / M pods of M GPUs; when S > M and M
// does not divide S the master refuses the job at submit, and so does the replay (rejected, not
// rounded). A job the engine's planner finds infeasible on the empty cluster (larger than the
// cluster, or pods larger than every node) is rejected at submit too, with the planner's reason.
#ifndef PHALANX_BENCH_REPLAY_WORKLOAD_H_
#define PHALANX_BENCH_REPLAY_WORKLOAD_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "bench/replay/trace.h"
#include "core/node.h"
#include "core/pod.h"

namespace phalanx::replay {

// Simulated time starts here (ms) so that no pod ever starts at 0, which the engine reads as
// "start unknown". Every time in outputs is relative to the trace's first submit instead.
inline constexpr int64_t kClockOriginMs = 1000;
inline constexpr absl::string_view kNamespace = "replay";

// Nodes "n000".. with `gpus` nvidia.com/gpu each, in spec order; names are zero-padded so that name
// order (the engine's last tie-break) is spec order.
absl::StatusOr<std::vector<core::Node>> ParseCluster(absl::string_view spec);
int64_t TotalGpus(const std::vector<core::Node>& nodes);

struct PodShape {
  int pods = 1;
  int64_t gpus_per_pod = 0;
};

// The master's split of `slots` into pods (see above); an error when it refuses the job.
absl::StatusOr<PodShape> SplitSlots(int64_t slots, int32_t max_slots_per_pod);

struct Job {
  int index = 0;  // Submit order; the gang is named after it so that key order is FIFO order.
  TraceJob trace;
  int32_t priority = 0;
  PodShape shape;
  std::string rejected;  // Why the master refused it at submit; empty when accepted.

  int64_t gpus() const { return shape.pods * shape.gpus_per_pod; }
};

// Jobs of `trace` in submit order: priorities by the seeded rule (priority.h), split and checked.
std::vector<Job> BuildJobs(const Trace& trace, const std::vector<core::Node>& nodes,
                           int32_t max_slots_per_pod, uint64_t seed);

// "j000042" for job 42 (width fixed by the job count), its gang key "replay/j000042", the pod
// names "j000042-0"..; pods are created gated with the job's priority at `creation_ms`.
std::string JobName(int index, int job_count);
// The job index a gang key or pod uid of this replay names, or -1.
int JobIndexOf(absl::string_view key);
// The pod index of a pod name or uid "…-<i>", or -1.
int PodIndexOf(absl::string_view name);

// The gated pods of `job`. As a gang (gang policies) every pod carries the gang label and size, all
// created at `creation_ms`; as single pods (greedy: no gang label, each pod a gang of one) pod i is
// created at `creation_ms + i`, the master creating them one after another.
std::vector<core::PodInfo> MakePods(const Job& job, int job_count, bool as_gang,
                                    int64_t creation_ms);

}  // namespace phalanx::replay

#endif  // PHALANX_BENCH_REPLAY_WORKLOAD_H_
