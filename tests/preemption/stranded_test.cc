// Stranded gangs: members planned on a node that is gone, no longer takes them, or whose bound
// pods leave them no room; kept in queue order while they fit. Refused members: those
// kube-scheduler reports unschedulable where they fit by these rules.
#include "preemption/stranded.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "absl/strings/str_cat.h"
#include "tests/testing/fixtures.h"

namespace phalanx::preemption {
namespace {

using testing::GatedGang;
using testing::GpuNode;

// The gang's pods, ungated and planned one per node of `nodes`.
std::vector<core::PodInfo> Planned(const testing::GangSpec& spec,
                                   const std::vector<std::string>& nodes) {
  std::vector<core::PodInfo> pods = GatedGang(spec);
  for (size_t i = 0; i < pods.size(); ++i) {
    pods[i].gated = false;
    pods[i].placement = nodes[i];
  }
  return pods;
}

core::PodInfo BoundOn(std::string name, int64_t gpus, const std::string& node) {
  core::PodInfo p = GatedGang({.name = std::move(name), .gpus_per_pod = gpus})[0];
  p.gated = false;
  p.node = node;
  p.phase = core::PodPhase::kRunning;
  return p;
}

std::vector<std::string> Keys(const std::vector<StrandedGang>& found) {
  std::vector<std::string> keys;
  for (const StrandedGang& s : found) keys.push_back(s.gang);
  return keys;
}

TEST(StrandedTest, AGangFitsWhileItsNodesStandAndHaveRoom) {
  core::SnapshotBuilder b;
  b.UpsertNode(GpuNode("a", 8));
  b.UpsertNode(GpuNode("b", 8));
  for (const core::PodInfo& p : Planned({.name = "g", .pods = 2, .gpus_per_pod = 8}, {"a", "b"})) {
    b.UpsertPod(p);
  }
  EXPECT_TRUE(StrandedGangs(*b.Build()).empty());
}

TEST(StrandedTest, ANodeThatIsGoneOrNoLongerTakesTheMemberStrandsTheWholeGang) {
  core::SnapshotBuilder b;
  b.UpsertNode(GpuNode("a", 8));
  core::Node cordoned = GpuNode("c", 8);
  cordoned.unschedulable = true;
  b.UpsertNode(cordoned);
  core::Node tainted = GpuNode("t", 8);
  tainted.taints.push_back({"maintenance", "", core::TaintEffect::kNoExecute});
  b.UpsertNode(tainted);
  for (const core::PodInfo& p : Planned({.name = "gone", .pods = 2}, {"a", "ghost"})) {
    b.UpsertPod(p);
  }
  b.UpsertPod(Planned({.name = "cordon"}, {"c"})[0]);
  b.UpsertPod(Planned({.name = "taint"}, {"t"})[0]);
  core::PodInfo marked = Planned({.name = "marked"}, {"ghost"})[0];
  marked.preempt_requested = true;
  b.UpsertPod(marked);
  std::vector<StrandedGang> found = StrandedGangs(*b.Build());
  EXPECT_EQ(Keys(found),
            (std::vector<std::string>{"default/cordon", "default/gone", "default/taint"}));
  EXPECT_EQ(found[1].reason, "node ghost is gone");
  EXPECT_EQ(found[0].reason, "node c no longer takes pod cordon-0 (cordoned or tainted)");
}

// A node relabelled so that a planned member's selector or affinity no longer matches strands its
// gang; the member's kubernetes.io/hostname pin is not what is matched (a node's hostname label
// may differ from its name).
TEST(StrandedTest, ANodeWhoseLabelsNoLongerMatchStrandsTheGang) {
  core::SnapshotBuilder b;
  core::Node a = GpuNode("a", 8);
  a.labels = {{"kubernetes.io/hostname", "host-a"}, {"pool", "gold"}};
  b.UpsertNode(a);
  core::PodInfo pod = Planned({.name = "g"}, {"a"})[0];
  pod.node_selector = {{"kubernetes.io/hostname", "host-a"}, {"pool", "gold"}};
  b.UpsertPod(pod);
  EXPECT_TRUE(StrandedGangs(*b.Build()).empty());
  a.labels = {{"kubernetes.io/hostname", "host-a"}, {"pool", "silver"}};
  b.UpsertNode(a);
  std::vector<StrandedGang> found = StrandedGangs(*b.Build());
  ASSERT_EQ(Keys(found), std::vector<std::string>{"default/g"});
  EXPECT_EQ(found[0].reason, "node a no longer matches pod g-0's node selector or affinity");
}

// A pin names the node's kubernetes.io/hostname label (its name when it has none). Once that label
// changes, kube-scheduler can never bind the member there: the gang is stranded, not refused (its
// work must not avoid a node that is fine).
TEST(StrandedTest, APinTheNodesHostnameNoLongerNamesStrandsTheGang) {
  core::SnapshotBuilder b;
  core::Node a = GpuNode("a", 8);
  b.UpsertNode(a);
  core::PodInfo pod = Planned({.name = "g"}, {"a"})[0];
  pod.node_selector = {{"kubernetes.io/hostname", "a"}};
  pod.refused = "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector";
  b.UpsertPod(pod);
  EXPECT_TRUE(StrandedGangs(*b.Build()).empty()) << "no label: the pin names the node";
  a.labels = {{"kubernetes.io/hostname", "a"}};
  b.UpsertNode(a);
  EXPECT_TRUE(StrandedGangs(*b.Build()).empty());
  a.labels = {{"kubernetes.io/hostname", "a.example.com"}};
  b.UpsertNode(a);
  std::vector<StrandedGang> found = StrandedGangs(*b.Build());
  ASSERT_EQ(Keys(found), std::vector<std::string>{"default/g"});
  EXPECT_EQ(found[0].reason,
            "node a's kubernetes.io/hostname label changed since pod g-0 was pinned to it");
  EXPECT_TRUE(RefusedMembers(*b.Build()).empty());
}

TEST(StrandedTest, PodsBoundBesidePlannedOnesStrandTheLaterGangsInQueueOrder) {
  core::SnapshotBuilder b;
  b.UpsertNode(GpuNode("a", 8));
  // 4 + 2 planned, then a pod the extender never saw binds 4: only 4 are left for them.
  b.UpsertPod(Planned({.name = "urgent", .gpus_per_pod = 4, .priority = 60}, {"a"})[0]);
  b.UpsertPod(Planned({.name = "batch", .gpus_per_pod = 2, .priority = 50}, {"a"})[0]);
  EXPECT_TRUE(StrandedGangs(*b.Build()).empty());
  b.UpsertPod(BoundOn("intruder", 4, "a"));
  std::vector<StrandedGang> found = StrandedGangs(*b.Build());
  EXPECT_EQ(Keys(found), std::vector<std::string>{"default/batch"});
  EXPECT_EQ(found[0].reason, "pod batch-0 no longer fits on node a beside the pods bound there");
  // Once the urgent one binds, it is a bound pod like the intruder: batch still has no room.
  core::PodInfo urgent = Planned({.name = "urgent", .gpus_per_pod = 4, .priority = 60}, {"a"})[0];
  urgent.node = "a";
  b.UpsertPod(urgent);
  EXPECT_EQ(Keys(StrandedGangs(*b.Build())), std::vector<std::string>{"default/batch"});
}

// Only ungated, unbound, unmarked members planned where they fit count as refused: a member that
// is stranded, still gated, or on an overbooked node is not (kube-scheduler refuses it for what
// phalanx models itself).
TEST(StrandedTest, RefusedMembersAreThoseThatFitWhereKubeSchedulerRefusesThem) {
  core::SnapshotBuilder b;
  b.UpsertNode(GpuNode("a", 8));
  b.UpsertNode(GpuNode("b", 8));
  core::Node cordoned = GpuNode("c", 8);
  cordoned.unschedulable = true;
  b.UpsertNode(cordoned);
  auto refused = [](std::vector<core::PodInfo> pods, size_t i) {
    pods[i].refused = "0/3 nodes are available: 1 node(s) didn't have free ports";
    return pods;
  };
  for (const core::PodInfo& p :
       refused(Planned({.name = "ports", .pods = 2, .gpus_per_pod = 4}, {"a", "b"}), 1)) {
    b.UpsertPod(p);
  }
  std::vector<core::PodInfo> gated = Planned({.name = "gated", .gpus_per_pod = 1}, {"a"});
  gated[0].gated = true;
  b.UpsertPod(refused(gated, 0)[0]);
  std::vector<core::PodInfo> marked = Planned({.name = "marked", .gpus_per_pod = 1}, {"a"});
  marked[0].preempt_requested = true;
  b.UpsertPod(refused(marked, 0)[0]);
  b.UpsertPod(refused(Planned({.name = "closed", .gpus_per_pod = 1}, {"c"}), 0)[0]);
  b.UpsertPod(Planned({.name = "fine", .gpus_per_pod = 1}, {"b"})[0]);
  std::vector<RefusedMember> found = RefusedMembers(*b.Build());
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].gang, "default/ports");
  EXPECT_EQ(found[0].pod_name, "ports-1");
  EXPECT_EQ(found[0].node, "b");
  EXPECT_EQ(found[0].message, "0/3 nodes are available: 1 node(s) didn't have free ports");

