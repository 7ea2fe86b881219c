// The event loop of the trace replay and how it applies the engine's decisions (simulator.h).
#include "bench/replay/simulator.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <queue>
#include <set>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "bench/replay/greedy.h"
#include "bench/replay/timeline.h"
#include "core/snapshot.h"
#include "forecast/forecast.h"
#include "preemption/admission.h"

namespace phalanx::replay {
namespace {

using preemption::Verdict;

enum class Kind { kComplete = 0, kExit = 1, kRequeue = 2, kWake = 3, kRelease = 4 };

struct Event {
  int64_t t;
  Kind kind;
  int job;        // -1 for releases.
  int64_t epoch;  // The job's run (or the deadlock) the event belongs to; stale ones are ignored.
  bool operator>(const Event& o) const {
    return std::tie(t, kind, job, epoch) > std::tie(o.t, o.kind, o.job, o.epoch);
  }
};

int64_t LastSubmit(const std::vector<Job>& jobs) {
  int64_t last = 0;
  for (const Job& j : jobs) {
    if (j.rejected.empty()) last = std::max(last, j.trace.submit_ms);
  }
  return last;
}

enum class Phase { kNotSubmitted, kPending, kRunning, kExiting, kDone };

// A running job's next checkpoint.
struct Checkpoint {
  int64_t t;
  int job;
  int64_t epoch;  // The run it belongs to.
  bool operator>(const Checkpoint& o) const {
    return std::tie(t, job, epoch) > std::tie(o.t, o.job, o.epoch);
  }
};

struct JobState {
  Phase phase = Phase::kNotSubmitted;
  int64_t remaining_ms = 0;
  int64_t run_start_ms = 0;
  int64_t mark_ms = 0;
  int64_t epoch = 0;
  int placed = 0;               // Greedy: pods placed so far.
  int64_t first_placed_ms = 0;  // Greedy: when the first of them was placed.
};

class Simulator {
 public:
  Simulator(const std::vector<Job>& jobs, const std::vector<core::Node>& nodes,
            const SimOptions& opt)
      : jobs_(jobs),
        opt_(opt),
        state_(jobs.size()),
        timeline_(opt.bucket_ms, LastSubmit(jobs), result_) {
    for (const core::Node& n : nodes) builder_.UpsertNode(n);
    result_.cluster_gpus = TotalGpus(nodes);
    result_.jobs.resize(jobs.size());
    admission_.slots.max_slots_per_pod = opt.max_slots_per_pod;
    admission_.preemption =
        opt.policy == Policy::kPhalanx || opt.policy == Policy::kPriorityNoBackfill;
    admission_.backfill = opt.policy == Policy::kPhalanx;
    admission_.rules = opt.rules;
    result_.last_submit_ms = LastSubmit(jobs);
    if (forecasting()) {
      sampled_.resize(jobs.size());
      int64_t accepted = 0;
      for (const Job& j : jobs) {
        if (j.rejected.empty()) sampled_[j.index] = accepted++ % opt.forecast_every == 0;
      }
    }
  }

  SimResult Run() {
    size_t next_arrival = 0;
    while (true) {
      while (next_arrival < jobs_.size() && !jobs_[next_arrival].rejected.empty()) ++next_arrival;
      const bool arrivals = next_arrival < jobs_.size();
      if (!arrivals && events_.empty()) break;
      int64_t t = arrivals ? jobs_[next_arrival].trace.submit_ms : events_.top().t;
      if (!events_.empty()) t = std::min(t, events_.top().t);
      timeline_.Advance(t, cluster_);
      bool changed = false;
      while (!events_.empty() && events_.top().t == t && events_.top().kind < Kind::kRelease) {
        Event e = events_.top();
        events_.pop();
        changed |= Apply(e, t);
      }
      const size_t first_arrival = next_arrival;
      for (; next_arrival < jobs_.size() && jobs_[next_arrival].trace.submit_ms == t;
           ++next_arrival) {
        if (jobs_[next_arrival].rejected.empty()) changed |= Submit(jobs_[next_arrival]);
      }
      while (!events_.empty() && events_.top().t == t) {
        Event e = events_.top();
        events_.pop();
        changed |= Apply(e, t);
      }
      if (changed) {
        ForecastArrivals(t, first_arrival, next_arrival);
        Round(t);
      }
    }
    timeline_.Finish(result_.end_ms);
    for (size_t j = 0; j < jobs_.size(); ++j) {
      result_.unfinished += jobs_[j].rejected.empty() && state_[j].phase != Phase::kDone;
    }
    return std::move(result_);
  }

