// Refusals: a member refused on its planned node is due once refused for the timeout, its clock
// stops when the refusal does, and its work avoids the node (by job for phalanx-master's pods, by
// gang for others) until the memory runs out, but never every node it could use.
#include "scheduler_extender/refusals.h"

#include <gtest/gtest.h>

#include "tests/testing/fixtures.h"

namespace phalanx::extender {
namespace {

using testing::GatedGang;
using testing::GpuNode;

constexpr char kPorts[] = "0/2 nodes are available: 1 node(s) didn't have free ports";

// Gang "g" of two pods planned on a and b; the second refused when `refused`.
std::shared_ptr<const core::ClusterSnapshot> World(bool refused) {
  core::SnapshotBuilder b;
  b.UpsertNode(GpuNode("a", 8));
  b.UpsertNode(GpuNode("b", 8));
  std::vector<core::PodInfo> pods = GatedGang({.name = "g", .pods = 2});
  for (size_t i = 0; i < pods.size(); ++i) {
    pods[i].gated = false;
    pods[i].placement = i == 0 ? "a" : "b";
    pods[i].job_id = "exp-1";
  }
  if (refused) pods[1].refused = kPorts;
  for (const core::PodInfo& p : pods) b.UpsertPod(p);
  return b.Build();
}

TEST(RefusalsTest, AMemberIsDueOnceRefusedForTheTimeout) {
  Refusals refusals(/*timeout_ms=*/10'000, /*memory_ms=*/60'000);
  EXPECT_TRUE(refusals.Due(*World(true), 1'000).empty());
  EXPECT_EQ(refusals.RefusedFor("default/g-1", 6'000), 5'000);
  EXPECT_TRUE(refusals.Due(*World(true), 10'999).empty());
  std::vector<preemption::RefusedMember> due = refusals.Due(*World(true), 11'000);
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].gang, "default/g");
  EXPECT_EQ(due[0].pod_uid, "default/g-1");
  EXPECT_EQ(due[0].node, "b");
  EXPECT_EQ(due[0].message, kPorts);
}

TEST(RefusalsTest, TheClockStopsWhenTheRefusalDoes) {
  Refusals refusals(10'000, 60'000);
  EXPECT_TRUE(refusals.Due(*World(true), 0).empty());
  EXPECT_TRUE(refusals.Due(*World(false), 5'000).empty());  // kube-scheduler saw the room.
  EXPECT_EQ(refusals.RefusedFor("default/g-1", 5'000), 0);
  EXPECT_TRUE(refusals.Due(*World(true), 12'000).empty());  // A new refusal: a new clock.
  EXPECT_EQ(refusals.Due(*World(true), 22'000).size(), 1u);
}

TEST(RefusalsTest, ATimeoutOfZeroNeverMakesAMemberDue) {
  Refusals refusals(0, 60'000);
  EXPECT_TRUE(refusals.Due(*World(true), 0).empty());
  EXPECT_TRUE(refusals.Due(*World(true), 1'000'000'000).empty());
}

// A gated pod of gang `gang` and job `job` (none: not the master's), listing `avoid`.
core::PodInfo Gated(const std::string& gang, const std::string& job,
                    std::vector<std::string> avoid = {}) {
  core::PodInfo p = GatedGang({.name = gang})[0];
  p.job_id = job;
  p.avoid_nodes = std::move(avoid);
  return p;
}

// Nodes a and b.
std::shared_ptr<const core::ClusterSnapshot> Nodes() {
  core::SnapshotBuilder b;
  b.UpsertNode(GpuNode("a", 8));
  b.UpsertNode(GpuNode("b", 8));
  return b.Build();
}

TEST(RefusalsTest, TheWorkAvoidsTheNodeUntilTheMemoryRunsOut) {
  auto snap = Nodes();
  Refusals refusals(10'000, 60'000);
  EXPECT_EQ(refusals.Annotation(Gated("g", "exp-1"), *snap), std::nullopt);
  refusals.Avoid(Gated("g", "exp-1"), "b", 1'000);

  // Its next run: another gang, same job.
  auto write = refusals.Annotation(Gated("g-2", "exp-1"), *snap);
  ASSERT_TRUE(write.has_value());
  EXPECT_EQ(write->value, "b");
  EXPECT_EQ(refusals.Annotation(Gated("g-2", "exp-1", {"b"}), *snap), std::nullopt);  // Carried.
  write = refusals.Annotation(Gated("g-2", "exp-1", {"a", "b"}), *snap);
  ASSERT_TRUE(write.has_value());
  EXPECT_EQ(write->value, "b");

  core::PodInfo placed = Gated("g-3", "exp-1");
  placed.placement = "a";
  EXPECT_EQ(refusals.Annotation(placed, *snap), std::nullopt);  // Planned already: its pin stands.
  EXPECT_EQ(refusals.Annotation(Gated("g-4", "exp-2"), *snap), std::nullopt);
  core::PodInfo foreign = Gated("g", "");  // Not the master's: by gang.
  EXPECT_EQ(refusals.Annotation(foreign, *snap), std::nullopt);
  refusals.Avoid(foreign, "a", 1'000);
  write = refusals.Annotation(foreign, *snap);
  ASSERT_TRUE(write.has_value());
  EXPECT_EQ(write->value, "a");

  refusals.Due(*World(false), 61'000);  // The memory of both ran out: the annotation goes.
  write = refusals.Annotation(Gated("g-2", "exp-1", {"b"}), *snap);
  ASSERT_TRUE(write.has_value());
  EXPECT_EQ(write->value, std::nullopt);
  EXPECT_EQ(refusals.Annotation(Gated("g-2", "exp-1"), *snap), std::nullopt);
}

// Avoiding every node a pod could use would leave it nowhere to run: it then avoids none.
TEST(RefusalsTest, APodNeverAvoidsEveryNodeItCouldUse) {
  auto snap = Nodes();
  Refusals refusals(10'000, 60'000);
  refusals.Avoid(Gated("g", "exp-1"), "a", 0);
  refusals.Avoid(Gated("g", "exp-1"), "b", 0);
  EXPECT_EQ(refusals.Annotation(Gated("g-2", "exp-1"), *snap), std::nullopt);
  auto write = refusals.Annotation(Gated("g-2", "exp-1", {"a"}), *snap);
  ASSERT_TRUE(write.has_value());
  EXPECT_EQ(write->value, std::nullopt);

  core::PodInfo picky = Gated("g-3", "exp-1");  // Eligible on a alone, by its own selector.
  picky.node_selector = {{"kubernetes.io/hostname", "a"}};
  core::SnapshotBuilder b;
  core::Node a = GpuNode("a", 8);
  a.labels = {{"kubernetes.io/hostname", "a"}};
  b.UpsertNode(a);
  b.UpsertNode(GpuNode("b", 8));
  b.UpsertNode(GpuNode("c", 8));
  Refusals only_a(10'000, 60'000);
  only_a.Avoid(picky, "a", 0);
  EXPECT_EQ(only_a.Annotation(picky, *b.Build()), std::nullopt);
}

// The annotations are the memory's record: a new process (after a restart) takes back what gated
// pods avoid at its first round, for the whole memory from then, instead of removing it.
TEST(RefusalsTest, ANewProcessAdoptsWhatGatedPodsAvoid) {
  core::SnapshotBuilder b;
  b.UpsertNode(GpuNode("a", 8));
  b.UpsertNode(GpuNode("b", 8));
  const core::PodInfo carrying = Gated("g-2", "exp-1", {"b"});
  b.UpsertPod(carrying);
  core::PodInfo placed = Gated("g-3", "exp-2", {"a"});  // Planned: its pin stands, not adopted.
  placed.placement = "b";
  b.UpsertPod(placed);
  auto snap = b.Build();

  Refusals restarted(10'000, 60'000);
  EXPECT_TRUE(restarted.Due(*snap, 5'000).empty());
  EXPECT_EQ(restarted.Annotation(carrying, *snap), std::nullopt) << "kept";
  auto write = restarted.Annotation(Gated("g-4", "exp-1"), *snap);  // The job's next run.
  ASSERT_TRUE(write.has_value());
  EXPECT_EQ(write->value, "b");
  EXPECT_EQ(restarted.Annotation(Gated("g-5", "exp-2"), *snap), std::nullopt);

  restarted.Due(*snap, 64'999);
  EXPECT_EQ(restarted.Annotation(carrying, *snap), std::nullopt) << "within the memory";
  restarted.Due(*snap, 65'000);  // Not adopted again: the memory ran out, the annotation goes.
  write = restarted.Annotation(carrying, *snap);
  ASSERT_TRUE(write.has_value());
  EXPECT_EQ(write->value, std::nullopt);
}

}  // namespace
}  // namespace phalanx::extender
