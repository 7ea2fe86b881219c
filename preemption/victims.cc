// Node-aware greedy-then-prune victim selection over whole gangs.
#include "preemption/victims.h"

#include <algorithm>
#include <span>
#include <tuple>

#include "absl/container/flat_hash_map.h"

namespace phalanx::preemption {
namespace {

using Cost = std::tuple<bool, int64_t, int32_t, int64_t>;  // see victims.h

// Slot-seconds of work lost if `g` stops now.
int64_t LostSlotSeconds(const core::Gang& g, const gang::SlotPolicy& slots, int64_t now_ms) {
  if (g.start_ms <= 0 || now_ms <= g.start_ms) return 0;
  return slots.SlotsOf(g.total) * ((now_ms - g.start_ms) / 1000);
}

struct Candidate {
  const core::Gang* gang;
  Cost cost;
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
  return std::tie(a->cost, a->gang->key) < std::tie(b->cost, b->gang->key);
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

// Eligible nodes in the order to clear them: nodes whose victims are all backfilled first, then
// lowest lost work per extra copy of the unit gained, then node index. Nodes that gain nothing are
// left out. `stays` lists the candidates with a pod on each node.
std::vector<int> NodeOrder(const Stays& stays, const std::vector<Candidate>& cands,
                           const core::Resources& unit, const gang::Capacity& cap) {
  std::vector<std::tuple<bool, double, int>> keyed;
  for (int n = 0; n < static_cast<int>(cap.size()); ++n) {
    if (stays.On(n).empty()) continue;
    core::Resources freed = cap[n];
    bool all_backfilled = true;
    int64_t lost = 0;
    for (const Stay& s : stays.On(n)) {
      const Candidate& c = cands[s.candidate];
      freed += *s.held;
      all_backfilled &= c.gang->backfilled;
      lost += std::get<1>(c.cost);
    }
    int64_t gain = unit.CopiesThatFit(freed) - unit.CopiesThatFit(cap[n]);
    if (gain <= 0) continue;
    keyed.push_back({!all_backfilled, static_cast<double>(lost) / gain, n});
  }
  std::sort(keyed.begin(), keyed.end());
  std::vector<int> order;
  for (const auto& k : keyed) order.push_back(std::get<2>(k));
  return order;
}

}  // namespace

std::optional<VictimChoice> ChooseVictims(const gang::GangPlanner& planner,
                                          const core::Gang& preemptor, const gang::Capacity& cap,
                                          const absl::flat_hash_set<const core::Gang*>& claimed,
                                          int64_t now_ms, const std::vector<bool>* closed) {
  const gang::SlotPolicy& slots = planner.slots();
  std::vector<bool> eligible(cap.size(), false);
  for (int n : planner.EligibleNodes(preemptor)) eligible[n] = closed == nullptr || !(*closed)[n];
  core::Resources unit = gang::LargestMember(preemptor, slots);

  std::vector<Candidate> cands;
  absl::flat_hash_map<const core::Gang*, int> index;
  Stays stays;
  stays.first.reserve(cap.size() + 1);
  for (int n = 0; n < static_cast<int>(cap.size()); ++n) {
    stays.first.push_back(static_cast<int>(stays.all.size()));
    if (!eligible[n]) continue;
    for (const core::ClusterSnapshot::Occupant& o : planner.snapshot().Occupants(n)) {
      const core::Gang* v = o.gang.get();
      if (v->priority >= preemptor.priority) break;  // Occupants come lowest priority first.
      if (claimed.contains(v)) continue;
      auto [it, fresh] = index.try_emplace(v, static_cast<int>(cands.size()));
      if (fresh) {
        cands.push_back(
            {v,
             {!v->backfilled, LostSlotSeconds(*v, slots, now_ms), v->priority, -v->creation_ms},
             {}});
      }
      stays.all.push_back({it->second, &o.held});
    }
  }
  stays.first.push_back(static_cast<int>(stays.all.size()));

  FitCounter fits(unit, cap, eligible);
  const int64_t need = gang::CopiesNeeded(preemptor, slots);
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

}  // namespace phalanx::preemption