 private:
  bool greedy() const { return opt_.policy == Policy::kGreedy; }
  bool forecasting() const { return opt_.forecast_every > 0 && !greedy(); }
  // Checkpoint times matter to the engine only where it may preempt (victim costs).
  bool tracks_checkpoints() const {
    return admission_.preemption && opt_.checkpoint_interval_ms > 0;
  }
  // Work of run `s` saved by the checkpoints it took by `at`.
  int64_t Checkpointed(const JobState& s, int64_t at) const {
    const int64_t every = opt_.checkpoint_interval_ms;
    return every > 0 ? (at - s.run_start_ms) / every * every : 0;
  }
  int64_t Clock(int64_t t) const { return t + kClockOriginMs; }
  std::string PodUid(const Job& job, int i) const {
    return absl::StrCat(kNamespace, "/", JobName(job.index, static_cast<int>(jobs_.size())), "-",
                        i);
  }

  bool Submit(const Job& job) {
    JobState& s = state_[job.index];
    s.phase = Phase::kPending;
    s.remaining_ms = job.trace.duration_ms;
    for (core::PodInfo& p :
         MakePods(job, static_cast<int>(jobs_.size()), !greedy(), Clock(job.trace.submit_ms))) {
      builder_.UpsertPod(std::move(p));
    }
    ++cluster_.queued;
    return true;
  }

  bool Complete(const Event& e, int64_t t) {
    JobState& s = state_[e.job];
    if (s.epoch != e.epoch || (s.phase != Phase::kRunning && s.phase != Phase::kExiting)) {
      return false;
    }
    const Job& job = jobs_[e.job];
    for (int i = 0; i < job.shape.pods; ++i) builder_.RemovePod(PodUid(job, i));
    s.phase = Phase::kDone;
    result_.jobs[e.job].end_ms = t;
    result_.end_ms = std::max(result_.end_ms, t);
    cluster_.allocated -= job.gpus();
    cluster_.busy -= job.gpus();
    return true;
  }

  // Applies one event; true when it changed the cluster.
  bool Apply(const Event& e, int64_t t) {
    switch (e.kind) {
      case Kind::kComplete:
        return Complete(e, t);
      case Kind::kExit:
        return Exit(e, t);
      case Kind::kRequeue:
        return Requeue(e);
      case Kind::kWake:  // Its patience with dear victims ends (rules.h): a round, if it waits.
        return state_[e.job].phase == Phase::kPending;
      case Kind::kRelease:
        return Release(e, t);
    }
    return false;
  }

  // A marked victim leaves: its pods go, freeing its GPUs, and it keeps the progress of its last
  // checkpoint; its rerun costs the restart overhead more; the master recreates its pods
  // `requeue_ms` later, with this exit in their preemption history.
  bool Exit(const Event& e, int64_t t) {
    JobState& s = state_[e.job];
    if (s.epoch != e.epoch || s.phase != Phase::kExiting) return false;
    const Job& job = jobs_[e.job];
    const int64_t saved = Checkpointed(s, s.mark_ms);
    const int64_t overhead = opt_.rules.restart_overhead_ms;
    s.remaining_ms += overhead - saved;
    result_.lost_gpu_ms += (t - s.run_start_ms - saved + overhead) * job.gpus();
    ++result_.preemptions;
    ++result_.jobs[e.job].preemptions;
    auto snap = builder_.Build();
    std::vector<core::PodInfo>& pods = requeued_[e.job];
    for (int i = 0; i < job.shape.pods; ++i) {
      pods.push_back(core::Requeued(*snap->FindPod(PodUid(job, i)), Clock(t)));
      builder_.RemovePod(PodUid(job, i));
    }
    s.phase = Phase::kPending;
    ++s.epoch;
    cluster_.allocated -= job.gpus();
    cluster_.busy -= job.gpus();
    ++cluster_.queued;
    events_.push({t + opt_.requeue_ms, Kind::kRequeue, e.job, s.epoch});
    return true;
  }

  // A victim's recreated pods enter the queue.
  bool Requeue(const Event& e) {
    auto it = requeued_.find(e.job);
    for (core::PodInfo& p : it->second) builder_.UpsertPod(std::move(p));
    requeued_.erase(it);
    return true;
  }

