// The replay simulator: metrics of tiny traces computed by hand, a victim's requeue gap, greedy
// deadlocks (the seeds' example), conservation of GPU time, and byte-identical outputs for the
// same seed.
#include "bench/replay/simulator.h"

#include <gtest/gtest.h>

#include <random>

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
// 4 s, victims exit 5 s after the mark.
constexpr absl::string_view kPreemptTrace =
    "submit_time,duration,num_gpus,priority\n"
    "0,100,4,10\n"
    "10,50,2,90\n";

SimOptions PreemptOptions() {
  SimOptions o;
  o.checkpoint_interval_ms = 4000;
  o.preempt_exit_ms = 5000;
  return o;
}

TEST(Simulator, PhalanxPreemptsByHand) {
  Scenario s = Make("1x4", kPreemptTrace);
  SimResult r = Replay(s, Policy::kPhalanx, PreemptOptions());
  // H marks L at 10; L exits at 15 keeping 2 checkpoints (8 s): lost (15 - 8) s x 4 GPUs. H runs
  // 15..65; L needs 4 GPUs, waits, reruns its last 92 s at 65..157.
  EXPECT_EQ(r.jobs[0].first_start_ms, 0);
  EXPECT_EQ(r.jobs[0].end_ms, 157000);
  EXPECT_EQ(r.jobs[0].preemptions, 1);
  EXPECT_EQ(r.jobs[0].starts, 2);
  EXPECT_EQ(r.jobs[1].first_start_ms, 15000);
  EXPECT_EQ(r.jobs[1].end_ms, 65000);
  EXPECT_EQ(r.jobs[1].start_order, 1);
  EXPECT_EQ(r.jobs[1].nodes, std::vector<std::string>{"n0"});
  EXPECT_EQ(r.preemptions, 1);
  EXPECT_EQ(r.lost_gpu_ms, 28000);
  EXPECT_EQ(r.end_ms, 157000);
  EXPECT_EQ(r.allocated_gpu_ms, 4 * 15000 + 2 * 50000 + 4 * 92000);
  EXPECT_EQ(r.fragmented_gpu_ms, 2 * 50000);  // L blocked with 2 GPUs free, 15..65.
  Summary sum = Summarize(Policy::kPhalanx, s.jobs, r);
  EXPECT_DOUBLE_EQ(sum.allocation_pct, 100.0 * 528000 / (4 * 157000));
  // 500 GPU-s of work on 4 GPUs take at least 125 s, longer than the latest end (100 s).
  EXPECT_DOUBLE_EQ(sum.allocation_bound_pct, 100.0);
  EXPECT_EQ(sum.wait_p95_ms[static_cast<int>(PriorityClass::kHigh)], 5000);  // 10 -> 15
  EXPECT_EQ(sum.wait_p95_ms[static_cast<int>(PriorityClass::kLow)], 0);
  EXPECT_DOUBLE_EQ(sum.jct_mean_s, (157.0 + 55.0) / 2);
  EXPECT_EQ(sum.jct_p99_ms, 157000);
  EXPECT_EQ(sum.makespan_ms, 157000);
}

// One 4-GPU node, no checkpoints, victims exit 5 s after the mark. V (low, 4 GPUs, 100 s) at 0;
// H (high, 2 GPUs, 50 s) at 10 preempts it; W (low, 2 GPUs, 30 s) at 12 queues behind V.
TEST(Simulator, RoundsWhileAVictimRequeuesDoNotSeeIt) {
  Scenario s = Make("1x4",
                    "submit_time,duration,num_gpus,priority\n"
                    "0,100,4,10\n"
                    "10,50,2,90\n"
                    "12,30,2,10\n");
  SimOptions o;
  o.checkpoint_interval_ms = 0;
  o.preempt_exit_ms = 5000;
  // Requeued at once, V heads the low class when it exits at 15 and holds the node: W runs there
  // provisionally (15..45), done before H ends and V can rerun (65..165).
  SimResult at_once = Replay(s, Policy::kPhalanx, o);
  EXPECT_EQ(at_once.jobs[1].first_start_ms, 15000);
  EXPECT_EQ(at_once.jobs[0].end_ms, 165000);
  EXPECT_EQ(at_once.jobs[2].first_start_ms, 15000);
  EXPECT_EQ(at_once.jobs[2].end_ms, 45000);
  EXPECT_EQ(at_once.jobs[2].preemptions, 0);
  // Requeued 1 s after its exit, like the master recreating its pods: the round at 15 runs H and
  // W on the 4 free GPUs; V queues again at 16 and reruns once H ends.
  o.requeue_ms = 1000;
  SimResult gap = Replay(s, Policy::kPhalanx, o);
  EXPECT_EQ(gap.jobs[1].first_start_ms, 15000);
  EXPECT_EQ(gap.jobs[2].first_start_ms, 15000);
  EXPECT_EQ(gap.jobs[2].end_ms, 45000);
  EXPECT_EQ(gap.jobs[0].end_ms, 165000);
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
  }
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
