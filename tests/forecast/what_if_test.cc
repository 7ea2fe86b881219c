// WhatIf: the cheapest changes that start a waiting gang now, worked by hand on small clusters.
#include "forecast/what_if.h"

#include <gtest/gtest.h>

#include "tests/testing/fixtures.h"

namespace phalanx::forecast {
namespace {

using testing::Cluster;
using testing::GpuNode;

preemption::AdmissionOptions Options() {
  preemption::AdmissionOptions o;
  o.slots.max_slots_per_pod = 4;
  return o;
}

// Two 4-GPU nodes: `full` (4 GPUs) runs on node-a, `half` (2 GPUs) on node-b; `head` (3 GPUs)
// and `big` (8 GPUs as 2 x 4) wait at the same priority, head first.
Cluster Example() {
  Cluster c;
  c.AddNode(GpuNode("node-a", 4));
  c.AddNode(GpuNode("node-b", 4));
  c.Submit({.name = "full", .gpus_per_pod = 4, .created_ms = 1});
  c.Submit({.name = "half", .gpus_per_pod = 2, .created_ms = 2});
  c.Step(Options());
  c.Submit({.name = "head", .gpus_per_pod = 3, .created_ms = 3});
  c.Submit({.name = "big", .pods = 2, .gpus_per_pod = 4, .created_ms = 4});
  return c;
}

// By hand: 7, 6 and 5 slots cannot be split at maxSlotsPerPod 4; 4 and 3 find no node with room
// (node-b has 2 GPUs free); 2 fits on node-b, beside `head`'s wait. At priority 51 (one above the
// running gangs) it preempts both, as 8 GPUs need both nodes.
TEST(WhatIfTest, FewerSlotsAndHigherPriority) {
  Cluster c = Example();
  absl::StatusOr<WhatIf> w = AskWhatIf(c.snapshot(), Options(), "default/big");
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->slots_now, 2);
  EXPECT_EQ(w->priority_now, 51);
  EXPECT_EQ(w->victims, (std::vector<std::string>{"default/half", "default/full"}));  // Cost order.
  EXPECT_EQ(w->ahead, std::vector<std::string>{"default/head"});
}

// The master recreates the pods of a changed gang, so its patience (preemption/rules.h) starts
// again: 20 minutes into `full`'s and `half`'s runs, a higher priority would not start `big` now,
// unless patience is off.
TEST(WhatIfTest, AHigherPriorityIsPatientAsRecreatedPodsAre) {
  Cluster c = Example();
  preemption::AdmissionOptions o = Options();
  o.now_ms = c.now_ms + 20 * 60'000;
  absl::StatusOr<WhatIf> w = AskWhatIf(c.snapshot(), o, "default/big");
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_FALSE(w->priority_now);
  o.rules.patience_ms = 0;
  w = AskWhatIf(c.snapshot(), o, "default/big");
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->priority_now, 51);
}

// The checks are bounded: with one, only 4 slots is tried (and fails), so nothing is answered.
TEST(WhatIfTest, BoundedChecks) {
  Cluster c = Example();
  absl::StatusOr<WhatIf> w = AskWhatIf(c.snapshot(), Options(), "default/big", 1);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_FALSE(w->slots_now);
  EXPECT_FALSE(w->priority_now);
  EXPECT_EQ(w->ahead, std::vector<std::string>{"default/head"});
}

// A gang that starts now needs no change; a running or unknown gang is not waiting.
TEST(WhatIfTest, StartingRunningAndUnknownGangs) {
  Cluster c;
  c.AddNode(GpuNode("node-a", 4));
  c.Submit({.name = "fits", .gpus_per_pod = 2, .created_ms = 1});
  absl::StatusOr<WhatIf> w = AskWhatIf(c.snapshot(), Options(), "default/fits");
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_FALSE(w->slots_now);
  EXPECT_FALSE(w->priority_now);
  c.Step(Options());
  EXPECT_EQ(AskWhatIf(c.snapshot(), Options(), "default/fits").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(AskWhatIf(c.snapshot(), Options(), "default/nope").status().code(),
            absl::StatusCode::kNotFound);
}

// A non-preemptible or top-priority occupant: no priority starts it, and fewer slots cannot
// either when nothing is free.
TEST(WhatIfTest, NoAnswerWhenNothingCanFree) {
  Cluster c;
  c.AddNode(GpuNode("node-a", 4));
  c.Submit({.name = "pinned", .gpus_per_pod = 4, .created_ms = 1, .preemptible = false});
  c.Step(Options());
  c.Submit({.name = "waits", .gpus_per_pod = 2, .created_ms = 2});
  absl::StatusOr<WhatIf> w = AskWhatIf(c.snapshot(), Options(), "default/waits");
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_FALSE(w->slots_now);
  EXPECT_FALSE(w->priority_now);
  EXPECT_TRUE(w->victims.empty());
}

// A gang of one without a gang label keeps its key when reshaped, so it gets answers too; a gang
// with members still missing is not asked.
TEST(WhatIfTest, UnlabelledPodsAndIncompleteGangs) {
  Cluster c;
  c.AddNode(GpuNode("node-a", 4));
  c.Submit({.name = "full", .gpus_per_pod = 3, .created_ms = 1});
  c.Step(Options());
  core::SnapshotBuilder b(c.snapshot());
  core::PodInfo bare = testing::GatedGang({.name = "bare", .gpus_per_pod = 2, .created_ms = 2})[0];
  bare.gang.clear();
  bare.gang_size = 1;
  b.UpsertPod(bare);
  std::vector<core::PodInfo> half =
      testing::GatedGang({.name = "half", .pods = 2, .created_ms = 3});
  b.UpsertPod(half[0]);
  auto snap = b.Build();
  absl::StatusOr<WhatIf> w = AskWhatIf(snap, Options(), bare.GangKey());
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->slots_now, 1);
  EXPECT_EQ(w->priority_now, 51);
  EXPECT_EQ(AskWhatIf(snap, Options(), "default/half").status().code(),
            absl::StatusCode::kFailedPrecondition);
}

