// The replay simulator: metrics of tiny traces computed by hand, a victim's requeue gap, greedy
// deadlocks (the seeds' example), conservation of GPU time, byte-identical outputs for the same
// seed; what the engine sees (checkpoints, preemption history, rules); restart overhead, idle GPUs
// while jobs wait and repeated preemptions in the summary.
#include "bench/replay/simulator.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "bench/replay/metrics.h"
#include "bench/replay/report.h"

namespace phalanx::replay {
namespace {

struct Scenario {
  std::vector<core::Node> nodes;
  Trace trace;
  std::vector<Job> jobs;
};

Scenario Make(absl::string_view cluster, absl::string_view csv, uint64_t seed = 1) {
  Scenario s;
  s.nodes = *ParseCluster(cluster);
  absl::StatusOr<Trace> t = ParseTrace(csv);
  EXPECT_TRUE(t.ok()) << t.status();
  s.trace = *t;
  s.jobs = BuildJobs(s.trace, s.nodes, 8, seed);
  return s;
}

SimResult Replay(const Scenario& s, Policy p, SimOptions o = {}) {
  o.policy = p;
  absl::StatusOr<SimResult> r = Simulate(s.jobs, s.nodes, o);
  EXPECT_TRUE(r.ok()) << r.status();
  return *r;
}

// One 4-GPU node. L (low, 4 GPUs, 100 s) at 0; H (high, 2 GPUs, 50 s) at 10. Checkpoints every
// 4 s, victims exit 5 s after the mark, a rerun costs 6 s more.
constexpr absl::string_view kPreemptTrace =
    "submit_time,duration,num_gpus,priority\n"
    "0,100,4,10\n"
    "10,50,2,90\n";

SimOptions PreemptOptions() {
  SimOptions o;
  o.checkpoint_interval_ms = 4000;
  o.preempt_exit_ms = 5000;
  o.rules.restart_overhead_ms = 6000;
  return o;
}

TEST(Simulator, PhalanxPreemptsByHand) {
  Scenario s = Make("1x4", kPreemptTrace);
  SimResult r = Replay(s, Policy::kPhalanx, PreemptOptions());
  // H marks L at 10; L exits at 15 keeping 2 checkpoints (8 s): lost (15 - 8 + 6) s x 4 GPUs. H
  // runs 15..65; L needs 4 GPUs, waits, reruns its last 92 s plus the 6 s overhead at 65..163.
  EXPECT_EQ(r.jobs[0].first_start_ms, 0);
  EXPECT_EQ(r.jobs[0].end_ms, 163000);
  EXPECT_EQ(r.jobs[0].preemptions, 1);
  EXPECT_EQ(r.jobs[0].starts, 2);
  EXPECT_EQ(r.jobs[1].first_start_ms, 15000);
  EXPECT_EQ(r.jobs[1].end_ms, 65000);
  EXPECT_EQ(r.jobs[1].start_order, 1);
  EXPECT_EQ(r.jobs[1].nodes, std::vector<std::string>{"n0"});
  EXPECT_EQ(r.preemptions, 1);
  EXPECT_EQ(r.lost_gpu_ms, 52000);
  EXPECT_EQ(r.end_ms, 163000);
  EXPECT_EQ(r.allocated_gpu_ms, 4 * 15000 + 2 * 50000 + 4 * 98000);
  EXPECT_EQ(r.busy_gpu_ms, 500000 + r.lost_gpu_ms);
  EXPECT_EQ(r.fragmented_gpu_ms, 2 * 50000);  // L blocked with 2 GPUs free, 15..65.
  Summary sum = Summarize(Policy::kPhalanx, s.jobs, r);
  EXPECT_DOUBLE_EQ(sum.allocation_pct, 100.0 * 552000 / (4 * 163000));
  // 500 GPU-s of work on 4 GPUs take at least 125 s, longer than the latest end (100 s).
  EXPECT_DOUBLE_EQ(sum.allocation_bound_pct, 100.0);
  EXPECT_EQ(sum.wait_p95_ms[static_cast<int>(PriorityClass::kHigh)], 5000);  // 10 -> 15
  EXPECT_EQ(sum.wait_p95_ms[static_cast<int>(PriorityClass::kLow)], 0);
  EXPECT_DOUBLE_EQ(sum.jct_mean_s, (163.0 + 55.0) / 2);
  EXPECT_EQ(sum.jct_p99_ms, 163000);
  EXPECT_EQ(sum.makespan_ms, 163000);
  EXPECT_DOUBLE_EQ(sum.lost_gpu_hours, 52.0 / 3600);
  EXPECT_EQ(sum.max_job_preemptions, 1);
  EXPECT_EQ(sum.jobs_preempted_many, 0);
}

// What each round's snapshot shows of pod `uid` (by the round's clock), and the rules it ran with.
struct Seen {
  std::map<int64_t, core::PodInfo> pod;  // Rounds where the pod exists.
  std::vector<preemption::PreemptionRules> rules;
};

SimResult ReplaySeeing(const Scenario& s, Policy p, SimOptions o, const std::string& uid,
                       Seen& seen) {
  o.observe_round = [&](const core::ClusterSnapshot& snap, const preemption::AdmissionOptions& a) {
    if (const core::PodInfo* pod = snap.FindPod(uid)) seen.pod[a.now_ms] = *pod;
    seen.rules.push_back(a.rules);
  };
  return Replay(s, p, o);
}

// kPreemptTrace with J (low, 4 GPUs) at 3, which waits behind L: rounds at 0, 3 and 10 (by the
// engine's clock, kClockOriginMs later). L's first checkpoint is at 4 s, its second at 8 s.
TEST(Simulator, RoundsSeeTheLatestCheckpointOfRunningPods) {
  Scenario s = Make("1x4",
                    "submit_time,duration,num_gpus,priority\n"
                    "0,100,4,10\n"
                    "3,10,4,10\n"
                    "10,50,2,90\n");
  for (Policy p : {Policy::kPhalanx, Policy::kPriorityNoBackfill}) {
    Seen seen;
    SimResult r = ReplaySeeing(s, p, PreemptOptions(), "replay/j0-0", seen);
    EXPECT_EQ(seen.pod.at(kClockOriginMs + 3000).checkpoint_ms, 0) << PolicyName(p);
    EXPECT_EQ(seen.pod.at(kClockOriginMs + 3000).start_ms, kClockOriginMs) << PolicyName(p);
    EXPECT_EQ(seen.pod.at(kClockOriginMs + 10000).checkpoint_ms, kClockOriginMs + 8000)
        << PolicyName(p);
    EXPECT_EQ(r.jobs[0].preemptions, 1) << PolicyName(p);
    ASSERT_FALSE(seen.rules.empty());
    EXPECT_EQ(seen.rules.back().restart_overhead_ms, 6000) << PolicyName(p);
  }
}

// The engine's checkpoint-aware cost picks the victim that loses least. One 8-GPU node, 4 s
// checkpoints, L1 and L2 (low, 4 GPUs each) start at 0 and 3; H (high, 4 GPUs) comes at 9. L1
// checkpointed at 8 (1 s to lose), L2 at 7 (2 s to lose): L1 is the victim, though it ran longer.
TEST(Simulator, VictimChosenByWorkSinceItsCheckpoint) {
  Scenario s = Make("1x8",
                    "submit_time,duration,num_gpus,priority\n"
                    "0,1000,4,10\n"
                    "3,1000,4,10\n"
                    "9,50,4,90\n");
  SimOptions o = PreemptOptions();
  o.rules.min_run_ms = 0;
  SimResult r = Replay(s, Policy::kPhalanx, o);
  EXPECT_EQ(r.jobs[0].preemptions, 1);
  EXPECT_EQ(r.jobs[1].preemptions, 0);
  // Without checkpoints the engine counts from the start: L2 lost less.
  o.checkpoint_interval_ms = 0;
  SimResult none = Replay(s, Policy::kPhalanx, o);
  EXPECT_EQ(none.jobs[0].preemptions, 0);
  EXPECT_EQ(none.jobs[1].preemptions, 1);
}

// One 8-GPU node, no checkpoints. A (low, 4 GPUs) at 0, B (low, 4 GPUs) at 400, H (high, 4 GPUs)
// at 500. B lost least but is younger than the default minimum run (5 min): A is the victim,
// unless the minimum run is 0.
TEST(Simulator, MinimumRunReachesTheEngine) {
  Scenario s = Make("1x8",
                    "submit_time,duration,num_gpus,priority\n"
                    "0,10000,4,10\n"
                    "400,10000,4,10\n"
                    "500,50,4,90\n");
  SimOptions o;
  o.checkpoint_interval_ms = 0;
  o.rules.patience_ms = 0;  // Both victims would lose minutes: H would wait for its patience.
  SimResult protect = Replay(s, Policy::kPhalanx, o);
  EXPECT_EQ(protect.jobs[0].preemptions, 1);
  EXPECT_EQ(protect.jobs[1].preemptions, 0);
  o.rules.min_run_ms = 0;
  SimResult young = Replay(s, Policy::kPhalanx, o);
  EXPECT_EQ(young.jobs[0].preemptions, 0);
  EXPECT_EQ(young.jobs[1].preemptions, 1);
}

// One 4-GPU node, victims exit 5 s after the mark. L (low, 4 GPUs, 10000 s) at 0, H (high, 4
// GPUs, 50 s) at 600. With checkpoints every 500 s, L has lost 100 s of work: H takes it at once.
// Without, L would lose 600 s, more than the 5 minutes a young preemptor spares: H waits for its
// patience, 30 minutes from its submission, and only its end brings the round that takes L.
TEST(Simulator, PatienceReachesTheEngine) {
  Scenario s = Make("1x4",
                    "submit_time,duration,num_gpus,priority\n"
                    "0,10000,4,10\n"
                    "600,50,4,90\n");
  SimOptions o;
  o.preempt_exit_ms = 5000;
  o.checkpoint_interval_ms = 500'000;
  SimResult saved = Replay(s, Policy::kPhalanx, o);
  EXPECT_EQ(saved.jobs[1].first_start_ms, 605'000);
  o.checkpoint_interval_ms = 0;
  SimResult unsaved = Replay(s, Policy::kPhalanx, o);
  EXPECT_EQ(unsaved.jobs[0].preemptions, 1);
  EXPECT_EQ(unsaved.jobs[1].first_start_ms, 600'000 + 1'800'000 + 5'000);
}

// One 4-GPU node, no checkpoints, victims exit 5 s after the mark, reruns cost 60 s more. L (low,
// 4 GPUs, 1000 s) at 0 is preempted by H1, H2, H3 (high, 4 GPUs, 50 s) at 400, 1000 and 2000:
// it runs 0..405, 455..1005, 1055..2005 and its last 1180 s at 2055..3235.
TEST(Simulator, JobPreemptedThreeTimes) {
  Scenario s = Make("1x4",
                    "submit_time,duration,num_gpus,priority\n"
                    "0,1000,4,10\n"
                    "400,50,4,90\n"
                    "1000,50,4,90\n"
                    "2000,50,4,90\n");
  SimOptions o;
  o.checkpoint_interval_ms = 0;
  o.preempt_exit_ms = 5000;
  o.rules.restart_overhead_ms = 60000;
  o.rules.patience_ms = 0;  // L loses minutes each time: each H would wait for its patience.
  Seen seen;
  SimResult r = ReplaySeeing(s, Policy::kPhalanx, o, "replay/j0-0", seen);
  EXPECT_EQ(r.jobs[0].preemptions, 3);
  EXPECT_EQ(r.jobs[0].starts, 4);
  EXPECT_EQ(r.jobs[0].end_ms, 3235000);
  // (405 + 60) + (1005 - 455 + 60) + (2005 - 1055 + 60) s on 4 GPUs.
  EXPECT_EQ(r.lost_gpu_ms, 4 * (465 + 610 + 1010) * 1000LL);
  EXPECT_EQ(r.busy_gpu_ms, 4 * (1000 + 3 * 50) * 1000LL + r.lost_gpu_ms);
  // The recreated pods carry their history (engine clock) into the rounds, running or not.
  const int64_t c = kClockOriginMs;
  EXPECT_EQ(seen.pod.at(c + 2000000).preempted_ms, (std::vector<int64_t>{c + 405000, c + 1005000}));
  EXPECT_FALSE(seen.pod.at(c + 2000000).gated);
  EXPECT_EQ(seen.pod.at(c + 2055000).preempted_ms,
            (std::vector<int64_t>{c + 405000, c + 1005000, c + 2005000}));

  Summary sum = Summarize(Policy::kPhalanx, s.jobs, r);
  EXPECT_EQ(sum.preemptions, 3);
  EXPECT_EQ(sum.max_job_preemptions, 3);
  EXPECT_EQ(sum.jobs_preempted_many, 1);
  EXPECT_DOUBLE_EQ(sum.lost_gpu_hours, 4 * 2085 / 3600.0);
  std::vector<PolicyRun> runs;
  runs.push_back({Policy::kPhalanx, r, sum});
  const std::string csv = SummaryCsv(runs);
  EXPECT_TRUE(absl::StrContains(csv, ",idle_waiting_pct,max_job_preemptions,jobs_preempted_3x\n"))
      << csv;
  EXPECT_TRUE(absl::EndsWith(csv, ",0.000,3,1\n")) << csv;  // Never idle while a job waits.
  const std::string md = MarkdownSection({.name = "three"}, s.trace, s.jobs, runs);
  EXPECT_TRUE(absl::StrContains(md, "| GPUs idle while jobs wait % | JCT mean h |")) << md;
  EXPECT_TRUE(absl::StrContains(
      md, "| preemptions | max preemptions of a job | jobs preempted >= 3x | lost GPU-h |"))
      << md;
  EXPECT_TRUE(absl::StrContains(md, "| 3 | 3 | 1 | 2.3 |")) << md;
}

// One 4-GPU node, no checkpoints nor restart overhead, victims exit 5 s after the mark. V (low, 4
// GPUs, 100 s) at 0; H (high, 2 GPUs, 50 s) at 10 preempts it; W (low, 2 GPUs, 300 s) at 12.
TEST(Simulator, RoundsWhileAVictimRequeuesDoNotSeeIt) {
  Scenario s = Make("1x4",
                    "submit_time,duration,num_gpus,priority\n"
                    "0,100,4,10\n"
                    "10,50,2,90\n"
                    "12,300,2,10\n");
  SimOptions o;
  o.checkpoint_interval_ms = 0;
  o.preempt_exit_ms = 5000;
  o.rules.restart_overhead_ms = 0;
  // Requeued at once, V heads the low class when it exits at 15 and holds the node: W backfills
  // there as V's to take back, and V does when H ends (65): W exits at 70, V runs 70..170, W
  // reruns 170..470.
  SimResult at_once = Replay(s, Policy::kPhalanx, o);
  EXPECT_EQ(at_once.jobs[1].first_start_ms, 15000);
  EXPECT_EQ(at_once.jobs[2].first_start_ms, 15000);
  EXPECT_EQ(at_once.jobs[2].preemptions, 1);
  EXPECT_EQ(at_once.jobs[0].end_ms, 170000);
  EXPECT_EQ(at_once.jobs[2].end_ms, 470000);
  // Requeued 1 s after its exit, like the master recreating its pods: the round at 15 runs H and
  // W on the 4 free GPUs, W passing nobody; V queues again at 16, may not take W back, and reruns
  // once W ends (315..415).
  o.requeue_ms = 1000;
  SimResult gap = Replay(s, Policy::kPhalanx, o);
  EXPECT_EQ(gap.jobs[1].first_start_ms, 15000);
  EXPECT_EQ(gap.jobs[2].first_start_ms, 15000);
  EXPECT_EQ(gap.jobs[2].preemptions, 0);
  EXPECT_EQ(gap.jobs[2].end_ms, 315000);
  EXPECT_EQ(gap.jobs[0].end_ms, 415000);
  EXPECT_EQ(gap.jobs[0].preemptions, 1);
}

TEST(Simulator, FifoGangWaitsByHand) {
  Scenario s = Make("1x4", kPreemptTrace);
  SimResult r = Replay(s, Policy::kFifoGang, PreemptOptions());
  EXPECT_EQ(r.jobs[0].end_ms, 100000);
  EXPECT_EQ(r.jobs[1].first_start_ms, 100000);
  EXPECT_EQ(r.jobs[1].end_ms, 150000);
  EXPECT_EQ(r.preemptions, 0);
  EXPECT_EQ(r.allocated_gpu_ms, 4 * 100000 + 2 * 50000);
  EXPECT_EQ(r.fragmented_gpu_ms, 0);
  Summary sum = Summarize(Policy::kFifoGang, s.jobs, r);
  EXPECT_DOUBLE_EQ(sum.allocation_pct, 100.0 * 500000 / (4 * 150000));
  EXPECT_EQ(sum.wait_p50_ms[static_cast<int>(PriorityClass::kHigh)], 90000);
  EXPECT_EQ(sum.jct_p50_ms, 100000);
}

// A (medium, 2 GPUs, 100 s) at 0; B (medium, 4 GPUs, 10 s) at 1 is blocked; C (low, 2 GPUs, 20 s)
// at 2 may backfill behind B only where backfill is on.
constexpr absl::string_view kBackfillTrace =
    "submit_time,duration,num_gpus,priority\n"
    "0,100,2,50\n"
    "1,10,4,50\n"
    "2,20,2,10\n";

TEST(Simulator, BackfillOnlyWhereEnabled) {
  Scenario s = Make("1x4", kBackfillTrace);
  SimResult phalanx = Replay(s, Policy::kPhalanx);
  EXPECT_EQ(phalanx.jobs[2].first_start_ms, 2000);
  EXPECT_EQ(phalanx.jobs[1].first_start_ms, 100000);
  EXPECT_EQ(phalanx.jobs[1].end_ms, 110000);
  for (Policy p : {Policy::kFifoGang, Policy::kPriorityNoBackfill}) {
    SimResult r = Replay(s, p);
    EXPECT_EQ(r.jobs[1].first_start_ms, 100000) << PolicyName(p);
    EXPECT_EQ(r.jobs[2].first_start_ms, 110000) << PolicyName(p);
    EXPECT_EQ(r.end_ms, 130000) << PolicyName(p);
    // Jobs wait 1..110 s; 2 of the 4 GPUs are held until 100, all 4 after.
    EXPECT_EQ(r.waiting_ms, 109000) << PolicyName(p);
    EXPECT_NEAR(Summarize(p, s.jobs, r).idle_waiting_pct,
                100.0 * (4 * 109 - 2 * 99 - 4 * 10) / (4 * 109), 1e-9)
        << PolicyName(p);
  }
  // With C backfilled at 2, the wait 1..100 s leaves 2 GPUs idle before C starts and after it
  // ends (22..100).
  EXPECT_EQ(phalanx.waiting_ms, 99000);
  EXPECT_NEAR(Summarize(Policy::kPhalanx, s.jobs, phalanx).idle_waiting_pct,
              100.0 * (2 * 79) / (4 * 99), 1e-9);
}

TEST(Simulator, NoIdleWhileWaitingWhenNothingWaits) {
  Scenario s = Make("1x4", "submit_time,duration,num_gpus,priority\n0,100,2,50\n");
  SimResult r = Replay(s, Policy::kPhalanx);
  EXPECT_EQ(r.waiting_ms, 0);
  EXPECT_EQ(Summarize(Policy::kPhalanx, s.jobs, r).idle_waiting_pct, 0);
}

// Seeds: two experiments of 16 GPUs launched together on 16 GPUs deadlock the default scheduler.
constexpr absl::string_view kSeedDeadlock =
    "submit_time,duration,num_gpus,priority\n"
    "0,100,16,50\n"
    "0,100,16,50\n";

TEST(Simulator, GreedyDeadlocksOnTheSeedsExampleAndIsReleased) {
  Scenario s = Make("2x8", kSeedDeadlock);
  SimResult r = Replay(s, Policy::kGreedy);
  // Pods go in creation order: A-0 on n0, B-0 on n1, then nothing fits. After the 60 min timeout
  // B (last in queue order) is killed and resubmitted; A runs 3600..3700 s, B 3700..3800 s.
  EXPECT_EQ(r.deadlocks, 1);
  EXPECT_EQ(r.releases, 1);
  EXPECT_EQ(r.deadlocked_gpu_ms, 16 * 3600 * 1000LL);
  EXPECT_EQ(r.held_idle_gpu_ms, 16 * 3600 * 1000LL);
  EXPECT_EQ(r.long_partial_holds, 1);  // A held n0 for the hour before it could run.
  EXPECT_EQ(r.max_partial_hold_ms, 3600000);
  EXPECT_EQ(r.jobs[0].first_start_ms, 3600000);
  EXPECT_EQ(r.jobs[0].end_ms, 3700000);
  EXPECT_EQ(r.jobs[1].end_ms, 3800000);
  EXPECT_EQ(r.unfinished, 0);
  Summary sum = Summarize(Policy::kGreedy, s.jobs, r);
  EXPECT_DOUBLE_EQ(sum.deadlocked_gpu_hours, 16.0);

  SimResult gang = Replay(s, Policy::kPhalanx);
  EXPECT_EQ(gang.deadlocks, 0);
  EXPECT_EQ(gang.held_idle_gpu_ms, 0);
  EXPECT_EQ(gang.jobs[0].end_ms, 100000);
  EXPECT_EQ(gang.jobs[1].end_ms, 200000);
  EXPECT_EQ(gang.jobs[1].nodes, (std::vector<std::string>{"n0", "n1"}));
}

// A bursty synthetic generic trace: sizes 1..32 GPUs, some long jobs, no priorities.
std::string SyntheticTrace(int jobs) {
  std::mt19937_64 rng(2024);
  std::string csv = "submit_time,duration,num_gpus\n";
  int64_t t = 0;
  for (int i = 0; i < jobs; ++i) {
    t += rng() % 4 == 0 ? rng() % 600 : 0;
    const int64_t sizes[] = {1, 1, 1, 2, 4, 8, 8, 16, 32};
    absl::StrAppend(&csv, t, ",", 30 + rng() % 7200, ",", sizes[rng() % 9], "\n");
  }
  return csv;
}

std::string AllOutputs(uint64_t seed) {
  Scenario s = Make("4x8", SyntheticTrace(400), seed);
  ReplaySetup setup{.name = "synthetic", .trace_path = "synthetic.csv", .cluster = "4x8"};
  std::vector<PolicyRun> runs;
  std::string jobs_csv;
  for (Policy p :
       {Policy::kPhalanx, Policy::kFifoGang, Policy::kPriorityNoBackfill, Policy::kGreedy}) {
    SimResult r = Replay(s, p);
    jobs_csv += JobsCsv(s.jobs, r);
    Summary sum = Summarize(p, s.jobs, r);
    runs.push_back({p, std::move(r), std::move(sum)});
  }
  return MarkdownSection(setup, s.trace, s.jobs, runs) + SummaryCsv(runs) +
         SeriesCsv(runs, setup.options.bucket_ms) + JctCsv(s.jobs, runs) + jobs_csv;
}

TEST(Simulator, SameSeedSameBytes) {
  const std::string a = AllOutputs(7);
  EXPECT_EQ(a, AllOutputs(7));
  EXPECT_NE(a, AllOutputs(8));
}

TEST(Simulator, GpuTimeIsConservedAndEveryJobFinishes) {
  Scenario s = Make("4x8", SyntheticTrace(400), 3);
  int64_t work = 0;
  for (const Job& j : s.jobs) {
    if (j.rejected.empty()) work += j.trace.duration_ms * j.gpus();
  }
  for (Policy p :
       {Policy::kPhalanx, Policy::kFifoGang, Policy::kPriorityNoBackfill, Policy::kGreedy}) {
    SimResult r = Replay(s, p);
    EXPECT_EQ(r.unfinished, 0) << PolicyName(p);
    // Busy GPU time is the trace's work plus what preemption threw away.
    EXPECT_EQ(r.busy_gpu_ms, work + r.lost_gpu_ms) << PolicyName(p);
    // The trace's own work cannot fill more than the bound.
    const double useful_pct = 100.0 * work / (32.0 * r.end_ms);
    const double bound = Summarize(p, s.jobs, r).allocation_bound_pct;
    EXPECT_LE(useful_pct, bound) << PolicyName(p);
    EXPECT_GT(useful_pct, bound / 2) << PolicyName(p);
    if (p != Policy::kGreedy) {
      EXPECT_EQ(r.allocated_gpu_ms, r.busy_gpu_ms) << PolicyName(p);
      EXPECT_EQ(r.deadlocks, 0) << PolicyName(p);
    }
  }
}

}  // namespace
}  // namespace phalanx::replay
