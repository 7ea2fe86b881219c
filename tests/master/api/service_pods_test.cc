// Graceful preemption, pause and kill through the master's gRPC services (service_fixture.h),
// and how a run's pods are created and deleted: side by side, without the manager's lock, a
// refused deletion tried again at the next tick.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>

#include "tests/master/testing/service_fixture.h"

namespace phalanx::master {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

TEST_F(ServiceTest, PreemptionSignalsAckDeletesAndRequeues) {
  v1::Experiment exp = Create("resources: {slots_per_trial: 4}\n");
  const std::string a = Get(exp.id()).trials(0).allocation_id();
  Play(a, core::PodPhase::kRunning);

  v1::WatchPreemptionRequest watch;
  watch.set_allocation_id(a);
  watch.set_timeout_seconds(1);
  v1::WatchPreemptionResponse signal;
  ASSERT_TRUE(allocations_->WatchPreemption(Ctx().get(), watch, &signal).ok());
  EXPECT_FALSE(signal.preempt());  // Timed out: nothing yet.

  Play(a, core::PodPhase::kRunning, /*preempt=*/true);  // The extender marks the gang.
  ASSERT_TRUE(allocations_->WatchPreemption(Ctx().get(), watch, &signal).ok());
  EXPECT_TRUE(signal.preempt());
  v1::ReportCheckpointRequest ckpt;
  ckpt.set_allocation_id(a);
  ckpt.set_uuid("ckpt-a");
  ckpt.set_steps_completed(500);
  ASSERT_TRUE(
      allocations_->ReportCheckpoint(Ctx().get(), ckpt, Ignored<v1::ReportCheckpointResponse>())
          .ok());
  v1::AckPreemptionRequest ack;
  ack.set_allocation_id(a);
  ASSERT_TRUE(
      allocations_->AckPreemption(Ctx().get(), ack, Ignored<v1::AckPreemptionResponse>()).ok());
  EXPECT_EQ(pods_.deleted().size(), 1u);
  ReapDeleted();

  v1::Trial trial = Get(exp.id()).trials(0);
  EXPECT_EQ(trial.state(), v1::TRIAL_STATE_ACTIVE);
  EXPECT_EQ(trial.runs(), 2);
  EXPECT_EQ(trial.latest_checkpoint(), "ckpt-a");
  EXPECT_NE(trial.allocation_id(), a);  // Re-created, gated again, resuming from ckpt-a.
  ASSERT_EQ(pods_.pods().size(), 1u);
  const nlohmann::json pod = pods_.pods().begin()->second;
  EXPECT_EQ(pod["spec"]["schedulingGates"][0]["name"], "phalanx.io/admission");
  EXPECT_THAT(pod["spec"]["containers"][0]["env"].dump(), HasSubstr("ckpt-a"));
}

TEST_F(ServiceTest, PreemptionTimeoutDeletesPods) {
  v1::Experiment exp = Create("resources: {slots_per_trial: 4}\n");
  const std::string a = Get(exp.id()).trials(0).allocation_id();
  Play(a, core::PodPhase::kRunning, /*preempt=*/true);
  jobs_->Tick(absl::Now() + absl::Seconds(10));
  EXPECT_TRUE(pods_.deleted().empty());
  jobs_->Tick(absl::Now() + absl::Seconds(31));
  EXPECT_EQ(pods_.deleted().size(), 1u);
}

TEST_F(ServiceTest, PauseIsGracefulAndActivateResumes) {
  v1::Experiment exp = Create("resources: {slots_per_trial: 4}\n");
  const std::string a = Get(exp.id()).trials(0).allocation_id();
  Play(a, core::PodPhase::kRunning);
  v1::PauseExperimentRequest pause;
  pause.set_id(exp.id());
  ASSERT_TRUE(
      experiments_->PauseExperiment(Ctx().get(), pause, Ignored<v1::PauseExperimentResponse>())
          .ok());
  EXPECT_TRUE(pods_.deleted().empty());  // Waits for the checkpoint.
  v1::WatchPreemptionRequest watch;
  watch.set_allocation_id(a);
  v1::WatchPreemptionResponse signal;
  ASSERT_TRUE(allocations_->WatchPreemption(Ctx().get(), watch, &signal).ok());
  EXPECT_TRUE(signal.preempt());
  v1::AckPreemptionRequest ack;
  ack.set_allocation_id(a);
  ASSERT_TRUE(
      allocations_->AckPreemption(Ctx().get(), ack, Ignored<v1::AckPreemptionResponse>()).ok());
  ReapDeleted();
  v1::GetExperimentResponse got = Get(exp.id());
  EXPECT_EQ(got.experiment().state(), v1::EXPERIMENT_STATE_PAUSED);
  EXPECT_EQ(got.trials(0).state(), v1::TRIAL_STATE_PAUSED);
  EXPECT_TRUE(pods_.pods().empty());  // Not requeued.

  v1::ActivateExperimentRequest activate;
  activate.set_id(exp.id());
  ASSERT_TRUE(
      experiments_
          ->ActivateExperiment(Ctx().get(), activate, Ignored<v1::ActivateExperimentResponse>())
          .ok());
  EXPECT_EQ(pods_.pods().size(), 1u);
  EXPECT_EQ(Get(exp.id()).trials(0).runs(), 2);
}

TEST_F(ServiceTest, KillDeletesEveryPod) {
  v1::Experiment exp = Create("resources: {slots_per_trial: 8}\n");
  v1::KillExperimentRequest kill;
  kill.set_id(exp.id());
  ASSERT_TRUE(
      experiments_->KillExperiment(Ctx().get(), kill, Ignored<v1::KillExperimentResponse>()).ok());
  EXPECT_TRUE(pods_.pods().empty());
  ReapDeleted();
  EXPECT_EQ(Get(exp.id()).experiment().state(), v1::EXPERIMENT_STATE_CANCELED);
  EXPECT_EQ(experiments_->KillExperiment(Ctx().get(), kill, Ignored<v1::KillExperimentResponse>())
                .error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
}

// A kill deletes the pods at once, also of runs checkpointing for a pause or a preemption.
TEST_F(ServiceTest, KillDeletesPodsOfRunsBeingPreempted) {
  v1::Experiment exp = Create(R"(
hyperparameters: {lr: {type: categorical, vals: [0.1, 0.2]}}
searcher: {name: grid}
resources: {slots_per_trial: 4}
)");
  v1::GetExperimentResponse got = Get(exp.id());
  Play(got.trials(0).allocation_id(), core::PodPhase::kRunning, /*preempt=*/true);
  Play(got.trials(1).allocation_id(), core::PodPhase::kRunning);
  ASSERT_TRUE(jobs_->Pause(exp.job_id(), admin_).ok());
  got = Get(exp.id());
  EXPECT_EQ(got.trials(0).allocation_state(), v1::ALLOCATION_STATE_PREEMPTING);
  EXPECT_EQ(got.trials(1).allocation_state(), v1::ALLOCATION_STATE_PREEMPTING);
  EXPECT_TRUE(pods_.deleted().empty());
  ASSERT_TRUE(jobs_->Kill(exp.job_id(), admin_).ok());
  EXPECT_TRUE(pods_.pods().empty());
  ReapDeleted();
  EXPECT_EQ(Get(exp.id()).experiment().state(), v1::EXPERIMENT_STATE_CANCELED);
}

// Pods are deleted without the manager's lock (each is an API round trip): while a killed gang's
// first pod is being deleted, another caller reads the queue.
TEST_F(ServiceTest, PodsAreDeletedWithoutTheManagerLock) {
  v1::Experiment exp = Create("resources: {slots_per_trial: 8}\n");  // Two pods.
  QueueReader other(*jobs_);
  pods_.OnDelete([&](const std::string&) {
    other.ReadOnce();
    return absl::OkStatus();
  });
  ASSERT_TRUE(jobs_->Kill(exp.job_id(), admin_).ok());
  EXPECT_FALSE(other.waited_for_the_lock());
  EXPECT_EQ(other.size(), 0u);  // The kill was recorded before its pods went.
  EXPECT_TRUE(pods_.pods().empty());
  ReapDeleted();
  EXPECT_EQ(Get(exp.id()).experiment().state(), v1::EXPERIMENT_STATE_CANCELED);
}

// A deletion the API server refuses does not fail the kill: it is logged and tried again at the
// next tick.
TEST_F(ServiceTest, FailedPodDeletionIsRetriedAtTheNextTick) {
  v1::Experiment exp = Create("resources: {slots_per_trial: 8}\n");
  std::vector<std::string> events;
  jobs_->SetEventLog([&](const std::string& line) { events.push_back(line); });
  std::atomic<int> calls = 0;  // A gang's pods are deleted side by side.
  pods_.OnDelete([&](const std::string&) {
    return ++calls == 1 ? absl::UnavailableError("API server down") : absl::OkStatus();
  });
  ASSERT_TRUE(jobs_->Kill(exp.job_id(), admin_).ok());
  EXPECT_EQ(pods_.pods().size(), 1u);
  EXPECT_THAT(events, Contains(HasSubstr("API server down; tried again at the next tick")));
  jobs_->Tick(absl::Now());
  EXPECT_TRUE(pods_.pods().empty());
  ReapDeleted();
  EXPECT_EQ(Get(exp.id()).experiment().state(), v1::EXPERIMENT_STATE_CANCELED);
}

// Pods are created without the manager's lock (each is an API round trip): while the first pod of
// a gang is being created, another caller reads the queue and kills the job. The pod created
// after the kill is deleted too.
TEST_F(ServiceTest, PodsAreCreatedWithoutTheManagerLock) {
  std::future<absl::Status> other;
  size_t queued = 0;
  std::atomic<bool> first_taken = false;  // The gang's pods are created side by side.
  pods_.OnCreate([&](const nlohmann::json& pod) -> absl::Status {
    if (first_taken.exchange(true)) return absl::OkStatus();
    const std::string job = pod["metadata"]["labels"]["phalanx.io/job-id"];
    other = std::async(std::launch::async, [&, job] {
      queued = jobs_->Queue("")->size();
      return jobs_->Kill(job, admin_);
    });
    if (other.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
      return absl::DeadlineExceededError("the manager's lock is held while pods are created");
    }
    return absl::OkStatus();
  });
  grpc::Status s;
  Create("resources: {slots_per_trial: 8}\n", &s);  // Two pods.
  EXPECT_TRUE(s.ok()) << s.error_message();
  ASSERT_TRUE(other.valid());
  EXPECT_TRUE(other.get().ok());
  EXPECT_EQ(queued, 1u);
  EXPECT_EQ(pods_.creates(), 2);
  EXPECT_TRUE(pods_.pods().empty());
  EXPECT_TRUE(Jobs().empty());
}

// The pods of a submission are created side by side, not one round trip after another: here the
// four pods of a gang are all in flight at once (each request waits for the others).
// Most requests in flight at once of the calls through Enter; each waits up to 2 s for `until`.
class InFlight {
 public:
  explicit InFlight(int until) : until_(until) {}
  absl::Status Enter() {
    std::unique_lock<std::mutex> lock(mu_);
    most_ = std::max(most_, ++in_flight_);
    cv_.notify_all();
    cv_.wait_for(lock, std::chrono::seconds(2), [&] { return most_ == until_; });
    --in_flight_;
    return absl::OkStatus();
  }
  int most() {
    std::lock_guard<std::mutex> lock(mu_);
    return most_;
  }

 private:
  const int until_;
  std::mutex mu_;
  std::condition_variable cv_;
  int in_flight_ = 0, most_ = 0;
};

TEST_F(ServiceTest, PodsOfASubmissionAreCreatedSideBySide) {
  InFlight creations(4);
  pods_.OnCreate([&](const nlohmann::json&) { return creations.Enter(); });
  grpc::Status s;
  const v1::Experiment exp = Create("resources: {slots_per_trial: 16}\n", &s);  // Four pods.
  EXPECT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(creations.most(), 4);
  EXPECT_EQ(pods_.pods().size(), 4u);

  InFlight deletions(4);  // And a killed gang's pods are deleted side by side.
  pods_.OnDelete([&](const std::string&) { return deletions.Enter(); });
  ASSERT_TRUE(jobs_->Kill(exp.job_id(), admin_).ok());
  EXPECT_EQ(deletions.most(), 4);
  EXPECT_TRUE(pods_.pods().empty());
}

// A resumed run's pods (here after an acknowledged preemption) are created without the manager's
// lock too: another call gets through meanwhile.
TEST_F(ServiceTest, ResumedRunsPodsAreCreatedWithoutTheManagerLock) {
  v1::Experiment exp = Create("resources: {slots_per_trial: 4}\n");
  const std::string a = Get(exp.id()).trials(0).allocation_id();
  Play(a, core::PodPhase::kRunning);
  Play(a, core::PodPhase::kRunning, /*preempt=*/true);
  QueueReader other(*jobs_);
  pods_.OnCreate([&](const nlohmann::json&) {
    return other.ReadOnce() ? absl::DeadlineExceededError("the manager's lock is held")
                            : absl::OkStatus();
  });
  ASSERT_TRUE(jobs_->AckPreemption(a).ok());
  ReapDeleted();
  EXPECT_FALSE(other.waited_for_the_lock());
  EXPECT_EQ(other.size(), 1u);
  EXPECT_EQ(Get(exp.id()).trials(0).allocation_id(), exp.job_id() + "-trial-1-r2");
  EXPECT_EQ(pods_.creates(), 2);  // The first run's pod and the resumed run's, each once.
  EXPECT_EQ(pods_.pods().size(), 1u);
}

}  // namespace
}  // namespace phalanx::master
