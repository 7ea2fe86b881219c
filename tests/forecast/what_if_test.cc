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

}  // namespace
}  // namespace phalanx::forecast
