// Gang summaries.
#include "core/gang.h"

#include <algorithm>

namespace phalanx::core {

namespace {

bool AnyHolds(const std::vector<const PodInfo*>& members) {
  return std::any_of(members.begin(), members.end(),
                     [](const PodInfo* p) { return p->HoldsCapacity(); });
}

}  // namespace

bool Gang::Pending() const { return gated && !AnyHolds(members); }

bool Gang::Admitting() const {
  return gated && std::all_of(members.begin(), members.end(),
                              [](const PodInfo* p) { return p->HoldsCapacity(); });
}

bool Gang::Running() const { return !gated && AnyHolds(members); }

Gang SummarizeGang(std::string key, std::vector<const PodInfo*> pods) {
  Gang g;
  g.key = std::move(key);
  auto by_name = [](const PodInfo* a, const PodInfo* b) { return a->name < b->name; };
  if (!std::is_sorted(pods.begin(), pods.end(), by_name)) {
    std::sort(pods.begin(), pods.end(), by_name);
  }
  bool first = true;
  for (const PodInfo* p : pods) {
    g.expected_size = std::max(g.expected_size, p->gang_size);
    if (p->IsTerminal()) continue;
    g.members.push_back(p);
    g.priority = first ? p->priority : std::max(g.priority, p->priority);
    g.creation_ms = first ? p->creation_ms : std::min(g.creation_ms, p->creation_ms);
    g.queue_position = std::min(g.queue_position, p->queue_position);
    if (p->start_ms > 0 && (g.start_ms == 0 || p->start_ms < g.start_ms)) g.start_ms = p->start_ms;
    g.preemptible &= p->preemptible;
    g.gated |= p->gated;
    g.backfilled |= p->backfilled;
    if (g.backfilled_behind.empty()) g.backfilled_behind = p->backfilled_behind;
    g.checkpoint_ms = std::max(g.checkpoint_ms, p->checkpoint_ms);
    if (p->preempted_ms.size() > g.preempted_ms.size()) g.preempted_ms = p->preempted_ms;
    g.placing |= p->node.empty() && !p->placement.empty();
    g.managed |= p->managed();
    if (p->preempt_requested) {
      g.preempt_requested = true;
      if (g.preempted_by.empty()) g.preempted_by = p->preempted_by;
    }
    g.total += p->requests;
    if (g.pool.empty()) g.pool = p->pool;
    if (g.contract_error.empty()) g.contract_error = p->contract_error;
    first = false;
  }
  return g;
}

}  // namespace phalanx::core