  // Greedy deadlock release: kill the partially placed job last in queue order and resubmit it.
  bool Release(const Event& e, int64_t t) {
    if (e.epoch != deadlock_epoch_ || partial_.empty()) return false;
    release_pending_ = false;
    const int victim = std::get<2>(*partial_.rbegin());
    const Job& job = jobs_[victim];
    JobState& s = state_[victim];
    for (int i = 0; i < job.shape.pods; ++i) builder_.RemovePod(PodUid(job, i));
    for (core::PodInfo& p : MakePods(job, static_cast<int>(jobs_.size()), false, Clock(t))) {
      builder_.UpsertPod(std::move(p));
    }
    cluster_.allocated -= s.placed * job.shape.gpus_per_pod;
    s.placed = 0;
    partial_.erase(PartialKey(victim));
    ++result_.releases;
    return true;
  }

  // Queue order of partially placed jobs, so the last one is released first.
  std::tuple<int32_t, int64_t, int> PartialKey(int j) const {
    return {-jobs_[j].priority, jobs_[j].trace.submit_ms, j};
  }

  void Start(int j, int64_t t) {
    JobState& s = state_[j];
    JobOutcome& out = result_.jobs[j];
    s.phase = Phase::kRunning;
    s.run_start_ms = t;
    ++s.epoch;
    if (out.first_start_ms < 0) {
      out.first_start_ms = t;
      out.start_order = next_start_order_++;
    }
    ++out.starts;
    events_.push({t + s.remaining_ms, Kind::kComplete, j, s.epoch});
    if (tracks_checkpoints()) checkpoints_.push({t + opt_.checkpoint_interval_ms, j, s.epoch});
    cluster_.busy += jobs_[j].gpus();
    --cluster_.queued;
  }

  // Binds a pod of the snapshot to `node` as the extender's ungate + placement patch does; a
  // backfilled pod names the blocked gang it passed on that gang's held nodes, if any
  // (`behind`), as phalanx.io/backfilled does.
  void Bind(const core::ClusterSnapshot& snap, const std::string& uid, const std::string& node,
            int64_t t, bool backfilled, const std::string& behind = "") {
    core::PodInfo p = *snap.FindPod(uid);
    p.gated = false;
    p.placement = node;
    p.node = node;
    p.phase = core::PodPhase::kRunning;
    p.start_ms = Clock(t);
    p.backfilled = backfilled;
    p.backfilled_behind = behind;
    JobOutcome& out = result_.jobs[JobIndexOf(uid)];
    out.nodes.resize(jobs_[JobIndexOf(uid)].shape.pods);
    out.nodes[PodIndexOf(uid)] = node;
    builder_.UpsertPod(std::move(p));
  }

  void Round(int64_t t) {
    ++result_.rounds;
    if (opt_.progress_rounds > 0 && result_.rounds % opt_.progress_rounds == 0 && opt_.progress) {
      opt_.progress(t, result_.rounds, cluster_.queued);
    }
    if (greedy()) {
      GreedyRound(t);
      return;
    }
    RefreshCheckpoints(t);
    auto snap = builder_.Build();
    admission_.now_ms = Clock(t);
    if (opt_.observe_round) opt_.observe_round(*snap, admission_);
    preemption::RoundResult r = preemption::RunAdmissionRound(*snap, admission_);
    int64_t head_gpus = -1;
    for (const preemption::GangDecision& d : r.decisions) {
      const int j = JobIndexOf(d.gang);
      if (d.verdict == Verdict::kAdmit || d.verdict == Verdict::kBackfill) {
        for (const preemption::Assignment& a : d.plan) {
          Bind(*snap, a.pod_uid, a.node, t, d.verdict == Verdict::kBackfill, d.backfilled_behind);
        }
        cluster_.allocated += jobs_[j].gpus();
        Start(j, t);
      } else if (head_gpus < 0 && d.verdict != Verdict::kInfeasible) {
        head_gpus = jobs_[j].gpus();
      }
      for (const std::string& victim : d.victims) Mark(*snap, JobIndexOf(victim), d.gang, t);
      if (d.patient_until_ms > Clock(t) && patience_ends_.insert({j, d.patient_until_ms}).second) {
        events_.push({d.patient_until_ms - kClockOriginMs, Kind::kWake, j, state_[j].epoch});
      }
    }
    cluster_.fragmented = head_gpus < 0 ? 0 : result_.cluster_gpus - cluster_.allocated;
  }

