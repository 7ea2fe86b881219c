// Best-fit all-or-nothing gang planning and feasibility checks.
#include "gang/planner.h"

#include <algorithm>
#include <numeric>
#include <tuple>

#include "absl/strings/str_cat.h"
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
  return sig;
}

// Member indexes, largest slot request first, then by pod name (members are name-sorted).
std::vector<int> PlacementOrder(const core::Gang& gang, const SlotPolicy& slots) {
  std::vector<int> order(gang.members.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return slots.SlotsOf(gang.members[a]->requests) > slots.SlotsOf(gang.members[b]->requests);
  });
  return order;
}

}  // namespace

Capacity FreeCapacity(const core::ClusterSnapshot& snapshot) {
  Capacity free(snapshot.node_count());
  for (int i = 0; i < snapshot.node_count(); ++i) free[i] = snapshot.Free(i);
  return free;
}

Capacity AllocatableCapacity(const core::ClusterSnapshot& snapshot) {
  Capacity cap(snapshot.node_count());
  for (int i = 0; i < snapshot.node_count(); ++i) cap[i] = snapshot.node(i).allocatable;
  return cap;
}

GangPlanner::GangPlanner(const core::ClusterSnapshot& snapshot, const SlotPolicy& slots)
    : snapshot_(snapshot), slots_(slots), allocatable_(AllocatableCapacity(snapshot)) {}

const std::vector<int>& GangPlanner::EligibleNodes(const core::Gang& gang) const {
  static const std::vector<int> kNone;
  if (gang.members.empty()) return kNone;
  const core::PodInfo& pod = *gang.members.front();
  std::unique_ptr<std::vector<int>>& slot = eligible_[Signature(pod)];
  if (slot == nullptr) {
    slot = std::make_unique<std::vector<int>>();
    for (int i = 0; i < snapshot_.node_count(); ++i) {
      if (NodeEligible(pod, snapshot_.node(i))) slot->push_back(i);
    }
  }
  return *slot;
}

GangPlan GangPlanner::Plan(const core::Gang& gang, const Capacity& free) const {
  GangPlan plan;
  const std::vector<int>& eligible = EligibleNodes(gang);
  plan.nodes.assign(gang.members.size(), -1);
  // Capacity this plan has taken so far on the nodes it touched.
  std::vector<int> taken_at(free.size(), -1);
  std::vector<core::Resources> taken;
  for (int m : PlacementOrder(gang, slots_)) {
    const core::Resources& req = gang.members[m]->requests;
    int best = -1;
    std::tuple<int64_t, int64_t, int64_t> best_key;
    for (int n : eligible) {
      if (!req.FitsIn(free[n])) continue;
      core::Resources left = free[n] - req;
      if (taken_at[n] >= 0) {
        left -= taken[taken_at[n]];
        if (!left.IsNonNegative()) continue;
      }
      auto key = std::make_tuple(slots_.SlotsOf(left), left.milli_cpu(), left.memory());
      if (best < 0 || key < best_key) {
        best = n;
        best_key = key;
      }
    }
    if (best < 0) {
      plan.outcome = GangPlan::Outcome::kWait;
      plan.nodes.clear();
      plan.reason = WaitReason(gang, free, "free");
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
                                    absl::string_view what) const {
  int64_t need = slots_.SlotsOf(gang.total);
  int64_t free_slots = 0;
  int fitting = 0;
  for (int n : EligibleNodes(gang)) {
    bool fits = std::any_of(gang.members.begin(), gang.members.end(),
                            [&](const core::PodInfo* p) { return p->requests.FitsIn(free[n]); });
    if (!fits) continue;
    ++fitting;
    free_slots += slots_.SlotsOf(free[n]);
  }
  return absl::StrCat("needs ", need, " ", slots_.Unit(), " on ", gang.members.size(),
                      gang.members.size() == 1 ? " node" : " nodes", "; ", free_slots, " ", what, " on ",
                      fitting, fitting == 1 ? " fitting node" : " fitting nodes");
}

GangPlan GangPlanner::CheckFeasible(const core::Gang& gang) const {
  GangPlan result;
  result.outcome = GangPlan::Outcome::kInfeasible;
  const int32_t max = slots_.max_slots_per_pod;
  int64_t total = slots_.SlotsOf(gang.total);
  for (const core::PodInfo* p : gang.members) {
    int64_t s = slots_.SlotsOf(p->requests);
    if (max > 0 && s > max) {
      result.reason = absl::StrCat("pod ", p->name, " requests ", s, " ", slots_.Unit(),
                                   "; maxSlotsPerPod is ", max);
      return result;
    }
  }
  if (max > 0 && total > max && total % max != 0) {
    result.reason = absl::StrCat(total, " ", slots_.Unit(), " is not divisible by maxSlotsPerPod ",
                                 max, ", so the gang can never be scheduled");
    return result;
  }
  if (!Plan(gang, allocatable_).placed()) {
    result.reason = absl::StrCat("larger than the pool: ",
                                 WaitReason(gang, allocatable_, "in the whole pool"));
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

void GangPlanner::Reserve(const core::Gang& gang, const GangPlan& plan, Capacity& free) {
  for (size_t m = 0; m < plan.nodes.size(); ++m) free[plan.nodes[m]] -= gang.members[m]->requests;
}

}  // namespace phalanx::gang
