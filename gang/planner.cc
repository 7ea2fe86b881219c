// Best-fit all-or-nothing gang planning and feasibility checks.
#include "gang/planner.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gang/eligibility.h"

namespace phalanx::gang {
namespace {

// A stable text form of what decides node eligibility.
std::string Signature(const core::PodInfo& pod) {
  std::string sig;
  for (const auto& [k, v] : pod.node_selector) absl::StrAppend(&sig, k, "=", v, ";");
  absl::StrAppend(&sig, "|");
  for (const core::Toleration& t : pod.tolerations) {
    absl::StrAppend(&sig, t.key, ":", static_cast<int>(t.op), ":", t.value, ":", t.any_effect, ":",
                    static_cast<int>(t.effect), ";");
  }
  absl::StrAppend(&sig, "|", absl::StrJoin(pod.avoid_nodes, ","));
  for (const core::NodeSelectorTerm& term : pod.node_affinity) {
    absl::StrAppend(&sig, "|");
    for (const core::NodeRequirement& r : term.requirements) {
      absl::StrAppend(&sig, r.on_name, ":", r.key, ":", static_cast<int>(r.op), ":",
                      absl::StrJoin(r.values, ","), ";");
    }
  }
  return sig;
}

// "; avoids n1, n2 (kube-scheduler refused it there)" for a gang whose members avoid nodes, else
// "".
std::string AvoidedNodes(const core::Gang& gang) {
  std::set<std::string> avoided;
  for (const core::PodInfo* p : gang.members) {
    avoided.insert(p->avoid_nodes.begin(), p->avoid_nodes.end());
  }
  if (avoided.empty()) return "";
  return absl::StrCat("; avoids ", absl::StrJoin(avoided, ", "),
                      " (kube-scheduler refused it there)");
}

bool SameEligibility(const core::PodInfo& a, const core::PodInfo& b) {
  return a.node_selector == b.node_selector && a.tolerations == b.tolerations &&
         a.node_affinity == b.node_affinity && a.avoid_nodes == b.avoid_nodes;
}

bool AllAlike(const core::Gang& gang) {
  return std::all_of(gang.members.begin(), gang.members.end(), [&](const core::PodInfo* p) {
    return SameEligibility(*p, *gang.members.front());
  });
}

// Member indexes, largest slot request first, then (in a mixed gang) the one with fewer eligible
// nodes, then by pod name (members are name-sorted).
std::vector<int> PlacementOrder(const core::Gang& gang, const SlotPolicy& slots,
                                const std::function<size_t(const core::PodInfo&)>& eligible) {
  std::vector<int> order(gang.members.size());
  std::iota(order.begin(), order.end(), 0);
  std::vector<size_t> choices(gang.members.size(), 0);
  if (!AllAlike(gang)) {
    for (size_t m = 0; m < choices.size(); ++m) choices[m] = eligible(*gang.members[m]);
  }
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const int64_t sa = slots.SlotsOf(gang.members[a]->requests);
    const int64_t sb = slots.SlotsOf(gang.members[b]->requests);
    return sa != sb ? sa > sb : choices[a] < choices[b];
  });
  return order;
}

}  // namespace

Capacity FreeCapacity(const core::ClusterSnapshot& snapshot, const Capacity& held) {
  Capacity free(snapshot.node_count());
  for (int i = 0; i < snapshot.node_count(); ++i) free[i] = snapshot.Free(i);
  for (size_t i = 0; i < held.size() && i < free.size(); ++i) free[i] -= held[i];
  return free;
}

Capacity AllocatableCapacity(const core::ClusterSnapshot& snapshot) {
  Capacity cap(snapshot.node_count());
  for (int i = 0; i < snapshot.node_count(); ++i) cap[i] = snapshot.node(i).allocatable;
  return cap;
}

GangPlanner::GangPlanner(const core::ClusterSnapshot& snapshot, const SlotPolicy& slots)
    : snapshot_(snapshot), slots_(slots), allocatable_(AllocatableCapacity(snapshot)) {}

