// Pods that stay terminating on a node that is down (service_fixture.h): once such a pod is
// terminating_pod_timeout (5m by default) past its deletion deadline and its node is gone or not
// Ready, the master force-deletes it, its run ends and the trial resumes. On a Ready node it waits
// for the kubelet.
#include "tests/master/testing/service_fixture.h"

namespace phalanx::master {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST_F(ServiceTest, APodStuckTerminatingOnANodeThatIsDownIsForceDeleted) {
  std::vector<std::string> events;
  jobs_->SetEventLog([&](const std::string& line) { events.push_back(line); });
  auto count = [&](const std::string& text) {
    return std::count_if(events.begin(), events.end(),
                         [&](const std::string& e) { return e.find(text) != std::string::npos; });
  };
  const v1::Experiment exp = Create("resources: {slots_per_trial: 4}\n");
  const std::string a = Get(exp.id()).trials(0).allocation_id();
  const std::string name = a + "-0";
  Play(a, core::PodPhase::kRunning);
  ASSERT_TRUE(jobs_->ReportCheckpoint(a, "ckpt-1", 100).ok());

  // The cluster evicts the pod from node-1 (its kubelet gone): the pod stays, terminating.
  const absl::Time deadline = absl::FromUnixSeconds(1735689630);
  PodState evicted =
      FakePodClient::StateOf(pods_.pods().at("gpu-ns/" + name), core::PodPhase::kRunning, true);
  evicted.deletion_deadline = deadline;
  pods_.SetNodeDown("node-1", true);
  jobs_->OnPod(evicted);
  EXPECT_THAT(pods_.deleted(), ElementsAre(name)) << "the run is lost: the master deletes it too";

  jobs_->Tick(deadline + absl::Minutes(5) - absl::Seconds(1));
  EXPECT_THAT(pods_.node_reads(), IsEmpty()) << "before terminating_pod_timeout";

  pods_.SetNodeDown("node-1", false);
  jobs_->Tick(deadline + absl::Minutes(5));
  jobs_->Tick(deadline + absl::Minutes(5) + absl::Seconds(2));
  EXPECT_THAT(pods_.node_reads(), ElementsAre("node-1", "node-1"));
  EXPECT_THAT(pods_.force_deleted(), IsEmpty()) << "its node is Ready: its kubelet will end it";
  EXPECT_EQ(count("which is Ready: waiting for its kubelet"), 1) << "said once";

  pods_.FailNodeReads(absl::PermissionDeniedError("nodes \"node-1\" is forbidden"));
  jobs_->Tick(deadline + absl::Minutes(5) + absl::Seconds(4));
  jobs_->Tick(deadline + absl::Minutes(5) + absl::Seconds(6));
  EXPECT_EQ(count("reading the node: nodes \"node-1\" is forbidden; tried again at every tick"), 1)
      << "said once";
  pods_.FailNodeReads(absl::OkStatus());

  pods_.SetNodeDown("node-1", true);
  jobs_->Tick(deadline + absl::Minutes(6));
  jobs_->Tick(deadline + absl::Minutes(6) + absl::Seconds(2));  // The watch has not seen it go.
  EXPECT_THAT(pods_.force_deleted(), ElementsAre(name)) << "once";
  EXPECT_EQ(count(absl::StrCat("pod gpu-ns/", name, " is terminating 6m past its grace period on ",
                               "node node-1, which is gone or not Ready: force-deleted it")),
            1);
  EXPECT_EQ(jobs_->Stats().pods_force_deleted, 1);

  jobs_->OnPodDeleted("gpu-ns", name);
  const v1::Trial trial = Get(exp.id()).trials(0);
  EXPECT_EQ(trial.state(), v1::TRIAL_STATE_ACTIVE);
  EXPECT_EQ(trial.runs(), 2) << "the trial resumes";
  EXPECT_EQ(trial.restarts(), 0) << "a lost node is not the trial's failure";
  EXPECT_EQ(trial.latest_checkpoint(), "ckpt-1");
  EXPECT_NE(trial.allocation_id(), a);
}

// A pod that was never bound goes at once when deleted (no kubelet holds it up): it is never
// taken for stuck, whatever its deadline.
TEST_F(ServiceTest, AnUnboundPodIsNeverTakenForStuck) {
  const v1::Experiment exp = Create("resources: {slots_per_trial: 4}\n");
  const std::string a = Get(exp.id()).trials(0).allocation_id();
  PodState deleting = FakePodClient::StateOf(pods_.pods().at("gpu-ns/" + a + "-0"),
                                             core::PodPhase::kPending, false);
  deleting.deletion_deadline = absl::FromUnixSeconds(1735689630);
  jobs_->OnPod(deleting);
  jobs_->Tick(deleting.deletion_deadline + absl::Hours(1));
  EXPECT_THAT(pods_.node_reads(), IsEmpty());
  EXPECT_THAT(pods_.force_deleted(), IsEmpty());
}

}  // namespace
}  // namespace phalanx::master
