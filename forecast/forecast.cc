// The forecast's event loop (forecast.h).
#include "forecast/forecast.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/container/flat_hash_set.h"

namespace phalanx::forecast {
namespace {

using preemption::Verdict;

enum class Kind { kEnd, kExit, kWake };  // kWake: a waiting gang's patience ends (rules.h).

struct Event {
  Kind kind;
  std::string gang;
};

class Forecaster {
 public:
  Forecaster(std::shared_ptr<const core::ClusterSnapshot> snapshot, const ForecastOptions& options,
             const RuntimeModel& runtimes)
      : opt_(options), runtimes_(runtimes), builder_(snapshot), now_(options.admission.now_ms) {
    result_.now_ms = now_;
    Seed(*snapshot);
  }

  ForecastResult Run() {
    int64_t t = now_;
    std::vector<std::string> applied;
    while (true) {
      Round(t, applied);
      if (open_ == 0 || events_.empty() || result_.rounds >= opt_.max_rounds) break;
      const int64_t next = events_.begin()->first;
      const int64_t step =
          std::max<int64_t>(opt_.step_ms, static_cast<int64_t>(opt_.step_fraction * (next - now_)));
      if (next - now_ > opt_.horizon_ms) break;
      batch_start_ = next;
      t = std::max(t, next + step);
      applied = ApplyUntil(t);
    }
    for (GangEta& e : result_.gangs) {
      if (!e.start_ms && e.none == NoEstimate::kNone) {
        e.none = events_.empty() ? NoEstimate::kUnknown : NoEstimate::kHorizon;
      }
    }
    std::stable_sort(result_.gangs.begin(), result_.gangs.end(),
                     [](const GangEta& a, const GangEta& b) { return a.position < b.position; });
    return std::move(result_);
  }

 private:
  // Waiting gangs to estimate; running ones end, marked ones exit.
  void Seed(const core::ClusterSnapshot& snap) {
    for (const core::Gang& g : snap.Gangs()) {
      if (g.Pending()) {
        index_[g.key] = result_.gangs.size();
        result_.gangs.push_back({.gang = g.key, .priority = g.priority});
        ++open_;
      } else if (g.preempt_requested) {
        auto m = runtimes_.find(g.key);
        Exiting(g, m == runtimes_.end() ? std::nullopt : std::optional<int64_t>(m->second), now_);
      } else if (g.Running() || g.Admitting()) {
        ScheduleEnd(g.key, now_);
      }
    }
  }

  // Work a victim marked at `t` reruns, given what it had `left`: that, the work since its last
  // checkpoint and the restart overhead; unknown when `left` is.
  std::optional<int64_t> Rerun(const core::Gang& g, std::optional<int64_t> left, int64_t t) const {
    if (!left) return std::nullopt;
    const int64_t since = std::max(g.start_ms, g.checkpoint_ms);
    const int64_t lost = since > 0 ? std::max<int64_t>(t - since, 0) : 0;
    return std::max<int64_t>(*left, 0) + lost + opt_.admission.rules.restart_overhead_ms;
  }

  void ScheduleEnd(const std::string& key, int64_t start) {
    std::optional<int64_t> left;
    if (auto r = remaining_.find(key); r != remaining_.end()) {
      left = r->second;
    } else if (auto m = runtimes_.find(key); m != runtimes_.end()) {
      left = m->second;
    }
    if (left) Schedule(start + std::max<int64_t>(*left, 0), Kind::kEnd, key);
  }

  void Schedule(int64_t t, Kind kind, const std::string& key) {
    events_.emplace(t, Event{kind, key});
  }

  // Applies every event at or before `t`, the first of each gang only (a victim that ends before
  // its exit is gone by then); returns the gangs they concerned, at most kMaxAfter of them.
  std::vector<std::string> ApplyUntil(int64_t t) {
    std::vector<std::string> applied;
    absl::flat_hash_set<std::string> done;
    while (!events_.empty() && events_.begin()->first <= t) {
      const int64_t at = events_.begin()->first;
      const Event e = events_.begin()->second;
      events_.erase(events_.begin());
      if (e.kind == Kind::kWake) continue;  // Only the round it brings.
      std::optional<core::Gang> g = builder_.Current().FindGang(e.gang);
      if (!g || !done.insert(e.gang).second) continue;
      if (applied.size() < kMaxAfter) applied.push_back(e.gang);
      // Copied first: the members go with the gang's entry as the first of them changes.
      std::vector<core::PodInfo> members;
      members.reserve(g->members.size());
      for (const core::PodInfo* p : g->members) members.push_back(*p);
      for (core::PodInfo& p : members) {
        if (std::optional<int> n = builder_.Current().NodeIndex(p.AssignedNode())) {
          freed_at_[*n] = std::max(freed_at_[*n], at);
        }
        if (e.kind == Kind::kEnd) {
          builder_.RemovePod(p.uid);
        } else {
          builder_.UpsertPod(core::Requeued(std::move(p), t));
        }
      }
    }
    std::sort(applied.begin(), applied.end());
    return applied;
  }

