// JobManager: runs whose pods cannot start a container (an image that cannot be pulled, a
// container config naming a missing Secret key) fail, at once when that is for good, else once it
// has lasted pod_start_failure_timeout (see job_manager.h).
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "master/jobs/job_manager.h"

namespace phalanx::master {
namespace {

// Ordered: the worst of an allocation's containers counts.
enum class StartFailure { kNone, kForNow, kForGood };

// What kubelet's waiting `reason` means for the container: kForNow when a change outside the pod
// (a registry back up, a Secret created) can still let it start.
StartFailure StartFailureOf(std::string_view reason) {
  if (reason == "InvalidImageName") return StartFailure::kForGood;
  if (reason == "ErrImagePull" || reason == "ImagePullBackOff" ||
      reason == "CreateContainerConfigError" || reason == "CreateContainerError") {
    return StartFailure::kForNow;
  }
  return StartFailure::kNone;
}

std::string Describe(const PodState& pod, const ContainerWaiting& w) {
  return absl::StrCat("pod ", pod.ns, "/", pod.name, " cannot start container ", w.container, ": ",
                      w.reason, w.message.empty() ? "" : ": ", w.message);
}

}  // namespace

void JobManager::NoteStartFailuresLocked(Alloc& a) {
  if (!a.fail_why.empty()) return;
  StartFailure worst = StartFailure::kNone;
  std::string why;
  for (const auto& [name, pod] : a.pods) {
    for (const ContainerWaiting& w : pod.waiting) {
      if (const StartFailure f = StartFailureOf(w.reason); f > worst) {
        worst = f;
        why = Describe(pod, w);
      }
    }
  }
  if (worst == StartFailure::kForGood) {
    a.fail_why = why;
  } else if (worst == StartFailure::kNone) {
    if (!a.start_failure.empty()) EventLocked(absl::StrCat(a.rec.id, ": its pods can start again"));
    a.start_failure.clear();
    a.start_failing_at = absl::InfiniteFuture();
    StoreStartFailingLocked(a, false);
  } else {
    if (a.start_failure.empty()) {
      // Since its first observation; before a restart of the master, as stored then.
      a.start_failing_at = std::min(a.start_failing_at, absl::Now());
      EventLocked(absl::StrCat(a.rec.id, ": ", why, "; the run fails if this lasts ",
                               absl::FormatDuration(config_.pod_start_failure_timeout)));
    }
    a.start_failure = why;
    StoreStartFailingLocked(a, true);
  }
}

void JobManager::StoreStartFailingLocked(Alloc& a, bool failing) {
  if (a.rec.start_failing == failing) return;
  a.rec.start_failing = failing;
  (void)store_.UpdateAllocation(a.rec);  // Unstored, the clock restarts with the master.
}

void JobManager::FailStalledStartsLocked(absl::Time now) {
  std::vector<Alloc*> stalled;
  for (auto& [id, a] : allocs_) {
    if (a.rec.state != AllocState::kTerminating && a.fail_why.empty() &&
        now - a.start_failing_at >= config_.pod_start_failure_timeout) {
      stalled.push_back(&a);
    }
  }
  for (Alloc* a : stalled) {
    a->fail_why = absl::StrCat(a->start_failure, " (for pod_start_failure_timeout, ",
                               absl::FormatDuration(config_.pod_start_failure_timeout), ")");
    UpdateFromPodsLocked(*a);
  }
}

}  // namespace phalanx::master