  // Forecasts the start of the sampled jobs among jobs_[begin, end), submitted at `t`, from the
  // snapshot the round at `t` is about to see (simulator.h).
  void ForecastArrivals(int64_t t, size_t begin, size_t end) {
    if (!forecasting()) return;
    absl::flat_hash_map<int, size_t> samples;  // Job -> its entry in result_.forecasts.
    for (size_t j = begin; j < end; ++j) {
      if (!sampled_[j]) continue;
      samples[static_cast<int>(j)] = result_.forecasts.size();
      result_.forecasts.push_back({.job = static_cast<int>(j)});
    }
    if (samples.empty()) return;
    RefreshCheckpoints(t);
    auto snap = builder_.Build();
    forecast::ForecastOptions options;
    options.admission = admission_;
    options.admission.now_ms = Clock(t);
    options.preempt_exit_ms = opt_.preempt_exit_ms;
    options.step_ms = opt_.forecast_step_ms;
    options.step_fraction = opt_.forecast_step_fraction;
    std::array<forecast::RuntimeModel, kForecastModels> models;
    for (const core::Gang& g : snap->Gangs()) {
      const int j = JobIndexOf(g.key);
      const JobState& s = state_[j];
      const int64_t left =
          s.phase == Phase::kPending ? s.remaining_ms : s.run_start_ms + s.remaining_ms - t;
      models[static_cast<int>(ForecastModel::kExact)][g.key] = left;
      models[static_cast<int>(ForecastModel::kNoisy)][g.key] =
          std::llround(static_cast<double>(left) * NoiseFactor(opt_.forecast_seed, j));
    }
    for (int m = 0; m < kForecastModels; ++m) {
      for (const forecast::GangEta& eta : forecast::Forecast(snap, options, models[m]).gangs) {
        auto it = samples.find(JobIndexOf(eta.gang));
        if (it != samples.end() && eta.start_ms) {
          result_.forecasts[it->second].start_ms[m] = *eta.start_ms - kClockOriginMs;
        }
      }
    }
  }

  // The pods of every job that passed a checkpoint since the last refresh carry its latest one.
  void RefreshCheckpoints(int64_t t) {
    if (checkpoints_.empty() || checkpoints_.top().t > t) return;
    auto snap = builder_.Build();
    while (!checkpoints_.empty() && checkpoints_.top().t <= t) {
      const Checkpoint c = checkpoints_.top();
      checkpoints_.pop();
      const JobState& s = state_[c.job];
      if (s.epoch != c.epoch || s.phase != Phase::kRunning) continue;
      const int64_t last = s.run_start_ms + Checkpointed(s, t);
      const Job& job = jobs_[c.job];
      for (int i = 0; i < job.shape.pods; ++i) {
        core::PodInfo p = *snap->FindPod(PodUid(job, i));
        p.checkpoint_ms = Clock(last);
        builder_.UpsertPod(std::move(p));
      }
      checkpoints_.push({last + opt_.checkpoint_interval_ms, c.job, c.epoch});
    }
  }

  void Mark(const core::ClusterSnapshot& snap, int j, const std::string& by, int64_t t) {
    const Job& job = jobs_[j];
    for (int i = 0; i < job.shape.pods; ++i) {
      core::PodInfo p = *snap.FindPod(PodUid(job, i));
      p.preempt_requested = true;
      p.preempted_by = by;
      builder_.UpsertPod(std::move(p));
    }
    JobState& s = state_[j];
    s.phase = Phase::kExiting;
    s.mark_ms = t;
    events_.push({t + opt_.preempt_exit_ms, Kind::kExit, j, s.epoch});
  }

