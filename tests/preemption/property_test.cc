// Property tests over seeded random clusters: capacity, all-or-nothing, victim rules, node-order
// independence, and that a preempting head is not passed.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "gang/eligibility.h"
#include "preemption/admission.h"
#include "tests/testing/fixtures.h"

namespace phalanx::preemption {
namespace {

using testing::GpuNode;

struct World {
  std::vector<core::Node> nodes;
  std::vector<core::PodInfo> pods;
};

// Random cluster: 4- or 8-GPU nodes; gangs of 1..8 pods of 1, 2, 4 or 8 GPUs, priorities 10..90,
// a tenth not preemptible; about half already admitted by an earlier round.
World RandomWorld(std::mt19937& rng, int max_nodes) {
  World w;
  int n = std::uniform_int_distribution<int>(1, max_nodes)(rng);
  for (int i = 0; i < n; ++i) {
    w.nodes.push_back(GpuNode(absl::StrCat("node-", i), rng() % 2 ? 8 : 4));
  }
  int gangs = std::uniform_int_distribution<int>(1, n * 2 + 4)(rng);
  for (int g = 0; g < gangs; ++g) {
    testing::GangSpec spec{.name = absl::StrCat("g", g),
                           .pods = static_cast<int>(1 + rng() % 8 / (rng() % 4 + 1)),
                           .gpus_per_pod = int64_t{1} << (rng() % 4),
                           .priority = static_cast<int32_t>(10 * (1 + rng() % 9)),
                           .created_ms = static_cast<int64_t>(rng() % 1000),
                           .preemptible = rng() % 10 != 0};
    for (core::PodInfo& p : testing::GatedGang(spec)) w.pods.push_back(std::move(p));
  }
  return w;
}

std::shared_ptr<const core::ClusterSnapshot> Build(const World& w, std::mt19937* shuffle) {
  std::vector<core::Node> nodes = w.nodes;
  std::vector<core::PodInfo> pods = w.pods;
  if (shuffle != nullptr) {
    std::shuffle(nodes.begin(), nodes.end(), *shuffle);
    std::shuffle(pods.begin(), pods.end(), *shuffle);
  }
  core::SnapshotBuilder b;
  for (core::Node& n : nodes) b.UpsertNode(std::move(n));
  for (core::PodInfo& p : pods) b.UpsertPod(std::move(p));
  return b.Build();
}

// Starts admitted gangs (pods bound to their plan) and marks victims, as the services would.
void Apply(const RoundResult& r, World& w) {
  absl::flat_hash_map<std::string, std::string> node_of;
  absl::flat_hash_map<std::string, std::string> marked_by;
  for (const GangDecision& d : r.decisions) {
    if (d.verdict == Verdict::kAdmit || d.verdict == Verdict::kBackfill) {
      for (const Assignment& a : d.plan) node_of[a.pod_uid] = a.node;
    }
    for (const std::string& v : d.victims) marked_by[v] = d.gang;
  }
  for (core::PodInfo& p : w.pods) {
    if (auto it = node_of.find(p.uid); it != node_of.end()) {
      p.gated = false;
      p.node = it->second;
      p.phase = core::PodPhase::kRunning;
    }
    if (auto it = marked_by.find(p.GangKey()); it != marked_by.end()) {
      p.preempt_requested = true;
      p.preempted_by = it->second;
    }
  }
}

// Victims leave and come back gated.
void RequeueVictims(World& w) {
  for (core::PodInfo& p : w.pods) {
    if (p.preempt_requested) p = core::Requeued(std::move(p));
  }
}

std::string Render(const RoundResult& r) {
  std::string out;
  for (const GangDecision& d : r.decisions) {
    absl::StrAppend(&out, d.gang, " ", VerdictName(d.verdict), " ", d.reason, "\n");
    for (const Assignment& a : d.plan) absl::StrAppend(&out, "  ", a.pod_uid, "@", a.node, "\n");
    for (const std::string& v : d.victims) absl::StrAppend(&out, "  victim ", v, "\n");
  }
  return out;
}

void CheckRound(const core::ClusterSnapshot& snap, const RoundResult& r) {
  absl::flat_hash_map<std::string, core::Resources> used;
  for (int i = 0; i < snap.node_count(); ++i) used[snap.node(i).name] = snap.used(i);
  std::vector<const GangDecision*> waiting;
  absl::flat_hash_set<std::string> victims;
  for (const GangDecision& d : r.decisions) {
    std::optional<core::Gang> g = snap.FindGang(d.gang);
    ASSERT_TRUE(g.has_value());
    bool starts = d.verdict == Verdict::kAdmit || d.verdict == Verdict::kBackfill;
    // All or nothing: a plan covers every member, and only admit/backfill/preempt carry one.
    if (starts || d.verdict == Verdict::kPreempt) {
      ASSERT_EQ(d.plan.size(), g->members.size()) << d.gang;
    } else {
      ASSERT_TRUE(d.plan.empty()) << d.gang;
    }
    if (starts) {
      for (const Assignment& a : d.plan) used[a.node] += snap.FindPod(a.pod_uid)->requests;
    }
    for (const std::string& v : d.victims) {
      EXPECT_TRUE(victims.insert(v).second) << v << " taken twice";
      std::optional<core::Gang> victim = snap.FindGang(v);
      ASSERT_TRUE(victim.has_value());
      EXPECT_LT(victim->priority, g->priority) << v << " for " << d.gang;
      EXPECT_TRUE(victim->preemptible) << v;
      EXPECT_TRUE(victim->Running()) << v;
    }
    // Nothing strictly lower runs ahead of a waiting gang on nodes it could use, unless that gang
    // could take the capacity back by preemption.
    if (starts) {
      for (const GangDecision* w : waiting) {
        if (d.priority >= w->priority) continue;
        const core::PodInfo& head = *snap.FindGang(w->gang)->members.front();
        bool overlaps = std::any_of(d.plan.begin(), d.plan.end(), [&](const Assignment& a) {
          return gang::NodeEligible(head, snap.node(*snap.NodeIndex(a.node)));
        });
        if (overlaps) {
          EXPECT_TRUE(g->preemptible) << d.gang << " passed " << w->gang;
        }
      }
    }
    if (d.verdict == Verdict::kWait) waiting.push_back(&d);
  }
  for (int i = 0; i < snap.node_count(); ++i) {
    const core::Node& n = snap.node(i);
    EXPECT_TRUE(used[n.name].FitsIn(n.allocatable)) << n.name << " over capacity";
  }
}

// Every gang is either wholly holding capacity or wholly not.
void CheckNoPartialGangs(const core::ClusterSnapshot& snap) {
  for (const core::Gang& g : snap.Gangs()) {
    size_t holding = std::count_if(g.members.begin(), g.members.end(),
                                   [](const core::PodInfo* p) { return p->HoldsCapacity(); });
    EXPECT_TRUE(holding == 0 || holding == g.members.size()) << g.key;
  }
}

// Three rounds on seed `seed`'s random world, checking the invariants after each; returns how
// many times a gang that preempted was checked to run once its victims were gone.
int CheckRounds(int seed) {
  int preemptors_checked = 0;
  std::mt19937 rng(seed);
  AdmissionOptions opts;
  opts.slots.max_slots_per_pod = 8;
  World w = RandomWorld(rng, seed % 10 == 0 ? 1000 : 40);
  for (int round = 0; round < 3; ++round) {
    auto snap = Build(w, nullptr);
    RoundResult r = RunAdmissionRound(*snap, opts);
    CheckRound(*snap, r);
    std::mt19937 shuffle(seed * 7 + round);
    EXPECT_EQ(Render(RunAdmissionRound(*Build(w, &shuffle), opts)), Render(r))
        << "decisions depend on node order";
    Apply(r, w);
    CheckNoPartialGangs(*Build(w, nullptr));
    // A gang that preempted and now heads the queue runs once its victims are gone.
    std::string first_preemptor;
    for (const GangDecision& d : r.decisions) {
      if (d.verdict == Verdict::kPreempt) {
        first_preemptor = d.gang;
        break;
      }
      if (d.verdict == Verdict::kWait) break;
    }
    RequeueVictims(w);
    if (!first_preemptor.empty()) {
      auto next = Build(w, nullptr);
      RoundResult r2 = RunAdmissionRound(*next, opts);
      const GangDecision* d = testing::FindDecision(r2, first_preemptor);
      EXPECT_NE(d, nullptr) << first_preemptor;
      if (d != nullptr) {
        EXPECT_EQ(d->verdict, Verdict::kAdmit) << first_preemptor << ": " << d->reason;
      }
      ++preemptors_checked;
    }
    // New arrivals with random priorities for the next round.
    World more = RandomWorld(rng, 1);
    for (core::PodInfo& p : more.pods) {
      p.name = absl::StrCat("r", round, "-", p.name);
      p.gang = absl::StrCat("r", round, "-", p.gang);
      p.uid = absl::StrCat(p.ns, "/", p.name);
      w.pods.push_back(std::move(p));
    }
  }
  return preemptors_checked;
}

class PropertyTest : public ::testing::TestWithParam<int> {};

TEST_P(PropertyTest, InvariantsHoldOverRounds) { CheckRounds(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Seeds, PropertyTest, ::testing::Range(1, 61));

// The seeds do reach the check that a preemptor runs next: it is not vacuous.
TEST(PropertyCoverageTest, SomeSeedsCheckAPreemptorRunsNext) {
  int checked = 0;
  for (int seed = 1; seed < 10; ++seed) checked += CheckRounds(seed);
  EXPECT_GT(checked, 0);
}

}  // namespace
}  // namespace phalanx::preemption
