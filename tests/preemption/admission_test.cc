// Admission rounds: queue order, backfill rules and reservations for blocked heads.
#include "preemption/admission.h"

#include <gtest/gtest.h>

#include "preemption/queue.h"
#include "tests/testing/fixtures.h"

namespace phalanx::preemption {
namespace {

using testing::Cluster;
using testing::FindDecision;
using testing::GpuNode;

TEST(QueueTest, PriorityThenPositionThenCreationThenKey) {
  core::Gang a{.key = "ns/a", .priority = 50, .queue_position = 2, .creation_ms = 1};
  core::Gang b{.key = "ns/b", .priority = 60, .queue_position = 9, .creation_ms = 9};
  core::Gang c{.key = "ns/c", .priority = 50, .queue_position = 1, .creation_ms = 5};
  core::Gang d{.key = "ns/d", .priority = 50, .queue_position = 1, .creation_ms = 5};
  core::Gang e{.key = "ns/e", .priority = 50, .creation_ms = 0};  // no position: last
  std::vector<core::Gang> gangs = {a, b, c, d, e};
  for (core::Gang& g : gangs) g.gated = true;
  std::vector<std::string> order;
  for (const core::Gang* g : PendingQueue(gangs)) order.push_back(g->key);
  EXPECT_EQ(order, (std::vector<std::string>{"ns/b", "ns/c", "ns/d", "ns/a", "ns/e"}));
}

TEST(AdmissionTest, NonPreemptibleLowerWorkCannotPassABlockedHead) {
  Cluster c;
  c.AddNode(GpuNode("a", 8));
  c.Submit({.name = "pinned", .gpus_per_pod = 2, .priority = 99, .preemptible = false});
  c.Step({});
  // head needs 8 on one node; 6 free and the pinned pod cannot be preempted: head waits.
  c.Submit({.name = "head", .gpus_per_pod = 8, .priority = 60, .created_ms = 1});
  c.Submit(
      {.name = "cmd", .gpus_per_pod = 1, .priority = 40, .created_ms = 2, .preemptible = false});
  c.Submit({.name = "trial", .gpus_per_pod = 1, .priority = 40, .created_ms = 3});
  c.Submit({.name = "peer", .gpus_per_pod = 1, .priority = 60, .created_ms = 4});
  RoundResult r = c.Step({});
  EXPECT_EQ(FindDecision(r, "default/head")->verdict, Verdict::kWait);
  // Not preemptible: the head could never take it back.
  EXPECT_EQ(FindDecision(r, "default/cmd")->verdict, Verdict::kWait);
  EXPECT_EQ(FindDecision(r, "default/cmd")->reason,
            "waiting behind default/head (priority 60), which needs the capacity it would use");
  // Preemptible and lower: may use the idle GPUs as backfill.
  EXPECT_EQ(FindDecision(r, "default/trial")->verdict, Verdict::kBackfill);
  // Equal priority and preemptible: it runs on the node the head holds, as the head's to take back.
  EXPECT_EQ(FindDecision(r, "default/peer")->verdict, Verdict::kBackfill);
  EXPECT_EQ(FindDecision(r, "default/peer")->backfilled_behind, "default/head");
}

TEST(AdmissionTest, AGangWithUnreadableLabelsIsInfeasibleAndBlocksNobody) {
  core::SnapshotBuilder b;
  b.UpsertNode(GpuNode("a", 8));
  core::PodInfo bad = testing::GatedGang({.name = "bad", .gpus_per_pod = 4, .priority = 90})[0];
  bad.contract_error = "metadata.labels[\"phalanx.io/gang-size\"]: invalid gang size \"two\"";
  b.UpsertPod(bad);
  b.UpsertPod(testing::GatedGang({.name = "ok", .gpus_per_pod = 8, .priority = 10})[0]);
  RoundResult r = RunAdmissionRound(*b.Build(), {});
  EXPECT_EQ(FindDecision(r, "default/bad")->verdict, Verdict::kInfeasible);
  EXPECT_EQ(FindDecision(r, "default/bad")->reason,
            "a pod's phalanx labels cannot be read: " + bad.contract_error);
  EXPECT_EQ(FindDecision(r, "default/ok")->verdict, Verdict::kAdmit);
}

TEST(AdmissionTest, CapacityHeldOutsideTheSnapshotIsNotPlanned) {
  core::SnapshotBuilder b;
  b.UpsertNode(GpuNode("a", 8));
  b.UpsertNode(GpuNode("b", 8));
  b.UpsertPod(testing::GatedGang({.name = "g", .gpus_per_pod = 4})[0]);
  auto snap = b.Build();
  AdmissionOptions opts;
  opts.held = {core::Resources(0, 0, 6), core::Resources(0, 0, 8)};
  RoundResult r = RunAdmissionRound(*snap, opts);
  EXPECT_EQ(FindDecision(r, "default/g")->verdict, Verdict::kWait);
  opts.held[0] = core::Resources(0, 0, 4);
  r = RunAdmissionRound(*snap, opts);
  ASSERT_EQ(FindDecision(r, "default/g")->verdict, Verdict::kAdmit);
  EXPECT_EQ(FindDecision(r, "default/g")->plan[0].node, "a");
}

TEST(AdmissionTest, SamePriorityWorkPassesABlockedHeadOffTheNodesItHolds) {
  Cluster c;
  c.AddNode(GpuNode("a", 8));
  c.AddNode(GpuNode("b", 8));
  c.Submit({.name = "x", .gpus_per_pod = 6});
  c.Submit({.name = "y", .gpus_per_pod = 4, .created_ms = 1});
  c.Step({});
  ASSERT_EQ(c.NodesOf("default/x"), std::vector<std::string>{"a"});
  ASSERT_EQ(c.NodesOf("default/y"), std::vector<std::string>{"b"});
  // The head needs a whole node and cannot preempt its peers: it holds b, the most free node.
  c.Submit({.name = "head", .gpus_per_pod = 8, .created_ms = 2});
  c.Submit({.name = "small", .gpus_per_pod = 2, .created_ms = 3});
  c.Submit({.name = "wide", .gpus_per_pod = 4, .created_ms = 4});
  c.Submit(
      {.name = "cmd", .gpus_per_pod = 1, .priority = 40, .created_ms = 5, .preemptible = false});
  RoundResult r = c.Step({});
  EXPECT_EQ(FindDecision(r, "default/head")->verdict, Verdict::kWait);
  const GangDecision* small = FindDecision(r, "default/small");
  EXPECT_EQ(small->verdict, Verdict::kBackfill);
  EXPECT_EQ(small->reason, "backfilled behind default/head");
  EXPECT_TRUE(small->backfilled_behind.empty());
  EXPECT_EQ(c.NodesOf("default/small"), std::vector<std::string>{"a"});
  // Off the hold nothing is left for it: it runs on b's held GPUs, provisionally.
  const GangDecision* wide = FindDecision(r, "default/wide");
  EXPECT_EQ(wide->verdict, Verdict::kBackfill);
  EXPECT_EQ(wide->backfilled_behind, "default/head");
  EXPECT_EQ(wide->reason,
            "backfilled behind default/head on nodes it holds; it takes them back when it can "
            "start");
  EXPECT_EQ(c.NodesOf("default/wide"), std::vector<std::string>{"b"});
  // Lower and not preemptible: it may not pass the head on any node the head may use.
  EXPECT_EQ(FindDecision(r, "default/cmd")->verdict, Verdict::kWait);
  // Once y ends, the head takes b back from the provisional gang at once, and starts when it is
  // gone.
  c.Finish("default/y");
  r = c.Step({});
  EXPECT_EQ(FindDecision(r, "default/head")->verdict, Verdict::kPreempt);
  EXPECT_EQ(FindDecision(r, "default/head")->victims, std::vector<std::string>{"default/wide"});
  c.RequeueMarkedVictims();
  r = c.Step({});
  EXPECT_EQ(FindDecision(r, "default/head")->verdict, Verdict::kAdmit);
  EXPECT_EQ(c.NodesOf("default/head"), std::vector<std::string>{"b"});
  EXPECT_EQ(FindDecision(r, "default/wide")->verdict, Verdict::kWait);
}

TEST(AdmissionTest, PeersOfABlockedHeadBackfillOnItsHoldOnlyProvisionally) {
  Cluster c;
  c.AddNode(GpuNode("a", 8));
  c.Submit({.name = "x", .gpus_per_pod = 6});
  c.Step({});
  c.Submit({.name = "head", .gpus_per_pod = 8, .created_ms = 1});
  c.Submit({.name = "peer", .gpus_per_pod = 1, .created_ms = 2});
  c.Submit({.name = "pinned-peer", .gpus_per_pod = 1, .created_ms = 3, .preemptible = false});
  AdmissionOptions no_provisional;
  no_provisional.rules.provisional_backfill = false;
  RoundResult r = RunAdmissionRound(*c.snapshot(), no_provisional);
  EXPECT_EQ(FindDecision(r, "default/head")->verdict, Verdict::kWait);
  EXPECT_EQ(FindDecision(r, "default/peer")->verdict, Verdict::kWait);
  r = c.Step({});
  EXPECT_EQ(FindDecision(r, "default/peer")->verdict, Verdict::kBackfill);
  // The head could not take it back.
  EXPECT_EQ(FindDecision(r, "default/pinned-peer")->verdict, Verdict::kWait);
}

// On node a (8 GPUs), 6 taken and an 8-GPU head (priority 50) blocked; `peer` (1 GPU, of
// `priority`) was preempted `preemptions` times. Returns the round's decision for it.
class BlockedHeadAndPeer {
 public:
  BlockedHeadAndPeer() {
    c_.AddNode(GpuNode("a", 8));
    c_.Submit({.name = "x", .gpus_per_pod = 6});
    c_.Step({});
    c_.Submit({.name = "head", .gpus_per_pod = 8, .created_ms = 1});
    opts_.now_ms = c_.now_ms;
  }
  AdmissionOptions& opts() { return opts_; }
  GangDecision Decide(int32_t priority, int64_t preemptions) {
    core::SnapshotBuilder b;
    b.UpsertNode(GpuNode("a", 8));
    c_.snapshot()->ForEachPod([&](const core::PodInfo& p) { b.UpsertPod(p); });
    core::PodInfo peer =
        testing::GatedGang({.name = "peer", .priority = priority, .created_ms = 2})[0];
    for (int64_t k = preemptions; k > 0; --k) peer.preempted_ms.push_back(c_.now_ms - k * 1000);
    b.UpsertPod(peer);
    return *FindDecision(RunAdmissionRound(*b.Build(), opts_), "default/peer");
  }

