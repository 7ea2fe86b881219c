// What-if answers for one waiting gang (what_if.h).
#include "forecast/what_if.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace phalanx::forecast {
namespace {

using preemption::GangDecision;
using preemption::Verdict;

bool Starts(Verdict v) { return v == Verdict::kAdmit || v == Verdict::kBackfill; }

// `slots` GPU slots as the master splits them at maxSlotsPerPod `max` (0: no limit): one pod up
// to `max`, else pods of `max`; nullopt when `max` does not divide them.
struct Split {
  int pods;
  int64_t per_pod;
};
std::optional<Split> SplitAt(int64_t slots, int32_t max) {
  if (max <= 0 || slots <= max) return Split{1, slots};
  if (slots % max != 0) return std::nullopt;
  return Split{static_cast<int>(slots / max), max};
}

bool SamePlacement(const core::PodInfo& a, const core::PodInfo& b) {
  return a.node_selector == b.node_selector && a.tolerations == b.tolerations &&
         a.node_affinity == b.node_affinity;
}

// Per resource pool other than `own`, by name: a pod phalanx-master created there, when every
// such pod of that pool is placed alike (SamePlacement).
std::map<std::string, const core::PodInfo*> PoolPlacements(const core::ClusterSnapshot& snap,
                                                           const std::string& own) {
  std::map<std::string, const core::PodInfo*> seen;  // Null: its pods differ.
  snap.ForEachPod([&](const core::PodInfo& p) {
    if (!p.managed() || p.pool.empty() || p.pool == own) return;
    auto [it, fresh] = seen.try_emplace(p.pool, &p);
    if (!fresh && it->second != nullptr && !SamePlacement(*it->second, p)) it->second = nullptr;
  });
  std::erase_if(seen, [](const auto& entry) { return entry.second == nullptr; });
  return seen;
}

const GangDecision* DecisionOf(const preemption::RoundResult& r, const std::string& gang) {
  for (const GangDecision& d : r.decisions) {
    if (d.gang == gang) return &d;
  }
  return nullptr;
}

class Asker {
 public:
  Asker(std::shared_ptr<const core::ClusterSnapshot> snap, const preemption::AdmissionOptions& opt,
        const core::Gang& g, int max_checks)
      : snap_(std::move(snap)), opt_(opt), gang_(g), checks_left_(max_checks) {}

  // Its decision with `pods` pods of `per_pod` GPUs at `priority`, placed like `placed_like` (a
  // pod of another pool) when given, else like its own first member.
  std::optional<GangDecision> Check(int pods, int64_t per_pod, int32_t priority,
                                    const core::PodInfo* placed_like = nullptr) {
    if (checks_left_-- <= 0) return std::nullopt;
    core::SnapshotBuilder b(snap_);
    for (const core::PodInfo* m : gang_.members) b.RemovePod(m->uid);
    const core::PodInfo& like = *gang_.members.front();
    // The gang keeps its key: a gang of one without a gang label is named after its pod.
    const std::string gang = like.gang.empty() ? like.name : like.gang;
    for (int i = 0; i < pods; ++i) {
      core::PodInfo p = like;
      p.uid = absl::StrCat(like.uid, "~what-if-", i);
      p.name = absl::StrCat(like.name, "~what-if-", i);
      p.gang = gang;
      p.gang_size = pods;
      p.priority = priority;
      p.creation_ms = opt_.now_ms;  // The master recreates the pods (rules.h: patience restarts).
      p.requests.Set(opt_.slots.gpu_resource, per_pod);
      if (placed_like != nullptr) {
        p.pool = placed_like->pool;
        p.node_selector = placed_like->node_selector;
        p.tolerations = placed_like->tolerations;
        p.node_affinity = placed_like->node_affinity;
      }
      b.UpsertPod(std::move(p));
    }
    const preemption::RoundResult r = preemption::RunAdmissionRound(*b.Build(), opt_);
    const GangDecision* d = DecisionOf(r, gang_.key);
    if (d == nullptr) return std::nullopt;
    return *d;
  }

  // Its GPUs per pod when its pods are equal and ask for GPU slots; nullopt otherwise.
  std::optional<int64_t> EqualGpuPods() const {
    const int64_t per_pod = gang_.members.front()->requests.Get(opt_.slots.gpu_resource);
    if (opt_.slots.type != gang::SlotPolicy::Type::kGpu || per_pod <= 0) return std::nullopt;
    for (const core::PodInfo* m : gang_.members) {
      if (m->requests.Get(opt_.slots.gpu_resource) != per_pod) return std::nullopt;
    }
    return per_pod;
  }

