// Node eligibility: cordons, taints/tolerations (Kubernetes semantics) and nodeSelector.
#include "gang/eligibility.h"

#include <gtest/gtest.h>

#include "tests/testing/fixtures.h"

namespace phalanx::gang {
namespace {

using core::Taint;
using core::TaintEffect;
using core::Toleration;

TEST(EligibilityTest, TaintsNeedTolerations) {
  core::Node node = testing::GpuNode("n", 8);
  node.taints = {Taint{"nvidia.com/gpu", "present", TaintEffect::kNoSchedule}};
  core::PodInfo pod;
  EXPECT_FALSE(NodeEligible(pod, node));
  pod.tolerations = {Toleration{.key = "nvidia.com/gpu", .op = Toleration::Operator::kExists}};
  EXPECT_TRUE(NodeEligible(pod, node));
  pod.tolerations = {Toleration{.key = "nvidia.com/gpu", .value = "absent"}};
  EXPECT_FALSE(NodeEligible(pod, node));
  pod.tolerations = {Toleration{.key = "nvidia.com/gpu",
                                .value = "present",
                                .any_effect = false,
                                .effect = TaintEffect::kNoExecute}};
  EXPECT_FALSE(NodeEligible(pod, node));                                // wrong effect
  pod.tolerations = {Toleration{.op = Toleration::Operator::kExists}};  // tolerates everything
  EXPECT_TRUE(NodeEligible(pod, node));
}

TEST(EligibilityTest, PreferNoScheduleDoesNotFilter) {
  core::Node node = testing::GpuNode("n", 8);
  node.taints = {Taint{"soft", "", TaintEffect::kPreferNoSchedule}};
  EXPECT_TRUE(NodeEligible(core::PodInfo{}, node));
}

TEST(EligibilityTest, CordonedNodesAreSkippedUnlessTolerated) {
  core::Node node = testing::GpuNode("n", 8);
  node.unschedulable = true;
  core::PodInfo pod;
  EXPECT_FALSE(NodeEligible(pod, node));
  pod.tolerations = {
      Toleration{.key = "node.kubernetes.io/unschedulable", .op = Toleration::Operator::kExists}};
  EXPECT_TRUE(NodeEligible(pod, node));
}

TEST(EligibilityTest, NodeSelectorMustMatchEveryPair) {
  core::Node node = testing::GpuNode("n", 8);
  node.labels = {{"pool", "a100"}, {"zone", "z1"}};
  core::PodInfo pod;
  pod.node_selector = {{"pool", "a100"}};
  EXPECT_TRUE(NodeEligible(pod, node));
  pod.node_selector = {{"pool", "a100"}, {"zone", "z2"}};
  EXPECT_FALSE(NodeEligible(pod, node));
  pod.node_selector = {{"rack", "r1"}};
  EXPECT_FALSE(NodeEligible(pod, node));
}

}  // namespace
}  // namespace phalanx::gang
