// Crash recovery: phalanx-extender is SIGKILLed a few hundred milliseconds into admission rounds
// (while it writes placements and lifts gates) and restarted, several times, while gangs keep
// arriving. Whatever a kill leaves half done, no node is ever double-booked and no gang is ever
// partly bound: the Watcher checks both at every pod event, TearDown checks the final state.
#include <signal.h>

#include <random>
#include <string>
#include <thread>
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
  absl::StatusOr<std::string> r = client_->Patch(
      kube::kPods, ns_, "half-r0-0", kube::PatchType::kMerge,
      absl::StrCat(R"({"metadata":{"annotations":{"phalanx.io/placement":")", pinned,
                   R"(","phalanx.io/backfilled":null,"phalanx.io/pending-reason":null}},)",
                   R"("spec":{"nodeSelector":{"kubernetes.io/hostname":")", pinned, R"("}}})"));
  ASSERT_TRUE(r.ok()) << r.status();
  StartExtender(4);
  ASSERT_TRUE(WaitUntil([&] { return Running("other"); })) << "admission is stuck";
  ASSERT_TRUE(WaitUntil([&] { return Running("half"); })) << "the half-placed gang never runs";
  EXPECT_EQ(GangPods("half").at(0).info.node, pinned);
}

TEST_F(CrashE2e, SigkillMidAdmissionLeavesNoDoubleBookingOrPartialGang) {
  AddNodes("n", 6, 8);  // 48 GPUs.
  const unsigned seed = std::random_device{}();
  std::mt19937 rng(seed);
  ::testing::Test::RecordProperty("seed", static_cast<int>(seed & 0x7fffffff));
  std::printf("seed %u\n", seed);
  int position = 0;
  auto submit_wave = [&](int gangs) {
    constexpr int64_t kGpus[] = {1, 2, 4, 8};
    for (int i = 0; i < gangs; ++i) {
      ++position;
      Submit({.name = absl::StrCat("g", position),
              .pods = 1 + static_cast<int>(rng() % 3),
              .gpus = kGpus[rng() % 4],
              .position = position});
    }
  };

  int half_done_kills = 0;
  StartExtender(8);
  for (int cycle = 0; cycle < 4; ++cycle) {
    const int64_t placed_before = watcher_->placements();
    const absl::Duration delay = absl::Milliseconds(50 + rng() % 250);
    std::thread wave([&] { submit_wave(12); });
    const absl::Time deadline = absl::Now() + absl::Seconds(60);
    while (watcher_->placements() == placed_before && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(5));
    }
    const bool admitting = watcher_->placements() > placed_before;
    absl::SleepFor(delay);
    StopExtender(SIGKILL);
    wave.join();
    ASSERT_TRUE(admitting) << "cycle " << cycle
                           << ": no placement written within 60 s of a restart (admission wedged?)";

    int gated_placed = 0;
    for (const PodState& p : Pods()) {
      gated_placed += p.Live() && p.info.gated && !p.info.placement.empty();
    }
    half_done_kills += gated_placed > 0;
    std::printf("cycle %d: killed with %d gated pods holding a placement\n", cycle, gated_placed);

    // Like the master, let every running gang complete so the next round has work to do.
    for (const PodState& p : Pods()) {
      if (p.Live() && !p.info.node.empty() && !GangPods(p.info.gang).empty()) Finish(p.info.gang);
    }
    StartExtender(8);
  }
  Settle();
  EXPECT_GT(half_done_kills, 0) << "no kill landed between a placement and its ungating";

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
