// ClusterSnapshot: sorted nodes, per-node usage, gang indexes and copy-on-write sharing.
#include "core/snapshot.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
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

TEST(SnapshotTest, NodeIndicesResolveAListInOrder) {
  SnapshotBuilder b;
  b.UpsertNode(GpuNode("node-c", 8));
  b.UpsertNode(GpuNode("node-a", 4));
  auto s = b.Build();
  EXPECT_EQ(s->NodeIndices({"node-c", "node-x", "node-a", "node-c"}),
            (std::vector<int>{1, -1, 0, 1}));
  EXPECT_TRUE(s->NodeIndices({}).empty());
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

TEST(SnapshotTest, OccupantsAreThePreemptibleRunningGangsByPriority) {
  SnapshotBuilder b;
  b.UpsertNode(GpuNode("n1", 8));
  b.UpsertNode(GpuNode("n2", 8));
  PodInfo wide0 = BoundPod("w0", "n1", 1, "wide");
  PodInfo wide1 = BoundPod("w1", "n2", 2, "wide");
  PodInfo wide2 = BoundPod("w2", "n2", 3, "wide");
  for (PodInfo* p : {&wide0, &wide1, &wide2}) p->priority = 30;
  PodInfo low = BoundPod("low", "n1", 1);
  low.priority = 10;
  PodInfo pinned = BoundPod("pinned", "n1", 1);
  pinned.preemptible = false;
  PodInfo marked = BoundPod("marked", "n1", 1);
  marked.preempt_requested = true;
  PodInfo admitting = BoundPod("admitting", "n1", 1);
  admitting.gated = true;
  for (const PodInfo& p : {wide0, wide1, wide2, low, pinned, marked, admitting}) b.UpsertPod(p);
  auto s = b.Build();
  auto rows = [](const std::vector<ClusterSnapshot::Occupant>& occupants) {
    std::vector<std::tuple<std::string, int64_t>> out;
    for (const auto& o : occupants) out.push_back({o.gang->key, o.held.gpu()});
    return out;
  };
  using Rows = std::vector<std::tuple<std::string, int64_t>>;
  EXPECT_EQ(rows(s->Occupants(0)), (Rows{{"default/low", 1}, {"default/wide", 1}}));
  EXPECT_EQ(rows(s->Occupants(1)), (Rows{{"default/wide", 5}}));
  // Marking the gang takes it off every node; the older snapshot keeps its lists.
  wide1.preempt_requested = true;
  b.UpsertPod(wide1);
  auto after = b.Build();
  EXPECT_EQ(rows(after->Occupants(0)), (Rows{{"default/low", 1}}));
  EXPECT_TRUE(after->Occupants(1).empty());
  EXPECT_EQ(rows(s->Occupants(1)), (Rows{{"default/wide", 5}}));
}

// Per-node occupants, key indexes, usage and gang summaries recomputed from the pods alone.
void ExpectAgreesWithRecomputation(const ClusterSnapshot& s) {
  std::map<std::string, std::vector<const PodInfo*>> by_gang;
  s.ForEachPod([&](const PodInfo& p) { by_gang[p.GangKey()].push_back(&p); });
  std::vector<std::string> pending, marked, placing;
  std::vector<std::vector<std::tuple<int32_t, std::string, std::string>>> want(s.node_count());
  std::vector<Resources> used(s.node_count()), planned(s.node_count());
  std::vector<int> marked_on(s.node_count(), 0);
  for (const auto& [key, pods] : by_gang) {
    Gang g = SummarizeGang(key, pods);
    std::optional<Gang> found = s.FindGang(key);
    ASSERT_TRUE(found.has_value()) << key;
    EXPECT_EQ(found->members, g.members) << key;
    if (g.gated) pending.push_back(key);
    if (g.preempt_requested) marked.push_back(key);
    if (std::any_of(pods.begin(), pods.end(), [](const PodInfo* p) {
          return !p->IsTerminal() && p->node.empty() && !p->placement.empty();
        })) {
      placing.push_back(key);
    }
    const bool preemptible = g.Running() && g.preemptible && !g.preempt_requested;
    std::map<int, Resources> held;
    for (const PodInfo* p : pods) {
      std::optional<int> i = p->HoldsCapacity() ? s.NodeIndex(p->AssignedNode()) : std::nullopt;
      if (!i) continue;
      used[*i] += p->requests;
      if (p->node.empty()) planned[*i] += p->requests;
      if (p->preempt_requested) ++marked_on[*i];
      if (preemptible) held[*i] += p->requests;
    }
    for (const auto& [i, r] : held) want[i].push_back({g.priority, key, r.ToString()});
  }
  auto keys = [&](ClusterSnapshot::GangFilter filter) {
    std::vector<std::string> out;
    for (const Gang& g : s.Gangs(filter)) out.push_back(g.key);
    return out;
  };
  EXPECT_EQ(keys(ClusterSnapshot::GangFilter::kPending), pending);
  EXPECT_EQ(keys(ClusterSnapshot::GangFilter::kMarked), marked);
  EXPECT_EQ(keys(ClusterSnapshot::GangFilter::kPlacing), placing);
  for (int i = 0; i < s.node_count(); ++i) {
    EXPECT_EQ(s.used(i), used[i]) << s.node(i).name;
    EXPECT_EQ(s.Free(i), s.node(i).allocatable - used[i]) << s.node(i).name;
    EXPECT_EQ(s.Planned(i), planned[i]) << s.node(i).name;
    EXPECT_EQ(s.MarkedOn(i), marked_on[i]) << s.node(i).name;
    std::sort(want[i].begin(), want[i].end());
    std::vector<std::tuple<int32_t, std::string, std::string>> got;
    for (const ClusterSnapshot::Occupant& o : s.Occupants(i)) {
      got.push_back({o.gang->priority, o.gang->key, o.held.ToString()});
      // The occupant is the gang's current summary, not an older one.
      EXPECT_EQ(o.gang->members, s.FindGang(o.gang->key)->members) << o.gang->key;
    }
    EXPECT_EQ(got, want[i]) << s.node(i).name;
  }
}

// What a snapshot shows: its pods, each node's usage and occupants, and its gang lists.
std::string Fingerprint(const ClusterSnapshot& s) {
  std::vector<std::string> pods;
  s.ForEachPod([&](const PodInfo& p) {
    pods.push_back(absl::StrCat(p.uid, " ", p.node, " ", p.placement, " ",
                                static_cast<int>(p.phase), " ", p.priority, " ", p.gated, " ",
                                p.preempt_requested, " ", p.requests.ToString()));
  });
  std::sort(pods.begin(), pods.end());
  std::string out = absl::StrJoin(pods, "\n");
  for (int i = 0; i < s.node_count(); ++i) {
    absl::StrAppend(&out, "\n", s.node(i).name, " used ", s.used(i).ToString(), " planned ",
                    s.Planned(i).ToString());
    for (const ClusterSnapshot::Occupant& o : s.Occupants(i)) {
      absl::StrAppend(&out, " ", o.gang->key, "/", o.gang->priority, "/", o.held.ToString());
    }
  }
  for (auto filter : {ClusterSnapshot::GangFilter::kPending, ClusterSnapshot::GangFilter::kMarked,
                      ClusterSnapshot::GangFilter::kPlacing}) {
    absl::StrAppend(&out, "\n");
    for (const Gang& g : s.Gangs(filter)) {
      absl::StrAppend(&out, g.key, ":");
      for (const PodInfo* p : g.members) absl::StrAppend(&out, " ", p->uid);
      absl::StrAppend(&out, "; ");
    }
  }
  return out;
}

TEST(SnapshotTest, IndexesAgreeWithRecomputationAfterRandomUpdates) {
  for (int seed = 1; seed <= 40; ++seed) {
    std::mt19937 rng(seed);
    auto pick = [&](int n) { return static_cast<int>(rng() % n); };
    SnapshotBuilder b;
    std::vector<std::shared_ptr<const ClusterSnapshot>> built;
    std::vector<std::string> shown;  // Each snapshot's Fingerprint when it was built.
    for (int step = 0; step < 400; ++step) {
      const std::string node = absl::StrCat("n", pick(8));
      switch (pick(10)) {
        case 0:
          b.UpsertNode(GpuNode(node, pick(2) ? 8 : 4));
          break;
        case 1:
          b.RemoveNode(node);
          break;
        case 2:
          b.RemovePod(absl::StrCat("uid-p", pick(40)));
          break;
        default: {
          PodInfo p =
              BoundPod(absl::StrCat("p", pick(40)), "", pick(3), absl::StrCat("g", pick(8)));
          p.ns = pick(4) ? "default" : "other";
          const std::string where = pick(8) ? node : "ghost";
          if (pick(3)) {
            p.node = where;
          } else if (pick(2)) {
            p.placement = where;
          }
          p.phase = std::vector<PodPhase>{PodPhase::kRunning, PodPhase::kPending,
                                          PodPhase::kSucceeded, PodPhase::kFailed}[pick(4)];
          p.priority = 10 * (1 + pick(3));
          p.start_ms = pick(1000);
          p.gated = pick(6) == 0;
          p.preempt_requested = pick(6) == 0;
          p.preemptible = pick(6) != 0;
          b.UpsertPod(std::move(p));
        }
      }
      if (step % 7 == 0) {
        std::shared_ptr<const ClusterSnapshot> snap = b.Build();
        ExpectAgreesWithRecomputation(*snap);
        // Half are let go at once: the builder then changes in place what only it still holds.
        if (pick(2)) {
          built.push_back(std::move(snap));
          shown.push_back(Fingerprint(*built.back()));
        }
      }
    }
    ExpectAgreesWithRecomputation(*b.Build());
    // Later updates left every earlier snapshot still held as it was.
    for (size_t i = 0; i < built.size(); ++i) {
      EXPECT_EQ(Fingerprint(*built[i]), shown[i]) << "snapshot " << i;
      ExpectAgreesWithRecomputation(*built[i]);
    }
    if (HasFailure()) FAIL() << "seed " << seed;
  }
}

}  // namespace
}  // namespace phalanx::core
