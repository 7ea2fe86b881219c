// JobManager: pods that stay terminating on a node that is down. No kubelet confirms their end and
// Kubernetes never removes them, so their run would never end and its trial never resume. Once
// such a pod is terminating_pod_timeout past its deletion deadline and its node is gone or not
// Ready, the master force-deletes it (see job_manager.h).
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "master/jobs/job_manager.h"

namespace phalanx::master {

void JobManager::QueueStuckPodsLocked(absl::Time now) {
  std::set<std::string> stuck_now;
  for (const auto& [id, a] : allocs_) {
    for (const auto& [name, pod] : a.pods) {
      // An unbound pod goes at once when deleted: only a kubelet can hold one up.
      if (!pod.deleting() || !pod.bound() ||
          now - pod.deletion_deadline < config_.terminating_pod_timeout) {
        continue;
      }
      const std::string key = absl::StrCat(pod.ns, "/", name);
      stuck_now.insert(key);
      if (stuck_[key] == Stuck::kForceDeleted) continue;
      queued_stuck_.push_back({.pod = {.ns = pod.ns, .name = name},
                               .node = pod.node,
                               .past = now - pod.deletion_deadline});
    }
  }
  std::erase_if(stuck_, [&](const auto& entry) { return !stuck_now.contains(entry.first); });
}

void JobManager::ForceDeleteStuck(const std::vector<StuckPod>& stuck) {
  std::map<std::string, absl::StatusOr<bool>> down;  // By node: each is read once.
  for (const StuckPod& s : stuck) {
    auto [it, fresh] = down.try_emplace(s.node, false);
    if (fresh) it->second = pods_.NodeDown(s.node);
    const absl::StatusOr<bool>& node_down = it->second;
    const absl::Status deleted = node_down.ok() && *node_down
                                     ? pods_.ForceDeletePod(s.pod.ns, s.pod.name)
                                     : absl::OkStatus();
    const std::string key = absl::StrCat(s.pod.ns, "/", s.pod.name);
    const std::string what =
        absl::StrCat("pod ", key, " is terminating ", absl::FormatDuration(s.past),
                     " past its grace period on node ", s.node);
    absl::MutexLock lock(&mu_);
    Stuck& state = stuck_[key];
    if (!node_down.ok() || !deleted.ok()) {
      if (std::exchange(state, Stuck::kFailing) == Stuck::kFailing) continue;  // Said already.
      const absl::Status& error = node_down.ok() ? deleted : node_down.status();
      EventLocked(absl::StrCat(
          what, node_down.ok() ? ", which is down; force-deleting it: " : "; reading the node: ",
          error.message(), "; tried again at every tick"));
    } else if (!*node_down) {
      if (std::exchange(state, Stuck::kAwaitingKubelet) != Stuck::kAwaitingKubelet) {
        EventLocked(absl::StrCat(what, ", which is Ready: waiting for its kubelet"));
      }
    } else {
      state = Stuck::kForceDeleted;
      ++stats_.pods_force_deleted;
      EventLocked(absl::StrCat(what, ", which is gone or not Ready: force-deleted it"));
    }
  }
}

}  // namespace phalanx::master
