// phalanx job why and the ETA column of job list, against a real master (cli_fixture.h), as the
// extender's forecast reaches the job's pods.
#include "tests/master/testing/cli_fixture.h"

namespace phalanx::master {
namespace {

using ::testing::HasSubstr;

// job why: the reason, the forecast start and its runtime's basis, and what would start it now,
// as the extender wrote them on the job's pods.
TEST_F(CliTest, JobWhy) {
  ASSERT_EQ(Run({"login", "admin", "--password=pw"}), 0) << err_;
  ASSERT_EQ(
      Run({"experiment", "create",
           File("a.yaml", "name: big\nresources: {slots_per_trial: 8, expected_runtime: 1h}\n")}),
      0)
      << err_;
  for (const auto& [key, pod] : pods_.pods()) {
    PodState s = FakePodClient::StateOf(pod, core::PodPhase::kPending, false);
    s.pending_reason = "needs 8 GPUs on 2 nodes; 4 free";
    s.eta = "2099-01-02T03:04:00Z";
    s.expected_runtime_basis = "resources.expected_runtime";
    s.what_if = R"({"slots":4,"priority":61,"victims":["ns/g"],"pool":"cpu","ahead":[]})";
    jobs_->OnPod(s);
  }
  ASSERT_EQ(Run({"job", "list"}), 0) << err_;
  EXPECT_THAT(out_, HasSubstr("2099-01-02 03:04 "));
  ASSERT_EQ(Run({"job", "why", "exp-1"}), 0) << err_;
  EXPECT_THAT(out_, HasSubstr("Job exp-1 (admin), QUEUED: #1 in pool gpu, 0 queued ahead"));
  EXPECT_THAT(out_, HasSubstr("Why: needs 8 GPUs on 2 nodes; 4 free\n"));
  EXPECT_THAT(out_, HasSubstr("Expected start: 2099-01-02 03:04 UTC (in "));
  EXPECT_THAT(out_, HasSubstr("  its runtime: resources.expected_runtime\n"));
  EXPECT_THAT(out_, HasSubstr("It would start now:\n  with at most 4 slots\n"
                              "  at priority >= 61, preempting ns/g\n"
                              "  in resource pool cpu (phalanx job set-pool)\n"));
  EXPECT_EQ(Run({"job", "why", "exp-7"}), 1);
  EXPECT_THAT(err_, HasSubstr("NOT_FOUND"));
  EXPECT_EQ(Run({"job", "why"}), 2);
}

}  // namespace
}  // namespace phalanx::master
