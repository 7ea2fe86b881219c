// ClusterSnapshot: sorted nodes, per-node usage, gang indexes and copy-on-write sharing.
#include "core/snapshot.h"

#include <gtest/gtest.h>

#include "tests/testing/fixtures.h"

namespace phalanx::core {
namespace {

using testing::GpuNode;

PodInfo BoundPod(std::string name, std::string node, int64_t gpus, std::string gang = "") {
  PodInfo p;
  p.uid = "uid-" + name;
  p.ns = "default";
  p.name = std::move(name);
  p.node = std::move(node);
  p.gang = std::move(gang);
  p.phase = PodPhase::kRunning;
  p.requests = Resources(1000, 0, gpus);
  return p;
}

TEST(SnapshotTest, NodesAreSortedAndUsageIsTracked) {
  SnapshotBuilder b;
  b.UpsertNode(GpuNode("node-c", 8));
  b.UpsertNode(GpuNode("node-a", 4));
  b.UpsertPod(BoundPod("p1", "node-c", 3, "g"));
  b.UpsertPod(BoundPod("p2", "node-c", 2, "g"));
  auto s = b.Build();
  ASSERT_EQ(s->node_count(), 2);
  EXPECT_EQ(s->node(0).name, "node-a");
  EXPECT_EQ(s->node(1).name, "node-c");
  EXPECT_EQ(s->Free(1).gpu(), 3);  // 8 - 3 - 2
  EXPECT_EQ(s->PodsOnNode(1).size(), 2u);
  std::optional<Gang> g = s->FindGang("default/g");
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->members.size(), 2u);
  EXPECT_EQ(g->total.gpu(), 5);
}

TEST(SnapshotTest, UpdatesDoNotChangeOlderSnapshots) {
  SnapshotBuilder b;
  b.UpsertNode(GpuNode("n1", 8));
  b.UpsertPod(BoundPod("p1", "n1", 4));
  auto before = b.Build();
  b.UpsertPod(BoundPod("p2", "n1", 2));
  b.RemovePod("uid-p1");
  auto after = b.Build();
  EXPECT_EQ(before->Free(0).gpu(), 4);
  EXPECT_EQ(after->Free(0).gpu(), 6);
  EXPECT_NE(before->FindPod("uid-p1"), nullptr);
  EXPECT_EQ(after->FindPod("uid-p1"), nullptr);
  EXPECT_EQ(before->pod_count(), 1u);
  EXPECT_EQ(after->pod_count(), 1u);
}

TEST(SnapshotTest, UnchangedNodesAreShared) {
  SnapshotBuilder b;
  for (int i = 0; i < 100; ++i) b.UpsertNode(GpuNode("n" + std::to_string(i), 8));
  auto before = b.Build();
  b.UpsertPod(BoundPod("p", "n5", 1));
  auto after = b.Build();
  int index = *after->NodeIndex("n5");
  // Only the touched node entry is a new object; its neighbours are the same objects.
  EXPECT_NE(&before->used(index), &after->used(index));
  EXPECT_EQ(&before->used(index + 1), &after->used(index + 1));
}

TEST(SnapshotTest, PodsArrivingBeforeTheirNodeAreAttachedLater) {
  SnapshotBuilder b;
  b.UpsertPod(BoundPod("p", "late", 2));
  b.UpsertNode(GpuNode("late", 8));
  EXPECT_EQ(b.Build()->Free(0).gpu(), 6);
}

TEST(SnapshotTest, TerminalPodsFreeTheirCapacity) {
  SnapshotBuilder b;
  b.UpsertNode(GpuNode("n1", 8));
  PodInfo p = BoundPod("p", "n1", 8);
  b.UpsertPod(p);
  p.phase = PodPhase::kSucceeded;
  b.UpsertPod(p);
  auto s = b.Build();
  EXPECT_EQ(s->Free(0).gpu(), 8);
  EXPECT_TRUE(s->FindGang("default/p")->members.empty());
}

TEST(SnapshotTest, PlacementHoldsCapacityBeforeBinding) {
  SnapshotBuilder b;
  b.UpsertNode(GpuNode("n1", 8));
  PodInfo p = BoundPod("p", "", 3);
  p.placement = "n1";
  p.phase = PodPhase::kPending;
  b.UpsertPod(p);
  EXPECT_EQ(b.Build()->Free(0).gpu(), 5);
}

}  // namespace
}  // namespace phalanx::core
