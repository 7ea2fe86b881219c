// Filter, prioritize and preempt decisions (see verbs.h).
#include "scheduler_extender/verbs.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "gang/planner.h"

namespace phalanx::extender {
namespace {

bool IsGangMember(const core::PodInfo& pod) { return !pod.gang.empty() && pod.gang_size > 1; }

// The gang of `pod` as the snapshot has it, with the request's own pod in place of (or added to)
// the cached copy.
core::Gang GangWith(const core::ClusterSnapshot& snap, const core::PodInfo& pod) {
  std::vector<const core::PodInfo*> pods;
  if (std::optional<core::Gang> g = snap.FindGang(pod.GangKey())) {
    for (const core::PodInfo* m : g->members) {
      if (m->uid != pod.uid) pods.push_back(m);
    }
  }
  pods.push_back(&pod);
  return core::SummarizeGang(pod.GangKey(), std::move(pods));
}

std::string Shortfall(const core::Resources& need, const core::Resources& free) {
  for (auto name : {core::kNvidiaGpu, core::kCpu, core::kMemory}) {
    if (need.Get(name) > free.Get(name)) {
      return absl::StrCat("insufficient ", name, ": needs ", need.Get(name), ", ",
                          std::max<int64_t>(0, free.Get(name)), " free after reservations");
    }
  }
  return "insufficient resources after reservations";
}

}  // namespace

std::string Verbs::ReserveGang(const core::ClusterSnapshot& snap, const core::PodInfo& pod,
                               int64_t now_ms, std::string* reason) const {
  const std::string key = pod.GangKey();
  if (std::optional<std::string> node = book_->NodeFor(key, pod.uid, now_ms)) return *node;
  core::Gang gang = GangWith(snap, pod);
  if (static_cast<int32_t>(gang.members.size()) < gang.expected_size) {
    *reason = absl::StrCat("gang ", key, " incomplete: ", gang.members.size(), " of ",
                           gang.expected_size, " pods exist");
    return "";
  }
  std::erase_if(gang.members, [](const core::PodInfo* m) { return m->HoldsCapacity(); });
  gang::Capacity free = gang::FreeCapacity(snap);
  for (const auto& [node, r] : book_->ByNode(now_ms, key)) {
    if (std::optional<int> i = snap.NodeIndex(node)) free[*i] -= r;
  }
  gang::GangPlanner planner(snap, slots_);
  gang::GangPlan plan = planner.Plan(gang, free);
  if (!plan.placed()) {
    *reason = absl::StrCat("gang ", key, " cannot be placed whole: ", plan.reason);
    return "";
  }
  std::vector<ReservationBook::Seat> seats;
  std::string mine;
  for (size_t m = 0; m < plan.nodes.size(); ++m) {
    const std::string& node = snap.node(plan.nodes[m]).name;
    seats.push_back({gang.members[m]->uid, node, gang.members[m]->requests});
    if (gang.members[m]->uid == pod.uid) mine = node;
  }
  book_->Reserve(key, std::move(seats), now_ms + ttl_ms_);
  return mine;
}

FilterOutcome Verbs::Filter(const core::ClusterSnapshot& snap, const core::PodInfo& pod,
                            const std::vector<std::string>& nodes, int64_t now_ms) const {
  FilterOutcome out;
  std::string target = pod.placement;
  std::string reason;
  if (target.empty() && IsGangMember(pod)) {
    target = ReserveGang(snap, pod, now_ms, &reason);
    if (target.empty()) {
      for (const std::string& n : nodes) out.unresolvable[n] = reason;
      return out;
    }
  }
  if (!target.empty()) {
    for (const std::string& n : nodes) {
      if (n == target) {
        out.passed.push_back(n);
      } else {
        out.unresolvable[n] = absl::StrCat("gang member planned for node ", target);
      }
    }
    return out;
  }
  auto reserved = book_->ByNode(now_ms, "");
  std::vector<int64_t> left;  // Slots each passing node keeps free once the pod is placed.
  for (const std::string& n : nodes) {
    std::optional<int> i = snap.NodeIndex(n);
    if (!i) {
      out.unresolvable[n] = "node not in the extender's cache yet";
      continue;
    }
    core::Resources free = snap.Free(*i);
    if (auto it = reserved.find(n); it != reserved.end()) free -= it->second;
    if (pod.requests.FitsIn(free)) {
      out.passed.push_back(n);
      left.push_back(slots_.SlotsOf(free) - slots_.SlotsOf(pod.requests));
    } else {
      out.failed[n] = Shortfall(pod.requests, free);
    }
  }
  KeepBestFit(left, out);
  return out;
}

void Verbs::KeepBestFit(const std::vector<int64_t>& left, FilterOutcome& out) const {
  if (best_fit_candidates_ == 0 || out.passed.empty()) return;  // 0: no narrowing.
  const int64_t best = *std::min_element(left.begin(), left.end());
  std::vector<std::string> kept;
  for (size_t k = 0; k < out.passed.size() && kept.size() < best_fit_candidates_; ++k) {
    if (left[k] == best) kept.push_back(out.passed[k]);
  }
  out.passed = std::move(kept);
}

std::vector<HostScore> Verbs::Prioritize(const core::ClusterSnapshot& snap,
                                         const core::PodInfo& pod,
                                         const std::vector<std::string>& nodes,
                                         int64_t now_ms) const {
  std::string target = pod.placement;
  if (target.empty() && IsGangMember(pod)) {
    target = book_->NodeFor(pod.GangKey(), pod.uid, now_ms).value_or("");
  }
  auto reserved = book_->ByNode(now_ms, "");
  std::vector<HostScore> scores;
  const int64_t need = slots_.SlotsOf(pod.requests);
  for (const std::string& n : nodes) {
    HostScore s{n, 0};
    std::optional<int> i = snap.NodeIndex(n);
    if (!target.empty()) {
      s.score = n == target ? 10 : 0;
    } else if (i) {
      core::Resources free = snap.Free(*i);
      if (auto it = reserved.find(n); it != reserved.end()) free -= it->second;
      const core::Resources& alloc = snap.node(*i).allocatable;
      int64_t total = slots_.SlotsOf(alloc);
      int64_t used_after = total - slots_.SlotsOf(free) + need;
      if (total == 0) {
        total = alloc.milli_cpu();
        used_after = total - free.milli_cpu() + pod.requests.milli_cpu();
      }
      if (total > 0) s.score = std::clamp<int64_t>(10 * used_after / total, 0, 10);
    }
    scores.push_back(std::move(s));
  }
  return scores;
}

VictimMap Verbs::Preempt(const core::ClusterSnapshot& snap, const core::PodInfo& pod,
                         const VictimMap& proposed) const {
  VictimMap out;
  for (const auto& [node, victims] : proposed) {
    std::vector<std::string> widened;
    bool ok = true;
    for (const std::string& uid : victims.uids) {
      const core::PodInfo* v = snap.FindPod(uid);
      std::optional<core::Gang> g = v ? snap.FindGang(v->GangKey()) : std::nullopt;
      if (!g || !g->preemptible || g->priority >= pod.priority) {
        ok = false;
        break;
      }
      for (const core::PodInfo* m : g->members) {
        if (m->AssignedNode() == node) widened.push_back(m->uid);
      }
    }
    if (!ok) continue;
    std::sort(widened.begin(), widened.end());
    widened.erase(std::unique(widened.begin(), widened.end()), widened.end());
    out[node] = NodeVictims{std::move(widened), victims.pdb_violations};
  }
  return out;
}

}  // namespace phalanx::extender