  std::optional<int64_t> SlotsNow() {
    const int pods = static_cast<int>(gang_.members.size());
    const std::optional<int64_t> per_pod = EqualGpuPods();
    if (!per_pod) return std::nullopt;
    const int32_t max = opt_.slots.MaxSlotsPerPod(gang_.pool);
    for (int64_t s = *per_pod * pods - 1; s >= 1; --s) {
      const std::optional<Split> split = SplitAt(s, max);
      if (!split) continue;
      std::optional<GangDecision> d = Check(split->pods, split->per_pod, gang_.priority);
      if (!d) return std::nullopt;
      if (Starts(d->verdict)) return s;
    }
    return std::nullopt;
  }

  std::optional<std::string> PoolNow() {
    const std::optional<int64_t> per_pod = EqualGpuPods();
    if (!per_pod || checks_left_ <= 0) return std::nullopt;
    const int64_t slots = *per_pod * static_cast<int64_t>(gang_.members.size());
    for (const auto& [pool, like] : PoolPlacements(*snap_, gang_.pool)) {
      const std::optional<Split> split = SplitAt(slots, opt_.slots.MaxSlotsPerPod(pool));
      if (!split) continue;
      std::optional<GangDecision> d = Check(split->pods, split->per_pod, gang_.priority, like);
      if (!d) return std::nullopt;
      if (Starts(d->verdict)) return pool;
    }
    return std::nullopt;
  }

  void PriorityNow(const preemption::RoundResult& now, WhatIf& out) {
    std::set<int64_t> candidates;
    auto consider = [&](int32_t priority) {
      const int64_t above = int64_t{priority} + 1;
      if (priority >= gang_.priority && above <= kMaxPriority) candidates.insert(above);
    };
    for (const core::Gang& g : snap_->Gangs()) {
      if (g.Running()) consider(g.priority);
    }
    for (const GangDecision& d : now.decisions) {
      if (d.gang == gang_.key) break;
      consider(d.priority);
    }
    const int pods = static_cast<int>(gang_.members.size());
    const int64_t per_pod = gang_.members.front()->requests.Get(opt_.slots.gpu_resource);
    for (int64_t p : candidates) {
      std::optional<GangDecision> d = Check(pods, per_pod, static_cast<int32_t>(p));
      if (!d) return;
      if (Starts(d->verdict) || (d->verdict == Verdict::kPreempt && !d->victims.empty())) {
        out.priority_now = static_cast<int32_t>(p);
        const size_t named = std::min(d->victims.size(), kMaxNamed);
        out.victims.assign(d->victims.begin(), d->victims.begin() + named);
        return;
      }
    }
  }

 private:
  std::shared_ptr<const core::ClusterSnapshot> snap_;
  const preemption::AdmissionOptions& opt_;
  const core::Gang& gang_;
  int checks_left_;
};

}  // namespace

absl::StatusOr<WhatIf> AskWhatIf(std::shared_ptr<const core::ClusterSnapshot> snapshot,
                                 const preemption::AdmissionOptions& options,
                                 const std::string& gang, int max_checks,
                                 const preemption::RoundResult* now_given) {
  std::optional<core::Gang> g = snapshot->FindGang(gang);
  if (!g || !g->Pending() || g->members.empty()) {
    return absl::NotFoundError(absl::StrCat("gang ", gang, " is not waiting"));
  }
  if (static_cast<int>(g->members.size()) < g->expected_size) {
    return absl::FailedPreconditionError(
        absl::StrCat("gang ", gang, " waits for members still to be created"));
  }
  std::optional<preemption::RoundResult> computed;
  if (now_given == nullptr) computed = preemption::RunAdmissionRound(*snapshot, options);
  const preemption::RoundResult& now = now_given != nullptr ? *now_given : *computed;
  WhatIf out;
  for (const GangDecision& d : now.decisions) {
    if (d.gang == gang) break;
    if (!Starts(d.verdict) && d.verdict != Verdict::kInfeasible && out.ahead.size() < kMaxNamed) {
      out.ahead.push_back(d.gang);
    }
  }
  Asker asker(snapshot, options, *g, max_checks);
  const GangDecision* own = DecisionOf(now, gang);
  if (own == nullptr || Starts(own->verdict)) return out;
  out.slots_now = asker.SlotsNow();
  asker.PriorityNow(now, out);
  out.pool_now = asker.PoolNow();
  return out;
}

}  // namespace phalanx::forecast
