// Refused placements and avoided nodes (see refusals.h).
#include "scheduler_extender/refusals.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace phalanx::extender {

std::string Refusals::Work(const core::PodInfo& pod) {
  return pod.managed() ? absl::StrCat(pod.ns, "/", pod.job_id) : pod.GangKey();
}

std::vector<preemption::RefusedMember> Refusals::Due(const core::ClusterSnapshot& snap,
                                                     int64_t now_ms) {
  absl::erase_if(avoided_, [&](const auto& kv) { return kv.second.until_ms <= now_ms; });
  std::vector<preemption::RefusedMember> refused = preemption::RefusedMembers(snap);
  absl::flat_hash_set<std::string> seen;
  for (const preemption::RefusedMember& m : refused) {
    since_.try_emplace(m.pod_uid, now_ms);
    seen.insert(m.pod_uid);
  }
  absl::erase_if(since_, [&](const auto& kv) { return !seen.contains(kv.first); });
  std::vector<preemption::RefusedMember> due;
  for (preemption::RefusedMember& m : refused) {
    if (timeout_ms_ <= 0 || RefusedFor(m.pod_uid, now_ms) < timeout_ms_) continue;
    if (!due.empty() && due.back().gang == m.gang) continue;
    due.push_back(std::move(m));
  }
  return due;
}

int64_t Refusals::RefusedFor(const std::string& uid, int64_t now_ms) const {
  auto it = since_.find(uid);
  return it == since_.end() ? 0 : now_ms - it->second;
}

void Refusals::Avoid(const core::PodInfo& pod, const std::string& node, int64_t now_ms) {
  Avoided& a = avoided_[Work(pod)];
  a.nodes.insert(node);
  a.until_ms = now_ms + memory_ms_;
}

std::optional<std::string> Refusals::Annotation(const core::PodInfo& pod) const {
  if (!pod.gated || !pod.placement.empty()) return std::nullopt;
  auto it = avoided_.find(Work(pod));
  if (it == avoided_.end()) return std::nullopt;
  const bool carried = std::all_of(it->second.nodes.begin(), it->second.nodes.end(),
                                   [&](const std::string& n) {
                                     return std::binary_search(pod.avoid_nodes.begin(),
                                                               pod.avoid_nodes.end(), n);
                                   });
  if (carried) return std::nullopt;
  absl::btree_set<std::string> all(pod.avoid_nodes.begin(), pod.avoid_nodes.end());
  all.insert(it->second.nodes.begin(), it->second.nodes.end());
  return absl::StrJoin(all, ",");
}

}  // namespace phalanx::extender
