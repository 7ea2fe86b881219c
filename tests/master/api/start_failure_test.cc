// Runs whose pods cannot start a container (service_fixture.h): an invalid image name fails the
// run at once; an image that cannot be pulled or a container config kubelet cannot build fails
// it once that has lasted pod_start_failure_timeout (5m by default), unless the pod starts
// first. The user sees why: the trial's or task's error, and the queue's pending reason meanwhile.
#include "pqxx/pqxx"
#include "tests/master/testing/service_fixture.h"

namespace phalanx::master {
namespace {

using ::testing::Contains;
using ::testing::Each;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::UnorderedElementsAre;

constexpr char kBackOff[] = "Back-off pulling image \"phalanx.invalid/none\"";

class StartFailureTest : public ServiceTest {
 protected:
  // Plays every pod of `allocation` bound and Pending, its task container waiting for `reason`.
  void PlayWaiting(const std::string& allocation, const std::string& reason,
                   const std::string& message) {
    for (const auto& [key, pod] : pods_.pods()) {
      if (pod["metadata"]["labels"][std::string(kube::kGangLabel)] != allocation) continue;
      PodState s = FakePodClient::StateOf(pod, core::PodPhase::kPending, /*bound=*/true);
      s.waiting = {{.container = pod["spec"]["containers"][0]["name"],
                    .reason = reason,
                    .message = message}};
      jobs_->OnPod(s);
    }
  }

  // The run of experiment `id`'s only trial (two pods).
  std::string TwoPodRun(int64_t* id) {
    const v1::Experiment exp = Create("resources: {slots_per_trial: 8}\n");
    *id = exp.id();
    return Get(exp.id()).trials(0).allocation_id();
  }

