// The synthetic workload: its SPEC (defaults, canonical text, errors naming the key), the
// distributions it promises (sizes, classes, heavy-tailed durations, offered load), determinism
// for a seed, and that every policy replays it to the end, reported as a synthetic workload.
#include "bench/replay/synthetic.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "absl/strings/match.h"
#include "bench/replay/metrics.h"
#include "bench/replay/priority.h"
#include "bench/replay/report.h"
#include "bench/replay/simulator.h"
#include "bench/replay/workload.h"

namespace phalanx::replay {
namespace {

constexpr int64_t kClusterGpus = 96;

Trace Generate(absl::string_view spec) {
  absl::StatusOr<SyntheticSpec> parsed = ParseSyntheticSpec(spec);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  return GenerateSynthetic(*parsed, kClusterGpus);
}

bool SameJobs(const Trace& a, const Trace& b) {
  if (a.jobs.size() != b.jobs.size()) return false;
  for (size_t i = 0; i < a.jobs.size(); ++i) {
    const TraceJob& x = a.jobs[i];
    const TraceJob& y = b.jobs[i];
    if (x.line != y.line || x.submit_ms != y.submit_ms || x.duration_ms != y.duration_ms ||
        x.gpus != y.gpus || x.priority != y.priority) {
      return false;
    }
  }
  return true;
}

TEST(Synthetic, SpecDefaultsAndCanonicalText) {
  absl::StatusOr<SyntheticSpec> spec = ParseSyntheticSpec("jobs=500,seed=7,load=1.5");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->jobs, 500);
  EXPECT_EQ(spec->seed, 7u);
  EXPECT_DOUBLE_EQ(spec->load, 1.5);
  EXPECT_DOUBLE_EQ(spec->median_min, 30);
  EXPECT_DOUBLE_EQ(spec->sigma, 2);
  const std::string text = SyntheticSpecText(*spec);
  EXPECT_EQ(text, "jobs=500,seed=7,load=1.5,median_min=30,sigma=2");
  absl::StatusOr<SyntheticSpec> again = ParseSyntheticSpec(text);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(SyntheticSpecText(*again), text);
}

TEST(Synthetic, BadSpecErrorsNameTheKey) {
  struct Case {
    const char* spec;
    const char* names;
  };
  for (const Case& c :
       {Case{"jobs=0", "jobs="}, Case{"jobs=12x", "jobs="}, Case{"jobs=3,seed=-1", "seed="},
        Case{"load=0", "load="}, Case{"load=nan", "load="}, Case{"median_min=0.5", "median_min="},
        Case{"sigma=6", "sigma="}, Case{"bogus=1", "'bogus'"}, Case{"jobs=5,jobs=6", "'jobs'"},
        Case{"jobs", "'jobs'"}, Case{"jobs=5,", "''"}}) {
    absl::StatusOr<SyntheticSpec> spec = ParseSyntheticSpec(c.spec);
    ASSERT_FALSE(spec.ok()) << c.spec;
    EXPECT_TRUE(absl::StrContains(spec.status().message(), c.names))
        << c.spec << ": " << spec.status().message();
  }
}

TEST(Synthetic, SameSeedSameJobs) {
  const Trace a = Generate("jobs=400,seed=7");
  EXPECT_EQ(a.format, TraceFormat::kSynthetic);
  EXPECT_TRUE(SameJobs(a, Generate("jobs=400,seed=7")));
  EXPECT_FALSE(SameJobs(a, Generate("jobs=400,seed=8")));
}

TEST(Synthetic, GangHeavyHeavyTailedThreeClasses) {
  const Trace t = Generate("jobs=4000,seed=3,load=1.2");
  ASSERT_EQ(t.jobs.size(), 4000u);
  int64_t powers_of_two = 0;
  int64_t large = 0;
  std::set<int32_t> classes;
  std::vector<int64_t> durations;
  double work_gpu_ms = 0;
  for (size_t i = 0; i < t.jobs.size(); ++i) {
    const TraceJob& j = t.jobs[i];
    EXPECT_EQ(j.line, static_cast<int64_t>(i) + 1);
    ASSERT_GE(j.gpus, 1);
    ASSERT_LE(j.gpus, 64);
    // Every size is one the master's split with maxSlotsPerPod 8 accepts.
    EXPECT_TRUE(SplitSlots(j.gpus, 8).ok()) << j.gpus;
    powers_of_two += (j.gpus & (j.gpus - 1)) == 0;
    large += j.gpus >= 16;
    ASSERT_TRUE(j.priority.has_value());
    classes.insert(*j.priority);
    ASSERT_GE(j.duration_ms, 60'000);
    ASSERT_LE(j.duration_ms, 7 * 24 * 3'600'000LL);
    EXPECT_EQ(j.duration_ms % 1000, 0);
    if (i > 0) {
      EXPECT_GE(j.submit_ms, t.jobs[i - 1].submit_ms);
    }
    durations.push_back(j.duration_ms);
    work_gpu_ms += static_cast<double>(j.gpus) * j.duration_ms;
  }
  EXPECT_EQ(t.jobs[0].submit_ms, 0);
  EXPECT_GT(powers_of_two, 4000 * 85 / 100);
  EXPECT_LT(powers_of_two, 4000);
  EXPECT_GT(large, 4000 * 40 / 100);
  EXPECT_EQ(classes, (std::set<int32_t>{kLowPriority, kMediumPriority, kHighPriority}));
  // Lognormal around a 30 min median, with a tail of days.
  const int64_t median = Percentile(durations, 50);
  EXPECT_GT(median, 25 * 60'000);
  EXPECT_LT(median, 36 * 60'000);
  EXPECT_GT(*std::max_element(durations.begin(), durations.end()), 2 * 24 * 3'600'000LL);
  // The GPU time asked over the arrival span is `load` times the cluster's.
  const double load = work_gpu_ms / (kClusterGpus * static_cast<double>(t.jobs.back().submit_ms));
  EXPECT_NEAR(load, 1.2, 0.1);
}

TEST(Synthetic, LoadSpreadsArrivals) {
  const Trace light = Generate("jobs=300,seed=5,load=0.5");
  const Trace heavy = Generate("jobs=300,seed=5,load=2");
  // Same jobs, arrivals four times as dense.
  EXPECT_EQ(light.jobs[10].duration_ms, heavy.jobs[10].duration_ms);
  EXPECT_NEAR(static_cast<double>(light.jobs.back().submit_ms) / heavy.jobs.back().submit_ms, 4.0,
              0.01);
}

TEST(Synthetic, EveryPolicyReplaysItToTheEnd) {
  absl::StatusOr<std::vector<core::Node>> nodes = ParseCluster("12x8");
  ASSERT_TRUE(nodes.ok());
  const Trace trace = Generate("jobs=150,seed=11");
  std::vector<Job> jobs = BuildJobs(trace, *nodes, 8, 1);
  std::vector<PolicyRun> runs;
  for (const Job& j : jobs) EXPECT_EQ(j.rejected, "") << j.trace.gpus;
  for (Policy p :
       {Policy::kPhalanx, Policy::kFifoGang, Policy::kPriorityNoBackfill, Policy::kGreedy}) {
    SimOptions o;
    o.policy = p;
    absl::StatusOr<SimResult> r = Simulate(jobs, *nodes, o);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->unfinished, 0) << PolicyName(p);
    Summary sum = Summarize(p, jobs, *r);
    EXPECT_EQ(sum.completed, 150) << PolicyName(p);
    runs.push_back({p, std::move(*r), std::move(sum)});
  }
  const ReplaySetup setup{.name = "synthetic",
                          .trace_path = SyntheticSpecText(*ParseSyntheticSpec("jobs=150,seed=11"))};
  EXPECT_TRUE(
      absl::StrContains(MarkdownSection(setup, trace, jobs, runs),
                        "Synthetic workload `jobs=150,seed=11,load=1.2,median_min=30,"
                        "sigma=2` (bench/replay/synthetic.h): 150 GPU jobs, 150 accepted."));
}

}  // namespace
}  // namespace phalanx::replay
