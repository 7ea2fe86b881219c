// Placement through the real kube-scheduler and phalanx-extender where the pod spec narrows the
// nodes: the extender must plan only on nodes kube-scheduler will bind the pod to.
#include <string>
#include <vector>

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

}  // namespace
}  // namespace phalanx::e2e