 private:
  Cluster c_;
  AdmissionOptions opts_;
};

// Of the head's priority or lower, a gang preempted max_preemptions times keeps off the
// nodes held for a blocked gang: there it would be taken back whatever its protection.
TEST(AdmissionTest, AGangPreemptedOftenIsNotBackfilledOnHeldNodes) {
  BlockedHeadAndPeer w;
  w.opts().rules.max_preemptions = 2;
  for (int32_t priority : {50, 10}) {
    for (int64_t preemptions : {1, 2}) {
      const GangDecision d = w.Decide(priority, preemptions);
      EXPECT_EQ(d.verdict, preemptions < 2 ? Verdict::kBackfill : Verdict::kWait)
          << priority << " " << preemptions << ": " << d.reason;
      if (preemptions == 2 && priority == 10) {
        EXPECT_EQ(d.reason, "preempted 2 times: it waits for capacity no blocked gang holds");
      }
    }
  }
}

// A gang at its preemption limit cannot be taken back, so it does not pass a blocked gang of
// higher priority on the nodes that gang may use.
TEST(AdmissionTest, AGangAtItsPreemptionLimitDoesNotPassAHigherHead) {
  BlockedHeadAndPeer w;
  w.opts().rules.max_preemptions = 0;  // Only the limit: no last-resort tier, no keeping off holds.
  w.opts().rules.preemption_limit = 2;
  EXPECT_EQ(w.Decide(10, 1).verdict, Verdict::kBackfill);
  const GangDecision d = w.Decide(10, 2);
  EXPECT_EQ(d.verdict, Verdict::kWait);
  EXPECT_EQ(d.reason,
            "waiting behind default/head (priority 50), which needs the capacity it would use");
}

TEST(AdmissionTest, WorkTakingNoneOfWhatTheHeadLacksPassesIt) {
  Cluster c;
  c.AddNode(GpuNode("a", 8));
  c.Submit({.name = "x", .gpus_per_pod = 6, .priority = 99, .preemptible = false});
  c.Step({});
  c.Submit({.name = "head", .gpus_per_pod = 8, .priority = 60, .created_ms = 1});
  // Lower, not preemptible: neither a GPU task nor ...
  c.Submit({.name = "gpu-cmd",
            .gpus_per_pod = 1,
            .priority = 40,
            .created_ms = 2,
            .preemptible = false});
  // ... a CPU task that leaves the head too little CPU may pass it; a CPU task that leaves enough
  // does, even in strict order.
  core::PodInfo notebook = testing::GatedGang({.name = "notebook",
                                               .gpus_per_pod = 0,
                                               .priority = 40,
                                               .created_ms = 3,
                                               .preemptible = false})[0];
  core::PodInfo greedy = testing::GatedGang({.name = "cpu-greedy",
                                             .gpus_per_pod = 0,
                                             .priority = 40,
                                             .created_ms = 4,
                                             .preemptible = false})[0];
  greedy.requests = testing::PodRequests(61'500, 1LL << 30, 0);  // 500m of 62 CPUs left.
  core::SnapshotBuilder b;
  b.UpsertNode(GpuNode("a", 8));
  c.snapshot()->ForEachPod([&](const core::PodInfo& p) { b.UpsertPod(p); });
  b.UpsertPod(greedy);
  b.UpsertPod(notebook);
  for (bool backfill : {true, false}) {
    AdmissionOptions opts;
    opts.backfill = backfill;
    RoundResult r = RunAdmissionRound(*b.Build(), opts);
    EXPECT_EQ(FindDecision(r, "default/head")->verdict, Verdict::kWait) << backfill;
    EXPECT_EQ(FindDecision(r, "default/gpu-cmd")->verdict, Verdict::kWait) << backfill;
    EXPECT_EQ(FindDecision(r, "default/cpu-greedy")->verdict, Verdict::kWait) << backfill;
    EXPECT_EQ(FindDecision(r, "default/notebook")->verdict, Verdict::kAdmit)
        << backfill << ": " << FindDecision(r, "default/notebook")->reason;
  }
}

// A running one-pod gang on `node`.
core::PodInfo RunningOn(const std::string& name, int64_t gpus, int32_t priority,
                        const std::string& node) {
  core::PodInfo p =
      testing::GatedGang({.name = name, .gpus_per_pod = gpus, .priority = priority})[0];
  p.gated = false;
  p.node = node;
  p.phase = core::PodPhase::kRunning;
  return p;
}

TEST(AdmissionTest, PeersOfABlockedHeadPreemptOnlyOffTheNodesItHolds) {
  core::SnapshotBuilder b;
  b.UpsertNode(GpuNode("a", 8));
  b.UpsertNode(GpuNode("b", 8));
  b.UpsertNode(GpuNode("c", 4));
  b.UpsertPod(RunningOn("x", 6, 50, "a"));
  b.UpsertPod(RunningOn("y", 4, 50, "b"));
  b.UpsertPod(RunningOn("low-b", 4, 10, "b"));
  b.UpsertPod(RunningOn("low-c", 4, 10, "c"));
  // The head needs a whole 8-GPU node; peers hold part of a and b, so no victims make it fit. It
  // holds b, where the least stays once it has taken back what it may (low-b).
  b.UpsertPod(testing::GatedGang({.name = "head", .gpus_per_pod = 8, .created_ms = 1})[0]);
  // A peer may free c (too small for the head) but not clear b.
  b.UpsertPod(testing::GatedGang({.name = "peer-1", .gpus_per_pod = 4, .created_ms = 2})[0]);
  b.UpsertPod(testing::GatedGang({.name = "peer-2", .gpus_per_pod = 4, .created_ms = 3})[0]);
  RoundResult r = RunAdmissionRound(*b.Build(), {});
  EXPECT_EQ(FindDecision(r, "default/head")->verdict, Verdict::kWait);
  const GangDecision* first = FindDecision(r, "default/peer-1");
  EXPECT_EQ(first->verdict, Verdict::kPreempt);
  EXPECT_EQ(first->victims, std::vector<std::string>{"default/low-c"});
  ASSERT_EQ(first->plan.size(), 1u);
  EXPECT_EQ(first->plan[0].node, "c");
  const GangDecision* second = FindDecision(r, "default/peer-2");
  EXPECT_EQ(second->verdict, Verdict::kWait);
  EXPECT_TRUE(second->victims.empty());
}

TEST(AdmissionTest, BackfillOffMeansStrictOrder) {
  Cluster c;
  c.AddNode(GpuNode("a", 4));
  c.Submit({.name = "holder", .gpus_per_pod = 2, .priority = 99, .preemptible = false});
  c.Step({});
  c.Submit({.name = "head", .gpus_per_pod = 4, .priority = 60, .created_ms = 1});
  c.Submit({.name = "small", .gpus_per_pod = 1, .priority = 10, .created_ms = 2});
  AdmissionOptions fifo;
  fifo.backfill = false;
  fifo.preemption = false;
  RoundResult r = c.Step(fifo);
  EXPECT_EQ(FindDecision(r, "default/small")->verdict, Verdict::kWait);
  r = c.Step({});
  EXPECT_EQ(FindDecision(r, "default/small")->verdict, Verdict::kBackfill);
}

// Strict order (backfill off): a gang whose best fit is on the nodes of a gang waiting ahead is
// planned again off them; one that still finds none waits, and work behind it does not pass it.
TEST(AdmissionTest, BackfillOffAGangBlockedByOrderIsPlannedAroundOrBlocksWorkBehindIt) {
  for (const bool room_on_b : {true, false}) {
    SCOPED_TRACE(room_on_b ? "6 free on b" : "3 free on b");
    core::SnapshotBuilder b;
    core::Node a = GpuNode("a", 8);
    a.labels = {{"pool", "a"}};
    b.UpsertNode(a);
    b.UpsertNode(GpuNode("b", 8));
    b.UpsertPod(RunningOn("on-a", 4, 99, "a"));
    b.UpsertPod(RunningOn("on-b", room_on_b ? 2 : 5, 99, "b"));
    core::PodInfo head = testing::GatedGang({.name = "head", .gpus_per_pod = 8})[0];
    head.node_selector = {{"pool", "a"}};  // Waits for all of a.
    b.UpsertPod(head);
    b.UpsertPod(testing::GatedGang({.name = "g", .gpus_per_pod = 4, .created_ms = 1})[0]);
    b.UpsertPod(
        testing::GatedGang({.name = "low", .gpus_per_pod = 2, .priority = 10, .created_ms = 2})[0]);
    AdmissionOptions strict;
    strict.backfill = false;
    RoundResult r = RunAdmissionRound(*b.Build(), strict);
    EXPECT_EQ(FindDecision(r, "default/head")->verdict, Verdict::kWait);
    const GangDecision* g = FindDecision(r, "default/g");  // Its best fit, a, is the head's.
    const GangDecision* low = FindDecision(r, "default/low");
    if (room_on_b) {
      EXPECT_EQ(g->verdict, Verdict::kAdmit) << g->reason;
      ASSERT_EQ(g->plan.size(), 1u);
      EXPECT_EQ(g->plan[0].node, "b");
      EXPECT_EQ(low->verdict, Verdict::kAdmit) << low->reason;  // On b: the head cannot use it.
    } else {
      EXPECT_EQ(g->verdict, Verdict::kWait);
      EXPECT_EQ(low->verdict, Verdict::kWait) << "passed g on b, which g may use";
      EXPECT_EQ(low->reason,
                "waiting behind default/g (priority 50), which needs the capacity it would use");
    }
  }
}

// A gang of a CPU launcher and GPU workers preempts for its workers: its launcher takes no slot, so
// room for the workers alone is what victims must free (the launcher's node has room).
TEST(AdmissionTest, AGangWithACpuLauncherPreemptsForItsWorkers) {
  core::SnapshotBuilder b;
  b.UpsertNode(GpuNode("cpu", 0));
  core::Node gpu = GpuNode("gpu", 8);
  gpu.taints = {core::Taint{"nvidia.com/gpu", "", core::TaintEffect::kNoSchedule}};
  b.UpsertNode(gpu);
  b.UpsertPod(RunningOn("low", 8, 10, "gpu"));
  std::vector<core::PodInfo> mpi =
      testing::GatedGang({.name = "mpi", .pods = 3, .gpus_per_pod = 4, .priority = 90});
  mpi[0].requests = core::Resources(1000, 0, 0);
  for (size_t i = 1; i < mpi.size(); ++i) {
    mpi[i].tolerations = {{.key = "nvidia.com/gpu", .op = core::Toleration::Operator::kExists}};
  }
  for (core::PodInfo& p : mpi) b.UpsertPod(std::move(p));
  RoundResult r = RunAdmissionRound(*b.Build(), {});
  const GangDecision* d = FindDecision(r, "default/mpi");
  EXPECT_EQ(d->verdict, Verdict::kPreempt) << d->reason;
  EXPECT_EQ(d->victims, std::vector<std::string>{"default/low"});
}

// Feasibility is remembered per shape within a round; a pool's own maxSlotsPerPod is part of it.
TEST(AdmissionTest, LikeGangsOfPoolsWithOtherMaxSlotsPerPodAreJudgedApart) {
  core::SnapshotBuilder b;
  b.UpsertNode(GpuNode("a", 8));
  b.UpsertNode(GpuNode("b", 8));
  core::PodInfo big = testing::GatedGang({.name = "in-big", .gpus_per_pod = 8})[0];
  big.pool = "big";
  core::PodInfo small =
      testing::GatedGang({.name = "in-small", .gpus_per_pod = 8, .created_ms = 1})[0];
  small.pool = "small";
  b.UpsertPod(big);
  b.UpsertPod(small);
  AdmissionOptions opts;
  opts.slots.max_slots_per_pod = 8;
  opts.slots.pool_max_slots_per_pod = {{"small", 4}};
  RoundResult r = RunAdmissionRound(*b.Build(), opts);
  EXPECT_EQ(FindDecision(r, "default/in-big")->verdict, Verdict::kAdmit);
  EXPECT_EQ(FindDecision(r, "default/in-small")->verdict, Verdict::kInfeasible);
}

// Without preemption a blocked head could never take back what lower work takes on its nodes:
// backfill may not pass it there, preemptible or not.
TEST(AdmissionTest, WithoutPreemptionLowerWorkDoesNotPassABlockedHead) {
  Cluster c;
  c.AddNode(GpuNode("a", 8));
  c.Submit({.name = "running", .gpus_per_pod = 4});
  c.Step({});
  c.Submit({.name = "head", .gpus_per_pod = 8, .created_ms = 1});
  c.Submit({.name = "trial", .gpus_per_pod = 4, .priority = 10, .created_ms = 2});
  AdmissionOptions no_preemption;
  no_preemption.preemption = false;
  RoundResult r = c.Step(no_preemption);
  EXPECT_EQ(FindDecision(r, "default/head")->verdict, Verdict::kWait);
  EXPECT_EQ(FindDecision(r, "default/trial")->verdict, Verdict::kWait);
  r = c.Step({});  // With preemption the head could reclaim it: backfill.
  EXPECT_EQ(FindDecision(r, "default/trial")->verdict, Verdict::kBackfill);
}

TEST(AdmissionTest, WorkOnNodesTheHeadCannotUseIsNotBackfill) {
  core::SnapshotBuilder b;
  core::Node a = GpuNode("a", 4);
  a.labels = {{"pool", "big"}};
  b.UpsertNode(a);
  b.UpsertNode(GpuNode("b", 4));
  core::PodInfo holder = testing::GatedGang({.name = "holder", .priority = 99})[0];
  holder.gated = false;
  holder.node = "a";
  holder.preemptible = false;
  holder.phase = core::PodPhase::kRunning;
  b.UpsertPod(holder);
  // The head may only use node a (selector); the holder there cannot be preempted.
  core::PodInfo head = testing::GatedGang({.name = "head", .gpus_per_pod = 4, .priority = 60})[0];
  head.node_selector = {{"pool", "big"}};
  b.UpsertPod(head);
  // A non-preemptible lower-priority 4-GPU command fits only on b, which the head cannot use.
  b.UpsertPod(testing::GatedGang({.name = "cmd",
                                  .gpus_per_pod = 4,
                                  .priority = 40,
                                  .created_ms = 1,
                                  .preemptible = false})[0]);
  RoundResult r = RunAdmissionRound(*b.Build(), {});
  EXPECT_EQ(FindDecision(r, "default/head")->verdict, Verdict::kWait);
  const GangDecision* cmd = FindDecision(r, "default/cmd");
  EXPECT_EQ(cmd->verdict, Verdict::kAdmit);
  EXPECT_EQ(cmd->plan[0].node, "b");
}

// A preemptor keeps to the node reserved for it when the victim gang's pod on another node, which
// it could also use, exits first; it starts there once that victim pod is gone too.
TEST(AdmissionTest, APreemptorKeepsToItsReservedNodeWhicheverVictimPodExitsFirst) {
  for (int reserved_first : {0, 1}) {
    Cluster c;
    c.AddNode(GpuNode("n0", 4));
    c.AddNode(GpuNode("n1", 4));
    c.Submit({.name = "low", .pods = 2, .gpus_per_pod = 4, .priority = 40});
    c.Step({});
    c.Submit({.name = "high", .gpus_per_pod = 4, .priority = 60, .created_ms = 1});
    RoundResult r = c.Step({});
    const GangDecision* high = FindDecision(r, "default/high");
    ASSERT_EQ(high->verdict, Verdict::kPreempt);
    ASSERT_EQ(high->plan.size(), 1u);
    const std::string reserved = high->plan[0].node;
    const std::string other = reserved == "n0" ? "n1" : "n0";

    c.ExitPodOn("default/low", reserved_first ? reserved : other);
    r = c.Step({});
    high = FindDecision(r, "default/high");
    if (!reserved_first) {
      EXPECT_EQ(high->verdict, Verdict::kPreempt) << "the freed node is not the reserved one";
      EXPECT_EQ(high->reason,
                "waiting for preempted gang default/low to exit; its capacity is reserved");
      c.ExitPodOn("default/low", reserved);
      r = c.Step({});
      high = FindDecision(r, "default/high");
    }
    EXPECT_EQ(high->verdict, Verdict::kAdmit) << reserved_first;
    EXPECT_EQ(c.NodesOf("default/high"), std::vector<std::string>{reserved}) << reserved_first;
  }
}

// Until its victims exit, a preemptor's reason names them.
TEST(AdmissionTest, APreemptorWaitingForItsVictimsNamesThem) {
  Cluster c;
  c.AddNode(GpuNode("n0", 4));
  c.Submit({.name = "a", .gpus_per_pod = 2, .priority = 40});
  c.Submit({.name = "b", .gpus_per_pod = 2, .priority = 40});
  c.Step({});
  c.Submit({.name = "high", .gpus_per_pod = 4, .priority = 60, .created_ms = 1});
  EXPECT_EQ(FindDecision(c.Step({}), "default/high")->reason, "preempting default/a, default/b");
  const RoundResult r = c.Step({});
  const GangDecision* high = FindDecision(r, "default/high");
  EXPECT_EQ(high->verdict, Verdict::kPreempt);
  EXPECT_EQ(high->reason,
            "waiting for preempted gangs default/a, default/b to exit; their capacity is reserved");
}

TEST(AdmissionTest, IncompleteGangsWait) {
  std::vector<core::PodInfo> pods = testing::GatedGang({.name = "g", .pods = 3});
  core::SnapshotBuilder b;
  b.UpsertNode(GpuNode("a", 8));
  b.UpsertPod(pods[0]);
  b.UpsertPod(pods[1]);
  RoundResult r = RunAdmissionRound(*b.Build(), {});
  ASSERT_EQ(r.decisions.size(), 1u);
  EXPECT_EQ(r.decisions[0].verdict, Verdict::kWait);
  EXPECT_EQ(r.decisions[0].reason, "2 of 3 pods created; waiting for the rest");
}

}  // namespace
}  // namespace phalanx::preemption
