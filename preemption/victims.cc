// Node-aware greedy-then-prune victim selection over whole gangs.
#include "preemption/victims.h"

#include <algorithm>
#include <span>
#include <tuple>

#include "absl/container/flat_hash_map.h"

namespace phalanx::preemption {
namespace {

struct Candidate {
  const core::Gang* gang;
  int tier;  // ProtectionTier: protected ones go last.
  VictimCost cost;
  std::vector<int> nodes;  // Node index per member (-1 when unknown); filled when chosen.
};

// A candidate on one eligible node, with the requests of its members there.
struct Stay {
  int candidate;
  const core::Resources* held;
};

// The stays of every node, flat: node n's are all[first[n]] up to all[first[n + 1]].
struct Stays {
  std::vector<Stay> all;
  std::vector<int> first;
  std::span<const Stay> On(int n) const {
    return {all.data() + first[n], all.data() + first[n + 1]};
  }
};

bool Cheaper(const Candidate* a, const Candidate* b) {
  return std::tie(a->tier, a->cost) < std::tie(b->tier, b->cost);
}

// Tracks how many copies of `unit` fit on the eligible nodes as victims are added and removed.
class FitCounter {
 public:
  FitCounter(core::Resources unit, const gang::Capacity& cap, const std::vector<bool>& eligible)
      : unit_(std::move(unit)), cap_(cap), eligible_(eligible) {
    for (size_t n = 0; n < cap.size(); ++n) {
      if (eligible_[n]) total_ += unit_.CopiesThatFit(cap_[n]);
    }
  }
  int64_t total() const { return total_; }
  void Apply(const Candidate& c, bool add) {
    for (size_t m = 0; m < c.nodes.size(); ++m) {
      int n = c.nodes[m];
      if (n < 0 || !eligible_[n]) continue;
      core::Resources& extra = extra_[n];
      total_ -= unit_.CopiesThatFit(cap_[n] + extra);
      if (add) {
        extra += c.gang->members[m]->requests;
      } else {
        extra -= c.gang->members[m]->requests;
      }
      total_ += unit_.CopiesThatFit(cap_[n] + extra);
    }
  }

 private:
  core::Resources unit_;
  const gang::Capacity& cap_;
  const std::vector<bool>& eligible_;
  absl::flat_hash_map<int, core::Resources> extra_;
  int64_t total_ = 0;
};

// A node to clear: no protected candidate, all its candidates backfilled, lost slot-seconds over
// copies gained, index.
struct NodeKey {
  bool any_protected;
  bool not_all_backfilled;
  int64_t lost;
  int64_t gain;
  int node;
  bool operator<(const NodeKey& o) const {
    if (any_protected != o.any_protected) return o.any_protected;
    if (not_all_backfilled != o.not_all_backfilled) return o.not_all_backfilled;
    const __int128 a = static_cast<__int128>(lost) * o.gain;
    const __int128 b = static_cast<__int128>(o.lost) * gain;
    if (a != b) return a < b;
    return node < o.node;
  }
};

// Eligible nodes in the order to clear them: nodes without protected candidates first, then nodes
// whose victims are all backfilled, then lowest lost work per extra copy of the unit gained, then
// node index. Nodes that gain nothing are
// left out. `stays` lists the candidates with a pod on each node.
std::vector<int> NodeOrder(const Stays& stays, const std::vector<Candidate>& cands,
                           const core::Resources& unit, const gang::Capacity& cap) {
  std::vector<NodeKey> keyed;
  for (int n = 0; n < static_cast<int>(cap.size()); ++n) {
    if (stays.On(n).empty()) continue;
    core::Resources freed = cap[n];
    bool all_backfilled = true, any_protected = false;
    int64_t lost = 0;
    for (const Stay& s : stays.On(n)) {
      const Candidate& c = cands[s.candidate];
      freed += *s.held;
      all_backfilled &= c.gang->backfilled;
      any_protected |= c.tier > 0;
      lost += c.cost.lost_slot_s;
    }
    int64_t gain = unit.CopiesThatFit(freed) - unit.CopiesThatFit(cap[n]);
    if (gain <= 0) continue;
    keyed.push_back({any_protected, !all_backfilled, lost, gain, n});
  }
  std::sort(keyed.begin(), keyed.end());
  std::vector<int> order;
  for (const NodeKey& k : keyed) order.push_back(k.node);
  return order;
}

struct Search {
  const gang::GangPlanner& planner;
  const core::Gang& preemptor;
  const gang::Capacity& cap;
  const absl::flat_hash_set<const core::Gang*>& claimed;
  const PreemptionRules& rules;
  int64_t now_ms;
  std::vector<bool> eligible;