// Priorities are offered only up to the highest a user may set; victims are named up to
// kMaxNamed (the gang preempts all twelve).
TEST(WhatIfTest, BoundedPrioritiesAndVictims) {
  Cluster c;
  c.AddNode(GpuNode("node-a", 12));
  c.AddNode(GpuNode("node-b", 4));
  for (int i = 0; i < 12; ++i) {
    c.Submit({.name = "one-" + std::to_string(i), .created_ms = 1 + i});
  }
  c.Submit({.name = "top", .gpus_per_pod = 4, .priority = 1'000'000, .created_ms = 20});
  c.Step(Options());
  c.Submit({.name = "wide", .gpus_per_pod = 12, .priority = 50, .created_ms = 30});
  preemption::AdmissionOptions o = Options();
  o.slots.max_slots_per_pod = 12;
  absl::StatusOr<WhatIf> w = AskWhatIf(c.snapshot(), o, "default/wide");
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->priority_now, 51);
  EXPECT_EQ(w->victims.size(), kMaxNamed);
  Cluster only_top;
  only_top.AddNode(GpuNode("node-a", 4));
  only_top.Submit({.name = "top", .gpus_per_pod = 4, .priority = 1'000'000, .created_ms = 1});
  only_top.Step(Options());
  only_top.Submit({.name = "under", .gpus_per_pod = 4, .created_ms = 2});
  w = AskWhatIf(only_top.snapshot(), Options(), "default/under");
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_FALSE(w->priority_now) << "1000001 is above what a user may set";
}

core::Node PoolNode(std::string name, int64_t gpus, core::Labels labels) {
  core::Node n = GpuNode(std::move(name), gpus);
  n.labels = std::move(labels);
  return n;
}

// Pools a100 (two 4-GPU nodes, full with work that may not be preempted), t4 (16 GPUs, 14 free)
// and v100 (two 8-GPU nodes, one free; its own maxSlotsPerPod 8). `big` waits in a100 with 2 x 4
// GPUs: no fewer slots and no priority start it there. t4's two pods differ in nodeSelector (one
// also asks for zone x), so t4's own placement is unknown and it is not proposed, though it has
// room; in v100 its 8 slots are one pod of 8, which fits the free node.
TEST(WhatIfTest, AnotherPool) {
  Cluster c;
  const core::Labels a100{{"pool", "a100"}}, t4{{"pool", "t4"}}, v100{{"pool", "v100"}};
  c.AddNode(PoolNode("a-1", 4, a100));
  c.AddNode(PoolNode("a-2", 4, a100));
  c.AddNode(PoolNode("t-1", 16, {{"pool", "t4"}, {"zone", "x"}}));
  c.AddNode(PoolNode("v-1", 8, v100));
  c.AddNode(PoolNode("v-2", 8, v100));
  preemption::AdmissionOptions o = Options();
  o.slots.pool_max_slots_per_pod["v100"] = 8;
  for (const char* name : {"r1", "r2"}) {
    c.Submit({.name = name,
              .gpus_per_pod = 4,
              .preemptible = false,
              .pool = "a100",
              .node_selector = a100});
  }
  c.Submit({.name = "t-one", .pool = "t4", .node_selector = t4});
  c.Submit({.name = "t-two", .pool = "t4", .node_selector = {{"pool", "t4"}, {"zone", "x"}}});
  c.Submit({.name = "v-run", .gpus_per_pod = 8, .pool = "v100", .node_selector = v100});
  c.Step(o);
  c.Submit({.name = "big",
            .pods = 2,
            .gpus_per_pod = 4,
            .created_ms = 9,
            .pool = "a100",
            .node_selector = a100});
  absl::StatusOr<WhatIf> w = AskWhatIf(c.snapshot(), o, "default/big");
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_FALSE(w->slots_now);
  EXPECT_FALSE(w->priority_now);
  EXPECT_EQ(w->pool_now, "v100");

  // Without v100's own limit, 8 slots split at 4 into two pods, which the one free node holds.
  o.slots.pool_max_slots_per_pod.clear();
  w = AskWhatIf(c.snapshot(), o, "default/big");
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->pool_now, "v100");

  // v100 full too: no pool starts it.
  o.slots.pool_max_slots_per_pod["v100"] = 8;
  c.Submit(
      {.name = "v-two", .gpus_per_pod = 8, .created_ms = 1, .pool = "v100", .node_selector = v100});
  c.Step(o);
  ASSERT_TRUE(c.Running("default/v-two"));
  w = AskWhatIf(c.snapshot(), o, "default/big");
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_FALSE(w->pool_now);
}

}  // namespace
}  // namespace phalanx::forecast
