// Gang planning: all-or-nothing placement, best-fit packing, wait and infeasible reasons.
#include "gang/planner.h"

#include <gtest/gtest.h>

#include <functional>

#include "tests/testing/fixtures.h"

namespace phalanx::gang {
namespace {

using testing::GangSpec;
using testing::GatedGang;
using testing::GpuNode;

struct Case {
  std::string name;
  std::vector<std::pair<std::string, int64_t>> nodes;  // name, free GPUs (all 8-GPU or 4-GPU)
  std::vector<int64_t> used;                           // GPUs already used per node
  GangSpec gang;
  int32_t max_slots_per_pod;
  GangPlan::Outcome outcome;
  std::vector<std::string> expected_nodes;  // per member, in member (name) order
  std::string reason_part;
  friend void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }
};

class PlannerTableTest : public ::testing::TestWithParam<Case> {};

// The node of each member of gang `key` as planned on the free capacity of `snap`; none when the
// gang is not placed.
std::vector<int> PlacedOn(const core::ClusterSnapshot& snap, const std::string& key) {
  GangPlan plan = GangPlanner(snap, SlotPolicy{}).Plan(*snap.FindGang(key), FreeCapacity(snap));
  return plan.placed() ? plan.nodes : std::vector<int>{};
}

// Adds gang `name`: one gated 4-GPU pod, as `edit` changes it.
void AddOnePodGang(core::SnapshotBuilder& b, const std::string& name,
                   const std::function<void(core::PodInfo&)>& edit) {
  for (core::PodInfo p : GatedGang({.name = name, .pods = 1, .gpus_per_pod = 4})) {
    edit(p);
    b.UpsertPod(std::move(p));
  }
}

TEST_P(PlannerTableTest, Plans) {
  const Case& c = GetParam();
  core::SnapshotBuilder b;
  for (size_t i = 0; i < c.nodes.size(); ++i) {
    b.UpsertNode(GpuNode(c.nodes[i].first, c.nodes[i].second));
    if (i < c.used.size() && c.used[i] > 0) {
      core::PodInfo filler;
      filler.uid = filler.name = "filler-" + c.nodes[i].first;
      filler.ns = "other";
      filler.node = c.nodes[i].first;
      filler.phase = core::PodPhase::kRunning;
      filler.requests = core::Resources(0, 0, c.used[i]);
      b.UpsertPod(filler);
    }
  }
  for (core::PodInfo& p : GatedGang(c.gang)) b.UpsertPod(std::move(p));
  auto snap = b.Build();
  SlotPolicy slots;
  slots.max_slots_per_pod = c.max_slots_per_pod;
  GangPlanner planner(*snap, slots);
  core::Gang g = *snap->FindGang("default/" + c.gang.name);
  GangPlan plan = planner.CheckFeasible(g);
  if (plan.placed()) plan = planner.Plan(g, FreeCapacity(*snap));
  EXPECT_EQ(plan.outcome, c.outcome) << plan.reason;
  std::vector<std::string> got;
  for (int n : plan.nodes) got.push_back(snap->node(n).name);
  EXPECT_EQ(got, c.expected_nodes);
  EXPECT_NE(plan.reason.find(c.reason_part), std::string::npos) << plan.reason;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, PlannerTableTest,
    ::testing::Values(
        // 1-slot pod: a (8 free) leaves 7, b (2 free) leaves 1 -> best fit is b.
        Case{"OneSlotBestFitsPartialNode",
             {{"a", 8}, {"b", 8}},
             {0, 6},
             {"j", 1, 1},
             8,
             GangPlan::Outcome::kPlaced,
             {"b"},
             ""},
        // Two 4-slot pods with 8-GPU nodes: the first opens a (leaves 4), the second fills a (0).
        Case{"TwoMaxSizePodsShareAnEightGpuNode",
             {{"a", 8}, {"b", 8}},
             {},
             {"j", 2, 4},
             4,
             GangPlan::Outcome::kPlaced,
             {"a", "a"},
             ""},
        // 1-slot pod with an empty 4-GPU and an empty 8-GPU node: 4-GPU leaves 3 < 7.
        Case{"KeepsLargeEmptyNodes",
             {{"big", 8}, {"small", 4}},
             {},
             {"j", 1, 1},
             4,
             GangPlan::Outcome::kPlaced,
             {"small"},
             ""},
        // 3 pods x 4 on 2 free 4-GPU nodes: the third has nowhere to go, so nothing is placed.
        Case{"AllOrNothing",
             {{"a", 4}, {"b", 4}, {"c", 4}},
             {0, 0, 2},
             {"j", 3, 4},
             4,
             GangPlan::Outcome::kWait,
             {},
             "needs 12 GPUs on 3 nodes; 8 free on 2 fitting nodes"},
        // Counts of one read in the singular.
        Case{"OnePodWaitsOnAFullNode",
             {{"a", 2}},
             {2},
             {"j", 1, 1},
             4,
             GangPlan::Outcome::kWait,
             {},
             "needs 1 GPU on 1 node; no node has room for one of its pods"},
        // 4 pods x 4 = 16 GPUs on 3 x 4 = 12 GPUs: can never fit.
        Case{"LargerThanThePool",
             {{"a", 4}, {"b", 4}, {"c", 4}},
             {},
             {"j", 4, 4},
             4,
             GangPlan::Outcome::kInfeasible,
             {},
             "needs 16 GPUs on 4 nodes; 12 in the whole pool on 3 fitting nodes"},
        // One 8-GPU pod on 4-GPU nodes: no node could ever hold it.
        Case{"PodLargerThanEveryNode",
             {{"a", 4}, {"b", 4}},
             {},
             {"j", 1, 8},
             8,
             GangPlan::Outcome::kInfeasible,
             {},
             "larger than the pool: needs 8 GPUs on 1 node; no node can hold one of its pods"},
        // A pod of 8 slots with maxSlotsPerPod 4.
        Case{"PodAboveMaxSlotsPerPod",
             {{"a", 8}},
             {},
             {"j", 1, 8},
             4,
             GangPlan::Outcome::kInfeasible,
             {},
             "maxSlotsPerPod is 4"},
        // 3 pods x 2 = 6 slots > 4 and 6 % 4 = 2.
        Case{"NotDivisible",
             {{"a", 8}},
             {},
             {"j", 3, 2},
             4,
             GangPlan::Outcome::kInfeasible,
             {},
             "6 GPUs is not divisible by maxSlotsPerPod 4"}),
    [](const auto& info) { return info.param.name; });

TEST(PlannerTest, RespectsSelectorsAndTaints) {
  core::SnapshotBuilder b;
  core::Node tainted = GpuNode("a", 8);
  tainted.taints = {core::Taint{"dedicated", "infra", core::TaintEffect::kNoSchedule}};
  b.UpsertNode(tainted);
  core::Node labelled = GpuNode("b", 8);
  labelled.labels = {{"pool", "train"}};
  b.UpsertNode(labelled);
  b.UpsertNode(GpuNode("c", 8));
  for (core::PodInfo p : GatedGang({.name = "j", .pods = 2, .gpus_per_pod = 4})) {
    p.node_selector = {{"pool", "train"}};
    b.UpsertPod(std::move(p));
  }
  auto snap = b.Build();
  EXPECT_EQ(PlacedOn(*snap, "default/j"), (std::vector<int>{1, 1}));  // only b matches
}

// Required node affinity as a seeds' resource pool sets it (zone In [...]): the gang goes to the
// zone's node although another fits it better; a gang in another zone, planned by the same
// planner, is not given the first one's nodes.
// A running 4-GPU pod on `node`.
core::PodInfo BusyOn(const std::string& node) {
  core::PodInfo busy = GatedGang({.name = "busy", .gpus_per_pod = 4}).at(0);
  busy.gated = false;
  busy.node = node;
  busy.phase = core::PodPhase::kRunning;
  return busy;
}

TEST(PlannerTest, RespectsRequiredNodeAffinity) {
  core::SnapshotBuilder b;
  const std::pair<const char*, const char*> nodes[] = {
      {"a", "antarctica-west1"}, {"b", "antarctica-east1"}, {"c", "antarctica-east1"}};
  for (const auto& [name, zone] : nodes) {
    core::Node n = GpuNode(name, 8);
    n.labels = {{"topology.kubernetes.io/zone", zone}};
    b.UpsertNode(n);
  }
  b.UpsertPod(BusyOn("b"));  // b is the best fit for 4 GPUs.
  auto zone = [](const char* z) {
    return core::NodeSelectorTerm{{core::NodeRequirement{.key = "topology.kubernetes.io/zone",
                                                         .op = core::NodeRequirement::Operator::kIn,
                                                         .values = {z}}}};
  };
  AddOnePodGang(b, "west", [&](core::PodInfo& p) { p.node_affinity = {zone("antarctica-west1")}; });
  AddOnePodGang(b, "east", [&](core::PodInfo& p) { p.node_affinity = {zone("antarctica-east1")}; });
  auto snap = b.Build();
  EXPECT_EQ(PlacedOn(*snap, "default/west"), (std::vector<int>{0}));
  EXPECT_EQ(PlacedOn(*snap, "default/east"), (std::vector<int>{1}));
}

// Two gangs alike but for the nodes one avoids: each gets its own eligible nodes.
TEST(PlannerTest, RespectsAvoidedNodes) {
  core::SnapshotBuilder b;
  for (const char* name : {"a", "b", "c"}) b.UpsertNode(GpuNode(name, 8));
  b.UpsertPod(BusyOn("b"));  // b is the best fit for 4 GPUs.
  AddOnePodGang(b, "plain", [](core::PodInfo&) {});
  AddOnePodGang(b, "avoiding", [](core::PodInfo& p) { p.avoid_nodes = {"b"}; });
  auto snap = b.Build();
  EXPECT_EQ(PlacedOn(*snap, "default/plain"), (std::vector<int>{1}));
  EXPECT_EQ(PlacedOn(*snap, "default/avoiding"), (std::vector<int>{0}));
}

// A gang that waits says which nodes it avoids.
TEST(PlannerTest, AWaitReasonNamesTheAvoidedNodes) {
  core::SnapshotBuilder b;
  b.UpsertNode(GpuNode("a", 8));
  b.UpsertNode(GpuNode("b", 8));
  b.UpsertPod(BusyOn("b"));
  for (core::PodInfo p : GatedGang({.name = "g", .pods = 1, .gpus_per_pod = 8})) {
    p.avoid_nodes = {"a"};
    b.UpsertPod(std::move(p));
  }
  auto snap = b.Build();
  GangPlan plan =
      GangPlanner(*snap, SlotPolicy{}).Plan(*snap->FindGang("default/g"), FreeCapacity(*snap));
  ASSERT_FALSE(plan.placed());
  EXPECT_EQ(plan.reason,
            "needs 8 GPUs on 1 node; no node has room for one of its pods; avoids a "
            "(kube-scheduler refused it there)");
}

// Global maxSlotsPerPod 4, resource pool a100's 8: pod sizes and divisibility follow the gang's
// pool.
TEST(PlannerTest, PoolMaxSlotsPerPodOverridesTheGlobalOne) {
  struct Gang {
    GangSpec spec;
    std::string pool;
    std::string reason;  // Empty: feasible.
  };
  const std::vector<Gang> gangs = {
      {{.name = "a100-8", .pods = 1, .gpus_per_pod = 8}, "a100", ""},
      {{.name = "a100-16", .pods = 2, .gpus_per_pod = 8}, "a100", ""},
      {{.name = "a100-12", .pods = 3, .gpus_per_pod = 4},
       "a100",
       "12 GPUs is not divisible by maxSlotsPerPod 8"},
      {{.name = "t4-8", .pods = 1, .gpus_per_pod = 8}, "t4", "maxSlotsPerPod is 4"},
      {{.name = "unlabelled-8", .pods = 1, .gpus_per_pod = 8}, "", "maxSlotsPerPod is 4"},
      {{.name = "t4-12", .pods = 3, .gpus_per_pod = 4}, "t4", ""},
  };
  core::SnapshotBuilder b;
  for (const char* n : {"a", "b", "c"}) b.UpsertNode(GpuNode(n, 8));
  for (const Gang& g : gangs) {
    for (core::PodInfo p : GatedGang(g.spec)) {
      p.pool = g.pool;
      b.UpsertPod(std::move(p));
    }
  }
  auto snap = b.Build();
  SlotPolicy slots{.max_slots_per_pod = 4, .pool_max_slots_per_pod = {{"a100", 8}}};
  GangPlanner planner(*snap, slots);
  for (const Gang& g : gangs) {
    GangPlan plan = planner.CheckFeasible(*snap->FindGang("default/" + g.spec.name));
    EXPECT_EQ(plan.outcome,
              g.reason.empty() ? GangPlan::Outcome::kPlaced : GangPlan::Outcome::kInfeasible)
        << g.spec.name << ": " << plan.reason;
    EXPECT_NE(plan.reason.find(g.reason), std::string::npos) << g.spec.name << ": " << plan.reason;
  }
}

// Each member is placed by its own eligibility: an MPI-style gang's CPU launcher (no GPU
// toleration) goes to the untainted CPU node, its workers to the tainted GPU nodes.
TEST(PlannerTest, MembersAreEligibleByTheirOwnSpec) {
  core::SnapshotBuilder b;
  b.UpsertNode(GpuNode("cpu", 0));
  for (const char* name : {"g1", "g2"}) {
    core::Node n = GpuNode(name, 8);
    n.taints = {core::Taint{"nvidia.com/gpu", "", core::TaintEffect::kNoSchedule}};
    b.UpsertNode(n);
  }
  std::vector<core::PodInfo> pods = GatedGang({.name = "mpi", .pods = 3, .gpus_per_pod = 4});
  pods[0].requests = core::Resources(1000, 0, 0);  // The launcher.
  for (size_t i = 1; i < pods.size(); ++i) {
    pods[i].tolerations = {{.key = "nvidia.com/gpu", .op = core::Toleration::Operator::kExists}};
  }
  for (core::PodInfo& p : pods) b.UpsertPod(std::move(p));
  auto snap = b.Build();
  GangPlanner planner(*snap, SlotPolicy{});
  const core::Gang g = *snap->FindGang("default/mpi");
  EXPECT_TRUE(planner.CheckFeasible(g).placed()) << planner.CheckFeasible(g).reason;
  GangPlan plan = planner.Plan(g, FreeCapacity(*snap));
  ASSERT_TRUE(plan.placed()) << plan.reason;
  EXPECT_EQ(plan.nodes, (std::vector<int>{0, 1, 1}));
  EXPECT_EQ(planner.EligibleNodes(g), (std::vector<int>{0, 1, 2}));
  std::vector<bool> closed = {false, true, false};  // g1 closed: both workers go to g2.
  EXPECT_EQ(planner.Plan(g, FreeCapacity(*snap), &closed).nodes, (std::vector<int>{0, 2, 2}));
}

// A gang of unlike pods is infeasible when no plan fits the empty pool, although as many copies of
// its largest (by slots) member fit: its CPU-heavy launcher fits no node.
TEST(PlannerTest, AMixedGangLargerThanThePoolIsInfeasible) {
  core::SnapshotBuilder b;
  for (const char* name : {"a", "b"}) b.UpsertNode(GpuNode(name, 8));
  std::vector<core::PodInfo> pods = GatedGang({.name = "mix", .pods = 3, .gpus_per_pod = 4});
  pods[0].requests = core::Resources(100'000, 0, 0);
  for (core::PodInfo& p : pods) b.UpsertPod(std::move(p));
  auto snap = b.Build();
  GangPlanner planner(*snap, SlotPolicy{});
  GangPlan plan = planner.CheckFeasible(*snap->FindGang("default/mix"));
  EXPECT_EQ(plan.outcome, GangPlan::Outcome::kInfeasible) << plan.reason;
}

// "crowded" has 8 free GPUs but room for 3 pods (allocatable "pods"), one taken by a CPU pod
// (a DaemonSet's, say). kube-scheduler refuses a pod beyond that count ("Too many pods").
core::SnapshotBuilder CrowdedNode(int64_t max_pods) {
  core::SnapshotBuilder b;
  core::Node crowded = GpuNode("crowded", 8);
  crowded.allocatable.Set(core::kPods, max_pods);
  b.UpsertNode(crowded);
  core::PodInfo daemon;
  daemon.uid = daemon.name = "daemon";
  daemon.ns = "kube-system";
  daemon.node = "crowded";
  daemon.phase = core::PodPhase::kRunning;
  daemon.requests = testing::PodRequests(100, 1 << 20, 0);
  b.UpsertPod(daemon);
  for (core::PodInfo& p : GatedGang({.name = "g", .pods = 4})) b.UpsertPod(std::move(p));
  return b;
}

// Best fit would put all four 1-GPU pods on "crowded"; its pod count lets two in, and the other
// two go to the next node.
TEST(PlannerTest, ANodesPodCountBindsBeforeItsGpus) {
  core::SnapshotBuilder b = CrowdedNode(3);
  b.UpsertNode(GpuNode("roomy", 8));
  auto snap = b.Build();
  GangPlanner planner(*snap, SlotPolicy{});
  GangPlan plan = planner.Plan(*snap->FindGang("default/g"), FreeCapacity(*snap));
  ASSERT_TRUE(plan.placed()) << plan.reason;
  std::vector<std::string> got;
  for (int n : plan.nodes) got.push_back(snap->node(n).name);
  EXPECT_EQ(got, (std::vector<std::string>{"crowded", "crowded", "roomy", "roomy"}));
}

// Alone, "crowded" cannot take the gang, and the reasons say the pod count is why, not the GPUs.
TEST(PlannerTest, AGangBlockedByPodCountsSaysTooManyPods) {
  {
    auto snap = CrowdedNode(3).Build();
    GangPlanner planner(*snap, SlotPolicy{});
    const core::Gang g = *snap->FindGang("default/g");
    GangPlan plan = planner.Plan(g, FreeCapacity(*snap));
    EXPECT_EQ(plan.outcome, GangPlan::Outcome::kWait);
    EXPECT_EQ(plan.reason,
              "needs 4 GPUs on 4 nodes; 8 free on 1 fitting node; too many pods: room for 2 more");
    plan = planner.CheckFeasible(g);
    EXPECT_EQ(plan.outcome, GangPlan::Outcome::kInfeasible);
    EXPECT_EQ(plan.reason,
              "larger than the pool: needs 4 GPUs on 4 nodes; 8 in the whole pool on 1 fitting "
              "node; too many pods: room for 3 more");
  }
  auto snap = CrowdedNode(1).Build();
  GangPlanner planner(*snap, SlotPolicy{});
  GangPlan plan = planner.Plan(*snap->FindGang("default/g"), FreeCapacity(*snap));
  EXPECT_EQ(plan.outcome, GangPlan::Outcome::kWait);
  EXPECT_EQ(
      plan.reason,
      "needs 4 GPUs on 4 nodes; no node has room for one of its pods; too many pods on 1 node");
}

TEST(PlannerTest, CpuSlots) {
  core::SnapshotBuilder b;
  b.UpsertNode(GpuNode("a", 0));  // 64 CPUs
  for (core::PodInfo p : GatedGang({.name = "j", .pods = 2, .gpus_per_pod = 0})) {
    p.requests = core::Resources(16'000, 1 << 20, 0);
    b.UpsertPod(std::move(p));
  }
  auto snap = b.Build();
  SlotPolicy slots{
      .type = SlotPolicy::Type::kCpu, .milli_cpu_per_slot = 8000, .max_slots_per_pod = 2};
  GangPlanner planner(*snap, slots);
  core::Gang g = *snap->FindGang("default/j");
  EXPECT_EQ(slots.SlotsOf(g.total), 4);  // 32 CPUs / 8 per slot
  EXPECT_TRUE(planner.CheckFeasible(g).placed());
  EXPECT_TRUE(planner.Plan(g, FreeCapacity(*snap)).placed());
}

}  // namespace
}  // namespace phalanx::gang
