// Greedy-then-prune victim selection over whole gangs.
#include "preemption/victims.h"

#include <algorithm>
#include <tuple>

#include "absl/container/flat_hash_map.h"

namespace phalanx::preemption {
namespace {

bool CanBeVictim(const core::Gang& v, const core::Gang& preemptor) {
  return v.Running() && v.preemptible && !v.preempt_requested && v.priority < preemptor.priority;
}

// Slot-seconds of work lost if `g` stops now.
int64_t LostSlotSeconds(const core::Gang& g, const gang::SlotPolicy& slots, int64_t now_ms) {
  if (g.start_ms <= 0 || now_ms <= g.start_ms) return 0;
  return slots.SlotsOf(g.total) * ((now_ms - g.start_ms) / 1000);
}

// Tracks how many copies of `unit` fit on the eligible nodes as victims are added and removed.
class FitCounter {
 public:
  FitCounter(const core::Resources& unit, const gang::Capacity& cap, const std::vector<int>& nodes)
      : unit_(unit), cap_(cap), eligible_(cap.size(), false) {
    for (int n : nodes) {
      eligible_[n] = true;
      total_ += unit_.CopiesThatFit(cap_[n]);
    }
  }
  int64_t total() const { return total_; }
  bool Touches(const core::Gang& g, const core::ClusterSnapshot& s) const {
    return std::any_of(g.members.begin(), g.members.end(), [&](const core::PodInfo* p) {
      std::optional<int> n = s.NodeIndex(p->AssignedNode());
      return n && eligible_[*n];
    });
  }
  void Apply(const core::Gang& g, const core::ClusterSnapshot& s, bool add) {
    for (const core::PodInfo* p : g.members) {
      std::optional<int> n = s.NodeIndex(p->AssignedNode());
      if (!n || !eligible_[*n]) continue;
      core::Resources& extra = extra_[*n];
      total_ -= unit_.CopiesThatFit(cap_[*n] + extra);
      if (add) {
        extra += p->requests;
      } else {
        extra -= p->requests;
      }
      total_ += unit_.CopiesThatFit(cap_[*n] + extra);
    }
  }

 private:
  core::Resources unit_;
  const gang::Capacity& cap_;
  std::vector<bool> eligible_;
  absl::flat_hash_map<int, core::Resources> extra_;
  int64_t total_ = 0;
};

core::Resources LargestMember(const core::Gang& g, const gang::SlotPolicy& slots) {
  core::Resources unit;
  for (const core::PodInfo* p : g.members) {
    if (slots.SlotsOf(p->requests) >= slots.SlotsOf(unit)) unit = p->requests;
  }
  return unit;
}

}  // namespace

std::optional<VictimChoice> ChooseVictims(const gang::GangPlanner& planner,
                                          const core::Gang& preemptor, const gang::Capacity& cap,
                                          const std::vector<const core::Gang*>& candidates,
                                          int64_t now_ms) {
  const core::ClusterSnapshot& snap = planner.snapshot();
  const gang::SlotPolicy& slots = planner.slots();
  FitCounter fits(LargestMember(preemptor, slots), cap, planner.EligibleNodes(preemptor));
  const int64_t need = static_cast<int64_t>(preemptor.members.size());

  std::vector<std::pair<std::tuple<bool, int64_t, int32_t, int64_t>, const core::Gang*>> ranked;
  for (const core::Gang* v : candidates) {
    if (!CanBeVictim(*v, preemptor) || !fits.Touches(*v, snap)) continue;
    ranked.push_back({{!v->backfilled, LostSlotSeconds(*v, slots, now_ms), v->priority,
                       -v->creation_ms},
                      v});
  }
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    return std::tie(a.first, a.second->key) < std::tie(b.first, b.second->key);
  });

  std::vector<const core::Gang*> chosen;
  for (const auto& [cost, v] : ranked) {
    if (fits.total() >= need) break;
    fits.Apply(*v, snap, /*add=*/true);
    chosen.push_back(v);
  }
  if (fits.total() < need) return std::nullopt;
  for (auto it = chosen.rbegin(); it != chosen.rend(); ++it) {
    fits.Apply(**it, snap, /*add=*/false);
    if (fits.total() >= need) {
      *it = nullptr;
    } else {
      fits.Apply(**it, snap, /*add=*/true);
    }
  }
  std::erase(chosen, nullptr);

  VictimChoice choice;
  gang::Capacity with_victims = cap;
  for (const core::Gang* v : chosen) {
    for (const core::PodInfo* p : v->members) {
      std::optional<int> n = snap.NodeIndex(p->AssignedNode());
      if (!n) continue;
      with_victims[*n] += p->requests;
      choice.freed.push_back({*n, p->requests});
    }
  }
  choice.plan = planner.Plan(preemptor, with_victims);
  if (!choice.plan.placed() || chosen.empty()) return std::nullopt;
  choice.victims = std::move(chosen);
  return choice;
}

}  // namespace phalanx::preemption