const std::vector<int>& GangPlanner::EligibleFor(
    const std::string& signature, const std::vector<const core::PodInfo*>& pods) const {
  std::unique_ptr<std::vector<int>>& slot = eligible_[signature];
  if (slot == nullptr) {
    slot = std::make_unique<std::vector<int>>();
    for (int i = 0; i < snapshot_.node_count(); ++i) {
      if (std::any_of(pods.begin(), pods.end(), [&](const core::PodInfo* p) {
            return NodeEligible(*p, snapshot_.node(i));
          })) {
        slot->push_back(i);
      }
    }
  }
  return *slot;
}

const std::vector<int>& GangPlanner::EligibleNodes(const core::PodInfo& pod) const {
  return EligibleFor(Signature(pod), {&pod});
}

const std::vector<int>& GangPlanner::EligibleNodes(const core::Gang& gang) const {
  static const std::vector<int> kNone;
  if (gang.members.empty()) return kNone;
  if (AllAlike(gang)) return EligibleNodes(*gang.members.front());
  std::string signature = "mixed";
  for (const core::PodInfo* p : gang.members) absl::StrAppend(&signature, "#", Signature(*p));
  return EligibleFor(signature, gang.members);
}

GangPlan GangPlanner::Plan(const core::Gang& gang, const Capacity& free,
                           const std::vector<bool>* closed) const {
  GangPlan plan;
  plan.nodes.assign(gang.members.size(), -1);
  const core::PodInfo* looked_up = nullptr;  // The member `eligible` was looked up for.
  const std::vector<int>* eligible = nullptr;
  // Capacity this plan has taken so far on the nodes it touched.
  std::vector<int> taken_at(free.size(), -1);
  std::vector<core::Resources> taken;
  auto count = [this](const core::PodInfo& p) { return EligibleNodes(p).size(); };
  for (int m : PlacementOrder(gang, slots_, count)) {
    const core::PodInfo& member = *gang.members[m];
    if (looked_up == nullptr || !SameEligibility(*looked_up, member)) {
      looked_up = &member;
      eligible = &EligibleNodes(member);
    }
    const core::Resources& req = member.requests;
    const int64_t req_slots = slots_.SlotsOf(req);
    int best = -1;
    std::tuple<int64_t, int64_t, int64_t> best_key;
    for (int n : *eligible) {
      if (closed != nullptr && (*closed)[n]) continue;
      const core::Resources& f = free[n];
      if (!req.FitsIn(f)) continue;
      std::tuple<int64_t, int64_t, int64_t> key;
      if (taken_at[n] < 0) {
        key = {slots_.SlotsOf(f) - req_slots, f.milli_cpu() - req.milli_cpu(),
               f.memory() - req.memory()};
      } else {
        const core::Resources avail = f - taken[taken_at[n]];
        if (!req.FitsIn(avail)) continue;
        key = {slots_.SlotsOf(avail) - req_slots, avail.milli_cpu() - req.milli_cpu(),
               avail.memory() - req.memory()};
      }
      if (best < 0 || key < best_key) {
        best = n;
        best_key = key;
      }
    }
    if (best < 0) {
      plan.outcome = GangPlan::Outcome::kWait;
      plan.nodes.clear();
      plan.reason = WaitReason(gang, free, "free", "no node has room for one of its pods");
      return plan;
    }
    plan.nodes[m] = best;
    if (taken_at[best] < 0) {
      taken_at[best] = static_cast<int>(taken.size());
      taken.emplace_back();
    }
    taken[taken_at[best]] += req;
  }
  plan.outcome = GangPlan::Outcome::kPlaced;
  return plan;
}

