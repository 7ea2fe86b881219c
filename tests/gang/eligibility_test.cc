// Node eligibility: cordons, taints/tolerations (Kubernetes semantics), nodeSelector, required
// node affinity and avoided nodes.
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

TEST(EligibilityTest, AvoidedNodesAreSkipped) {
  core::PodInfo pod;
  pod.avoid_nodes = {"n1", "n3"};
  EXPECT_FALSE(NodeEligible(pod, testing::GpuNode("n1", 8)));
  EXPECT_TRUE(NodeEligible(pod, testing::GpuNode("n2", 8)));
  EXPECT_FALSE(NodeMatches(pod, testing::GpuNode("n3", 8), "kubernetes.io/hostname"));
}

using Op = core::NodeRequirement::Operator;

core::NodeRequirement Label(std::string key, Op op, std::vector<std::string> values = {}) {
  return {.key = std::move(key), .op = op, .values = std::move(values)};
}

TEST(EligibilityTest, NodeAffinityOperators) {
  core::Node node = testing::GpuNode("n1", 8);
  node.labels = {{"gpus", "8"}, {"zone", "z1"}};
  struct Case {
    core::NodeRequirement requirement;
    bool eligible;
  };
  const Case cases[] = {
      {Label("zone", Op::kIn, {"z0", "z1"}), true},
      {Label("zone", Op::kIn, {"z2"}), false},
      {Label("rack", Op::kIn, {"r1"}), false},
      {Label("zone", Op::kNotIn, {"z2"}), true},
      {Label("zone", Op::kNotIn, {"z1"}), false},
      {Label("rack", Op::kNotIn, {"r1"}), true},  // An absent label is not in any list.
      {Label("zone", Op::kExists), true},
      {Label("rack", Op::kExists), false},
      {Label("rack", Op::kDoesNotExist), true},
      {Label("zone", Op::kDoesNotExist), false},
      {Label("gpus", Op::kGt, {"4"}), true},
      {Label("gpus", Op::kGt, {"8"}), false},
      {Label("gpus", Op::kLt, {"16"}), true},
      {Label("zone", Op::kGt, {"1"}), false},  // Not an integer: matches nothing.
      {Label("rack", Op::kLt, {"1"}), false},
      {{.key = "metadata.name", .op = Op::kIn, .values = {"n1"}, .on_name = true}, true},
      {{.key = "metadata.name", .op = Op::kNotIn, .values = {"n1"}, .on_name = true}, false},
  };
  for (const Case& c : cases) {
    core::PodInfo pod;
    pod.node_affinity = {core::NodeSelectorTerm{{c.requirement}}};
    EXPECT_EQ(NodeEligible(pod, node), c.eligible)
        << c.requirement.key << " op " << static_cast<int>(c.requirement.op);
  }
}

TEST(EligibilityTest, NodeAffinityTermsAreOredAndRequirementsAnded) {
  core::Node node = testing::GpuNode("n", 8);
  node.labels = {{"zone", "z1"}};
  core::PodInfo pod;
  pod.node_affinity = {
      core::NodeSelectorTerm{{Label("zone", Op::kIn, {"z1"}), Label("rack", Op::kExists)}}};
  EXPECT_FALSE(NodeEligible(pod, node));  // The second requirement fails.
  pod.node_affinity.push_back(core::NodeSelectorTerm{{Label("zone", Op::kExists)}});
  EXPECT_TRUE(NodeEligible(pod, node));  // The second term matches.
  pod.node_affinity = {core::NodeSelectorTerm{}};
  EXPECT_FALSE(NodeEligible(pod, node));  // An empty term matches no node.
  pod.node_affinity = {core::NodeSelectorTerm{{Label("zone", Op::kIn, {"z1"})}}};
  pod.node_selector = {{"zone", "z2"}};
  EXPECT_FALSE(NodeEligible(pod, node));  // Both nodeSelector and affinity must hold.
}

}  // namespace
}  // namespace phalanx::gang
