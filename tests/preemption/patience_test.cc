// Preemption patience (preemption/rules.h WaitsToPreempt) in the admission round: which victims a
// young gang takes at once, which it waits for, and that what it spares stays spared.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "preemption/admission.h"
#include "tests/testing/fixtures.h"

namespace phalanx::preemption {
namespace {

using testing::FindDecision;
using testing::GpuNode;

// A 4-GPU run on node a, started at `start_ms`, checkpointed at `checkpoint_ms` (0: never).
core::PodInfo RunOnA(const testing::GangSpec& spec, int64_t start_ms, int64_t checkpoint_ms,
                     const std::string& behind) {
  core::PodInfo p = testing::GatedGang(spec)[0];
  p.gated = false;
  p.node = p.placement = "a";
  p.phase = core::PodPhase::kRunning;
  p.start_ms = start_ms;
  p.checkpoint_ms = checkpoint_ms;
  p.backfilled = !behind.empty();
  p.backfilled_behind = behind;
  return p;
}

// Patience (rules.h, defaults: 30 and 5 minutes): head, created a minute ago, takes at once a
// victim that lost less than 5 minutes of work, or one backfilled behind it; it waits for a dearer
// one until 30 minutes after its creation.
TEST(PatienceTest, AYoungGangIsPatientWithDearVictims) {
  constexpr int64_t kMin = 60'000;
  constexpr int64_t kNow = 100 * kMin;
  struct Row {
    std::string name;
    int64_t start_ms;
    int64_t checkpoint_ms = 0;
    std::string behind;
    int64_t now_ms = kNow;
    int64_t patience_ms = preemption::PreemptionRules{}.patience_ms;
    Verdict want = Verdict::kPreempt;
  };
  for (const Row& row : std::vector<Row>{
           {.name = "lost 4 minutes", .start_ms = kNow - 4 * kMin},
           {.name = "lost 20 minutes", .start_ms = kNow - 20 * kMin, .want = Verdict::kWait},
           {.name = "checkpointed 2 minutes ago",
           .start_ms = kNow - 20 * kMin,
           .checkpoint_ms = kNow - 2 * kMin},
           {.name = "29 minutes old",
           .start_ms = kNow - 20 * kMin,
           .now_ms = kNow + 28 * kMin,
           .want = Verdict::kWait},
           {.name = "30 minutes old", .start_ms = kNow - 20 * kMin, .now_ms = kNow + 29 * kMin},
           {.name = "backfilled behind it", .start_ms = kNow - 20 * kMin, .behind = "default/head"},
           {.name = "lost exactly 5 minutes", .start_ms = kNow - 5 * kMin},
           {.name = "patience off", .start_ms = kNow - 20 * kMin, .patience_ms = 0}}) {
    core::SnapshotBuilder b;
    b.UpsertNode(GpuNode("a", 4));
    const int32_t priority = row.behind.empty() ? 40 : 60;
    b.UpsertPod(RunOnA({.name = "victim", .gpus_per_pod = 4, .priority = priority}, row.start_ms,
                       row.checkpoint_ms, row.behind));
    b.UpsertPod(testing::GatedGang(
        {.name = "head", .gpus_per_pod = 4, .priority = 60, .created_ms = kNow - kMin})[0]);
    AdmissionOptions o;
    o.now_ms = row.now_ms;
    o.rules.patience_ms = row.patience_ms;
    const RoundResult r = RunAdmissionRound(*b.Build(), o);
    const GangDecision* head = FindDecision(r, "default/head");
    ASSERT_NE(head, nullptr);
    EXPECT_EQ(head->verdict, row.want) << row.name << ": " << head->reason;
    EXPECT_EQ(head->patient_until_ms, row.want == Verdict::kWait ? kNow + 29 * kMin : 0);
    if (row.want == Verdict::kPreempt) {
      EXPECT_EQ(head->victims, std::vector<std::string>{"default/victim"}) << row.name;
    } else {
      EXPECT_TRUE(head->victims.empty()) << row.name;
      EXPECT_NE(head->reason.find("preempting now would lose "), std::string::npos) << head->reason;
    }
  }
  core::SnapshotBuilder b;
  b.UpsertNode(GpuNode("a", 4));
  b.UpsertPod(
      RunOnA({.name = "victim", .gpus_per_pod = 4, .priority = 40}, kNow - 20 * kMin, 0, ""));
  b.UpsertPod(testing::GatedGang(
      {.name = "head", .gpus_per_pod = 4, .priority = 60, .created_ms = kNow - kMin})[0]);
  AdmissionOptions o;
  o.now_ms = kNow;
  EXPECT_EQ(FindDecision(RunAdmissionRound(*b.Build(), o), "default/head")->reason,
            "needs 4 GPUs on 1 node; no node has room for one of its pods; preempting now would "
            "lose 20m of a run's work: it waits for capacity or a checkpoint, until 30m after its "
            "creation");
}

// Patience looks for victims it may take at once: on two nodes, a 4-GPU gang that lost 6 minutes
// is the cheapest victim (fewer slots), but an 8-GPU one that checkpointed 3 minutes ago frees
// enough too, and is taken at once. A later gang does not take what a patient one spared (without
// the claim, `low` would take `four` or `other`).
TEST(PatienceTest, APatientGangTakesCheapVictimsAndKeepsDearOnes) {
  constexpr int64_t kMin = 60'000;
  constexpr int64_t kNow = 100 * kMin;
  core::SnapshotBuilder b;
  b.UpsertNode(GpuNode("a", 8));
  b.UpsertNode(GpuNode("b", 8));
  core::PodInfo four =
      RunOnA({.name = "four", .gpus_per_pod = 4, .priority = 10}, kNow - 6 * kMin, 0, "");
  b.UpsertPod(four);
  core::PodInfo eight = RunOnA({.name = "eight", .gpus_per_pod = 8, .priority = 10},
                               kNow - 20 * kMin, kNow - 3 * kMin, "");
  eight.node = eight.placement = "b";
  b.UpsertPod(eight);
  b.UpsertPod(testing::GatedGang(
      {.name = "head", .gpus_per_pod = 8, .priority = 60, .created_ms = kNow - kMin})[0]);
  AdmissionOptions o;
  o.now_ms = kNow;
  RoundResult r = RunAdmissionRound(*b.Build(), o);
  ASSERT_NE(FindDecision(r, "default/head"), nullptr);
  EXPECT_EQ(FindDecision(r, "default/head")->victims, std::vector<std::string>{"default/eight"});

  // `eight` gone, a pinned gang on b and another dear gang beside `four` on a: head waits, and
  // `low` (older: not patient) does not take the victims it spared.
  b.RemovePod(eight.uid);
  core::PodInfo pinned = RunOnA(
      {.name = "pinned", .gpus_per_pod = 8, .priority = 99, .preemptible = false}, kNow, 0, "");
  pinned.node = pinned.placement = "b";
  b.UpsertPod(pinned);
  b.UpsertPod(RunOnA({.name = "other", .gpus_per_pod = 4, .priority = 10}, kNow - 6 * kMin, 0, ""));
  b.UpsertPod(testing::GatedGang(
      {.name = "low", .gpus_per_pod = 4, .priority = 40, .created_ms = kNow - 60 * kMin})[0]);
  r = RunAdmissionRound(*b.Build(), o);
  ASSERT_NE(FindDecision(r, "default/head"), nullptr);
  ASSERT_NE(FindDecision(r, "default/low"), nullptr);
  EXPECT_EQ(FindDecision(r, "default/head")->verdict, Verdict::kWait);
  EXPECT_EQ(FindDecision(r, "default/low")->verdict, Verdict::kWait)
      << FindDecision(r, "default/low")->reason;
  EXPECT_TRUE(FindDecision(r, "default/low")->victims.empty());
}

}  // namespace
}  // namespace phalanx::preemption
