// Verb decisions: planned pods are pinned, foreign gangs get all-or-nothing reservations, and
// other pods respect those reservations and pass only on best-fitting nodes.
#include "scheduler_extender/verbs.h"

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "kube/decode.h"
#include "tests/extender/cluster_fixture.h"

namespace phalanx::extender {
namespace {

const std::vector<std::string> kNodes = {"gpu-node-01", "gpu-node-02", "gpu-node-03"};

core::PodInfo PendingPod(std::string name, std::string gang, int size, int64_t gpus) {
  core::PodInfo p = RunningPod(name, std::move(gang), size, "", gpus, true);
  p.phase = core::PodPhase::kPending;
  p.priority = 50;
  return p;
}

TEST(NodeReasonsTest, KeepsRequestOrderAndAnswersTheLastReasonOfARepeatedNode) {
  NodeReasons reasons;
  reasons.Add("b", "full");
  reasons.Add("a", "cordoned");
  reasons.Add("c", "full");
  reasons.Add("b", "cordoned");
  std::vector<std::string> seen;
  reasons.ForEach(
      [&](const std::string& node, const std::string& why) { seen.push_back(node + "=" + why); });
  EXPECT_EQ(seen, (std::vector<std::string>{"b=full", "a=cordoned", "c=full", "b=cordoned"}));
  ASSERT_NE(reasons.Find("b"), nullptr);
  EXPECT_EQ(*reasons.Find("b"), "cordoned");
  EXPECT_EQ(reasons.Find("d"), nullptr);
  EXPECT_EQ(reasons.size(), 4u);
}

// A pod whose gang labels cannot be read is not scheduled alone: it passes nowhere, and says why.
TEST(VerbsTest, APodWithUnreadableLabelsPassesNowhere) {
  ReservationBook book;
  Verbs verbs(gang::SlotPolicy{}, 30'000, &book);
  core::PodInfo pod = PendingPod("p", "g", 2, 4);
  pod.contract_error = "metadata.labels[\"phalanx.io/gang-size\"]: invalid gang size \"two\"";
  FilterOutcome out = verbs.Filter(*ExtenderTestCluster(), pod, kNodes, 0);
  EXPECT_TRUE(out.passed.empty());
  ASSERT_NE(out.unresolvable.Find("gpu-node-01"), nullptr);
  EXPECT_EQ(*out.unresolvable.Find("gpu-node-01"),
            "the pod's phalanx labels cannot be read: " + pod.contract_error);
  EXPECT_EQ(out.unresolvable.size(), kNodes.size());
}

// A pod of another tool, on nodes kube-scheduler offered (its own NodeResourcesFit passed there)
// but where this cache counts no room: a node where only bound pods are in the way passes when no
// node fits by the cache (kube-scheduler counts bound pods as recently as the cache or more: a
// victim of its preemption leaves its cache first), and is reported failed when one does. A node
// where a planned, unbound pod is in the way (phalanx's, which kube-scheduler does not count), or a
// victim marked for a waiting gang, never passes.
TEST(VerbsTest, UnreservedNodesAreKubeSchedulersToJudge) {
  ReservationBook book;
  Verbs verbs(gang::SlotPolicy{}, 30'000, &book);
  core::SnapshotBuilder b(ExtenderTestCluster());
  core::PodInfo planned = PendingPod("planned-0", "", 1, 7);
  planned.placement = "gpu-node-01";
  b.UpsertPod(planned);
  const auto snap = b.Build();
  const core::PodInfo pod = PendingPod("theirs", "", 1, 4);
  FilterOutcome out = verbs.Filter(*snap, pod, {"gpu-node-01", "gpu-node-02"}, 0);
  EXPECT_EQ(out.passed, std::vector<std::string>{"gpu-node-02"}) << "1 GPU free by bound pods";
  ASSERT_NE(out.failed.Find("gpu-node-01"), nullptr);
  EXPECT_EQ(*out.failed.Find("gpu-node-01"), "insufficient nvidia.com/gpu after reservations");
  // With a node that fits by the cache (gpu-node-03: 6 free), gpu-node-02 fails as before.
  out = verbs.Filter(*snap, pod, kNodes, 0);
  EXPECT_EQ(out.passed, std::vector<std::string>{"gpu-node-03"});
  ASSERT_NE(out.failed.Find("gpu-node-02"), nullptr);
  // Once the planned pod is bound, kube-scheduler counts it too: gpu-node-01 is its to judge.
  planned.node = "gpu-node-01";
  b.UpsertPod(planned);
  EXPECT_EQ(b.Build()->Planned(0), core::Resources());
  out = verbs.Filter(*b.Build(), pod, {"gpu-node-01"}, 0);
  EXPECT_EQ(out.passed, std::vector<std::string>{"gpu-node-01"});
  // A victim marked for a waiting gang: what it frees is that gang's, whichever cache sees it go
  // first.
  core::PodInfo victim = RunningPod("low-a-0", "low-a", 2, "gpu-node-02", 6, true);
  victim.preempt_requested = true;
  victim.preempted_by = "ml/head";
  b.UpsertPod(victim);
  out = verbs.Filter(*b.Build(), pod, {"gpu-node-02"}, 0);
  EXPECT_TRUE(out.passed.empty());
  ASSERT_NE(out.failed.Find("gpu-node-02"), nullptr);
}

TEST(VerbsTest, PlacedPodPassesOnlyOnItsNode) {
  ReservationBook book;
  Verbs verbs(gang::SlotPolicy{}, 30'000, &book);
  core::PodInfo pod = PendingPod("p", "g", 2, 4);
  pod.placement = "gpu-node-03";
  FilterOutcome out = verbs.Filter(*ExtenderTestCluster(), pod, kNodes, 0);
  EXPECT_EQ(out.passed, (std::vector<std::string>{"gpu-node-03"}));
  ASSERT_NE(out.unresolvable.Find("gpu-node-01"), nullptr);
  EXPECT_EQ(*out.unresolvable.Find("gpu-node-01"), "gang member planned for node gpu-node-03");
  EXPECT_EQ(verbs.Prioritize(*ExtenderTestCluster(), pod, kNodes, 0),
            (std::vector<int64_t>{0, 0, 10}));
}

// The shared cluster plus "ext", a gang of two 6-GPU members another tool created (ungated,
// unplanned).
class ForeignGangTest : public ::testing::Test {
 protected:
  void SetUp() override {
    b.UpsertPod(m0);
    b.UpsertPod(m1);
    snap = b.Build();
  }

  core::SnapshotBuilder b{ExtenderTestCluster()};
  core::PodInfo m0 = PendingPod("ext-0", "ext", 2, 6);
  core::PodInfo m1 = PendingPod("ext-1", "ext", 2, 6);
  std::shared_ptr<const core::ClusterSnapshot> snap;
  ReservationBook book;
  Verbs verbs{gang::SlotPolicy{}, 30'000, &book};
};

// Of two plans made at once on the same capacity (the admission loop's and a filter-time gang's),
// the one reserved second is refused, and nothing of it is kept.
TEST_F(ForeignGangTest, ReserveIfRoomRefusesSeatsTakenMeanwhile) {
  // gpu-node-03 has 6 GPUs free (pinned-0 holds 2).
  ASSERT_TRUE(
      book.ReserveIfRoom("ml/ext", {{"ext-0", "gpu-node-03", m0.requests}}, *snap, 0, 5000));
  core::PodInfo late = PendingPod("late-0", "late", 1, 1);
  EXPECT_FALSE(
      book.ReserveIfRoom("ml/late", {{"late-0", "gpu-node-03", late.requests}}, *snap, 0, 5000));
  EXPECT_FALSE(book.NodeFor("ml/late", "late-0", 0).has_value()) << "nothing reserved";
  EXPECT_TRUE(
      book.ReserveIfRoom("ml/late", {{"late-0", "gpu-node-01", late.requests}}, *snap, 0, 5000));
  // A gang's own earlier seats do not stand in its way: they are replaced.
  EXPECT_TRUE(
      book.ReserveIfRoom("ml/ext", {{"ext-0", "gpu-node-03", m0.requests}}, *snap, 10, 5000));
  EXPECT_FALSE(
      book.ReserveIfRoom("ml/gone", {{"g-0", "gpu-node-99", late.requests}}, *snap, 0, 5000))
      << "a node the snapshot does not have";
}

// A seat moves only to a node where it still fits beside the live seats, checked under the
// book's lock.
TEST_F(ForeignGangTest, ASeatMovesOnlyWhereItFits) {
  book.Reserve("ml/ext", {{"ext-0", "gpu-node-01", m0.requests}}, 0, 5000);
  core::PodInfo other = PendingPod("o-0", "o", 1, 4);
  book.Reserve("ml/o", {{"o-0", "gpu-node-03", other.requests}}, 0, 5000);
  EXPECT_FALSE(book.MoveSeat("ml/ext", "ext-0", "gpu-node-03", *snap, 10))
      << "6 GPUs wanted, 2 left beside the other seat";
  EXPECT_EQ(book.NodeFor("ml/ext", "ext-0", 10), "gpu-node-01");
  book.Release("ml/o");
  EXPECT_TRUE(book.MoveSeat("ml/ext", "ext-0", "gpu-node-03", *snap, 10));
  EXPECT_EQ(book.NodeFor("ml/ext", "ext-0", 10), "gpu-node-03");
}

TEST_F(ForeignGangTest, ReservedWholeAtFilterTime) {
  // gpu-node-01 (8 free) and gpu-node-03 (6 free) take one member each.
  FilterOutcome first = verbs.Filter(*snap, m0, kNodes, 0);
  ASSERT_EQ(first.passed.size(), 1u);
  FilterOutcome second = verbs.Filter(*snap, m1, kNodes, 10);
  ASSERT_EQ(second.passed.size(), 1u);
  EXPECT_NE(first.passed[0], second.passed[0]);
  // A 4-GPU singleton now fits nowhere: 01 and 03 are reserved down to 2 and 0, 02 has 1 by the
  // cache's count of bound pods. 02, which holds nothing of phalanx's, passes for kube-scheduler
  // to judge (UnreservedNodesAreKubeSchedulersToJudge); the reserved ones do not.
  core::PodInfo other = PendingPod("solo", "", 1, 4);
  FilterOutcome solo = verbs.Filter(*snap, other, kNodes, 20);
  EXPECT_EQ(solo.passed, std::vector<std::string>{"gpu-node-02"});
  EXPECT_EQ(solo.failed.size(), 2u);
  // Reservations expire: after the TTL the singleton fits on 01 and 03 again; 03 fits best.
  FilterOutcome later = verbs.Filter(*snap, other, kNodes, 40'000);
  EXPECT_EQ(later.passed, (std::vector<std::string>{"gpu-node-03"}));
  EXPECT_EQ(later.failed.Find("gpu-node-01"), nullptr);  // It fits: nothing to diagnose.
}

// A member is seated only on a node kube-scheduler offered it (its own filters passed there). A
// member whose seat is not offered moves alone to an offered node with room, the gang's other
// seats staying; with none it keeps its seat and is refused.
TEST(VerbsTest, ForeignGangSeatsAreOnOfferedNodes) {
  core::SnapshotBuilder b{ExtenderTestCluster()};  // Free GPUs: 01 8, 02 1, 03 6.
  const core::PodInfo m0 = PendingPod("four-0", "four", 2, 4);
  const core::PodInfo m1 = PendingPod("four-1", "four", 2, 4);
  b.UpsertPod(m0);
  b.UpsertPod(m1);
  auto snap = b.Build();
  ReservationBook book;
  Verbs verbs(gang::SlotPolicy{}, 30'000, &book);
  // Only 01 is offered to four-0; four-1 then fits best beside it there.
  EXPECT_EQ(verbs.Filter(*snap, m0, {"gpu-node-01"}, 0).passed,
            (std::vector<std::string>{"gpu-node-01"}));
  EXPECT_EQ(*book.NodeFor("ml/four", "four-1", 0), "gpu-node-01");
  // 01 is not offered to four-1: it moves to 03; four-0 keeps 01.
  EXPECT_EQ(verbs.Filter(*snap, m1, {"gpu-node-02", "gpu-node-03"}, 10).passed,
            (std::vector<std::string>{"gpu-node-03"}));
  EXPECT_EQ(*book.NodeFor("ml/four", "four-0", 10), "gpu-node-01");
  EXPECT_EQ(*book.NodeFor("ml/four", "four-1", 10), "gpu-node-03");
  // Only 02 (1 GPU free) offered: no room; four-1 keeps 03 and passes nowhere.
  FilterOutcome none = verbs.Filter(*snap, m1, {"gpu-node-02"}, 20);
  EXPECT_TRUE(none.passed.empty());
  ASSERT_NE(none.unresolvable.Find("gpu-node-02"), nullptr);
  EXPECT_EQ(*none.unresolvable.Find("gpu-node-02"), "gang member planned for node gpu-node-03");
  EXPECT_EQ(*book.NodeFor("ml/four", "four-0", 20), "gpu-node-01");
}

// The admission loop's seats: a pod whose placement the snapshot shows holds its node itself.
TEST_F(ForeignGangTest, ASeatStopsCountingOnceItsPodShowsItsPlacement) {
  book.Reserve("ml/ext", {{"ext-1", "gpu-node-03", m1.requests}}, 0, 5000);
  EXPECT_EQ(book.ByNode(*snap, 0, "").at("gpu-node-03").gpu(), 6);
  m1.placement = "gpu-node-03";
  b.UpsertPod(m1);
  EXPECT_EQ(book.ByNode(*b.Build(), 0, "").count("gpu-node-03"), 0u);
}

// A reservation lives its TTL from the last time a member passed on its seat, so a gang whose
// members bind slowly keeps every seat while it binds; a member that only finds its seat (its
// node not offered, no room elsewhere) does not keep the gang's seats alive.
TEST_F(ForeignGangTest, AMemberPassingOnItsSeatRenewsTheReservation) {
  ASSERT_EQ(verbs.Filter(*snap, m0, kNodes, 0).passed.size(), 1u);  // TTL 30 s.
  ASSERT_EQ(verbs.Filter(*snap, m0, kNodes, 20'000).passed.size(), 1u);
  EXPECT_TRUE(book.NodeFor("ml/ext", "ext-1", 45'000).has_value());
  EXPECT_TRUE(verbs.Filter(*snap, m1, {"gpu-node-02"}, 45'000).passed.empty());  // No room there.
  EXPECT_FALSE(book.NodeFor("ml/ext", "ext-1", 50'001).has_value());
}

// A member's seat stops counting once the pod has finished, as a bound one's does.
TEST_F(ForeignGangTest, ASeatOfAFinishedPodDoesNotCount) {
  book.Reserve("ml/ext", {{"ext-1", "gpu-node-03", m1.requests}}, 0, 5000);
  m1.phase = core::PodPhase::kSucceeded;
  b.UpsertPod(m1);
  EXPECT_EQ(book.ByNode(*b.Build(), 0, "").count("gpu-node-03"), 0u);
}

TEST_F(ForeignGangTest, AGangOfferedNoRoomIsRefusedWhole) {
  FilterOutcome none = verbs.Filter(*snap, m0, {"gpu-node-02"}, 0);
  EXPECT_TRUE(none.passed.empty());
  ASSERT_NE(none.unresolvable.Find("gpu-node-02"), nullptr);
  EXPECT_NE(none.unresolvable.Find("gpu-node-02")->find("cannot be placed whole"),
            std::string::npos)
      << *none.unresolvable.Find("gpu-node-02");
}

TEST_F(ForeignGangTest, ASeatStopsCountingOnceItsPodIsBound) {
  ASSERT_EQ(verbs.Filter(*snap, m0, kNodes, 0).passed.size(), 1u);
  const std::string node = *book.NodeFor("ml/ext", "ext-1", 0);
  EXPECT_EQ(book.Held(*snap, 0, "")[*snap->NodeIndex(node)].gpu(), 6);
  // ext-1 binds where it was reserved: its GPUs are counted once, as the node's use.
  m1.node = node;
  b.UpsertPod(m1);
  auto bound = b.Build();
  EXPECT_EQ(book.Held(*bound, 0, "")[*bound->NodeIndex(node)].gpu(), 0);
  EXPECT_EQ(book.ByNode(*bound, 0, "").count(node), 0u);
}

// A gang of four 1-GPU pods another tool created, decoded as the informer decodes them. Node "a"
// has 8 free GPUs but room for two pods (allocatable "pods"): two seats go there, and two to "b",
// rather than four on "a", which kube-scheduler would refuse ("Too many pods").
TEST(VerbsTest, ForeignGangSeatsRespectANodesPodCount) {
  core::SnapshotBuilder b;
  core::Node a = testing::GpuNode("a", 8);
  a.allocatable.Set(core::kPods, 2);
  b.UpsertNode(a);
  b.UpsertNode(testing::GpuNode("b", 8));
  simdjson::dom::parser parser;
  std::vector<core::PodInfo> members;
  for (int i = 0; i < 4; ++i) {
    const std::string json = absl::StrCat(
        R"({"metadata":{"name":"ext-)", i, R"(","namespace":"ml","uid":"ext-)", i,
        R"(","labels":{"phalanx.io/gang":"ext","phalanx.io/gang-size":"4"}},)",
        R"("spec":{"containers":[{"resources":{"requests":{"nvidia.com/gpu":"1"}}}]}})");
    absl::StatusOr<core::PodInfo> pod = kube::DecodePod(parser.parse(json));
    ASSERT_TRUE(pod.ok()) << pod.status();
    members.push_back(*pod);
    b.UpsertPod(*pod);
  }
  auto snap = b.Build();
  ReservationBook book;
  Verbs verbs(gang::SlotPolicy{}, 30'000, &book);
  EXPECT_EQ(verbs.Filter(*snap, members[0], {"a", "b"}, 0).passed, (std::vector<std::string>{"a"}));
  std::vector<std::string> seats;
  for (const core::PodInfo& m : members) seats.push_back(book.NodeFor("ml/ext", m.uid, 0).value());
  EXPECT_EQ(seats, (std::vector<std::string>{"a", "a", "b", "b"}));
}

TEST(VerbsTest, FilterPassesOnlyTheBestFitsUpToTheCandidateLimit) {
  // Four empty 8-GPU nodes and one with 3 free: a 1-GPU pod goes to the 3-free node.
  core::SnapshotBuilder b(ExtenderTestCluster());
  std::vector<std::string> names;
  for (int i = 0; i < 4; ++i) {
    names.push_back(absl::StrCat("empty-", i));
    b.UpsertNode(testing::GpuNode(names.back(), 8));
  }
  auto snap = b.Build();
  const core::PodInfo one = PendingPod("one", "", 1, 1);
  ReservationBook book;
  Verbs two_candidates(gang::SlotPolicy{}, 30'000, &book, 2);
  EXPECT_EQ(two_candidates.Filter(*snap, one, names, 0).passed,
            (std::vector<std::string>{"empty-0", "empty-1"}));
  EXPECT_TRUE(two_candidates.Filter(*snap, one, names, 0).failed.empty());
  std::vector<std::string> with_partial = names;
  with_partial.push_back("gpu-node-03");  // 6 free.
  EXPECT_EQ(two_candidates.Filter(*snap, one, with_partial, 0).passed,
            (std::vector<std::string>{"gpu-node-03"}));
  Verbs every_fit(gang::SlotPolicy{}, 30'000, &book, 0);
  EXPECT_EQ(every_fit.Filter(*snap, one, with_partial, 0).passed.size(), 5u);
}

TEST(VerbsTest, ForeignGangThatCannotFitWholeIsRejectedEverywhere) {
  core::SnapshotBuilder b(ExtenderTestCluster());
  core::PodInfo m0 = PendingPod("big-0", "big", 3, 8);
  b.UpsertPod(m0);
  b.UpsertPod(PendingPod("big-1", "big", 3, 8));
  b.UpsertPod(PendingPod("big-2", "big", 3, 8));
  ReservationBook book;
  Verbs verbs(gang::SlotPolicy{}, 30'000, &book);
  FilterOutcome out = verbs.Filter(*b.Build(), m0, kNodes, 0);
  EXPECT_TRUE(out.passed.empty());
  EXPECT_EQ(out.unresolvable.size(), 3u);
  ASSERT_NE(out.unresolvable.Find("gpu-node-01"), nullptr);
  EXPECT_NE(out.unresolvable.Find("gpu-node-01")->find("cannot be placed whole"),
            std::string::npos);
  EXPECT_EQ(book.size(), 0u);
}

TEST(VerbsTest, IncompleteForeignGangWaits) {
  core::PodInfo m0 = PendingPod("part-0", "part", 4, 1);
  ReservationBook book;
  Verbs verbs(gang::SlotPolicy{}, 30'000, &book);
  FilterOutcome out = verbs.Filter(*ExtenderTestCluster(), m0, kNodes, 0);
  EXPECT_TRUE(out.passed.empty());
  ASSERT_NE(out.unresolvable.Find("gpu-node-02"), nullptr);
  EXPECT_EQ(*out.unresolvable.Find("gpu-node-02"), "gang ml/part incomplete: 1 of 4 pods exist");
}

TEST(VerbsTest, PreemptDropsNodesWithEqualPriorityVictims) {
  ReservationBook book;
  Verbs verbs(gang::SlotPolicy{}, 30'000, &book);
  core::PodInfo preemptor = PendingPod("hi", "", 1, 8);
  preemptor.priority = 10;  // equal to the victims' priority
  VictimMap proposed{{"gpu-node-02", NodeVictims{{"low-a-0"}, 0}}};
  EXPECT_TRUE(verbs.Preempt(*ExtenderTestCluster(), preemptor, proposed, 0).empty());
  preemptor.priority = 11;
  VictimMap out = verbs.Preempt(*ExtenderTestCluster(), preemptor, proposed, 0);
  EXPECT_EQ(out.at("gpu-node-02").uids, (std::vector<std::string>{"low-a-0", "low-a-1"}));
  VictimMap unknown{{"gpu-node-01", NodeVictims{{"no-such-pod"}, 0}}};
  EXPECT_TRUE(verbs.Preempt(*ExtenderTestCluster(), preemptor, unknown, 0).empty());
  VictimMap elsewhere{{"gpu-node-99", NodeVictims{{"low-a-0"}, 0}}};  // A node not cached.
  EXPECT_TRUE(verbs.Preempt(*ExtenderTestCluster(), preemptor, elsewhere, 0).empty());
}

TEST(VerbsTest, PreemptNamesOnlyPodsBoundToTheNodeAndNeverAnEmptyList) {
  // low-a gets a third member planned, not bound, on gpu-node-02: kube-scheduler would refuse it.
  core::SnapshotBuilder b(ExtenderTestCluster());
  core::PodInfo planned = PendingPod("low-a-2", "low-a", 3, 1);
  planned.priority = 10;
  planned.placement = "gpu-node-02";
  b.UpsertPod(planned);
  auto snap = b.Build();
  ReservationBook book;
  Verbs verbs(gang::SlotPolicy{}, 30'000, &book);
  core::PodInfo preemptor = PendingPod("hi", "", 1, 8);
  VictimMap out = verbs.Preempt(
      *snap, preemptor,
      {{"gpu-node-02", NodeVictims{{"low-a-0"}, 0}}, {"gpu-node-01", NodeVictims{{}, 0}}}, 0);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out.at("gpu-node-02").uids, (std::vector<std::string>{"low-a-0", "low-a-1"}));
}

// Victims whose going would leave the preemptor no room, for a reservation kube-scheduler does not
// see, would go for nothing: their node is dropped.
TEST(VerbsTest, PreemptDropsNodesWhereReservationsLeaveNoRoom) {
  ReservationBook book;
  Verbs verbs(gang::SlotPolicy{}, 30'000, &book);
  book.Reserve("ml/ext", {{"ext-1", "gpu-node-02", PendingPod("ext-1", "ext", 1, 2).requests}}, 0,
               30'000);
  const VictimMap proposed{{"gpu-node-02", NodeVictims{{"low-a-0"}, 0}}};
  core::PodInfo eight = PendingPod("hi", "", 1, 8);
  EXPECT_TRUE(verbs.Preempt(*ExtenderTestCluster(), eight, proposed, 0).empty())
      << "8 GPUs wanted, 6 left once low-a goes";
  EXPECT_EQ(verbs.Preempt(*ExtenderTestCluster(), PendingPod("hi", "", 1, 6), proposed, 0).size(),
            1u);
  EXPECT_EQ(verbs.Preempt(*ExtenderTestCluster(), eight, proposed, 30'001).size(), 1u)
      << "the reservation lapsed";
}

}  // namespace
}  // namespace phalanx::extender