  std::string PendingReason() {
    const std::vector<v1::Job> jobs = Jobs();
    return jobs.empty() ? "" : jobs[0].pending_reason();
  }
};

// An image name kubelet cannot parse never becomes pullable: the trial is in ERROR at once, with
// the pod, the reason and kubelet's message as why, and the gang's pods are deleted. No run
// follows. A task ends the same way.
TEST_F(StartFailureTest, InvalidImageNameFailsTheRunAtOnce) {
  const std::string message =
      "Failed to apply default image tag \"Bad Image\": couldn't parse image reference";
  int64_t id = 0;
  const std::string a = TwoPodRun(&id);
  PlayWaiting(a, "InvalidImageName", message);
  EXPECT_THAT(pods_.deleted(), UnorderedElementsAre(a + "-0", a + "-1"));
  ReapDeleted();
  const v1::GetExperimentResponse got = Get(id);
  EXPECT_EQ(got.experiment().state(), v1::EXPERIMENT_STATE_ERROR);
  EXPECT_EQ(got.trials(0).state(), v1::TRIAL_STATE_ERROR);
  EXPECT_EQ(got.trials(0).runs(), 1);
  EXPECT_THAT(got.trials(0).error(), HasSubstr("pod gpu-ns/" + a + "-0 cannot start container "));
  EXPECT_THAT(got.trials(0).error(), HasSubstr("InvalidImageName: " + message));
  EXPECT_EQ(pods_.creates(), 2);

  v1::LaunchTaskRequest launch;
  launch.set_type(v1::TASK_TYPE_TENSORBOARD);
  v1::LaunchTaskResponse launched;
  ASSERT_TRUE(tasks_->LaunchTask(Ctx().get(), launch, &launched).ok());
  PlayWaiting(launched.task().allocation_id(), "InvalidImageName", message);
  ReapDeleted();
  v1::GetTaskRequest get;
  get.set_id(launched.task().id());
  v1::GetTaskResponse task;
  ASSERT_TRUE(tasks_->GetTask(Ctx().get(), get, &task).ok());
  EXPECT_EQ(task.task().state(), v1::TASK_STATE_ERROR);
  EXPECT_THAT(task.task().error(), HasSubstr("InvalidImageName: " + message));
  EXPECT_THAT(Jobs(), IsEmpty());
}

// A registry outage or a Secret created late can clear these: the run waits out
// pod_start_failure_timeout, the reason shown as the job's pending reason and logged once, then
// fails with it and its pods are deleted.
TEST_F(StartFailureTest, StartFailuresForNowFailTheRunOnceTheyOutlastTheTimeout) {
  std::vector<std::string> events;
  jobs_->SetEventLog([&](const std::string& line) { events.push_back(line); });
  for (const std::string reason :
       {"ImagePullBackOff", "ErrImagePull", "CreateContainerConfigError", "CreateContainerError"}) {
    events.clear();
    int64_t id = 0;
    const std::string a = TwoPodRun(&id);
    PlayWaiting(a, reason, kBackOff);
    PlayWaiting(a, reason, kBackOff);  // Observed again: no new event.
    EXPECT_THAT(PendingReason(), HasSubstr(reason + ": " + kBackOff));
    jobs_->Tick(absl::Now() + absl::Minutes(4));
    EXPECT_THAT(pods_.deleted(), Each(Not(HasSubstr(a)))) << reason;
    EXPECT_EQ(Get(id).trials(0).state(), v1::TRIAL_STATE_ACTIVE) << reason;

    jobs_->Tick(absl::Now() + absl::Minutes(5) + absl::Seconds(1));
    EXPECT_THAT(pods_.deleted(), ::testing::IsSupersetOf({a + "-0", a + "-1"})) << reason;
    ReapDeleted();
    const v1::GetExperimentResponse got = Get(id);
    EXPECT_EQ(got.experiment().state(), v1::EXPERIMENT_STATE_ERROR) << reason;
    EXPECT_EQ(got.trials(0).state(), v1::TRIAL_STATE_ERROR) << reason;
    EXPECT_EQ(got.trials(0).runs(), 1) << reason;
    EXPECT_THAT(got.trials(0).error(), HasSubstr("pod gpu-ns/" + a + "-0 cannot start container "));
    EXPECT_THAT(got.trials(0).error(), HasSubstr(reason + ": " + kBackOff));
    EXPECT_THAT(got.trials(0).error(), HasSubstr("pod_start_failure_timeout"));
    int logged = 0;
    for (const std::string& line : events) logged += line.find(" cannot start ") != line.npos;
    EXPECT_EQ(logged, 2) << reason;  // When it began, and when the run failed.
  }
  EXPECT_THAT(Jobs(), IsEmpty());
}

// A pod that starts within pod_start_failure_timeout keeps its run; the pending reason clears.
TEST_F(StartFailureTest, APodThatStartsWithinTheTimeoutKeepsItsRun) {
  std::vector<std::string> events;
  jobs_->SetEventLog([&](const std::string& line) { events.push_back(line); });
  int64_t id = 0;
  const std::string a = TwoPodRun(&id);
  PlayWaiting(a, "CreateContainerConfigError", "couldn't find key token in Secret gpu-ns/creds");
  EXPECT_THAT(PendingReason(), HasSubstr("CreateContainerConfigError: couldn't find key token"));
  EXPECT_TRUE(store_->GetAllocation(a)->start_failing_ms.has_value());
  jobs_->Tick(absl::Now() + absl::Minutes(4));
  Play(a, core::PodPhase::kRunning);
  EXPECT_FALSE(store_->GetAllocation(a)->start_failing_ms.has_value()) << "the stored clock clears";
  EXPECT_THAT(events, Contains(HasSubstr(a + ": its pods can start again")));
  jobs_->Tick(absl::Now() + absl::Minutes(10));
  EXPECT_THAT(pods_.deleted(), IsEmpty());
  const v1::Trial trial = Get(id).trials(0);
  EXPECT_EQ(trial.state(), v1::TRIAL_STATE_ACTIVE);
  EXPECT_EQ(trial.allocation_id(), a);
  EXPECT_EQ(trial.allocation_state(), v1::ALLOCATION_STATE_RUNNING);
  EXPECT_EQ(PendingReason(), "");
}

// The clock survives a restart of the master: a failure that began 4 minutes before fails the run
// a minute after, not pod_start_failure_timeout after the new master first sees it.
TEST_F(StartFailureTest, TheClockSurvivesARestartOfTheMaster) {
  int64_t id = 0;
  const std::string a = TwoPodRun(&id);
  PlayWaiting(a, "ImagePullBackOff", kBackOff);
  ASSERT_TRUE(store_->GetAllocation(a)->start_failing_ms.has_value()) << "stored";
  pqxx::connection conn(url_);
  pqxx::nontransaction(conn).exec_params(
      "UPDATE allocations SET start_failing_at = now() - interval '4 minutes' WHERE id = $1", a);

  server_.reset();
  jobs_ = std::make_unique<JobManager>(config_, *store_, pods_);
  pods_.OnList([](PodState& listed) {
    listed.node = "node-1";
    listed.gated = false;
    listed.waiting = {{.container = "phalanx-container", .reason = "ImagePullBackOff"}};
  });
  ASSERT_TRUE(jobs_->Recover().ok());
  pods_.OnList(nullptr);
  jobs_->Tick(absl::Now() + absl::Seconds(50));
  EXPECT_EQ(store_->GetTrial(1)->state, RunState::kActive);
  jobs_->Tick(absl::Now() + absl::Seconds(61));
  EXPECT_THAT(pods_.deleted(), ::testing::IsSupersetOf({a + "-0", a + "-1"}));
  EXPECT_EQ(store_->GetTrial(1)->state, RunState::kError);
}

}  // namespace
}  // namespace phalanx::master
