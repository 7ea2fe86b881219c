// Preemption through the real kube-scheduler and phalanx-extender: victims are whole gangs, the
// preemptor runs on the nodes reserved for it once the master deletes them and they have finished
// terminating, backfilled gangs go first, and a non-preemptible pod is never a victim, neither of
// the admission loop nor of kube-scheduler's own preemption (the extender's preempt verb).
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "tests/extender_e2e/harness.h"

namespace phalanx::e2e {
namespace {

using Nodes = std::vector<std::string>;

class PreemptionE2e : public ExtenderE2eTest {
 protected:
  bool AnyMarked() {
    for (const PodState& p : Pods()) {
      if (p.info.preempt_requested) return true;
    }
    return false;
  }
};

// A 2-pod victim gang spread over both nodes is marked entirely although the preemptor needs one
// node; the preemptor waits for its victims and then runs on the node reserved for it.
TEST_F(PreemptionE2e, WholeVictimGangIsMarkedAndHeadRunsOnReservedNode) {
  AddNodes("n", 2, 4);
  Submit({.name = "low", .pods = 2, .gpus = 4, .priority = 40, .position = 1});
  StartExtender(4);
  ASSERT_TRUE(WaitUntil([&] { return Running("low"); }));
  ASSERT_EQ(BoundNodes("low"), (Nodes{NodeName("n", 0), NodeName("n", 1)}));

  Submit({.name = "high", .gpus = 4, .priority = 60, .position = 2});
  ASSERT_TRUE(WaitUntil([&] { return Marked("low"); }));
  EXPECT_EQ(PreemptedBy("low"), Key("high"));
  QueueEntry head = Queued("high");
  EXPECT_EQ(head.state, "PREEMPT");
  ASSERT_EQ(head.nodes.size(), 1u);
  const std::string reserved = head.nodes[0];
  Holds(
      "high stays gated and unplaced while its victims run",
      [&] {
        for (const PodState& p : GangPods("high")) {
          if (!p.info.gated || !p.info.placement.empty()) return false;
        }
        return Running("low");
      },
      absl::Seconds(3));

  EXPECT_EQ(RequeueVictims(), Nodes{"low"});
  ASSERT_TRUE(WaitUntil([&] { return Running("high"); }));
  EXPECT_EQ(BoundNodes("high"), Nodes{reserved});
  Settle();
  EXPECT_TRUE(Gated("low"));  // 8 GPUs on 2 nodes no longer fit.
  EXPECT_EQ(Queued("low").state, "WAIT");
}

// Victims that take 10 s to terminate, as under a kubelet with a grace period: their nodes stay
// full until they are gone (the Watcher counts terminating pods against their nodes, as the engine
// does), so the preemptor stays gated and unplaced meanwhile, and runs once they are gone.
TEST_F(PreemptionE2e, PreemptorWaitsWhileVictimsTerminate) {
  AddNodes("n", 2, 4);
  Submit({.name = "low", .pods = 2, .gpus = 4, .priority = 40, .position = 1, .exit_seconds = 10});
  StartExtender(4);
  ASSERT_TRUE(WaitUntil([&] { return Running("low"); }));
  Submit({.name = "high", .pods = 2, .gpus = 4, .priority = 60, .position = 2});
  ASSERT_TRUE(WaitUntil([&] { return Marked("low"); }));

  for (const PodState& p : GangPods("low")) {
    ASSERT_TRUE(client_->Delete(kube::kPods, ns_, p.info.name).ok());
  }
  Holds(
      "low terminates while high stays gated and unplaced",
      [&] {
        bool terminating = false;
        for (const PodState& p : Pods()) {
          terminating |= p.info.gang == "low" && p.deleting;
          if (p.info.gang == "high" && (!p.info.gated || !p.info.placement.empty())) return false;
        }
        return terminating;
      },
      absl::Seconds(3));
  ASSERT_NO_FATAL_FAILURE(Finish("low"));
  ASSERT_TRUE(WaitUntil([&] { return Running("high"); }));
  EXPECT_EQ(BoundNodes("high"), (Nodes{NodeName("n", 0), NodeName("n", 1)}));
}

// Two equal candidates: "reg" started last (least lost work) but "bf" was admitted as backfill, so
// bf is the victim.
TEST_F(PreemptionE2e, BackfilledGangIsPreemptedFirst) {
  AddNodes("n", 2, 4);
  Submit({.name = "pin",
          .gpus = 1,
          .priority = 40,
          .position = 1,
          .preemptible = false,
          .task = "notebook"});
  StartExtender(4);
  ASSERT_TRUE(WaitUntil([&] { return Running("pin"); }));
  const std::string pin_node = BoundNodes("pin").at(0);
  const std::string other = pin_node == NodeName("n", 0) ? NodeName("n", 1) : NodeName("n", 0);

  // A blocked head (the notebook is not preemptible) lets bf backfill behind it.
  Submit({.name = "wide", .pods = 2, .gpus = 4, .priority = 60, .position = 2});
  ExpectReason("wide",
               "needs 8 GPUs on 2 nodes; 4 free on 1 fitting node; no set of lower-priority "
               "preemptible gangs frees enough");
  Submit({.name = "bf", .gpus = 4, .priority = 50, .position = 3});
  ASSERT_TRUE(WaitUntil([&] { return Running("bf"); }));
  EXPECT_TRUE(GangPods("bf").at(0).info.backfilled);
  EXPECT_EQ(BoundNodes("bf"), Nodes{other});

  Finish("wide");
  Finish("pin");
  absl::SleepFor(absl::Seconds(3));  // bf has now run seconds longer than reg will have.
  Submit({.name = "reg", .gpus = 4, .priority = 50, .position = 4});
  ASSERT_TRUE(WaitUntil([&] { return Running("reg"); }));
  EXPECT_FALSE(GangPods("reg").at(0).info.backfilled);
  EXPECT_EQ(BoundNodes("reg"), Nodes{pin_node});

  Submit({.name = "head", .gpus = 4, .priority = 60, .position = 5});
  ASSERT_TRUE(WaitUntil([&] { return AnyMarked(); }));
  EXPECT_TRUE(Marked("bf"));
  EXPECT_EQ(PreemptedBy("bf"), Key("head"));
  Holds(
      "reg is not marked", [&] { return !Marked("reg"); }, absl::Seconds(3));
  EXPECT_EQ(RequeueVictims(), Nodes{"bf"});
  ASSERT_TRUE(WaitUntil([&] { return Running("head"); }));
  EXPECT_EQ(BoundNodes("head"), Nodes{other});
  EXPECT_TRUE(Running("reg"));
}

// The admission loop: a non-preemptible pod is never a victim, even when it is the cheapest one;
// when only its removal would help, nothing is marked.
TEST_F(PreemptionE2e, NonPreemptiblePodIsNeverAVictimOfAdmission) {
  AddNodes("n", 2, 4);
  Submit({.name = "low", .gpus = 4, .priority = 50, .position = 1});
  StartExtender(4);
  ASSERT_TRUE(WaitUntil([&] { return Running("low"); }));
  absl::SleepFor(absl::Seconds(2));  // np starts later: less lost work, lower priority.
  Submit({.name = "np",
          .gpus = 4,
          .priority = 40,
          .position = 2,
          .preemptible = false,
          .task = "notebook"});
  ASSERT_TRUE(WaitUntil([&] { return Running("np"); }));

  Submit({.name = "wide", .pods = 2, .gpus = 4, .priority = 60, .position = 3});
  ExpectReason(
      "wide",
      "needs 8 GPUs on 2 nodes; no node has room for one of its pods; no set of lower-priority "
      "preemptible gangs frees enough");
  Holds(
      "nothing is marked for wide", [&] { return !AnyMarked(); }, absl::Seconds(4));
  Finish("wide");

  const Nodes low_node = BoundNodes("low");
  Submit({.name = "narrow", .gpus = 4, .priority = 60, .position = 4});
  ASSERT_TRUE(WaitUntil([&] { return AnyMarked(); }));
  EXPECT_TRUE(Marked("low"));
  Holds(
      "np is not marked", [&] { return !Marked("np"); }, absl::Seconds(3));
  EXPECT_EQ(RequeueVictims(), Nodes{"low"});
  ASSERT_TRUE(WaitUntil([&] { return Running("narrow"); }));
  EXPECT_EQ(BoundNodes("narrow"), low_node);
  EXPECT_TRUE(Running("np"));
}

// kube-scheduler's own preemption (an ungated pod whose PriorityClass may preempt): on its own it
// would evict the lowest-priority victim, the non-preemptible np; the extender's preempt verb
// drops np's node, so low is evicted instead.
TEST_F(PreemptionE2e, KubeSchedulerPreemptionSkipsNonPreemptiblePods) {
  AddNodes("n", 2, 4);
  Submit({.name = "low", .gpus = 4, .priority = 50, .position = 1});
  Submit({.name = "np",
          .gpus = 4,
          .priority = 40,
          .position = 2,
          .preemptible = false,
          .task = "notebook"});
  StartExtender(4);
  ASSERT_TRUE(WaitUntil([&] { return Running("low") && Running("np"); }));
  const Nodes low_node = BoundNodes("low");
  const Nodes np_node = BoundNodes("np");
  const std::string np_uid = GangPods("np").at(0).info.uid;

  SubmitUngated("intruder", 4, PriorityClass(60, /*preempt_lower_priority=*/true));
  ASSERT_TRUE(WaitUntil([&] { return !BoundNodes("intruder").empty(); })) << "intruder never bound";
  EXPECT_EQ(BoundNodes("intruder"), low_node);
  EXPECT_TRUE(GangPods("low").empty());  // Evicted by kube-scheduler.
  ASSERT_EQ(GangPods("np").size(), 1u);
  EXPECT_EQ(GangPods("np")[0].info.uid, np_uid);
  EXPECT_EQ(BoundNodes("np"), np_node);
}

// Pods phalanx-master did not create are victims only when they opt in
// (phalanx.io/preemptible=true), and the extender then deletes them itself: nobody else acts on
// the mark.
TEST_F(PreemptionE2e, PodsOfOtherToolsAreEvictedOnlyWhenTheyOptIn) {
  AddNodes("n", 2, 4);
  StartExtender(4);
  SubmitUngated("theirs", 4, PriorityClass(10));
  SubmitUngated("opted-in", 4, PriorityClass(10), /*preemptible=*/true);
  ASSERT_TRUE(WaitUntil([&] {
    return !BoundNodes("theirs").empty() && !BoundNodes("opted-in").empty();
  })) << "the pods of other tools never bound";
  const Nodes freed = BoundNodes("opted-in");
  const Nodes kept = BoundNodes("theirs");
  Submit({.name = "head", .gpus = 4, .priority = 60, .position = 1});
  ASSERT_TRUE(WaitUntil([&] { return Running("head"); })) << "the head never runs";
  EXPECT_EQ(BoundNodes("head"), freed);
  EXPECT_TRUE(GangPods("opted-in").empty());
  EXPECT_EQ(BoundNodes("theirs"), kept);
}

}  // namespace
}  // namespace phalanx::e2e
