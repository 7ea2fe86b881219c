// Forecast: start-time estimates worked by hand on the seeds' seven-step example and small
// clusters, and the forecast's bounds (unknown runtimes, infeasible gangs, coarse steps).
#include "forecast/forecast.h"

#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <string>

#include "tests/testing/fixtures.h"

namespace phalanx::forecast {
namespace {

using testing::Cluster;
using testing::GpuNode;

constexpr int64_t kMin = 60'000;
constexpr int32_t kP1 = 60, kP2 = 50, kP3 = 40;  // The seeds' priorities 1, 2, 3.

// Exact steps, and preemption at once (no patience: preemption/rules.h), as the seeds describe.
ForecastOptions Exact(int32_t max_slots_per_pod) {
  ForecastOptions o;
  o.admission.slots.max_slots_per_pod = max_slots_per_pod;
  o.admission.rules.patience_ms = 0;
  o.step_ms = 0;
  o.step_fraction = 0;
  return o;
}

const GangEta& EtaOf(const ForecastResult& r, const std::string& gang) {
  for (const GangEta& e : r.gangs) {
    if (e.gang == gang) return e;
  }
  ADD_FAILURE() << "no estimate entry for " << gang;
  static const GangEta kNone;
  return kNone;
}

// Minutes from `now` to the gang's estimate, or -1 when it has none.
int64_t MinutesTo(const ForecastResult& r, const std::string& gang, int64_t now) {
  const GangEta& e = EtaOf(r, gang);
  return e.start_ms ? (*e.start_ms - now) / kMin : -1;
}

std::string Asha(int i) { return "default/asha-" + std::to_string(i); }

// Step 1 of the seeds' example on 8 GPUs (two 4-GPU nodes, maxSlotsPerPod 4): 8 one-slot ASHA
// trials run, ending 10, 20, .., 80 minutes from now; 12 more wait, an hour each; then step 3's
// notebook (1 slot, lower priority) waits too. By hand: the waiting trials take the GPUs in queue
// order as they free: 10, 20, 30, 40, 50, 60, 70 (two: asha-6 and asha-8 end), 80 (two), 90, 100;
// the notebook, behind every trial, gets the next one, at 110 (asha-12 ends).
TEST(ForecastTest, SevenStepExampleWaitingTrialsAndNotebook) {
  Cluster c;
  c.AddNode(GpuNode("node-a", 4));
  c.AddNode(GpuNode("node-b", 4));
  for (int i = 0; i < 20; ++i) {
    c.Submit({.name = "asha-" + std::to_string(i), .priority = kP2, .created_ms = 100 + i});
  }
  c.Step(Exact(4).admission);
  c.Submit({.name = "notebook", .priority = kP3, .created_ms = 300, .preemptible = false});
  RuntimeModel model;
  for (int i = 0; i < 8; ++i) model[Asha(i)] = (i + 1) * 10 * kMin;
  for (int i = 8; i < 20; ++i) model[Asha(i)] = 60 * kMin;
  model["default/notebook"] = 120 * kMin;
  ForecastOptions o = Exact(4);
  o.admission.now_ms = c.now_ms;
  const ForecastResult r = Forecast(c.snapshot(), o, model);
  ASSERT_EQ(r.gangs.size(), 13u);
  const int64_t expected[] = {10, 20, 30, 40, 50, 60, 70, 70, 80, 80, 90, 100};
  for (int i = 8; i < 20; ++i) {
    EXPECT_EQ(MinutesTo(r, Asha(i), c.now_ms), expected[i - 8]) << Asha(i);
    EXPECT_EQ(EtaOf(r, Asha(i)).position, i - 7);
  }
  EXPECT_EQ(MinutesTo(r, "default/notebook", c.now_ms), 110);
  EXPECT_EQ(r.gangs.back().gang, "default/notebook");  // Queue order.
  EXPECT_EQ(EtaOf(r, "default/notebook").after, std::vector<std::string>{Asha(12)});
  EXPECT_EQ(EtaOf(r, Asha(14)).after, (std::vector<std::string>{Asha(6), Asha(8)}));
}

// Step 2: the priority-1 distributed experiment (4 slots) preempts four trials; it starts when
// they have exited (30 s), and the four trials rerun their work plus the restart overhead, queued
// ahead of the trials that never ran (same priority, earlier creation). The trials have run ten
// minutes: with patience (preemption/rules.h, the default) dist-1 takes them only 30 minutes
// after its creation, a time the forecast wakes up for.
TEST(ForecastTest, SevenStepExamplePreemptorStartsWhenItsVictimsExit) {
  Cluster c;
  c.AddNode(GpuNode("node-a", 4));
  c.AddNode(GpuNode("node-b", 4));
  for (int i = 0; i < 12; ++i) {
    c.Submit({.name = "asha-" + std::to_string(i), .priority = kP2, .created_ms = 100 + i});
  }
  c.Step(Exact(4).admission);
  c.now_ms += 10 * kMin;
  c.Submit({.name = "dist-1", .gpus_per_pod = 4, .priority = kP1, .created_ms = 200});
  RuntimeModel model;
  for (int i = 0; i < 12; ++i) model[Asha(i)] = 60 * kMin;
  model["default/dist-1"] = 30 * kMin;
  ForecastOptions o = Exact(4);
  o.admission.now_ms = c.now_ms;
  o.admission.rules.restart_overhead_ms = kMin;
  o.admission.rules.patience_ms = preemption::PreemptionRules().patience_ms;
  const ForecastResult patient = Forecast(c.snapshot(), o, model);
  ASSERT_TRUE(EtaOf(patient, "default/dist-1").start_ms);
  EXPECT_EQ(*EtaOf(patient, "default/dist-1").start_ms, 200 + 30 * kMin + o.preempt_exit_ms);
  o.admission.rules.patience_ms = 0;
  const ForecastResult r = Forecast(c.snapshot(), o, model);
  const GangEta& dist = EtaOf(r, "default/dist-1");
  ASSERT_TRUE(dist.start_ms);
  EXPECT_EQ(*dist.start_ms - c.now_ms, o.preempt_exit_ms);
  EXPECT_EQ(dist.after.size(), 4u);  // Its victims' exits.
  // dist-1 ends at 30 min 30 s, and the four victims, queued first, take its node; asha-8..11
  // take the other node's GPUs when the untouched trials end, at 60 min.
  for (int i = 8; i < 12; ++i) EXPECT_EQ(MinutesTo(r, Asha(i), c.now_ms), 60) << Asha(i);
}

// A victim that ends before it has exited simply ends, also when its end and its exit fall in one
// coarse step: here it is marked with 10 s left, exits at 30 s, and both are applied at 70 s (10 s
// plus the one-minute step). The waiting gang starts then, and the victim never comes back.
TEST(ForecastTest, AVictimEndingBeforeItsExitDoesNotComeBack) {
  Cluster c;
  c.AddNode(GpuNode("node-a", 4));
  c.Submit({.name = "victim", .gpus_per_pod = 4, .priority = 10, .created_ms = 1});
  c.Step(Exact(4).admission);
  c.Submit({.name = "head", .gpus_per_pod = 4, .priority = 90, .created_ms = 2});
  c.now_ms += 10 * kMin;
  c.Step(Exact(4).admission);  // Marks the victim.
  c.Submit({.name = "next", .gpus_per_pod = 4, .priority = 5, .created_ms = 3});
  const RuntimeModel model = {{"default/victim", 10'000},
                              {"default/head", 60 * kMin},
                              {"default/next", kMin}};
  ForecastOptions o = Exact(4);
  o.step_ms = ForecastOptions().step_ms;
  o.step_fraction = ForecastOptions().step_fraction;
  o.admission.now_ms = c.now_ms;
  const ForecastResult r = Forecast(c.snapshot(), o, model);
  ASSERT_TRUE(EtaOf(r, "default/head").start_ms);
  // The step applies the victim's end at 1:10, but head starts when that end freed its node.
  EXPECT_EQ(*EtaOf(r, "default/head").start_ms - c.now_ms, 10'000);
  EXPECT_EQ(EtaOf(r, "default/head").after, std::vector<std::string>{"default/victim"});
  // head ends at 60:10, and next starts then. (A victim back in the queue, ahead of `next`, would
  // run first and push it to 61.)
  EXPECT_EQ(MinutesTo(r, "default/next", c.now_ms), 60);
}

// A running gang without a runtime holds its GPUs for good: what needs them gets no estimate,
// what fits elsewhere still gets one; an infeasible gang gets none.
TEST(ForecastTest, UnknownRuntimesAndInfeasibleGangsGetNoEstimate) {
  Cluster c;
  c.AddNode(GpuNode("node-a", 4));
  c.AddNode(GpuNode("node-b", 4));
  c.Submit({.name = "unknown", .gpus_per_pod = 4, .created_ms = 1});
  c.Submit({.name = "known", .gpus_per_pod = 4, .created_ms = 2});
  c.Step(Exact(4).admission);
  c.Submit({.name = "needs-both", .pods = 2, .gpus_per_pod = 4, .created_ms = 3});
  c.Submit({.name = "too-big", .pods = 3, .gpus_per_pod = 4, .created_ms = 4});
  c.Submit({.name = "small", .gpus_per_pod = 4, .priority = 40, .created_ms = 5});
  const RuntimeModel model = {{"default/known", 5 * kMin}, {"default/small", kMin}};
  ForecastOptions o = Exact(4);
  o.admission.now_ms = c.now_ms;
  const ForecastResult r = Forecast(c.snapshot(), o, model);
  EXPECT_EQ(EtaOf(r, "default/needs-both").none, NoEstimate::kUnknown);
  EXPECT_EQ(EtaOf(r, "default/too-big").none, NoEstimate::kInfeasible);
  EXPECT_EQ(MinutesTo(r, "default/small", c.now_ms), 5);  // Backfills ahead of needs-both.
}

// The horizon and the round budget bound the work; what lies beyond says so.
TEST(ForecastTest, HorizonAndRoundBudget) {
  Cluster c;
  c.AddNode(GpuNode("node-a", 1));
  for (int i = 0; i < 5; ++i) {
    c.Submit({.name = "job-" + std::to_string(i), .created_ms = 10 + i});
  }
  c.Step(Exact(1).admission);
  RuntimeModel model;
  for (int i = 0; i < 5; ++i) model["default/job-" + std::to_string(i)] = 60 * kMin;
  ForecastOptions o = Exact(1);
  o.admission.now_ms = c.now_ms;
  o.horizon_ms = 150 * kMin;
  ForecastResult r = Forecast(c.snapshot(), o, model);
  EXPECT_EQ(MinutesTo(r, "default/job-1", c.now_ms), 60);
  EXPECT_EQ(MinutesTo(r, "default/job-2", c.now_ms), 120);
  EXPECT_EQ(EtaOf(r, "default/job-3").none, NoEstimate::kHorizon);
  o.horizon_ms = ForecastOptions().horizon_ms;
  o.max_rounds = 2;
  r = Forecast(c.snapshot(), o, model);
  EXPECT_EQ(r.rounds, 2);
  EXPECT_EQ(MinutesTo(r, "default/job-1", c.now_ms), 60);
  EXPECT_EQ(EtaOf(r, "default/job-2").none, NoEstimate::kHorizon);
}

// Coarse steps err, either way, by at most a few steps at that distance, on one-GPU jobs (no
// packing anomalies): 200 random queues against the exact forecast.
TEST(ForecastTest, CoarseStepsErrByAtMostTheStepsAlongTheWay) {
  std::mt19937_64 rng(7);
  double relative = 0;
  int gangs = 0;
  for (int trial = 0; trial < 200; ++trial) {
    Cluster c;
    const int nodes = 1 + static_cast<int>(rng() % 3);
    for (int n = 0; n < nodes; ++n) c.AddNode(GpuNode("node-" + std::to_string(n), 4));
    RuntimeModel model;
    const int jobs = 4 * nodes + static_cast<int>(rng() % 20);
    for (int j = 0; j < jobs; ++j) {
      const std::string name = "job-" + std::to_string(j);
      c.Submit({.name = name, .created_ms = 10 + j});
      model["default/" + name] = static_cast<int64_t>(1 + rng() % 600) * kMin;
    }
    c.Step(Exact(4).admission);
    ForecastOptions exact = Exact(4);
    exact.admission.now_ms = c.now_ms;
    ForecastOptions coarse = exact;
    coarse.step_ms = ForecastOptions().step_ms;
    coarse.step_fraction = ForecastOptions().step_fraction;
    const ForecastResult a = Forecast(c.snapshot(), exact, model);
    const ForecastResult b = Forecast(c.snapshot(), coarse, model);
    ASSERT_EQ(a.gangs.size(), b.gangs.size());
    EXPECT_LE(b.rounds, a.rounds);
    for (size_t i = 0; i < a.gangs.size(); ++i) {
      ASSERT_TRUE(a.gangs[i].start_ms && b.gangs[i].start_ms) << a.gangs[i].gang;
      const int64_t wait = *a.gangs[i].start_ms - c.now_ms;
      const int64_t error = std::abs(*b.gangs[i].start_ms - *a.gangs[i].start_ms);
      EXPECT_LE(error, std::max<int64_t>(coarse.step_ms, wait * 0.25) + coarse.step_ms * 4)
          << a.gangs[i].gang << " trial " << trial;
      relative += static_cast<double>(error) / std::max<int64_t>(wait, kMin);
      ++gangs;
    }
  }
  // Starts taken from the events that freed the plan's nodes keep errors from adding up along
  // chains: 0.7% on average here, where starting at the step's end gave 6.5%.
  EXPECT_LT(relative / gangs, 0.02);
}

// One node, a chain of gangs each waiting for the one before: every start comes from the end that
// freed the node, so coarse steps give the exact starts, however long the chain.
TEST(ForecastTest, ChainsOfWaitingGangsKeepExactStarts) {
  Cluster c;
  c.AddNode(GpuNode("node-a", 4));
  RuntimeModel model;
  for (int j = 0; j < 12; ++j) {
    const std::string name = "job-" + std::to_string(j);
    c.Submit({.name = name, .gpus_per_pod = 4, .created_ms = 10 + j});
    model["default/" + name] = 100 * kMin;
  }
  c.Step(Exact(4).admission);
  ForecastOptions o = Exact(4);
  o.step_ms = ForecastOptions().step_ms;
  o.step_fraction = ForecastOptions().step_fraction;
  o.admission.now_ms = c.now_ms;
  const ForecastResult r = Forecast(c.snapshot(), o, model);
  for (int j = 1; j < 12; ++j) {
    EXPECT_EQ(MinutesTo(r, "default/job-" + std::to_string(j), c.now_ms), 100 * j) << j;
  }
}

}  // namespace
}  // namespace phalanx::forecast
