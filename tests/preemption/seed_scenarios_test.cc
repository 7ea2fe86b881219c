// SeedScenarios: the situations the seed documents describe, replayed on the pure engine round by
// round (admitted gangs start; victims are requeued as the master does).
#include <gtest/gtest.h>

#include "preemption/admission.h"
#include "tests/testing/fixtures.h"

namespace phalanx::preemption {
namespace {

using testing::Cluster;
using testing::FindDecision;
using testing::GpuNode;

AdmissionOptions Options(int32_t max_slots_per_pod) {
  AdmissionOptions o;
  o.slots.max_slots_per_pod = max_slots_per_pod;
  return o;
}

Verdict VerdictOf(const RoundResult& r, const std::string& gang) {
  const GangDecision* d = FindDecision(r, gang);
  EXPECT_NE(d, nullptr) << gang;
  return d == nullptr ? Verdict::kInfeasible : d->verdict;
}

// Seeds: "two experiments launched simultaneously that each require 16 GPUs on a cluster with only
// 16 GPUs" deadlock the default scheduler. Here exactly one runs, the other runs after it.
TEST(SeedScenarios, TwoSixteenGpuJobsOnSixteenGpus) {
  Cluster c;
  c.AddNode(GpuNode("node-a", 8));
  c.AddNode(GpuNode("node-b", 8));
  c.Submit({.name = "exp-1", .pods = 2, .gpus_per_pod = 8, .created_ms = 1});
  c.Submit({.name = "exp-2", .pods = 2, .gpus_per_pod = 8, .created_ms = 2});
  RoundResult r = c.Step(Options(8));
  EXPECT_EQ(VerdictOf(r, "default/exp-1"), Verdict::kAdmit);
  EXPECT_EQ(VerdictOf(r, "default/exp-2"), Verdict::kWait);
  EXPECT_EQ(c.NodesOf("default/exp-1"), (std::vector<std::string>{"node-a", "node-b"}));
  EXPECT_FALSE(c.Running("default/exp-2"));  // nothing partial: no pod of exp-2 holds a GPU
  EXPECT_EQ(c.snapshot()->Free(0).gpu() + c.snapshot()->Free(1).gpu(), 0);
  EXPECT_EQ(
      FindDecision(r, "default/exp-2")->reason,
      "needs 16 GPUs on 2 nodes; no node has room for one of its pods; no set of lower-priority "
      "preemptible gangs frees enough");
  c.Finish("default/exp-1");
  r = c.Step(Options(8));
  EXPECT_EQ(VerdictOf(r, "default/exp-2"), Verdict::kAdmit);
  EXPECT_EQ(c.NodesOf("default/exp-2"), (std::vector<std::string>{"node-a", "node-b"}));
}

// Seeds: on three 4-GPU nodes, an experiment that needs four such nodes deadlocked the cluster with
// three pods started. Here it waits with a reason, holds nothing, and other work still runs.
TEST(SeedScenarios, FourNodeJobOnThreeNodes) {
  Cluster c;
  for (const char* n : {"node-a", "node-b", "node-c"}) c.AddNode(GpuNode(n, 4));
  c.Submit({.name = "big", .pods = 4, .gpus_per_pod = 4, .priority = 60, .created_ms = 1});
  c.Submit({.name = "small", .pods = 2, .gpus_per_pod = 4, .created_ms = 2});
  RoundResult r = c.Step(Options(4));
  const GangDecision* big = FindDecision(r, "default/big");
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(big->verdict, Verdict::kInfeasible);
  EXPECT_TRUE(big->plan.empty());
  EXPECT_EQ(big->reason,
            "larger than the pool: needs 16 GPUs on 4 nodes; 12 in the whole pool on 3 fitting "
            "nodes");
  EXPECT_FALSE(c.Running("default/big"));
  EXPECT_EQ(VerdictOf(r, "default/small"), Verdict::kAdmit);  // unaffected by the stuck job
  EXPECT_EQ(c.NodesOf("default/small"), (std::vector<std::string>{"node-a", "node-b"}));
  // A fourth node arrives (autoscaler): `big` can now run, and it outranks `small`.
  c.AddNode(GpuNode("node-d", 4));
  r = c.Step(Options(4));
  EXPECT_EQ(VerdictOf(r, "default/big"), Verdict::kPreempt);
  EXPECT_EQ(FindDecision(r, "default/big")->victims, (std::vector<std::string>{"default/small"}));
  c.RequeueMarkedVictims();
  r = c.Step(Options(4));
  EXPECT_EQ(VerdictOf(r, "default/big"), Verdict::kAdmit);
  EXPECT_EQ(VerdictOf(r, "default/small"), Verdict::kWait);
  EXPECT_EQ(c.NodesOf("default/big"),
            (std::vector<std::string>{"node-a", "node-b", "node-c", "node-d"}));
}

// The seven-step example under "Task Priority" (seeds/001), in Kubernetes terms: Determined's
// priorities 1, 2, 3 (lower = more important) become 60, 50, 40 (higher = more important).
// Cluster: 8 GPUs as two 4-GPU nodes, maxSlotsPerPod 4.
TEST(SeedScenarios, SevenStepPriorityExample) {
  constexpr int32_t kP1 = 60, kP2 = 50, kP3 = 40;
  Cluster c;
  c.AddNode(GpuNode("node-a", 4));
  c.AddNode(GpuNode("node-b", 4));
  auto running = [&](const std::string& prefix, int n) {
    int count = 0;
    for (int i = 0; i < n; ++i) count += c.Running(prefix + std::to_string(i));
    return count;
  };

  // 1. A priority-2 ASHA experiment, 20 one-slot trials: 8 run and use all 8 GPUs.
  for (int i = 0; i < 20; ++i) {
    c.Submit({.name = "asha-" + std::to_string(i), .priority = kP2, .created_ms = 100 + i});
  }
  c.Step(Options(4));
  EXPECT_EQ(running("default/asha-", 20), 8);
  EXPECT_EQ(c.snapshot()->Free(0).gpu() + c.snapshot()->Free(1).gpu(), 0);

  // 2. A priority-1 distributed experiment with 4 slots: 4 ASHA trials are preempted for it.
  c.now_ms += 60'000;
  c.Submit({.name = "dist-1", .gpus_per_pod = 4, .priority = kP1, .created_ms = 200});
  RoundResult r = c.Step(Options(4));
  const GangDecision* d = FindDecision(r, "default/dist-1");
  ASSERT_EQ(d->verdict, Verdict::kPreempt);
  ASSERT_EQ(d->victims.size(), 4u);  // whole gangs, all ASHA trials on one node
  for (const std::string& v : d->victims) EXPECT_EQ(v.rfind("default/asha-", 0), 0u) << v;
  EXPECT_EQ(c.RequeueMarkedVictims().size(), 4u);
  r = c.Step(Options(4));
  EXPECT_EQ(VerdictOf(r, "default/dist-1"), Verdict::kAdmit);
  EXPECT_EQ(running("default/asha-", 20), 4);

  // 3. A priority-3 notebook (1 slot, not preemptible) waits while the experiments want all GPUs
  //    and runs as soon as they need at most 7.
  c.Submit({.name = "notebook", .priority = kP3, .created_ms = 300, .preemptible = false});
  r = c.Step(Options(4));
  EXPECT_EQ(VerdictOf(r, "default/notebook"), Verdict::kWait);
  for (int round = 0; round < 20 && !c.Running("default/notebook"); ++round) {
    int i = 0;
    while (!c.Running("default/asha-" + std::to_string(i))) ++i;
    c.Finish("default/asha-" + std::to_string(i));  // a trial completes; queued trials go first
    r = c.Step(Options(4));
    bool asha_queued = false;
    for (const GangDecision& q : r.decisions) {
      asha_queued |= q.gang.rfind("default/asha-", 0) == 0 && q.verdict == Verdict::kWait;
    }
    EXPECT_EQ(c.Running("default/notebook"), !asha_queued && running("default/asha-", 20) < 4);
  }
  ASSERT_TRUE(c.Running("default/notebook"));

  // 4. ASHA and the distributed experiment complete; the notebook keeps running.
  for (int i = 0; i < 20; ++i) c.Finish("default/asha-" + std::to_string(i));
  c.Finish("default/dist-1");
  c.Step(Options(4));
  EXPECT_TRUE(c.Running("default/notebook"));

  // 5. A priority-1 experiment with 8 slots cannot run: the notebook is not preemptible and only 7
  //    GPUs are free.
  c.Submit({.name = "dist-2", .pods = 2, .gpus_per_pod = 4, .priority = kP1, .created_ms = 500});
  r = c.Step(Options(4));
  d = FindDecision(r, "default/dist-2");
  EXPECT_EQ(d->verdict, Verdict::kWait);
  EXPECT_TRUE(d->victims.empty());
  EXPECT_EQ(d->reason,
            "needs 8 GPUs on 2 nodes; 4 free on 1 fitting node; no set of lower-priority "
            "preemptible gangs frees enough");

  // 6. A priority-2 experiment with 4 slots backfills onto the idle GPUs.
  c.Submit({.name = "dist-3", .gpus_per_pod = 4, .priority = kP2, .created_ms = 600});
  r = c.Step(Options(4));
  EXPECT_EQ(VerdictOf(r, "default/dist-3"), Verdict::kBackfill);
  EXPECT_EQ(FindDecision(r, "default/dist-3")->reason,
            "backfilled behind default/dist-2 on nodes it holds; it takes them back when it can "
            "start");
  EXPECT_TRUE(c.Running("default/dist-3"));

  // 7. The notebook is killed; the backfilled priority-2 experiment is preempted and the priority-1
  //    experiment runs; when it completes, the priority-2 experiment restarts.
  c.Finish("default/notebook");
  r = c.Step(Options(4));
  d = FindDecision(r, "default/dist-2");
  EXPECT_EQ(d->verdict, Verdict::kPreempt);
  EXPECT_EQ(d->victims, (std::vector<std::string>{"default/dist-3"}));
  c.RequeueMarkedVictims();
  r = c.Step(Options(4));
  EXPECT_EQ(VerdictOf(r, "default/dist-2"), Verdict::kAdmit);
  EXPECT_EQ(VerdictOf(r, "default/dist-3"), Verdict::kWait);
  c.Finish("default/dist-2");
  r = c.Step(Options(4));
  EXPECT_EQ(VerdictOf(r, "default/dist-3"), Verdict::kAdmit);
}

// maxSlotsPerPod 4 on mixed 4- and 8-GPU nodes: 4-slot pods take 4-GPU nodes whole and share an
// 8-GPU node two by two; a 1-slot pod never breaks into an empty node while a partial one fits.
TEST(SeedScenarios, MaxSlotsPerPodMixedNodes) {
  Cluster c;
  c.AddNode(GpuNode("n4-a", 4));
  c.AddNode(GpuNode("n4-b", 4));
  c.AddNode(GpuNode("n8-a", 8));
  c.Submit({.name = "one", .gpus_per_pod = 1, .created_ms = 1});
  c.Submit({.name = "eight", .pods = 2, .gpus_per_pod = 4, .created_ms = 2});
  c.Submit({.name = "four", .gpus_per_pod = 4, .created_ms = 3});
  c.Submit({.name = "one-more", .gpus_per_pod = 1, .created_ms = 4});
  RoundResult r = c.Step(Options(4));
  // one: n4-a leaves 3, n4-b 3, n8-a 7 -> n4-a (name breaks the tie).
  EXPECT_EQ(c.NodesOf("default/one"), (std::vector<std::string>{"n4-a"}));
  // eight: 4-slot pods; n4-b leaves 0 (best), then n8-a leaves 4.
  EXPECT_EQ(c.NodesOf("default/eight"), (std::vector<std::string>{"n4-b", "n8-a"}));
  // four: only n8-a has 4 free: two 4-slot pods per 8-GPU node.
  EXPECT_EQ(c.NodesOf("default/four"), (std::vector<std::string>{"n8-a"}));
  // one-more: packs into n4-a's 3 free GPUs.
  EXPECT_EQ(c.NodesOf("default/one-more"), (std::vector<std::string>{"n4-a"}));
  for (const GangDecision& d : r.decisions) EXPECT_EQ(d.verdict, Verdict::kAdmit) << d.gang;
  // A 4-slot gang now waits: 2 GPUs free, all on n4-a.
  c.Submit({.name = "late", .gpus_per_pod = 4, .created_ms = 5});
  r = c.Step(Options(4));
  EXPECT_EQ(
      FindDecision(r, "default/late")->reason,
      "needs 4 GPUs on 1 node; no node has room for one of its pods; no set of lower-priority "
      "preemptible gangs frees enough");
}

// Slots not divisible by maxSlotsPerPod are never scheduled; they say why and block nobody.
TEST(SeedScenarios, NonDivisibleSlotsRejected) {
  Cluster c;
  c.AddNode(GpuNode("node-a", 8));
  c.AddNode(GpuNode("node-b", 8));
  c.Submit({.name = "six", .pods = 3, .gpus_per_pod = 2, .priority = 90, .created_ms = 1});
  c.Submit({.name = "too-wide", .gpus_per_pod = 8, .priority = 90, .created_ms = 2});
  c.Submit({.name = "ok", .pods = 2, .gpus_per_pod = 4, .created_ms = 3});
  RoundResult r = c.Step(Options(4));
  const GangDecision* six = FindDecision(r, "default/six");
  EXPECT_EQ(six->verdict, Verdict::kInfeasible);
  EXPECT_EQ(six->reason,
            "6 GPUs is not divisible by maxSlotsPerPod 4, so the gang can never be scheduled");
  const GangDecision* wide = FindDecision(r, "default/too-wide");
  EXPECT_EQ(wide->verdict, Verdict::kInfeasible);
  EXPECT_EQ(wide->reason, "pod too-wide-0 requests 8 GPUs; maxSlotsPerPod is 4");
  EXPECT_EQ(VerdictOf(r, "default/ok"), Verdict::kAdmit);
  EXPECT_FALSE(c.Running("default/six"));
  EXPECT_FALSE(c.Running("default/too-wide"));
}

}  // namespace
}  // namespace phalanx::preemption
