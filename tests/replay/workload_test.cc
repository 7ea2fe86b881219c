// Cluster specs and jobs split into gangs as the master splits them, with rejections at submit.
#include "bench/replay/workload.h"

#include <gtest/gtest.h>

namespace phalanx::replay {
namespace {

TEST(Workload, ClusterSpecWithMixedSizes) {
  absl::StatusOr<std::vector<core::Node>> nodes = ParseCluster("64x8,32x4");
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  ASSERT_EQ(nodes->size(), 96u);
  EXPECT_EQ(TotalGpus(*nodes), 640);
  EXPECT_EQ((*nodes)[0].name, "n00");
  EXPECT_EQ((*nodes)[63].allocatable.gpu(), 8);
  EXPECT_EQ((*nodes)[64].name, "n64");
  EXPECT_EQ((*nodes)[64].allocatable.gpu(), 4);
  for (const char* bad : {"", "8", "0x8", "8x0", "8x8,", "ax8", "8x8x8"}) {
    EXPECT_FALSE(ParseCluster(bad).ok()) << bad;
  }
}

TEST(Workload, SplitsSlotsLikeTheMaster) {
  struct Case {
    int64_t slots;
    int32_t max;
    int pods;
    int64_t per_pod;
  };
  for (const Case& c : {Case{1, 8, 1, 1}, Case{4, 8, 1, 4}, Case{8, 8, 1, 8}, Case{16, 8, 2, 8},
                        Case{128, 8, 16, 8}, Case{8, 4, 2, 4}, Case{3, 4, 1, 3}}) {
    absl::StatusOr<PodShape> s = SplitSlots(c.slots, c.max);
    ASSERT_TRUE(s.ok()) << c.slots;
    EXPECT_EQ(s->pods, c.pods) << c.slots;
    EXPECT_EQ(s->gpus_per_pod, c.per_pod) << c.slots;
  }
  absl::StatusOr<PodShape> twelve = SplitSlots(12, 8);
  ASSERT_FALSE(twelve.ok());
  EXPECT_EQ(twelve.status().message(), "12 slots is not a multiple of maxSlotsPerPod 8");
  EXPECT_FALSE(SplitSlots(4, 0).ok());
}

TEST(Workload, BuildJobsRejectsIndivisibleAndTooLargeJobs) {
  Trace trace;
  for (int64_t gpus : {1, 12, 16, 32, 24}) {
    TraceJob j;
    j.line = static_cast<int64_t>(trace.jobs.size()) + 2;
    j.submit_ms = j.line;
    j.duration_ms = 1000;
    j.gpus = gpus;
    j.priority = 50;
    trace.jobs.push_back(j);
  }
  absl::StatusOr<std::vector<core::Node>> nodes = ParseCluster("2x8");
  ASSERT_TRUE(nodes.ok());
  std::vector<Job> jobs = BuildJobs(trace, *nodes, 8, 1);
  ASSERT_EQ(jobs.size(), 5u);
  EXPECT_EQ(jobs[0].rejected, "");
  EXPECT_EQ(jobs[1].rejected, "12 slots is not a multiple of maxSlotsPerPod 8");
  EXPECT_EQ(jobs[2].rejected, "");
  EXPECT_EQ(jobs[2].shape.pods, 2);
  EXPECT_EQ(jobs[3].rejected,
            "larger than the pool: needs 32 GPUs on 4 nodes; 16 in the whole pool on 2 fitting "
            "nodes");
  EXPECT_EQ(jobs[4].shape.pods, 3);
  EXPECT_FALSE(jobs[4].rejected.empty());
  EXPECT_EQ(jobs[4].index, 4);
}

TEST(Workload, NamesAndPods) {
  EXPECT_EQ(JobName(42, 1000), "j042");
  EXPECT_EQ(JobIndexOf("replay/j042"), 42);
  EXPECT_EQ(JobIndexOf("replay/j042-3"), 42);
  EXPECT_EQ(JobIndexOf("other/j042"), -1);
  EXPECT_EQ(PodIndexOf("replay/j042-3"), 3);
  Job job;
  job.index = 7;
  job.priority = 90;
  job.shape = {2, 8};
  std::vector<core::PodInfo> gang = MakePods(job, 10, true, 5000);
  ASSERT_EQ(gang.size(), 2u);
  EXPECT_EQ(gang[1].uid, "replay/j7-1");
  EXPECT_EQ(gang[1].GangKey(), "replay/j7");
  EXPECT_EQ(gang[1].gang_size, 2);
  EXPECT_EQ(gang[1].creation_ms, 5000);
  EXPECT_TRUE(gang[1].gated);
  EXPECT_EQ(gang[1].requests.gpu(), 8);
  std::vector<core::PodInfo> single = MakePods(job, 10, false, 5000);
  EXPECT_EQ(single[1].GangKey(), "replay/j7-1");
  EXPECT_EQ(single[1].creation_ms, 5001);
}

}  // namespace
}  // namespace phalanx::replay
