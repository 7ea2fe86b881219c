// Filter, prioritize and preempt decisions (see verbs.h).
#include "scheduler_extender/verbs.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "gang/eligibility.h"
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

// `pod` allowed only on `nodes`: a node name requirement added to each of its affinity terms (an
// empty term, which matches no node, stays empty).
core::PodInfo ConfinedTo(const core::PodInfo& pod, const std::vector<std::string>& nodes) {
  core::NodeRequirement on{.key = "metadata.name", .values = nodes, .on_name = true};
  std::sort(on.values.begin(), on.values.end());
  core::PodInfo out = pod;
  if (out.node_affinity.empty()) out.node_affinity.emplace_back();
  for (core::NodeSelectorTerm& term : out.node_affinity) {
    if (term.requirements.empty() && !pod.node_affinity.empty()) continue;
    term.requirements.push_back(on);
  }
  return out;
}

// Why `need` does not fit in `free`. One message per resource, as kube-scheduler's own
// "Insufficient nvidia.com/gpu": it counts failed nodes by message, and a constant costs no
// formatting per node.
absl::string_view Shortfall(const core::Resources& need, const core::Resources& free) {
  if (need.pods() > 0 && need.pods() > free.pods()) {
    return "too many pods after reservations";  // Checked first, as NodeResourcesFit does.
  }
  if (need.gpu() > 0 && need.gpu() > free.gpu()) {
    return "insufficient nvidia.com/gpu after reservations";
  }
  if (need.milli_cpu() > 0 && need.milli_cpu() > free.milli_cpu()) {
    return "insufficient cpu after reservations";
  }
  if (need.memory() > 0 && need.memory() > free.memory()) {
    return "insufficient memory after reservations";
  }
  return "insufficient resources after reservations";
}

using Reserved = absl::flat_hash_map<std::string, core::Resources>;

// What node `i`, called `name`, has free once live reservations are taken out: the snapshot's
// own figure (no copy) unless the node holds reservations, then `scratch`, set to the difference.
const core::Resources& FreeAfterReservations(const core::ClusterSnapshot& snap, int i,
                                             absl::string_view name, const Reserved& reserved,
                                             core::Resources& scratch) {
  if (reserved.empty()) return snap.Free(i);  // The usual case: no need to hash the name.
  auto it = reserved.find(name);
  if (it == reserved.end()) return snap.Free(i);
  scratch = snap.Free(i) - it->second;
  return scratch;
}

// The fitting nodes a filter reply passes: the first `limit` (0: every one) of those leaving the
// fewest slots free, in request order, chosen as the nodes are offered.
class BestFits {
 public:
  explicit BestFits(size_t limit) : limit_(limit) {}

  // Offers a fitting node that keeps `left` slots free once the pod is placed.
  void Offer(const std::string& node, int64_t left, std::vector<std::string>& passed) {
    if (limit_ == 0) {
      passed.push_back(node);
      return;
    }
    if (passed.empty() || left < best_) {
      best_ = left;
      passed.clear();
    }
    if (left == best_ && passed.size() < limit_) passed.push_back(node);
  }

 private:
  size_t limit_;
  int64_t best_ = 0;  // Slots left by the nodes in `passed`.
};

// 0..10: the share of the node's slots (CPU when it has none) in use once `pod` is placed.
int64_t PackingScore(const gang::SlotPolicy& slots, const core::Resources& alloc,
                     const core::Resources& free, const core::Resources& pod) {
  int64_t total = slots.SlotsOf(alloc);
  int64_t used_after = total - slots.SlotsOf(free) + slots.SlotsOf(pod);
  if (total == 0) {
    total = alloc.milli_cpu();
    used_after = total - free.milli_cpu() + pod.milli_cpu();
  }
  return total > 0 ? std::clamp<int64_t>(10 * used_after / total, 0, 10) : 0;
}

}  // namespace

void NodeReasons::Add(const std::string& node, absl::string_view reason) {
  auto known = std::find(reasons_.rbegin(), reasons_.rend(), reason);
  if (known == reasons_.rend()) {
    reasons_.emplace_back(reason);
    known = reasons_.rbegin();
  }
  nodes_.emplace_back(node, static_cast<uint32_t>(reasons_.rend() - known - 1));
}

const std::string* NodeReasons::Find(absl::string_view node) const {
  for (auto it = nodes_.rbegin(); it != nodes_.rend(); ++it) {
    if (it->first == node) return &reasons_[it->second];
  }
  return nullptr;
}

