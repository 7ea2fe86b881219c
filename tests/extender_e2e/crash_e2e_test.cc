// Crash recovery: phalanx-extender is SIGKILLed within 150 ms of its first placement write of a
// round (while it writes placements and lifts gates) and restarted, several times, while gangs keep
// arriving. Whatever a kill leaves half done, no node is ever double-booked and no gang is ever
// partly bound: the Watcher checks both at every pod event, TearDown checks the final state.
#include <signal.h>

#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "kube/client.h"
#include "tests/extender_e2e/harness.h"

namespace phalanx::e2e {
namespace {

class CrashE2e : public ExtenderE2eTest {};

// What a crash between two placement writes of one gang leaves behind (the first member pinned
// exactly as AdmissionLoop::Admit pins it, the second untouched) must not stop admission: the gang
// and an unrelated one still run, and the pinned member runs where it is pinned (a gated pod's
// nodeSelector may only grow, so the pin cannot be taken back).
TEST_F(CrashE2e, RecoversAGangPlacedPartlyBeforeACrash) {
  AddNodes("n", 3, 4);
  Submit({.name = "half", .pods = 2, .gpus = 4, .position = 1});
  Submit({.name = "other", .gpus = 4, .position = 2});
  const std::string pinned = NodeName("n", 1);
  ASSERT_NO_FATAL_FAILURE(Pin("half-r0-0", pinned));
  StartExtender(4);
  ASSERT_TRUE(WaitUntil([&] { return Running("other"); })) << "admission is stuck";
  ASSERT_TRUE(WaitUntil([&] { return Running("half"); })) << "the half-placed gang never runs";
  EXPECT_EQ(GangPods("half").at(0).info.node, pinned);
}

// A crash left a gang planned whole but still gated, and one of its nodes has left the cluster
// since: the gang is not ungated (its member there could never bind) but marked for the master
// to recreate, and runs once recreated.
TEST_F(CrashE2e, ReplansAGangWhosePlannedNodeIsGone) {
  AddNodes("n", 3, 4);
  Submit({.name = "g", .pods = 2, .gpus = 4, .position = 1});
  ASSERT_NO_FATAL_FAILURE(Pin("g-r0-0", NodeName("n", 0)));
  ASSERT_NO_FATAL_FAILURE(Pin("g-r0-1", NodeName("n", 1)));
  ASSERT_TRUE(client_->Delete(kube::kNodes, "", NodeName("n", 1)).ok());
  StartExtender(4);
  ASSERT_TRUE(WaitUntil([&] { return Marked("g"); })) << "the stranded gang is never marked";
  EXPECT_TRUE(Gated("g"));
  EXPECT_EQ(PreemptedBy("g"), Key("g"));
  EXPECT_EQ(RequeueVictims(), std::vector<std::string>{"g"});
  ASSERT_TRUE(WaitUntil([&] { return Running("g"); })) << "the recreated gang never runs";
  EXPECT_EQ(BoundNodes("g"), (std::vector<std::string>{NodeName("n", 0), NodeName("n", 2)}));
}

// Two gangs a crash left half placed, with room for only one of them to complete: recovery plans
// the first in queue order around its pinned member and marks the second for recreation, where
// it planned both on the one free node.
TEST_F(CrashE2e, RecoveryCompletesHalfPlacedGangsOnCapacityNotYetTaken) {
  AddNodes("n", 3, 4);
  Submit({.name = "a", .pods = 2, .gpus = 4, .position = 1});
  Submit({.name = "b", .pods = 2, .gpus = 4, .position = 2});
  ASSERT_NO_FATAL_FAILURE(Pin("a-r0-0", NodeName("n", 0)));
  ASSERT_NO_FATAL_FAILURE(Pin("b-r0-0", NodeName("n", 1)));
  StartExtender(4);
  ASSERT_TRUE(WaitUntil([&] { return Running("a"); })) << "the first half-placed gang never runs";
  EXPECT_EQ(BoundNodes("a"), (std::vector<std::string>{NodeName("n", 0), NodeName("n", 2)}));
  ASSERT_TRUE(WaitUntil([&] { return Marked("b"); })) << "the second is never marked";
  EXPECT_EQ(PreemptedBy("b"), Key("b"));
  EXPECT_EQ(RequeueVictims(), std::vector<std::string>{"b"});
}

// A gang some other tool created gated (no phalanx.io/job-id) that strands is deleted by the
// extender: nobody else acts on a mark for recreation, and the gang held its nodes for good. The
// node it held then takes the next gang.
TEST_F(CrashE2e, AStrandedGangOfAnotherToolIsEvicted) {
  AddNodes("n", 2, 4);
  Submit({.name = "theirs", .pods = 2, .gpus = 4, .position = 1, .managed = false});
  ASSERT_NO_FATAL_FAILURE(Pin("theirs-r0-0", NodeName("n", 0)));
  ASSERT_NO_FATAL_FAILURE(Pin("theirs-r0-1", NodeName("n", 1)));
  ASSERT_TRUE(client_->Delete(kube::kNodes, "", NodeName("n", 1)).ok());
  StartExtender(4);
  ASSERT_TRUE(WaitUntil([&] { return GangPods("theirs").empty(); }))
      << "the stranded gang is never evicted";
  Submit({.name = "next", .gpus = 4, .position = 2});
  ASSERT_TRUE(WaitUntil([&] { return Running("next"); })) << "the node it held stays held";
  EXPECT_EQ(BoundNodes("next"), std::vector<std::string>{NodeName("n", 0)});
}

// Each cycle, with the extender down, plays the master (running gangs complete, marked gangs are
// requeued) and queues a wave of gangs; then the extender starts, and is SIGKILLed 0-150 ms after
// the first placement of its first round, which admits a whole cluster's worth of gangs.
TEST_F(CrashE2e, SigkillMidAdmissionLeavesNoDoubleBookingOrPartialGang) {
  AddNodes("n", 6, 8);  // 48 GPUs.
  std::mt19937 rng(E2eSeed());
  int position = 0;
  int half_done_kills = 0, admitting_kills = 0;
  for (int cycle = 0; cycle < 8; ++cycle) {
    std::set<std::string> done;
    for (const PodState& p : Pods()) {
      if (p.Live() && !p.info.node.empty() && done.insert(p.info.gang).second) Finish(p.info.gang);
    }
    RequeueVictims();
    for (int i = 0; i < 12; ++i) {
      constexpr int64_t kGpus[] = {1, 2, 4, 8};
      ++position;
      Submit({.name = absl::StrCat("g", position),
              .pods = 1 + static_cast<int>(rng() % 3),
              .gpus = kGpus[rng() % 4],
              .position = position});
    }
    const int64_t placed_before = watcher_->placements();
    StartExtender(8);
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    while (watcher_->placements() == placed_before && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(2));
    }
    admitting_kills += watcher_->placements() > placed_before;
    absl::SleepFor(absl::Milliseconds(cycle % 2 == 0 ? 0 : rng() % 150));
    StopExtender(SIGKILL);

    int gated_placed = 0;
    for (const PodState& p : Pods()) {
      gated_placed += p.Live() && p.info.gated && !p.info.placement.empty();
    }
    half_done_kills += gated_placed > 0;
    std::printf("cycle %d: killed %s admission with %d gated pods holding a placement\n", cycle,
                watcher_->placements() > placed_before ? "during" : "without", gated_placed);
  }
  EXPECT_GE(admitting_kills, 6) << "most restarts should have had gangs to admit";
  EXPECT_GT(half_done_kills, 0) << "no kill landed between a placement and its ungating";

  StartExtender(8);
  Settle();
  if (!RequeueVictims().empty()) Settle();
  // The restarted extender decided about every gang: each runs or waits with a reason.
  int running = 0;
  std::vector<std::string> unexplained;
  for (const PodState& p : Pods()) {
    if (!p.Live()) continue;
    running += !p.info.node.empty();
    if (p.info.gated && p.pending_reason.empty()) unexplained.push_back(p.info.name);
  }
  EXPECT_TRUE(unexplained.empty())
      << "gated without a pending reason: " << absl::StrJoin(unexplained, ", ");
  EXPECT_GT(running, 0);
}

}  // namespace
}  // namespace phalanx::e2e