std::string GangPlanner::WaitReason(const core::Gang& gang, const Capacity& free,
                                    absl::string_view what, absl::string_view none) const {
  int64_t need = slots_.SlotsOf(gang.total);
  int64_t pods = 0;  // Node pods its members take (decoded pods take one each).
  for (const core::PodInfo* p : gang.members) pods += p->requests.pods();
  int64_t free_slots = 0;
  int64_t pod_room = 0;  // Pods the fitting nodes have room for.
  int fitting = 0;
  int full = 0;  // Eligible nodes with no room for another pod.
  for (int n : EligibleNodes(gang)) {
    if (pods > 0 && free[n].pods() <= 0) {
      ++full;
      continue;
    }
    bool fits = std::any_of(gang.members.begin(), gang.members.end(),
                            [&](const core::PodInfo* p) { return p->requests.FitsIn(free[n]); });
    if (!fits) continue;
    ++fitting;
    free_slots += slots_.SlotsOf(free[n]);
    pod_room += free[n].pods();
  }
  std::string reason = absl::StrCat("needs ", slots_.Count(need), " on ", gang.members.size(),
                                    gang.members.size() == 1 ? " node; " : " nodes; ");
  if (fitting == 0) {
    absl::StrAppend(&reason, none);
    if (full > 0) {
      absl::StrAppend(&reason, "; too many pods on ", full, full == 1 ? " node" : " nodes");
    }
  } else {
    absl::StrAppend(&reason, free_slots, " ", what, " on ", fitting,
                    fitting == 1 ? " fitting node" : " fitting nodes");
    if (pod_room < pods) absl::StrAppend(&reason, "; too many pods: room for ", pod_room, " more");
  }
  return reason + AvoidedNodes(gang);
}

core::Resources LargestMember(const core::Gang& gang, const SlotPolicy& slots) {
  core::Resources unit;
  for (const core::PodInfo* p : gang.members) {
    if (slots.SlotsOf(p->requests) >= slots.SlotsOf(unit)) unit = p->requests;
  }
  return unit;
}

int64_t CopiesNeeded(const core::Gang& gang, const SlotPolicy& slots) {
  const int64_t taking =
      std::count_if(gang.members.begin(), gang.members.end(),
                    [&](const core::PodInfo* p) { return slots.SlotsOf(p->requests) > 0; });
  return taking > 0 ? taking : static_cast<int64_t>(gang.members.size());
}

bool GangPlanner::FitsOnEmptyPool(const core::Gang& gang) const {
  if (gang.members.empty()) return true;
  const core::PodInfo& first = *gang.members.front();
  if (!AllAlike(gang) ||
      std::any_of(gang.members.begin(), gang.members.end(),
                  [&](const core::PodInfo* p) { return p->requests != first.requests; })) {
    return false;
  }
  int64_t copies = 0;
  for (int n : EligibleNodes(first)) copies += first.requests.CopiesThatFit(allocatable_[n]);
  return copies >= static_cast<int64_t>(gang.members.size());
}

GangPlan GangPlanner::CheckFeasible(const core::Gang& gang) const {
  GangPlan result;
  result.outcome = GangPlan::Outcome::kInfeasible;
  const int32_t max = slots_.MaxSlotsPerPod(gang.pool);
  int64_t total = slots_.SlotsOf(gang.total);
  for (const core::PodInfo* p : gang.members) {
    int64_t s = slots_.SlotsOf(p->requests);
    if (max > 0 && s > max) {
      result.reason =
          absl::StrCat("pod ", p->name, " requests ", slots_.Count(s), "; maxSlotsPerPod is ", max);
      return result;
    }
  }
  if (max > 0 && total > max && total % max != 0) {
    result.reason = absl::StrCat(slots_.Count(total), " is not divisible by maxSlotsPerPod ", max,
                                 ", so the gang can never be scheduled");
    return result;
  }
  if (!FitsOnEmptyPool(gang) && !Plan(gang, allocatable_).placed()) {
    result.reason = absl::StrCat(
        "larger than the pool: ",
        WaitReason(gang, allocatable_, "in the whole pool", "no node can hold one of its pods"));
    return result;
  }
  result.outcome = GangPlan::Outcome::kPlaced;
  if (static_cast<int32_t>(gang.members.size()) < gang.expected_size) {
    result.outcome = GangPlan::Outcome::kWait;
    result.reason = absl::StrCat(gang.members.size(), " of ", gang.expected_size,
                                 " pods created; waiting for the rest");
  }
  return result;
}

int GangPlanner::NodeIndex(absl::string_view name) const {
  if (node_index_.empty()) {
    for (int i = 0; i < snapshot_.node_count(); ++i) node_index_[snapshot_.node(i).name] = i;
  }
  auto it = node_index_.find(name);
  return it == node_index_.end() ? -1 : it->second;
}

void GangPlanner::Reserve(const core::Gang& gang, const GangPlan& plan, Capacity& free) {
  for (size_t m = 0; m < plan.nodes.size(); ++m) free[plan.nodes[m]] -= gang.members[m]->requests;
}

}  // namespace phalanx::gang