  // b overbooked: kube-scheduler's refusal there is phalanx's own verdict too (a stranding).
  b.UpsertPod(BoundOn("intruder", 8, "b"));
  EXPECT_TRUE(RefusedMembers(*b.Build()).empty());
}

// Random clusters (fixed seeds): once the stranded gangs go, the planned members of every other
// unmarked gang stand on nodes that exist and take them, and fit there beside the bound pods.
TEST(StrandedTest, WhatIsNotStrandedFitsEverywhere) {
  for (int seed = 1; seed <= 200; ++seed) {
    std::mt19937 rng(seed);
    auto pick = [&](int n) { return static_cast<int>(rng() % n); };
    core::SnapshotBuilder b;
    for (int n = 0; n < 4; ++n) {
      core::Node node = GpuNode(absl::StrCat("n", n), 8);
      node.unschedulable = pick(5) == 0;
      b.UpsertNode(node);
    }
    int64_t bound[4] = {};
    for (int g = 0; g < 8; ++g) {
      const std::string name = absl::StrCat("g", g);
      const int64_t gpus = 1 + pick(4);
      if (pick(3) == 0) {  // Bound where it fits, as the kubelet would have it.
        const int n = pick(4);
        if (bound[n] + gpus <= 8) {
          bound[n] += gpus;
          b.UpsertPod(BoundOn(name, gpus, absl::StrCat("n", n)));
        }
        continue;
      }
      std::vector<std::string> nodes;
      for (int m = 0; m < 2; ++m) nodes.push_back(absl::StrCat("n", pick(5)));  // n4 is gone.
      for (core::PodInfo p : Planned(
               {.name = name, .pods = 2, .gpus_per_pod = gpus, .priority = 10 * pick(3)}, nodes)) {
        p.preempt_requested = pick(8) == 0;
        b.UpsertPod(p);
      }
    }
    auto snap = b.Build();
    std::set<std::string> stranded;
    for (const StrandedGang& s : StrandedGangs(*snap)) stranded.insert(s.gang);
    std::map<std::string, core::Resources> use;
    snap->ForEachPod([&](const core::PodInfo& p) {
      if (!p.node.empty()) use[p.node] += p.requests;
    });
    for (const core::Gang& g : snap->Gangs()) {
      if (stranded.contains(g.key) || g.preempt_requested) continue;
      for (const core::PodInfo* p : g.members) {
        if (!p->node.empty()) continue;
        std::optional<int> i = snap->NodeIndex(p->placement);
        ASSERT_TRUE(i.has_value()) << "seed " << seed << ": " << p->name;
        EXPECT_FALSE(snap->node(*i).unschedulable) << "seed " << seed << ": " << p->name;
        use[p->placement] += p->requests;
      }
    }
    for (int i = 0; i < snap->node_count(); ++i) {
      EXPECT_TRUE(use[snap->node(i).name].FitsIn(snap->node(i).allocatable))
          << "seed " << seed << ": " << snap->node(i).name;
    }
  }
}

}  // namespace
}  // namespace phalanx::preemption
