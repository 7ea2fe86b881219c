// Gang keys and requeueing of pods.
#include "core/pod.h"

#include "absl/strings/str_cat.h"

namespace phalanx::core {

std::string PodInfo::GangKey() const { return absl::StrCat(ns, "/", gang.empty() ? name : gang); }

PodInfo Requeued(PodInfo pod, int64_t preempted_ms) {
  pod.gated = true;
  pod.node.clear();
  pod.placement.clear();
  pod.phase = PodPhase::kPending;
  pod.start_ms = 0;
  pod.preempt_requested = false;
  pod.preempted_by.clear();
  pod.backfilled = false;
  pod.backfilled_behind.clear();
  pod.preempted_ms.push_back(preempted_ms);
  if (pod.preempted_ms.size() > kMaxPreemptionHistory) {
    pod.preempted_ms.erase(pod.preempted_ms.begin());
  }
  return pod;
}

}  // namespace phalanx::core