std::string Verbs::ReserveGang(const core::ClusterSnapshot& snap, const core::PodInfo& pod,
                               const std::vector<std::string>& offered, int64_t now_ms,
                               std::string* reason) const {
  const std::string key = pod.GangKey();
  if (std::optional<std::string> seat = book_->NodeFor(key, pod.uid, now_ms)) {
    if (std::find(offered.begin(), offered.end(), *seat) != offered.end()) {
      book_->Renew(key, now_ms);  // The member passes: its gang is binding.
      return *seat;
    }
    // Not offered (kube-scheduler's own filters, or its sample of the nodes): this member alone
    // moves to an offered node with room beside every live seat; the gang's other seats stay, as
    // their pods may be binding already. With no such node it keeps its seat and waits.
    const std::string moved = OfferedSeat(snap, pod, offered, now_ms);
    if (moved.empty() || !book_->MoveSeat(key, pod.uid, moved, snap, now_ms)) return *seat;
    return moved;
  }
  const core::PodInfo confined = ConfinedTo(pod, offered);
  core::Gang gang = GangWith(snap, confined);
  if (static_cast<int32_t>(gang.members.size()) < gang.expected_size) {
    *reason = absl::StrCat("gang ", key, " incomplete: ", gang.members.size(), " of ",
                           gang.expected_size, " pods exist");
    return "";
  }
  std::erase_if(gang.members, [](const core::PodInfo* m) { return m->HoldsCapacity(); });
  const gang::Capacity free = gang::FreeCapacity(snap, book_->Held(snap, now_ms, key));
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
  if (!book_->ReserveIfRoom(key, std::move(seats), snap, now_ms, ttl_ms_)) {
    *reason = absl::StrCat("gang ", key, " cannot be placed whole: its nodes were taken meanwhile");
    return "";
  }
  return mine;
}

std::string Verbs::OfferedSeat(const core::ClusterSnapshot& snap, const core::PodInfo& pod,
                               const std::vector<std::string>& offered, int64_t now_ms) const {
  const Reserved reserved = book_->ByNode(snap, now_ms, "");
  const std::vector<int> index = snap.NodeIndices(offered);
  core::Resources scratch;
  std::string best;
  int64_t best_left = 0;
  for (size_t k = 0; k < offered.size(); ++k) {
    if (index[k] < 0 || !gang::NodeEligible(pod, snap.node(index[k]))) continue;
    const core::Resources& free =
        FreeAfterReservations(snap, index[k], offered[k], reserved, scratch);
    if (!pod.requests.FitsIn(free)) continue;
    const int64_t left = slots_.SlotsOf(free) - slots_.SlotsOf(pod.requests);
    if (best.empty() || left < best_left) {
      best = offered[k];
      best_left = left;
    }
  }
  return best;
}

FilterOutcome Verbs::Filter(const core::ClusterSnapshot& snap, const core::PodInfo& pod,
                            const std::vector<std::string>& nodes, int64_t now_ms) const {
  FilterOutcome out;
  if (!pod.contract_error.empty()) {  // Its gang is unknown: it may not run alone.
    const std::string reason =
        absl::StrCat("the pod's phalanx labels cannot be read: ", pod.contract_error);
    for (const std::string& n : nodes) out.unresolvable.Add(n, reason);
    return out;
  }
  std::string target = pod.placement;
  std::string reason;
  if (target.empty() && IsGangMember(pod)) {
    target = ReserveGang(snap, pod, nodes, now_ms, &reason);
    if (target.empty()) {
      for (const std::string& n : nodes) out.unresolvable.Add(n, reason);
      return out;
    }
  }
  if (!target.empty()) {
    const std::string elsewhere = absl::StrCat("gang member planned for node ", target);
    for (const std::string& n : nodes) {
      if (n == target) {
        out.passed.push_back(n);
      } else {
        out.unresolvable.Add(n, elsewhere);
      }
    }
    return out;
  }
  const Reserved reserved = book_->ByNode(snap, now_ms, "");
  const int64_t need = slots_.SlotsOf(pod.requests);
  const std::vector<int> index = snap.NodeIndices(nodes);
  core::Resources scratch;
  BestFits best(best_fit_candidates_);
  std::vector<std::pair<size_t, absl::string_view>> disputed;  // Node's place, its shortfall.
  for (size_t k = 0; k < nodes.size(); ++k) {
    const std::string& n = nodes[k];
    if (index[k] < 0) {
      out.unresolvable.Add(n, "node not in the extender's cache yet");
      continue;
    }
    const core::Resources& free = FreeAfterReservations(snap, index[k], n, reserved, scratch);
    if (pod.requests.FitsIn(free)) {
      best.Offer(n, slots_.SlotsOf(free) - need, out.passed);
    } else if (snap.Planned(index[k]).IsZero() && snap.MarkedOn(index[k]) == 0 &&
               !reserved.contains(n)) {
      disputed.emplace_back(k, Shortfall(pod.requests, free));
    } else {
      out.failed.Add(n, Shortfall(pod.requests, free));
    }
  }
  // kube-scheduler offers a node only once its own NodeResourcesFit passed. Where nothing of
  // phalanx's (a pod planned and not bound, a reservation, a victim leaving for a waiting gang) is
  // in the way, the two disagree only on bound pods, which kube-scheduler counts as recently as
  // this cache or more (it binds them, and sees its preemption's victims go first: failing the
  // node there left its preemptor waiting for another event, minutes). Such nodes pass when none
  // fits by this cache, else fail as before.
  const bool none_fits = out.passed.empty();
  for (const auto& [k, shortfall] : disputed) {
    if (none_fits) {
      out.passed.push_back(nodes[k]);
    } else {
      out.failed.Add(nodes[k], shortfall);
    }
  }
  return out;
}

