// Placement through the real kube-scheduler and phalanx-extender where the pod spec narrows the
// nodes: the extender must plan only on nodes kube-scheduler will bind the pod to.
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kube/client.h"
#include "simdjson.h"
#include "tests/extender_e2e/harness.h"

namespace phalanx::e2e {
namespace {

using PlacementE2e = ExtenderE2eTest;

// A resource pool's pod spec may pin tasks with required node affinity (the seeds' zone example).
// "pinned" fits best on the first node, beside "busy"; its affinity allows only the second. A
// plan on the first node would pin it where kube-scheduler never binds it.
TEST_F(PlacementE2e, RequiredNodeAffinityIsPlannedFor) {
  AddNodes("n", 2, 4);
  StartExtender(4);
  Submit({.name = "busy", .gpus = 2, .position = 1});
  ASSERT_TRUE(WaitUntil([&] { return Running("busy"); }));
  ASSERT_EQ(BoundNodes("busy"), (std::vector<std::string>{NodeName("n", 0)}));

  Submit({.name = "pinned", .gpus = 2, .position = 2, .affinity_host = NodeName("n", 1)});
  ASSERT_TRUE(WaitUntil([&] { return Running("pinned"); })) << "pinned never bound";
  EXPECT_EQ(BoundNodes("pinned"), (std::vector<std::string>{NodeName("n", 1)}));
}

// A node's kubernetes.io/hostname label need not be its name (cloud nodes are often named by
// their provider's id). The pin the extender writes must name the label's value, or
// kube-scheduler binds the gang nowhere.
TEST_F(PlacementE2e, PinsNameTheNodesHostnameLabel) {
  AddNodes("n", 1, 4);
  const std::string node = NodeName("n", 0);
  ASSERT_TRUE(client_
                  ->Patch(kube::kNodes, "", node, kube::PatchType::kMerge,
                          absl::StrCat(R"({"metadata":{"labels":{"kubernetes.io/hostname":"host-)",
                                       node, R"("}}})"))
                  .ok());
  StartExtender(4);
  Submit({.name = "g", .gpus = 4, .position = 1});
  ASSERT_TRUE(WaitUntil([&] { return Running("g"); })) << "g never bound";
  EXPECT_EQ(BoundNodes("g"), (std::vector<std::string>{node}));
}

// kube-scheduler refuses a pod beyond its node's allocatable "pods" ("Too many pods"). Node "a"
// has 8 GPUs but room for two pods: best fit alone would plan all four 1-GPU pods of "g" there,
// and kube-scheduler would bind two and refuse the others, leaving the gang stuck holding its
// nodes. Its other two members go to "b" (room for three pods). "h" then finds room for one pod
// where it needs two, and waits saying so.
TEST_F(PlacementE2e, NodePodCountsBoundWhatIsPlannedThere) {
  AddNodes("a", 1, 8, /*max_pods=*/2);
  AddNodes("b", 1, 8, /*max_pods=*/3);
  StartExtender(4);
  Submit({.name = "g", .pods = 4, .gpus = 1, .position = 1});
  ASSERT_TRUE(WaitUntil([&] { return Running("g"); })) << "g never bound";
  const std::string a = NodeName("a", 0);
  const std::string b = NodeName("b", 0);
  EXPECT_EQ(BoundNodes("g"), (std::vector<std::string>{a, a, b, b}));

  Submit({.name = "h", .pods = 2, .gpus = 1, .position = 2});
  ExpectReason("h",
               "needs 2 GPUs on 2 nodes; 6 free on 1 fitting node; too many pods: room for 1 "
               "more; no set of lower-priority preemptible gangs frees enough");
}

