// Stranded gangs and refused members (algorithms in stranded.h).
#include "preemption/stranded.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "gang/eligibility.h"
#include "preemption/queue.h"

namespace phalanx::preemption {
namespace {

using Found = std::map<std::string, std::string>;  // Gang key -> reason.

// The admission loop pins a planned member to its node by this nodeSelector label; the node's
// own value of it need not be its name, so it is not what decides whether the node still matches.
constexpr absl::string_view kPinLabel = "kubernetes.io/hostname";

bool Planned(const core::PodInfo& p) { return p.node.empty() && !p.placement.empty(); }

// Whether the member's pin names `node` no more: the node's kubernetes.io/hostname label changed
// (or went) since the member was pinned to it. A member without a pin has none to go stale.
bool StalePin(const core::PodInfo& p, const core::Node& node) {
  const std::string* pin = core::FindLabel(p.node_selector, kPinLabel);
  if (pin == nullptr) return false;
  const std::string* hostname = core::FindLabel(node.labels, kPinLabel);
  return *pin != (hostname != nullptr ? *hostname : node.name);
}

// Keeps the planned members on node `i` that fit beside its bound pods, in queue order of their
// gangs; records the gangs of the others in `found`. Gangs found before are left out.
void KeepWhileTheyFit(const core::ClusterSnapshot& snap, int i, Found& found) {
  core::Resources room = snap.node(i).allocatable;
  std::map<std::string, core::Gang> gangs;
  std::vector<const core::PodInfo*> planned;
  for (const core::PodInfo* p : snap.PodsOnNode(i)) {
    if (!Planned(*p)) {
      room -= p->requests;
      continue;
    }
    std::optional<core::Gang> g = snap.FindGang(p->GangKey());
    if (!g || g->preempt_requested || found.contains(g->key)) continue;
    gangs.try_emplace(g->key, *std::move(g));
    planned.push_back(p);
  }
  std::sort(planned.begin(), planned.end(), [&](const core::PodInfo* a, const core::PodInfo* b) {
    const core::Gang& ga = gangs.at(a->GangKey());
    const core::Gang& gb = gangs.at(b->GangKey());
    if (ga.key != gb.key) return QueueLess(ga, gb);
    return a->name < b->name;
  });
  for (const core::PodInfo* p : planned) {
    if (p->requests.FitsIn(room)) {
      room -= p->requests;
    } else {
      found.try_emplace(p->GangKey(), absl::StrCat("pod ", p->name, " no longer fits on node ",
                                                   p->placement, " beside the pods bound there"));
    }
  }
}

}  // namespace

std::vector<StrandedGang> StrandedGangs(const core::ClusterSnapshot& snap) {
  Found found;
  std::set<int> overbooked;
  for (const core::Gang& g : snap.Gangs(core::ClusterSnapshot::GangFilter::kPlacing)) {
    if (g.preempt_requested) continue;
    for (const core::PodInfo* p : g.members) {
      if (!Planned(*p)) continue;
      std::optional<int> i = snap.NodeIndex(p->placement);
      if (!i) {
        found.try_emplace(g.key, absl::StrCat("node ", p->placement, " is gone"));
      } else if (!gang::NodeAdmits(*p, snap.node(*i))) {
        found.try_emplace(g.key, absl::StrCat("node ", p->placement, " no longer takes pod ",
                                              p->name, " (cordoned or tainted)"));
      } else if (!gang::NodeMatches(*p, snap.node(*i), kPinLabel)) {
        found.try_emplace(g.key, absl::StrCat("node ", p->placement, " no longer matches pod ",
                                              p->name, "'s node selector or affinity"));
      } else if (StalePin(*p, snap.node(*i))) {
        found.try_emplace(g.key,
                          absl::StrCat("node ", p->placement, "'s ", kPinLabel,
                                       " label changed since pod ", p->name, " was pinned to it"));
      } else if (!snap.Free(*i).IsNonNegative()) {
        overbooked.insert(*i);
      }
    }
  }
  for (int i : overbooked) KeepWhileTheyFit(snap, i, found);
  std::vector<StrandedGang> out;
  for (auto& [gang, reason] : found) out.push_back({gang, std::move(reason)});
  return out;
}

std::vector<RefusedMember> RefusedMembers(const core::ClusterSnapshot& snap) {
  std::vector<RefusedMember> out;
  for (const core::Gang& g : snap.Gangs(core::ClusterSnapshot::GangFilter::kPlacing)) {
    if (g.preempt_requested) continue;
    for (const core::PodInfo* p : g.members) {
      if (!Planned(*p) || p->gated || p->refused.empty()) continue;
      std::optional<int> i = snap.NodeIndex(p->placement);
      if (!i || !gang::NodeAdmits(*p, snap.node(*i)) ||
          !gang::NodeMatches(*p, snap.node(*i), kPinLabel) || StalePin(*p, snap.node(*i)) ||
          !snap.Free(*i).IsNonNegative()) {
        continue;
      }
      out.push_back({g.key, p->uid, p->name, p->placement, p->refused});
    }
  }
  std::sort(out.begin(), out.end(), [](const RefusedMember& a, const RefusedMember& b) {
    return std::tie(a.gang, a.pod_name) < std::tie(b.gang, b.pod_name);
  });
  return out;
}

}  // namespace phalanx::preemption