  void GreedyRound(int64_t t) {
    auto snap = builder_.Build();
    gang::SlotPolicy slots;
    slots.max_slots_per_pod = opt_.max_slots_per_pod;
    GreedyPass pass = RunGreedyPass(*snap, slots);
    for (const GreedyPass::Placement& p : pass.placed) {
      const int j = JobIndexOf(p.pod_uid);
      Bind(*snap, p.pod_uid, p.node, t, false);
      cluster_.allocated += jobs_[j].shape.gpus_per_pod;
      JobState& s = state_[j];
      if (s.placed++ == 0) {
        partial_.insert(PartialKey(j));
        s.first_placed_ms = t;
      }
      if (s.placed == jobs_[j].shape.pods) {
        const int64_t held = t - s.first_placed_ms;
        result_.long_partial_holds += held >= opt_.deadlock_timeout_ms;
        result_.max_partial_hold_ms = std::max(result_.max_partial_hold_ms, held);
        partial_.erase(PartialKey(j));
        s.placed = 0;
        Start(j, t);
      }
    }
    cluster_.fragmented = pass.blocked_head.empty() ? 0 : result_.cluster_gpus - cluster_.allocated;
    // Deadlock: nothing runs, so nothing will free the GPUs that partial jobs hold.
    const bool deadlocked = cluster_.busy == 0 && cluster_.allocated > 0;
    if (deadlocked && !cluster_.deadlocked) ++result_.deadlocks;
    cluster_.deadlocked = deadlocked;
    if (deadlocked && !release_pending_) {
      release_pending_ = true;
      events_.push({t + opt_.deadlock_timeout_ms, Kind::kRelease, -1, deadlock_epoch_});
    } else if (!deadlocked && release_pending_) {
      release_pending_ = false;
      ++deadlock_epoch_;
    }
  }

  const std::vector<Job>& jobs_;
  const SimOptions& opt_;
  std::vector<JobState> state_;
  std::vector<bool> sampled_;  // Jobs whose start is forecast at their submission (forecasting).
  SimResult result_;
  Timeline timeline_;
  core::SnapshotBuilder builder_;
  preemption::AdmissionOptions admission_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  std::set<std::pair<int, int64_t>> patience_ends_;  // (job, engine time) made events.
  // Running jobs' next checkpoints (tracks_checkpoints), applied lazily before rounds.
  std::priority_queue<Checkpoint, std::vector<Checkpoint>, std::greater<Checkpoint>> checkpoints_;
  ClusterState cluster_;
  int64_t next_start_order_ = 0;
  std::set<std::tuple<int32_t, int64_t, int>> partial_;  // Greedy: partially placed jobs.
  std::map<int, std::vector<core::PodInfo>> requeued_;   // Victims' pods until they requeue.
  bool release_pending_ = false;
  int64_t deadlock_epoch_ = 0;
};

}  // namespace

absl::StatusOr<Policy> ParsePolicy(absl::string_view name) {
  for (Policy p :
       {Policy::kPhalanx, Policy::kFifoGang, Policy::kPriorityNoBackfill, Policy::kGreedy}) {
    if (name == PolicyName(p)) return p;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown policy '", name, "' (phalanx, fifo-gang, priority-no-backfill, greedy)"));
}

const char* PolicyName(Policy p) {
  switch (p) {
    case Policy::kPhalanx:
      return "phalanx";
    case Policy::kFifoGang:
      return "fifo-gang";
    case Policy::kPriorityNoBackfill:
      return "priority-no-backfill";
    case Policy::kGreedy:
      return "greedy";
  }
  return "unknown";
}

const char* ForecastModelName(ForecastModel m) {
  switch (m) {
    case ForecastModel::kExact:
      return "exact";
    case ForecastModel::kNoisy:
      return "noisy";
    case ForecastModel::kNone:
      return "none";
  }
  return "unknown";
}

double NoiseFactor(uint64_t seed, int job) {
  // splitmix64 of (seed, job): independent of the order in which jobs are asked for.
  uint64_t z = seed + 0x9E3779B97F4A7C15ULL * (static_cast<uint64_t>(job) + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return 0.5 + 1.5 * static_cast<double>(z >> 11) * 0x1.0p-53;
}

absl::StatusOr<SimResult> Simulate(const std::vector<Job>& jobs,
                                   const std::vector<core::Node>& nodes,
                                   const SimOptions& options) {
  if (nodes.empty()) return absl::InvalidArgumentError("the cluster has no nodes");
  if (options.max_slots_per_pod <= 0) {
    return absl::InvalidArgumentError("maxSlotsPerPod must be at least 1");
  }
  if (options.forecast_every < 0) return absl::InvalidArgumentError("forecast_every must be >= 0");
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (jobs[i].index != static_cast<int>(i) ||
        (i > 0 && jobs[i].trace.submit_ms < jobs[i - 1].trace.submit_ms)) {
      return absl::InvalidArgumentError("jobs must be indexed in submit order (BuildJobs)");
    }
  }
  return Simulator(jobs, nodes, options).Run();
}

}  // namespace phalanx::replay
