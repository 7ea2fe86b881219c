// Resources arithmetic, fitting and parsing from resource lists.
#include "core/resources.h"

#include <gtest/gtest.h>

namespace phalanx::core {
namespace {

TEST(ResourcesTest, ArithmeticKeepsExtendedResourcesSorted) {
  Resources a(1000, 1024, 2);
  a.Set("example.com/fpga", 3);
  a.Set("amd.com/gpu", 1);
  Resources b(500, 24, 1);
  b.Set("example.com/fpga", 3);
  Resources sum = a + b;
  EXPECT_EQ(sum.milli_cpu(), 1500);
  EXPECT_EQ(sum.memory(), 1048);
  EXPECT_EQ(sum.gpu(), 3);
  EXPECT_EQ(sum.Get("example.com/fpga"), 6);
  EXPECT_EQ(sum.ToString(),
            "cpu=1500m memory=1048 nvidia.com/gpu=3 amd.com/gpu=1 example.com/fpga=6");
  Resources diff = a - b;
  EXPECT_EQ(diff.Get("example.com/fpga"), 0);
  EXPECT_EQ(diff.ToString(), "cpu=500m memory=1000 nvidia.com/gpu=1 amd.com/gpu=1");
}

TEST(ResourcesTest, FitsAndCopies) {
  Resources node(8000, 64, 8);
  Resources pod(1000, 8, 4);
  EXPECT_TRUE(pod.FitsIn(node));
  EXPECT_EQ(pod.CopiesThatFit(node), 2);  // min(8000/1000, 64/8, 8/4) = min(8, 8, 2)
  Resources fpga;
  fpga.Set("example.com/fpga", 1);
  EXPECT_FALSE(fpga.FitsIn(node));  // the node has none
  EXPECT_EQ(fpga.CopiesThatFit(node), 0);
  EXPECT_FALSE((node - Resources(9000, 0, 0)).IsNonNegative());
  // A resource not requested fits where the node is overcommitted (its free amount negative).
  const Resources overcommitted = node - Resources(0, 0, 9);
  EXPECT_TRUE(Resources(1000, 8, 0).FitsIn(overcommitted));
  EXPECT_FALSE(Resources(1000, 8, 1).FitsIn(overcommitted));
  EXPECT_EQ(Resources::Min(Resources(1, 5, 3), Resources(2, 4, 3)), Resources(1, 4, 3));
}

// "pods" is a field like GPUs (no scalar): a pod with one extended resource keeps it inline.
TEST(ResourcesTest, PodsCountLikeTheOtherFields) {
  Resources node(8000, 64, 8);
  node.Set(kPods, 3);
  Resources pod(1000, 8, 1);
  pod.Set(kPods, 1);
  pod.Set("example.com/fpga", 1);
  EXPECT_EQ(pod.Get(kPods), 1);
  EXPECT_EQ(pod.ToString(), "cpu=1000m memory=8 nvidia.com/gpu=1 pods=1 example.com/fpga=1");
  node.Set("example.com/fpga", 8);
  EXPECT_EQ(pod.CopiesThatFit(node), 3);  // min(8, 8, 8, 3 pods, 8)
  const Resources full = node - pod - pod - pod;
  EXPECT_EQ(full.pods(), 0);
  EXPECT_FALSE(pod.FitsIn(full));
  EXPECT_TRUE(Resources(1000, 8, 1).FitsIn(full));  // Not counted as a pod: fits.
  EXPECT_FALSE((full - pod).IsNonNegative());
  EXPECT_EQ(Resources::Min(node, pod).pods(), 1);
}

TEST(ResourcesTest, FromQuantitiesParsesCpuInMillis) {
  absl::StatusOr<Resources> r = Resources::FromQuantities(
      {{"cpu", "2500m"}, {"memory", "1Gi"}, {"nvidia.com/gpu", "4"}, {"hugepages-2Mi", "2Mi"}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->milli_cpu(), 2500);
  EXPECT_EQ(r->memory(), 1LL << 30);
  EXPECT_EQ(r->gpu(), 4);
  EXPECT_EQ(r->Get("hugepages-2Mi"), 2LL << 20);
}

TEST(ResourcesTest, FromQuantitiesNamesTheBadField) {
  absl::StatusOr<Resources> r = Resources::FromQuantities({{"memory", "12XB"}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("memory"), std::string::npos);
  EXPECT_NE(r.status().message().find("12XB"), std::string::npos);
  EXPECT_FALSE(Resources::FromQuantities({{"cpu", "-1"}}).ok());
}

}  // namespace
}  // namespace phalanx::core
