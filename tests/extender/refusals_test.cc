// Refusals: a member refused on its planned node is due once refused for the timeout, its clock
// stops when the refusal does, and its work avoids the node (by job for phalanx-master's pods, by
// gang for others) until the memory runs out.
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

TEST(RefusalsTest, TheWorkAvoidsTheNodeUntilTheMemoryRunsOut) {
  Refusals refusals(10'000, 60'000);
  core::PodInfo refused = GatedGang({.name = "g"})[0];
  refused.job_id = "exp-1";
  refusals.Avoid(refused, "b", 1'000);
  EXPECT_FALSE(refusals.empty());

  core::PodInfo next = GatedGang({.name = "g-2"})[0];  // Its next run: another gang, same job.
  next.job_id = "exp-1";
  EXPECT_EQ(refusals.Annotation(next), "b");
  next.avoid_nodes = {"a"};
  EXPECT_EQ(refusals.Annotation(next), "a,b");
  next.avoid_nodes = {"a", "b"};
  EXPECT_EQ(refusals.Annotation(next), std::nullopt);  // Already carried.

  core::PodInfo placed = GatedGang({.name = "g-3"})[0];
  placed.job_id = "exp-1";
  placed.placement = "c";
  EXPECT_EQ(refusals.Annotation(placed), std::nullopt);  // Planned already: its pin stands.
  core::PodInfo other = GatedGang({.name = "g-4"})[0];
  other.job_id = "exp-2";
  EXPECT_EQ(refusals.Annotation(other), std::nullopt);
  core::PodInfo foreign = GatedGang({.name = "g"})[0];  // Not the master's: by gang.
  EXPECT_EQ(refusals.Annotation(foreign), std::nullopt);
  refusals.Avoid(foreign, "a", 1'000);
  EXPECT_EQ(refusals.Annotation(foreign), "a");

  refusals.Due(*World(false), 61'000);  // The memory of both ran out.
  EXPECT_TRUE(refusals.empty());
  next.avoid_nodes = {};
  EXPECT_EQ(refusals.Annotation(next), std::nullopt);
}

}  // namespace
}  // namespace phalanx::extender
