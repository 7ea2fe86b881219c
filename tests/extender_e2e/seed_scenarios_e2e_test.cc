// The SeedScenarios of tests/preemption/seed_scenarios_test.cc, replayed through the real
// kube-scheduler and phalanx-extender: placements, verdicts and pending reasons must be the ones
// the pure engine predicts. Node names sort like the engine test's (pool-a-0 < pool-a-1 < ...), and
// queue positions stand in for its creation times (creationTimestamp has one-second resolution).
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "tests/extender_e2e/harness.h"

namespace phalanx::e2e {
namespace {

using Nodes = std::vector<std::string>;

class SeedScenariosE2e : public ExtenderE2eTest {
 protected:
  // True while the gang is gated and none of its pods holds a placement.
  bool Waiting(const std::string& gang) {
    for (const PodState& p : GangPods(gang)) {
      if (!p.info.gated || !p.info.placement.empty()) return false;
    }
    return Gated(gang);
  }
};

TEST_F(SeedScenariosE2e, TwoSixteenGpuJobsOnSixteenGpus) {
  AddNodes("n", 2, 8);
  Submit({.name = "exp-1", .pods = 2, .gpus = 8, .position = 1});
  Submit({.name = "exp-2", .pods = 2, .gpus = 8, .position = 2});
  StartExtender(8);
  ASSERT_TRUE(WaitUntil([&] { return Running("exp-1"); }));
  EXPECT_EQ(BoundNodes("exp-1"), (Nodes{NodeName("n", 0), NodeName("n", 1)}));
  ExpectReason(
      "exp-2",
      "needs 16 GPUs on 2 nodes; no node has room for one of its pods; no set of lower-priority "
      "preemptible gangs frees enough");
  EXPECT_EQ(Queued("exp-2").state, "WAIT");
  Holds(
      "exp-2 waits gated, holding nothing", [&] { return Waiting("exp-2"); }, absl::Seconds(5));

  Finish("exp-1");
  ASSERT_TRUE(WaitUntil([&] { return Running("exp-2"); }));
  EXPECT_EQ(BoundNodes("exp-2"), (Nodes{NodeName("n", 0), NodeName("n", 1)}));
}

TEST_F(SeedScenariosE2e, FourNodeJobOnThreeNodes) {
  AddNodes("a", 3, 4);
  Submit({.name = "big", .pods = 4, .gpus = 4, .priority = 60, .position = 1});
  Submit({.name = "small", .pods = 2, .gpus = 4, .position = 2});
  StartExtender(4);
  ASSERT_TRUE(WaitUntil([&] { return Running("small"); }));
  EXPECT_EQ(BoundNodes("small"), (Nodes{NodeName("a", 0), NodeName("a", 1)}));
  ExpectReason("big",
               "larger than the pool: needs 16 GPUs on 4 nodes; 12 in the whole pool on 3 fitting "
               "nodes");
  EXPECT_EQ(Queued("big").state, "INFEASIBLE");
  Holds(
      "big waits gated, holding nothing, and small keeps running",
      [&] { return Waiting("big") && Running("small"); }, absl::Seconds(5));

  // A fourth node arrives: big can run now, and it outranks small.
  AddNodes("b", 1, 4);
  ASSERT_TRUE(WaitUntil([&] { return Marked("small"); }));
  EXPECT_EQ(PreemptedBy("small"), Key("big"));
  EXPECT_EQ(RequeueVictims(), (Nodes{"small"}));
  ASSERT_TRUE(WaitUntil([&] { return Running("big"); }));
  EXPECT_EQ(BoundNodes("big"),
            (Nodes{NodeName("a", 0), NodeName("a", 1), NodeName("a", 2), NodeName("b", 0)}));
  Settle();
  EXPECT_TRUE(Waiting("small"));
  EXPECT_EQ(Queued("small").state, "WAIT");
}

// Seeds/001 "Task Priority" in Kubernetes terms (priorities 1, 2, 3 -> 60, 50, 40) on two 4-GPU
// nodes with maxSlotsPerPod 4, as scripts/demo runs it.
TEST_F(SeedScenariosE2e, SevenStepPriorityExample) {
  AddNodes("n", 2, 4);
  auto asha = [](int i) { return absl::StrFormat("asha-%02d", i); };
  // Running and gated ASHA trials (live pods; every trial is a gang of one).
  auto count_asha = [&](bool bound) {
    int n = 0;
    for (const PodState& p : Pods()) {
      n += p.Live() && absl::StartsWith(p.info.gang, "asha-") && !p.info.node.empty() == bound;
    }
    return n;
  };

  // 1. A priority-2 ASHA experiment, 20 one-slot trials: 8 run and use all 8 GPUs.
  for (int i = 0; i < 20; ++i) {
    Submit({.name = asha(i), .gpus = 1, .priority = 50, .position = 1 + i});
  }
  StartExtender(4);
  ASSERT_TRUE(WaitUntil([&] { return count_asha(true) == 8; }));
  Settle();
  EXPECT_EQ(count_asha(true), 8);
  EXPECT_EQ(count_asha(false), 12);

  // 2. A priority-1 4-slot experiment: 4 trials, all on one node, are marked for it.
  Submit({.name = "dist-1", .gpus = 4, .priority = 60, .position = 21});
  ASSERT_TRUE(WaitUntil([&] {
    int marked = 0;
    for (const PodState& p : Pods()) marked += p.Live() && p.info.preempt_requested;
    return marked == 4;
  }));
  std::vector<std::string> victim_nodes;
  for (const PodState& p : Pods()) {
    if (!p.info.preempt_requested) continue;
    EXPECT_TRUE(absl::StartsWith(p.info.gang, "asha-")) << p.info.name;
    EXPECT_EQ(p.info.preempted_by, Key("dist-1")) << p.info.name;
    victim_nodes.push_back(p.info.node);
  }
  ASSERT_EQ(victim_nodes.size(), 4u);
  EXPECT_EQ(victim_nodes, Nodes(4, victim_nodes[0]));
  EXPECT_EQ(Queued("dist-1").state, "PREEMPT");
  EXPECT_EQ(Queued("dist-1").nodes, Nodes{victim_nodes[0]});
  EXPECT_EQ(RequeueVictims().size(), 4u);
  ASSERT_TRUE(WaitUntil([&] { return Running("dist-1"); }));
  EXPECT_EQ(BoundNodes("dist-1"), Nodes{victim_nodes[0]});
  Settle();
  EXPECT_EQ(count_asha(true), 4);

  // 3. A priority-3 notebook (not preemptible) waits while the experiments want every GPU and runs
  //    as soon as they need at most 7.
  Submit({.name = "notebook",
          .priority = 40,
          .position = 22,
          .preemptible = false,
          .task = "notebook"});
  Settle();
  EXPECT_TRUE(Gated("notebook"));
  EXPECT_EQ(Queued("notebook").state, "WAIT");
  for (int round = 0; round < 20 && !Running("notebook"); ++round) {
    int i = 0;
    while (i < 20 && !Running(asha(i))) ++i;
    ASSERT_LT(i, 20) << "no trial runs";
    Finish(asha(i));  // A trial completes; queued trials go first.
    Settle();
    const int queued = count_asha(false);
    EXPECT_EQ(Running("notebook"), queued == 0 && count_asha(true) < 4)
        << "round " << round << ": " << queued << " trials queued";
  }
  ASSERT_TRUE(Running("notebook"));

  // 4. ASHA and the distributed experiment complete; the notebook keeps running.
  for (int i = 0; i < 20; ++i) {
    if (!GangPods(asha(i)).empty()) Finish(asha(i));
  }
  Finish("dist-1");
  Settle();
  EXPECT_TRUE(Running("notebook"));

  // 5. A priority-1 8-slot experiment cannot run: the notebook is not preemptible.
  Submit({.name = "dist-2", .pods = 2, .gpus = 4, .priority = 60, .position = 23});
  ExpectReason("dist-2",
               "needs 8 GPUs on 2 nodes; 4 free on 1 fitting node; no set of lower-priority "
               "preemptible gangs frees enough");
  Settle();
  EXPECT_TRUE(Gated("dist-2"));
  EXPECT_FALSE(Marked("notebook"));

  // 6. A priority-2 4-slot experiment backfills onto the idle GPUs.
  Submit({.name = "dist-3", .gpus = 4, .priority = 50, .position = 24});
  ASSERT_TRUE(WaitUntil([&] { return Running("dist-3"); }));
  EXPECT_TRUE(GangPods("dist-3").at(0).info.backfilled);
  EXPECT_NE(BoundNodes("dist-3"), BoundNodes("notebook"));

  // 7. The notebook is killed: the backfilled dist-3 is marked for dist-2, which then runs on both
  //    nodes; when dist-2 completes, dist-3 restarts.
  Finish("notebook");
  ASSERT_TRUE(WaitUntil([&] { return Marked("dist-3"); }));
  EXPECT_EQ(PreemptedBy("dist-3"), Key("dist-2"));
  EXPECT_EQ(RequeueVictims(), (Nodes{"dist-3"}));
  ASSERT_TRUE(WaitUntil([&] { return Running("dist-2"); }));
  EXPECT_EQ(BoundNodes("dist-2"), (Nodes{NodeName("n", 0), NodeName("n", 1)}));
  Settle();
  EXPECT_TRUE(Gated("dist-3"));
  Finish("dist-2");
  ASSERT_TRUE(WaitUntil([&] { return Running("dist-3"); }));
  EXPECT_FALSE(GangPods("dist-3").at(0).info.backfilled);
}

TEST_F(SeedScenariosE2e, MaxSlotsPerPodMixedNodes) {
  AddNodes("n4", 2, 4);
  AddNodes("n8", 1, 8);
  Submit({.name = "one", .gpus = 1, .position = 1});
  Submit({.name = "eight", .pods = 2, .gpus = 4, .position = 2});
  Submit({.name = "four", .gpus = 4, .position = 3});
  Submit({.name = "one-more", .gpus = 1, .position = 4});
  StartExtender(4);
  ASSERT_TRUE(WaitUntil([&] {
    return Running("one") && Running("eight") && Running("four") && Running("one-more");
  }));
  EXPECT_EQ(BoundNodes("one"), Nodes{NodeName("n4", 0)});
  EXPECT_EQ(BoundNodes("eight"), (Nodes{NodeName("n4", 1), NodeName("n8", 0)}));
  EXPECT_EQ(BoundNodes("four"), Nodes{NodeName("n8", 0)});
  EXPECT_EQ(BoundNodes("one-more"), Nodes{NodeName("n4", 0)});

  // A 4-slot gang now waits: 2 GPUs are free, both on the first 4-GPU node.
  Submit({.name = "late", .gpus = 4, .position = 5});
  ExpectReason(
      "late",
      "needs 4 GPUs on 1 node; no node has room for one of its pods; no set of lower-priority "
      "preemptible gangs frees enough");
  EXPECT_TRUE(Gated("late"));
}

}  // namespace
}  // namespace phalanx::e2e
