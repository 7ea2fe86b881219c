// The forecast's accuracy in the replay (SimOptions::forecast_every): a hand-computed case, a
// victim that ends before its exit, the forecast against the simulator on workloads submitted at
// once (exact durations and steps: equal), deterministic figures, noise factors in [0.5, 2], and a
// simulation unchanged by forecasting.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "bench/replay/metrics.h"
#include "bench/replay/report.h"
#include "bench/replay/simulator.h"

namespace phalanx::replay {
namespace {

constexpr int kExact = static_cast<int>(ForecastModel::kExact);
constexpr int kNoisy = static_cast<int>(ForecastModel::kNoisy);
constexpr int kNone = static_cast<int>(ForecastModel::kNone);

struct Scenario {
  std::vector<core::Node> nodes;
  Trace trace;
  std::vector<Job> jobs;
};

Scenario Make(absl::string_view cluster, absl::string_view csv) {
  Scenario s;
  s.nodes = *ParseCluster(cluster);
  absl::StatusOr<Trace> t = ParseTrace(csv);
  EXPECT_TRUE(t.ok()) << t.status();
  s.trace = *t;
  s.jobs = BuildJobs(s.trace, s.nodes, 8, 1);
  return s;
}

SimResult Replay(const Scenario& s, Policy p, SimOptions o) {
  o.policy = p;
  absl::StatusOr<SimResult> r = Simulate(s.jobs, s.nodes, o);
  EXPECT_TRUE(r.ok()) << r.status();
  return *r;
}

SimOptions ExactSteps() {
  SimOptions o;
  o.forecast_every = 1;
  o.forecast_step_ms = 0;
  o.forecast_step_fraction = 0;
  return o;
}

// One 4-GPU node, one class: A (4 GPUs, 100 s) at 0, B (4 GPUs, 50 s) at 10 waits for A's end.
TEST(ForecastAccuracy, ByHand) {
  Scenario s = Make("1x4",
                    "submit_time,duration,num_gpus,priority\n"
                    "0,100,4,50\n"
                    "10,50,4,50\n");
  SimResult r = Replay(s, Policy::kPhalanx, ExactSteps());
  ASSERT_EQ(r.forecasts.size(), 2u);
  EXPECT_EQ(r.forecasts[0].start_ms, (std::array<int64_t, kForecastModels>{0, 0, 0}));
  const ForecastSample& b = r.forecasts[1];
  EXPECT_EQ(b.job, 1);
  EXPECT_EQ(r.jobs[1].first_start_ms, 100000);
  EXPECT_EQ(b.start_ms[kExact], 100000);
  // A's 90 s left, off by its factor; nothing known: no estimate.
  EXPECT_EQ(b.start_ms[kNoisy], 10000 + std::llround(90000 * NoiseFactor(1, 0)));
  EXPECT_EQ(b.start_ms[kNone], -1);
  // The forecast's default steps apply A's end at 100 s with the round at 160 s, and B starts
  // when that end freed its node.
  SimOptions coarse;
  coarse.forecast_every = 1;
  EXPECT_EQ(Replay(s, Policy::kPhalanx, coarse).forecasts[1].start_ms[kExact], 100000);

  const std::array<ForecastError, kForecastModels> e = ForecastErrors(s.jobs, r);
  EXPECT_EQ(e[kExact].sampled, 2);
  EXPECT_EQ(e[kExact].measured, 2);
  EXPECT_EQ(e[kExact].p90, 0);
  EXPECT_EQ(e[kExact].waited, 1);
  EXPECT_EQ(e[kNone].no_estimate, 1);
  EXPECT_EQ(e[kNone].measured, 1);
  // B waited 90 s: its noisy error is |forecast - 100 s| / 90 s.
  EXPECT_DOUBLE_EQ(e[kNoisy].waited_p50, std::abs(b.start_ms[kNoisy] - 100000) / 90000.0);
}

// One 4-GPU node: L (low, 4 GPUs, 410 s) at 0; H (high, 4 GPUs, 50 s) at 400 marks L, which ends
// at 410, before its exit at 430: it completes and H starts at 410, in the forecast at 400 too.
TEST(ForecastAccuracy, VictimEndingBeforeItsExitCompletes) {
  Scenario s = Make("1x4",
                    "submit_time,duration,num_gpus,priority\n"
                    "0,410,4,10\n"
                    "400,50,4,90\n");
  SimResult r = Replay(s, Policy::kPhalanx, ExactSteps());
  EXPECT_EQ(r.jobs[0].preemptions, 0);
  EXPECT_EQ(r.jobs[0].end_ms, 410000);
  EXPECT_EQ(r.jobs[1].first_start_ms, 410000);
  ASSERT_EQ(r.forecasts.size(), 2u);
  EXPECT_EQ(r.forecasts[1].start_ms[kExact], 410000);
}

// A workload submitted all at time 0: 2-9 jobs of 1-16 GPUs, 1-600 s, three classes.
std::string AtOnce(std::mt19937_64& rng) {
  std::string csv = "submit_time,duration,num_gpus,priority\n";
  const int n = 2 + static_cast<int>(rng() % 8);
  const int64_t sizes[] = {1, 2, 3, 4, 8, 16};
  const int32_t priorities[] = {10, 50, 90};
  for (int i = 0; i < n; ++i) {
    absl::StrAppend(&csv, "0,", 1 + rng() % 600, ",", sizes[rng() % 6], ",", priorities[rng() % 3],
                    "\n");
  }
  return csv;
}

// With every job submitted at once, exact durations, exact steps and no checkpoints, the forecast
// from the first snapshot runs the simulation itself: every start is the actual one.
TEST(ForecastAccuracy, ExactForecastOfJobsSubmittedAtOnceIsTheSimulatorsStart) {
  std::mt19937_64 rng(11);
  const char* clusters[] = {"1x8", "2x8", "2x4,1x8", "3x4"};
  for (int w = 0; w < 300; ++w) {
    const std::string cluster = clusters[rng() % 4];
    const std::string csv = AtOnce(rng);
    Scenario s = Make(cluster, csv);
    for (Policy p : {Policy::kPhalanx, Policy::kFifoGang}) {
      SimOptions o = ExactSteps();
      o.checkpoint_interval_ms = 0;
      SimResult r = Replay(s, p, o);
      int64_t accepted = 0;
      for (const Job& j : s.jobs) accepted += j.rejected.empty();
      ASSERT_EQ(static_cast<int64_t>(r.forecasts.size()), accepted);
      for (const ForecastSample& f : r.forecasts) {
        EXPECT_EQ(f.start_ms[kExact], r.jobs[f.job].first_start_ms)
            << PolicyName(p) << ", job " << f.job << ", cluster " << cluster << ":\n"
            << csv;
      }
    }
  }
}

// A bursty trace with arrivals over time: 1-32 GPUs, some long jobs, three classes.
std::string Arrivals(int jobs) {
  std::mt19937_64 rng(2024);
  std::string csv = "submit_time,duration,num_gpus,priority\n";
  int64_t t = 0;
  const int64_t sizes[] = {1, 1, 1, 2, 4, 8, 8, 16, 32};
  const int32_t priorities[] = {10, 50, 90};
  for (int i = 0; i < jobs; ++i) {
    t += rng() % 4 == 0 ? rng() % 600 : 0;
    absl::StrAppend(&csv, t, ",", 30 + rng() % 7200, ",", sizes[rng() % 9], ",",
                    priorities[rng() % 3], "\n");
  }
  return csv;
}

std::string Forecasts(const SimResult& r) {
  std::string out;
  for (const ForecastSample& f : r.forecasts) {
    absl::StrAppend(&out, f.job, ":", absl::StrJoin(f.start_ms, ","), "\n");
  }
  return out;
}

TEST(ForecastAccuracy, SameSeedSameNumbers) {
  Scenario s = Make("4x8", Arrivals(300));
  SimOptions o;
  o.forecast_every = 7;
  SimResult a = Replay(s, Policy::kPhalanx, o);
  SimResult b = Replay(s, Policy::kPhalanx, o);
  ASSERT_EQ(a.forecasts.size(), 43u);  // Jobs 0, 7, .., 294 (none rejected).
  EXPECT_EQ(Forecasts(a), Forecasts(b));
  std::vector<PolicyRun> ra, rb;
  ra.push_back({Policy::kPhalanx, a, Summarize(Policy::kPhalanx, s.jobs, a)});
  rb.push_back({Policy::kPhalanx, b, Summarize(Policy::kPhalanx, s.jobs, b)});
  EXPECT_EQ(ForecastCsv(ra), ForecastCsv(rb));
  const ForecastError& exact = ra[0].summary.forecast[kExact];
  EXPECT_EQ(exact.sampled, 43);
  EXPECT_GT(exact.waited, 0);
  EXPECT_LT(exact.no_estimate, exact.sampled);
  EXPECT_GT(ra[0].summary.forecast[kNone].no_estimate, 0);
  const std::string md = MarkdownSection({.name = "f", .options = o}, s.trace, s.jobs, ra);
  EXPECT_NE(md.find("one accepted job in 7"), std::string::npos) << md;
  EXPECT_NE(md.find("| phalanx | noisy | 43 |"), std::string::npos) << md;

  // Another seed draws other factors: only the noisy figures change.
  o.forecast_seed = 2;
  SimResult c = Replay(s, Policy::kPhalanx, o);
  ASSERT_EQ(c.forecasts.size(), a.forecasts.size());
  bool noisy_differs = false;
  for (size_t i = 0; i < a.forecasts.size(); ++i) {
    EXPECT_EQ(c.forecasts[i].start_ms[kExact], a.forecasts[i].start_ms[kExact]);
    EXPECT_EQ(c.forecasts[i].start_ms[kNone], a.forecasts[i].start_ms[kNone]);
    noisy_differs |= c.forecasts[i].start_ms[kNoisy] != a.forecasts[i].start_ms[kNoisy];
  }
  EXPECT_TRUE(noisy_differs);
}

TEST(ForecastAccuracy, NoiseFactorsSpanHalfToTwice) {
  for (uint64_t seed : {0, 1, 2, 7}) {
    double lo = 2, hi = 0, sum = 0;
    const int n = 20000;
    for (int j = 0; j < n; ++j) {
      const double f = NoiseFactor(seed, j);
      ASSERT_GE(f, 0.5);
      ASSERT_LT(f, 2.0);
      EXPECT_EQ(f, NoiseFactor(seed, j));
      lo = std::min(lo, f);
      hi = std::max(hi, f);
      sum += f;
    }
    EXPECT_LT(lo, 0.501) << seed;
    EXPECT_GT(hi, 1.999) << seed;
    EXPECT_NEAR(sum / n, 1.25, 0.02) << seed;
  }
  EXPECT_NE(NoiseFactor(1, 5), NoiseFactor(2, 5));
}

// Forecasting reads the simulation and changes none of it; off, no forecast is recorded.
TEST(ForecastAccuracy, ForecastingChangesNothingElse) {
  Scenario s = Make("4x8", Arrivals(300));
  for (Policy p : {Policy::kPhalanx, Policy::kFifoGang, Policy::kGreedy}) {
    SimOptions o;
    o.checkpoint_interval_ms = 10 * 60 * 1000;
    SimResult off = Replay(s, p, o);
    EXPECT_TRUE(off.forecasts.empty());
    o.forecast_every = 3;
    SimResult on = Replay(s, p, o);
    EXPECT_EQ(on.forecasts.empty(), p == Policy::kGreedy) << PolicyName(p);
    std::vector<PolicyRun> a, b;
    a.push_back({p, off, Summarize(p, s.jobs, off)});
    b.push_back({p, on, Summarize(p, s.jobs, on)});
    EXPECT_EQ(JobsCsv(s.jobs, off), JobsCsv(s.jobs, on)) << PolicyName(p);
    EXPECT_EQ(SummaryCsv(a), SummaryCsv(b)) << PolicyName(p);
    EXPECT_EQ(SeriesCsv(a, o.bucket_ms), SeriesCsv(b, o.bucket_ms)) << PolicyName(p);
    const std::string md = MarkdownSection({.name = "f"}, s.trace, s.jobs, a);
    EXPECT_EQ(md.find("Forecast"), std::string::npos) << md;
  }
}

}  // namespace
}  // namespace phalanx::replay