std::vector<int64_t> Verbs::Prioritize(const core::ClusterSnapshot& snap, const core::PodInfo& pod,
                                       const std::vector<std::string>& nodes,
                                       int64_t now_ms) const {
  std::string target = pod.placement;
  if (target.empty() && IsGangMember(pod)) {
    target = book_->NodeFor(pod.GangKey(), pod.uid, now_ms).value_or("");
  }
  std::vector<int64_t> scores(nodes.size(), 0);
  if (!target.empty()) {
    for (size_t k = 0; k < nodes.size(); ++k) scores[k] = nodes[k] == target ? 10 : 0;
    return scores;
  }
  const Reserved reserved = book_->ByNode(snap, now_ms, "");
  const std::vector<int> index = snap.NodeIndices(nodes);
  core::Resources scratch;
  for (size_t k = 0; k < nodes.size(); ++k) {
    if (index[k] < 0) continue;
    scores[k] = PackingScore(slots_, snap.node(index[k]).allocatable,
                             FreeAfterReservations(snap, index[k], nodes[k], reserved, scratch),
                             pod.requests);
  }
  return scores;
}

VictimMap Verbs::Preempt(const core::ClusterSnapshot& snap, const core::PodInfo& pod,
                         const VictimMap& proposed, int64_t now_ms) const {
  const Reserved reserved = book_->ByNode(snap, now_ms, IsGangMember(pod) ? pod.GangKey() : "");
  VictimMap out;
  for (const auto& [node, victims] : proposed) {
    const std::optional<int> index = snap.NodeIndex(node);
    if (!index) continue;  // A node the cache does not know yet: its room cannot be checked.
    core::Resources scratch;
    core::Resources room = FreeAfterReservations(snap, *index, node, reserved, scratch);
    std::vector<std::string> widened;
    absl::flat_hash_set<std::string> gangs;
    bool ok = true;
    for (const std::string& uid : victims.uids) {
      const core::PodInfo* v = snap.FindPod(uid);
      std::optional<core::Gang> g = v ? snap.FindGang(v->GangKey()) : std::nullopt;
      if (!g || !g->preemptible || g->priority >= pod.priority) {
        ok = false;
        break;
      }
      if (!gangs.insert(g->key).second) continue;
      for (const core::PodInfo* m : g->members) {
        // kube-scheduler resolves victims among the pods bound to the node: planned ones are not,
        // though they leave with their gang.
        if (m->node == node) widened.push_back(m->uid);
        if (m->HoldsCapacity() && m->AssignedNode() == node) room += m->requests;
      }
    }
    // kube-scheduler refuses a node without victims ("expected at least one victim pod"); and
    // victims whose going leaves no room for the pod (reservations kube-scheduler does not see)
    // would go for nothing.
    if (!ok || widened.empty() || !pod.requests.FitsIn(room)) continue;
    std::sort(widened.begin(), widened.end());
    out[node] = NodeVictims{std::move(widened), victims.pdb_violations};
  }
  return out;
}

}  // namespace phalanx::extender