// kube-scheduler holds pods to rules phalanx does not model, host ports among them. "g" fits
// best on the first node, beside "squatter", but asks for the host port squatter holds there:
// kube-scheduler refuses it on the node it is pinned to. Once refused for the timeout, the gang is
// marked for recreation; its next run avoids that node and runs on the second.
TEST_F(PlacementE2e, AGangKubeSchedulerRefusesIsPlannedOffThatNode) {
  AddNodes("n", 2, 4);
  StartExtender(4, {"--refused-placement-timeout-ms", "3000"});
  const std::string first = NodeName("n", 0);
  Submit({.name = "squatter", .gpus = 1, .position = 1, .host_port = 9000});
  ASSERT_TRUE(WaitUntil([&] { return Running("squatter"); }));
  ASSERT_EQ(BoundNodes("squatter"), (std::vector<std::string>{first}));

  Submit({.name = "g", .gpus = 1, .position = 2, .host_port = 9000});
  ASSERT_TRUE(WaitUntil([&] { return Marked("g"); })) << "the refused gang is never marked";
  std::vector<PodState> refused = GangPods("g");
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].info.placement, first);
  EXPECT_EQ(refused[0].info.node, "");
  EXPECT_NE(refused[0].info.refused, "");
  EXPECT_EQ(PreemptedBy("g"), Key("g"));
  EXPECT_EQ(RequeueVictims(), std::vector<std::string>{"g"});
  ASSERT_TRUE(WaitUntil([&] { return Running("g"); })) << "the recreated gang never runs";
  std::vector<PodState> ran = GangPods("g");
  ASSERT_EQ(ran.size(), 1u);
  EXPECT_EQ(ran[0].info.node, NodeName("n", 1));
  EXPECT_EQ(ran[0].info.avoid_nodes, std::vector<std::string>{first});
}

// A tenant who may create pods with schedulerName phalanx writes the phalanx state itself: two
// gated priority-1 gangs claim phalanx.io/placement on the node a priority-100 gang waits for,
// one bare, one with the signature copied from a pod the extender did place there. Neither is
// honoured (the extender recovered "placed" gated gangs by ungating them, and kube-scheduler
// bound them at once, ahead of the waiting gang): both wait, unplaced, behind it.
TEST_F(PlacementE2e, ForgedPlacementsDoNotJumpTheQueue) {
  AddNodes("n", 1, 4);
  const std::string node = NodeName("n", 0);
  StartExtender(4, {"--backfill", "false"});  // Nothing legitimately runs behind "high".
  Submit({.name = "blocker", .gpus = 2, .position = 1, .preemptible = false});
  ASSERT_TRUE(WaitUntil([&] { return Running("blocker"); }));
  absl::StatusOr<std::string> blocker = client_->Get(kube::kPods, ns_, "blocker-r0-0");
  ASSERT_TRUE(blocker.ok()) << blocker.status();
  simdjson::dom::parser parser;
  std::string_view copied;
  ASSERT_EQ(parser.parse(*blocker)["metadata"]["annotations"]["phalanx.io/placement-signature"].get(
                copied),
            simdjson::SUCCESS);
  Submit({.name = "high", .gpus = 4, .priority = 100, .position = 2});
  ASSERT_TRUE(WaitUntil([&] { return Queued("high").state == "WAIT"; }));

  Submit({.name = "forged",
          .gpus = 2,
          .priority = 1,
          .position = 3,
          .managed = false,
          .annotations = {{"phalanx.io/placement", node}}});
  Submit({.name = "copied",
          .gpus = 2,
          .priority = 1,
          .position = 4,
          .managed = false,
          .annotations = {{"phalanx.io/placement", node},
                          {"phalanx.io/placement-signature", std::string(copied)}}});
  Holds(
      "the forged gangs stay gated behind the waiting gang",
      [&] { return Gated("forged") && Gated("copied") && !Running("high"); }, absl::Seconds(10));
  for (const char* gang : {"forged", "copied"}) {
    for (const PodState& p : GangPods(gang)) EXPECT_EQ(p.info.placement, "") << p.info.name;
  }

  Finish("blocker");
  ASSERT_TRUE(WaitUntil([&] { return Running("high"); })) << "the waiting gang never runs";
}

}  // namespace
}  // namespace phalanx::e2e