  // The candidates of tier `max_tier` or below, and where they stay.
  std::vector<Candidate> Gather(int max_tier, Stays& stays) const {
    std::vector<Candidate> cands;
    absl::flat_hash_map<const core::Gang*, int> index;
    stays.first.reserve(cap.size() + 1);
    for (int n = 0; n < static_cast<int>(cap.size()); ++n) {
      stays.first.push_back(static_cast<int>(stays.all.size()));
      if (!eligible[n]) continue;
      for (const core::ClusterSnapshot::Occupant& o : planner.snapshot().Occupants(n)) {
        const core::Gang* v = o.gang.get();
        if (v->priority > preemptor.priority) break;  // Occupants come lowest priority first.
        if (!Reclaimable(*v, preemptor) || claimed.contains(v)) continue;
        const int tier = ProtectionTier(*v, preemptor, rules, now_ms);
        if (tier == kNeverVictim) continue;
        if (tier > max_tier) {
          protected_left_out = true;
          continue;
        }
        auto [it, fresh] = index.try_emplace(v, static_cast<int>(cands.size()));
        if (fresh) cands.push_back({v, tier, CostOf(*v, planner.slots(), rules, now_ms), {}});
        stays.all.push_back({it->second, &o.held});
      }
    }
    stays.first.push_back(static_cast<int>(stays.all.size()));
    return cands;
  }

  // Greedy by node, then prune; empty when the candidates up to `max_tier` do not free enough.
  std::optional<VictimChoice> Run(int max_tier) const {
    Stays stays;
    std::vector<Candidate> cands = Gather(max_tier, stays);
    const core::Resources unit = gang::LargestMember(preemptor, planner.slots());
    FitCounter fits(unit, cap, eligible);
    const int64_t need = gang::CopiesNeeded(preemptor, planner.slots());
    std::vector<const Candidate*> chosen;
    std::vector<bool> taken(cands.size(), false);
    for (int n : NodeOrder(stays, cands, unit, cap)) {
      if (fits.total() >= need) break;
      for (const Stay& s : stays.On(n)) {
        if (taken[s.candidate]) continue;
        taken[s.candidate] = true;
        Candidate& c = cands[s.candidate];
        for (const core::PodInfo* p : c.gang->members) {
          c.nodes.push_back(planner.NodeIndex(p->AssignedNode()));
        }
        fits.Apply(c, /*add=*/true);
        chosen.push_back(&c);
      }
    }
    if (fits.total() < need) return std::nullopt;
    // Drop what is not needed, most expensive first.
    std::sort(chosen.begin(), chosen.end(), Cheaper);
    for (auto it = chosen.rbegin(); it != chosen.rend(); ++it) {
      fits.Apply(**it, /*add=*/false);
      if (fits.total() >= need) {
        *it = nullptr;
      } else {
        fits.Apply(**it, /*add=*/true);
      }
    }
    std::erase(chosen, nullptr);
    if (chosen.empty()) return std::nullopt;
    return Planned(chosen);
  }

  // The preemptor planned on `cap` plus what `chosen` frees.
  std::optional<VictimChoice> Planned(const std::vector<const Candidate*>& chosen) const {
    VictimChoice choice;
    gang::Capacity with_victims = cap;
    for (const Candidate* c : chosen) {
      for (size_t m = 0; m < c->nodes.size(); ++m) {
        if (c->nodes[m] < 0) continue;
        const core::Resources& r = c->gang->members[m]->requests;
        with_victims[c->nodes[m]] += r;
        choice.freed.push_back({c->nodes[m], r});
      }
      choice.victims.push_back(c->gang);
    }
    choice.plan = planner.Plan(preemptor, with_victims, closed);
    if (!choice.plan.placed()) return std::nullopt;
    return choice;
  }

  const std::vector<bool>* closed;
  mutable bool protected_left_out = false;  // Gather met a candidate above its tier.
};

}  // namespace

std::optional<VictimChoice> ChooseVictims(const gang::GangPlanner& planner,
                                          const core::Gang& preemptor, const gang::Capacity& cap,
                                          const absl::flat_hash_set<const core::Gang*>& claimed,
                                          const PreemptionRules& rules, int64_t now_ms,
                                          const std::vector<bool>* closed) {
  Search search{planner, preemptor, cap, claimed, rules, now_ms, {}, closed};
  search.eligible.assign(cap.size(), false);
  for (int n : planner.EligibleNodes(preemptor)) {
    search.eligible[n] = closed == nullptr || !(*closed)[n];
  }
  std::optional<VictimChoice> choice = search.Run(/*max_tier=*/0);
  if (choice || !search.protected_left_out) return choice;
  return search.Run(/*max_tier=*/1);
}

}  // namespace phalanx::preemption