  void Round(int64_t t, const std::vector<std::string>& applied) {
    ++result_.rounds;
    auto snap = builder_.Build();
    preemption::AdmissionOptions opts = opt_.admission;
    opts.now_ms = t;
    preemption::RoundResult r = preemption::RunAdmissionRound(*snap, opts);
    if (result_.rounds == 1) result_.first_round = r;
    for (const preemption::GangDecision& d : r.decisions) {
      auto it = index_.find(d.gang);
      GangEta* eta = it == index_.end() ? nullptr : &result_.gangs[it->second];
      if (eta != nullptr && result_.rounds == 1) eta->position = d.position;
      if (d.verdict == Verdict::kAdmit || d.verdict == Verdict::kBackfill) {
        const int64_t start = StartOf(*snap, d, t);
        Start(*snap, d, start);
        if (eta != nullptr && !eta->start_ms) {
          eta->start_ms = start;
          eta->after = applied;
          --open_;
        }
      } else if (d.verdict == Verdict::kInfeasible && eta != nullptr && !eta->start_ms &&
                 eta->none == NoEstimate::kNone) {
        eta->none = NoEstimate::kInfeasible;
        --open_;
      }
      for (const std::string& victim : d.victims) Mark(*snap, victim, d.gang, t);
      if (d.patient_until_ms > t && wakes_.insert(d.gang).second) {
        Schedule(d.patient_until_ms, Kind::kWake, d.gang);
      }
    }
  }

  // When a gang the round at `t` starts could have started: once the last event of the step freed
  // its plan's nodes, not before the step's first event (nor before the forecast's start). So
  // coarse steps do not make each gang of a chain start, and end, a step late.
  int64_t StartOf(const core::ClusterSnapshot& snap, const preemption::GangDecision& d,
                  int64_t t) const {
    int64_t start = std::max(now_, std::min(batch_start_, t));
    for (const preemption::Assignment& a : d.plan) {
      if (std::optional<int> n = snap.NodeIndex(a.node)) {
        if (auto f = freed_at_.find(*n); f != freed_at_.end()) start = std::max(start, f->second);
      }
    }
    return std::min(start, t);
  }

  void Start(const core::ClusterSnapshot& snap, const preemption::GangDecision& d, int64_t t) {
    for (const preemption::Assignment& a : d.plan) {
      core::PodInfo p = *snap.FindPod(a.pod_uid);
      p.gated = false;
      p.placement = a.node;
      p.node = a.node;
      p.phase = core::PodPhase::kRunning;
      p.start_ms = t;
      p.backfilled = d.verdict == Verdict::kBackfill;
      p.backfilled_behind = d.backfilled_behind;
      builder_.UpsertPod(std::move(p));
    }
    ScheduleEnd(d.gang, t);
  }

  void Mark(const core::ClusterSnapshot& snap, const std::string& key, const std::string& by,
            int64_t t) {
    std::optional<core::Gang> g = snap.FindGang(key);
    if (!g) return;
    for (const core::PodInfo* m : g->members) {
      core::PodInfo p = *m;
      p.preempt_requested = true;
      p.preempted_by = by;
      builder_.UpsertPod(std::move(p));
    }
    Exiting(*g, RemainingAt(key, t), t);
  }

  // Gang `g`, marked at `t` with `left` work (unknown: nullopt), leaves `preempt_exit_ms` later and
  // reruns, unless it ends first: then it simply ends.
  void Exiting(const core::Gang& g, std::optional<int64_t> left, int64_t t) {
    for (auto it = events_.begin(); it != events_.end();) {
      it = it->second.gang == g.key ? events_.erase(it) : std::next(it);
    }
    if (left && *left <= opt_.preempt_exit_ms) {
      Schedule(t + std::max<int64_t>(*left, 0), Kind::kEnd, g.key);
    } else {
      remaining_[g.key] = Rerun(g, left, t);
    }
    Schedule(t + opt_.preempt_exit_ms, Kind::kExit, g.key);
  }

  // What a running gang has left at `t`: its scheduled end minus t, unknown without one.
  std::optional<int64_t> RemainingAt(const std::string& key, int64_t t) const {
    for (const auto& [end, e] : events_) {
      if (e.gang == key && e.kind == Kind::kEnd) return std::max<int64_t>(end - t, 0);
    }
    return std::nullopt;
  }

  const ForecastOptions& opt_;
  const RuntimeModel& runtimes_;
  core::SnapshotBuilder builder_;
  const int64_t now_;
  ForecastResult result_;
  absl::flat_hash_map<std::string, size_t> index_;  // Waiting gang -> its entry.
  int open_ = 0;                                    // Waiting gangs still without an outcome.
  std::multimap<int64_t, Event> events_;
  int64_t batch_start_ = 0;  // The first event the current step applied.
  absl::flat_hash_set<std::string> wakes_;  // Gangs whose patience's end is an event.
  // Per node index, the latest event that freed capacity on it.
  absl::flat_hash_map<int, int64_t> freed_at_;
  // Work left once a victim reruns (absent: unknown), replacing the model's figure.
  absl::flat_hash_map<std::string, std::optional<int64_t>> remaining_;
};

}  // namespace

const char* NoEstimateText(NoEstimate n) {
  switch (n) {
    case NoEstimate::kNone:
      return "";
    case NoEstimate::kInfeasible:
      return "infeasible";
    case NoEstimate::kUnknown:
      return "waits on work with no expected end";
    case NoEstimate::kHorizon:
      return "not within the forecast's horizon";
  }
  return "";
}

ForecastResult Forecast(std::shared_ptr<const core::ClusterSnapshot> snapshot,
                        const ForecastOptions& options, const RuntimeModel& runtimes) {
  return Forecaster(std::move(snapshot), options, runtimes).Run();
}

}  // namespace phalanx::forecast
