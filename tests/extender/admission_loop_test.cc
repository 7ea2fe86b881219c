// AdmissionLoop against a scripted API server: a gang whose planned capacity a foreign gang
// reserves (at filter time) while the round's writes are in flight is not written; it waits for
// the next round. /debug/queue says which pods resourceVersion its round saw.
#include "scheduler_extender/admission_loop.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "tests/kube/scripted_server.h"
#include "tests/testing/fixtures.h"

namespace phalanx::extender {
namespace {

using phalanx::testing::ScriptedRequest;
using phalanx::testing::ScriptedResponse;
using phalanx::testing::ScriptedServer;

TEST(AdmissionLoopTest, AGangWhoseCapacityWasReservedMeanwhileWaits) {
  core::SnapshotBuilder b;
  b.UpsertNode(testing::GpuNode("n", 8));
  for (const char* name : {"first", "second"}) {
    for (core::PodInfo p : testing::GatedGang(
             {.name = name, .gpus_per_pod = 4, .created_ms = name[0] == 'f' ? 1 : 2})) {
      b.UpsertPod(p);
    }
  }
  std::shared_ptr<const core::ClusterSnapshot> snap = b.Build();
  const core::Resources four = snap->FindPod("default/first-0")->requests;

  ReservationBook book;
  std::atomic<bool> reserved = false;
  // While the first gang's placement is written, a foreign gang passes filter on that node.
  ScriptedServer server([&](const ScriptedRequest& r) {
    if (absl::StrContains(r.target, "/pods/first-0") && !reserved.exchange(true)) {
      book.Reserve("other/foreign", {{"other/foreign-0", "n", four}}, 0, 60'000);
    }
    return ScriptedResponse{200, {R"({"kind":"Pod"})"}};
  });
  kube::Client client(kube::Config{.server = server.url()});
  AdmissionLoop loop(preemption::AdmissionOptions{},
                     /*resync_ms=*/1000,
                     LoopDeps{.client = &client,
                              .reservations = &book,
                              .snapshot = [&] { return snap; },
                              .now_ms = [] { return int64_t{0}; }},
                     Refusals(0, 60'000));
  preemption::RoundResult r = loop.RunOnce(*snap);
  ASSERT_EQ(r.decisions.size(), 2u);
  EXPECT_EQ(r.decisions[1].gang, "default/second");
  EXPECT_EQ(r.decisions[1].verdict, preemption::Verdict::kAdmit) << "planned beside the first";

  std::vector<std::string> patched;
  for (const ScriptedRequest& req : server.requests()) patched.push_back(req.target);
  ASSERT_TRUE(reserved);
  for (const std::string& target : patched) {
    EXPECT_FALSE(absl::StrContains(target, "/pods/second-")) << target << " was written";
  }
  EXPECT_FALSE(book.NodeFor("default/second", "default/second-0", 0).has_value());
  EXPECT_TRUE(book.NodeFor("default/first", "default/first-0", 0).has_value());
}

TEST(AdmissionLoopTest, TheQueueSaysWhichCacheVersionItsRoundSaw) {
  core::SnapshotBuilder b;
  b.UpsertNode(testing::GpuNode("n", 8));
  std::shared_ptr<const core::ClusterSnapshot> snap = b.Build();
  ScriptedServer server([](const ScriptedRequest&) {
    return ScriptedResponse{200, {R"({"kind":"Pod"})"}};
  });
  kube::Client client(kube::Config{.server = server.url()});
  AdmissionLoop loop(
      preemption::AdmissionOptions{}, /*resync_ms=*/1000,
      LoopDeps{
          .client = &client, .snapshot = [&] { return snap; }, .now_ms = [] { return int64_t{0}; }},
      Refusals(0, 60'000));
  loop.RunOnce(*snap, "4711");
  EXPECT_EQ(loop.DebugQueueJson(), R"({"gangs":[],"seen_version":"4711"})");
  loop.RunOnce(*snap);
  EXPECT_EQ(loop.DebugQueueJson(), R"({"gangs":[]})");
}

}  // namespace
}  // namespace phalanx::extender
