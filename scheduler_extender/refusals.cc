// Refused placements and avoided nodes (see refusals.h).
#include "scheduler_extender/refusals.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gang/eligibility.h"

namespace phalanx::extender {

namespace {

// Whether some node of `snap` takes `pod` by every rule but what it avoids, and is not in `avoid`;
// or no node takes it anyway (then avoiding changes nothing).
bool LeavesANode(const core::PodInfo& pod, const absl::btree_set<std::string>& avoid,
                 const core::ClusterSnapshot& snap) {
  core::PodInfo bare = pod;
  bare.avoid_nodes.clear();
  bool any = false;
  for (int i = 0; i < snap.node_count(); ++i) {
    if (!gang::NodeEligible(bare, snap.node(i))) continue;
    if (!avoid.contains(snap.node(i).name)) return true;
    any = true;
  }
  return !any;
}

}  // namespace

std::string Refusals::Work(const core::PodInfo& pod) {
  return pod.managed() ? absl::StrCat(pod.ns, "/", pod.job_id) : pod.GangKey();
}

void Refusals::Adopt(const core::ClusterSnapshot& snap, int64_t now_ms) {
  for (const core::Gang& g : snap.Gangs(core::ClusterSnapshot::GangFilter::kPending)) {
    for (const core::PodInfo* p : g.members) {
      if (!p->gated || !p->placement.empty() || p->avoid_nodes.empty()) continue;
      Avoided& a = avoided_[Work(*p)];
      a.nodes.insert(p->avoid_nodes.begin(), p->avoid_nodes.end());
      a.until_ms = now_ms + memory_ms_;
    }
  }
}

std::vector<preemption::RefusedMember> Refusals::Due(const core::ClusterSnapshot& snap,
                                                     int64_t now_ms) {
  if (!std::exchange(adopted_, true)) Adopt(snap, now_ms);
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

std::optional<Refusals::Write> Refusals::Annotation(const core::PodInfo& pod,
                                                    const core::ClusterSnapshot& snap) const {
  if (!pod.gated || !pod.placement.empty()) return std::nullopt;
  if (avoided_.empty() && pod.avoid_nodes.empty()) return std::nullopt;  // The common case.
  const Write none;
  auto it = avoided_.find(Work(pod));
  const Write want = it != avoided_.end() && LeavesANode(pod, it->second.nodes, snap)
                         ? Write{absl::StrJoin(it->second.nodes, ",")}
                         : none;
  const Write carried = pod.avoid_nodes.empty() ? none : Write{absl::StrJoin(pod.avoid_nodes, ",")};
  if (want.value == carried.value) return std::nullopt;
  return want;
}

}  // namespace phalanx::extender
