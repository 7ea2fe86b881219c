// Victim selection: whole gangs only, cheapest first (work since the last checkpoint), lower
// priority or backfilled behind the preemptor, preemptible only, protected runs last.
#include "preemption/victims.h"

#include <gtest/gtest.h>

#include "preemption/admission.h"
#include "tests/testing/fixtures.h"

namespace phalanx::preemption {
namespace {

using testing::Cluster;
using testing::FindDecision;
using testing::GpuNode;

TEST(VictimsTest, TakesWholeGangsAcrossNodes) {
  Cluster c;
  c.AddNode(GpuNode("a", 4));
  c.AddNode(GpuNode("b", 4));
  // One low gang of 2 pods spread over both nodes (4 + 4), nothing else.
  c.Submit({.name = "low", .pods = 2, .gpus_per_pod = 4, .priority = 10});
  c.Step({});
  c.Submit({.name = "high", .gpus_per_pod = 4, .priority = 90});
  RoundResult r = c.Step({});
  const GangDecision* d = FindDecision(r, "default/high");
  ASSERT_EQ(d->verdict, Verdict::kPreempt);
  EXPECT_EQ(d->victims, (std::vector<std::string>{"default/low"}));
  // Both pods of `low` are marked, though `high` needs only one node.
  auto snap = c.snapshot();
  core::Gang low = *snap->FindGang("default/low");
  for (const core::PodInfo* p : low.members) {
    EXPECT_TRUE(p->preempt_requested);
    EXPECT_EQ(p->preempted_by, "default/high");
  }
}

TEST(VictimsTest, PrefersLeastLostWorkThenLowestPriorityThenNewest) {
  // Four 1-GPU gangs on one 4-GPU node; a 2-GPU preemptor needs two of them.
  Cluster c;
  c.AddNode(GpuNode("a", 4));
  c.Submit({.name = "old-long", .priority = 20, .created_ms = 1});
  c.Step({});
  c.now_ms += 3'600'000;  // old-long has run an hour
  c.Submit({.name = "p30", .priority = 30, .created_ms = 2});
  c.Submit({.name = "p20-old", .priority = 20, .created_ms = 3});
  c.Submit({.name = "p20-new", .priority = 20, .created_ms = 4});
  c.Step({});
  c.now_ms += 60'000;  // the other three have run a minute each: equal lost work (60 GPU-s)
  c.Submit({.name = "boss", .gpus_per_pod = 2, .priority = 90});
  // The three that ran a minute are protected (min_run 5 minutes) and one is needed anyway: the
  // unprotected old-long goes, and the cheapest protected one.
  RoundResult r = RunAdmissionRound(*c.snapshot(), {.now_ms = c.now_ms});
  EXPECT_EQ(FindDecision(r, "default/boss")->victims,
            (std::vector<std::string>{"default/old-long", "default/p20-new"}));
  AdmissionOptions no_min_run;
  no_min_run.rules.min_run_ms = 0;
  r = c.Step(no_min_run);
  const GangDecision* d = FindDecision(r, "default/boss");
  ASSERT_EQ(d->verdict, Verdict::kPreempt);
  // Costs: old-long 3660 GPU-s (plus the restart overhead, as every one); p30, p20-old, p20-new 60
  // each. Cheapest two by (lost, priority, newest): p20-new, p20-old.
  EXPECT_EQ(d->victims, (std::vector<std::string>{"default/p20-new", "default/p20-old"}));
}

TEST(VictimsTest, NeverEqualOrHigherPriorityNorNonPreemptible) {
  Cluster c;
  c.AddNode(GpuNode("a", 4));
  c.Submit({.name = "same", .gpus_per_pod = 2, .priority = 50});
  c.Submit({.name = "pinned", .gpus_per_pod = 2, .priority = 10, .preemptible = false});
  c.Step({});
  c.Submit({.name = "want", .gpus_per_pod = 2, .priority = 50, .created_ms = 9});
  RoundResult r = c.Step({});
  const GangDecision* d = FindDecision(r, "default/want");
  EXPECT_EQ(d->verdict, Verdict::kWait);
  EXPECT_TRUE(d->victims.empty());
}

TEST(VictimsTest, PrunesVictimsThatDoNotHelp) {
  // Node a: a 1-GPU low gang (cheapest) beside a non-preemptible 3-GPU pod: freeing it cannot fit a
  // 4-GPU pod there. Node b: a 4-GPU low gang, dearer. Only the one on b is taken.
  Cluster c;
  c.AddNode(GpuNode("a", 4));
  c.AddNode(GpuNode("b", 4));
  c.Submit({.name = "pinned", .gpus_per_pod = 3, .priority = 10, .preemptible = false});
  c.Submit({.name = "small", .gpus_per_pod = 1, .priority = 10, .created_ms = 5});
  c.Submit({.name = "wide", .gpus_per_pod = 4, .priority = 10, .created_ms = 1});
  c.Step({});
  ASSERT_EQ(c.NodesOf("default/small"), (std::vector<std::string>{"a"}));
  c.now_ms += 1000;
  c.Submit({.name = "high", .gpus_per_pod = 4, .priority = 90});
  RoundResult r = c.Step({});
  EXPECT_EQ(FindDecision(r, "default/high")->victims, (std::vector<std::string>{"default/wide"}));
}

TEST(VictimsTest, PreemptorsInOneRoundTakeDifferentVictims) {
  Cluster c;
  c.AddNode(GpuNode("a", 4));
  c.AddNode(GpuNode("b", 4));
  c.Submit({.name = "low-a", .gpus_per_pod = 4, .priority = 10});
  c.Submit({.name = "low-b", .gpus_per_pod = 4, .priority = 10});
  c.Step({});
  c.Submit({.name = "high", .gpus_per_pod = 4, .priority = 90});
  c.Submit({.name = "next", .gpus_per_pod = 4, .priority = 80});
  RoundResult r = c.Step({});
  const GangDecision* high = FindDecision(r, "default/high");
  const GangDecision* next = FindDecision(r, "default/next");
  ASSERT_EQ(high->verdict, Verdict::kPreempt);
  ASSERT_EQ(next->verdict, Verdict::kPreempt);
  EXPECT_EQ(high->victims, (std::vector<std::string>{"default/low-a"}));
  EXPECT_EQ(next->victims, (std::vector<std::string>{"default/low-b"}));
}

TEST(VictimsTest, FreedCapacityIsReservedUntilVictimsExit) {
  Cluster c;
  c.AddNode(GpuNode("a", 4));
  c.Submit({.name = "low", .gpus_per_pod = 4, .priority = 10});
  c.Step({});
  c.Submit({.name = "high", .gpus_per_pod = 4, .priority = 90, .created_ms = 1});
  RoundResult r = c.Step({});
  ASSERT_EQ(FindDecision(r, "default/high")->verdict, Verdict::kPreempt);
  // Next round: victims still running. `high` keeps waiting for them without new victims, and a
  // newcomer does not take the capacity.
  c.Submit({.name = "mid", .gpus_per_pod = 1, .priority = 50, .created_ms = 2});
  r = c.Step({});
  const GangDecision* high = FindDecision(r, "default/high");
  EXPECT_EQ(high->verdict, Verdict::kPreempt);
  EXPECT_TRUE(high->victims.empty());
  EXPECT_EQ(FindDecision(r, "default/mid")->verdict, Verdict::kWait);
  c.RequeueMarkedVictims();
  r = c.Step({});
  EXPECT_EQ(FindDecision(r, "default/high")->verdict, Verdict::kAdmit);
  EXPECT_EQ(c.NodesOf("default/high"), (std::vector<std::string>{"a"}));
}

// A running one-pod gang on `node` that started at `start_ms`.
core::PodInfo RunningOn(const std::string& name, int64_t gpus, int32_t priority,
                        const std::string& node, int64_t start_ms, int64_t created_ms = 0) {
  core::PodInfo p = testing::GatedGang(
      {.name = name, .gpus_per_pod = gpus, .priority = priority, .created_ms = created_ms})[0];
  p.gated = false;
  p.node = node;
  p.phase = core::PodPhase::kRunning;
  p.start_ms = start_ms;
  return p;
}

constexpr int64_t kNow = 10 * 3'600'000;
constexpr int64_t kMinute = 60'000;

// The victims of a 2-GPU priority-90 gang on one 4-GPU node running `pods`.
std::vector<std::string> VictimsFor(const std::vector<core::PodInfo>& pods,
                                    AdmissionOptions opts = {}) {
  core::SnapshotBuilder b;
  b.UpsertNode(GpuNode("a", 4));
  for (const core::PodInfo& p : pods) b.UpsertPod(p);
  b.UpsertPod(testing::GatedGang({.name = "high", .gpus_per_pod = 2, .priority = 90})[0]);
  opts.now_ms = kNow;
  RoundResult r = RunAdmissionRound(*b.Build(), opts);
  return FindDecision(r, "default/high")->victims;
}

TEST(VictimsTest, AVictimThatCheckpointedLosesLessWork) {
  // Both ran an hour; without checkpoints the newer (late) would go. `early` checkpointed a
  // minute ago: it loses a minute, `late` an hour.
  core::PodInfo early = RunningOn("early", 2, 10, "a", kNow - 60 * kMinute, /*created_ms=*/1);
  core::PodInfo late = RunningOn("late", 2, 10, "a", kNow - 60 * kMinute, /*created_ms=*/2);
  EXPECT_EQ(VictimsFor({early, late}), std::vector<std::string>{"default/late"});
  early.checkpoint_ms = kNow - kMinute;
  EXPECT_EQ(VictimsFor({early, late}), std::vector<std::string>{"default/early"});
}

TEST(VictimsTest, AFreshRunIsTakenOnlyWhenNoOlderOneFreesEnough) {
  // `fresh` started a minute ago (cheaper), `old` an hour ago; min_run is 5 minutes.
  core::PodInfo fresh = RunningOn("fresh", 2, 10, "a", kNow - kMinute);
  core::PodInfo old = RunningOn("old", 2, 10, "a", kNow - 60 * kMinute);
  EXPECT_EQ(VictimsFor({fresh, old}), std::vector<std::string>{"default/old"});
  AdmissionOptions no_min_run;
  no_min_run.rules.min_run_ms = 0;
  EXPECT_EQ(VictimsFor({fresh, old}, no_min_run), std::vector<std::string>{"default/fresh"});
  // `old` is not preemptible: the fresh run is the only way.
  old.preemptible = false;
  EXPECT_EQ(VictimsFor({fresh, old}), std::vector<std::string>{"default/fresh"});
}

TEST(VictimsTest, AGangPreemptedOftenIsTakenLast) {
  core::PodInfo often = RunningOn("often", 2, 10, "a", kNow - 60 * kMinute);
  core::PodInfo once = RunningOn("once", 2, 10, "a", kNow - 120 * kMinute);  // Dearer.
  often.preempted_ms = {kNow - 5 * 60 * kMinute, kNow - 4 * 60 * kMinute};
  once.preempted_ms = {kNow - 3 * 60 * kMinute};
  EXPECT_EQ(VictimsFor({often, once}), std::vector<std::string>{"default/often"});
  often.preempted_ms.push_back(kNow - 3 * 60 * kMinute);  // A third time.
  EXPECT_EQ(VictimsFor({often, once}), std::vector<std::string>{"default/once"});
  AdmissionOptions short_window;
  short_window.rules.window_ms = 60 * kMinute;
  EXPECT_EQ(VictimsFor({often, once}, short_window), std::vector<std::string>{"default/often"});
}

TEST(VictimsTest, AGangAtItsPreemptionLimitIsNeverAVictim) {
  // Only `limit` frees enough; old preemptions count too, as the window is the job's whole life.
  core::PodInfo limit = RunningOn("limit", 4, 10, "a", kNow - 60 * kMinute);
  for (int k = 9; k > 4; --k) limit.preempted_ms.push_back(kNow - k * 60 * kMinute);
  EXPECT_EQ(VictimsFor({limit}), std::vector<std::string>{});
  limit.preempted_ms.erase(limit.preempted_ms.begin());  // Four: a last resort, but a victim.
  EXPECT_EQ(VictimsFor({limit}), std::vector<std::string>{"default/limit"});
  AdmissionOptions no_limit;
  no_limit.rules.preemption_limit = 0;
  limit.preempted_ms.push_back(kNow - kMinute);
  EXPECT_EQ(VictimsFor({limit}, no_limit), std::vector<std::string>{"default/limit"});
  // Backfilled behind the preemptor, it is still spared.
  limit.backfilled = true;
  limit.backfilled_behind = "default/high";
  EXPECT_EQ(VictimsFor({limit}), std::vector<std::string>{});
}

TEST(VictimsTest, AProvisionalBackfillIsTheVictimOfItsHeadOnly) {
  // `peer` has the preemptor's priority and was backfilled on nodes held for `other`.
  core::PodInfo peer = RunningOn("peer", 2, 90, "a", kNow - kMinute);
  peer.backfilled = true;
  peer.backfilled_behind = "default/other";
  core::PodInfo low = RunningOn("low", 2, 10, "a", kNow - 60 * kMinute);
  EXPECT_EQ(VictimsFor({peer, low}), std::vector<std::string>{"default/low"});
  // Behind the preemptor: its first victim, fresh or not, however little the other one lost.
  peer.backfilled_behind = "default/high";
  low.checkpoint_ms = kNow;
  EXPECT_EQ(VictimsFor({peer, low}), std::vector<std::string>{"default/peer"});
}

}  // namespace
}  // namespace phalanx::preemption
