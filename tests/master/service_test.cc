// Experiments, auth, graceful preemption and health through the master's gRPC services
// (service_fixture.h).
#include <chrono>
#include <future>

#include "grpc/health/v1/health.grpc.pb.h"
#include "tests/master/service_fixture.h"

namespace phalanx::master {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

TEST_F(ServiceTest, LoginAndUsers) {
  ASSERT_FALSE(token_.empty());
  EXPECT_TRUE(Login("admin", "wrong").empty());
  const std::string determined = Login("determined", "pw");
  ASSERT_FALSE(determined.empty());

  v1::ListExperimentsResponse list;
  grpc::ClientContext anonymous;
  EXPECT_EQ(experiments_->ListExperiments(&anonymous, {}, &list).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);

  v1::CreateUserRequest req;
  req.set_username("alice");
  req.set_password("secret");
  v1::CreateUserResponse resp;
  EXPECT_EQ(auth_->CreateUser(Ctx(determined).get(), req, &resp).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  ASSERT_TRUE(auth_->CreateUser(Ctx().get(), req, &resp).ok());
  EXPECT_EQ(auth_->CreateUser(Ctx().get(), req, &resp).error_code(),
            grpc::StatusCode::ALREADY_EXISTS);
  const std::string alice = Login("alice", "secret");
  v1::CurrentUserResponse me;
  ASSERT_TRUE(auth_->CurrentUser(Ctx(alice).get(), {}, &me).ok());
  EXPECT_EQ(me.user().username(), "alice");
  ASSERT_TRUE(auth_->Logout(Ctx(alice).get(), {}, Ignored<v1::LogoutResponse>()).ok());
  EXPECT_EQ(auth_->CurrentUser(Ctx(alice).get(), {}, &me).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
}

TEST_F(ServiceTest, NonDivisibleSlotsAreRejectedAtSubmit) {
  grpc::Status s;
  Create("resources: {slots_per_trial: 6}\n", &s);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(),
              HasSubstr("resources.slots_per_trial: 6 slots are not divisible by "
                        "max_slots_per_pod 4"));
  EXPECT_EQ(pods_.creates(), 0);
}

TEST_F(ServiceTest, ExperimentRunsAsGatedGangsAndCompletes) {
  v1::Experiment exp = Create(R"(
name: grid
hyperparameters: {lr: {type: categorical, vals: [0.1, 0.2]}}
searcher: {name: grid}
resources: {slots_per_trial: 8, priority: 42}
)");
  EXPECT_EQ(exp.state(), v1::EXPERIMENT_STATE_ACTIVE);
  EXPECT_EQ(exp.num_trials(), 2);
  ASSERT_EQ(pods_.creates(), 4);  // 2 trials x 8 slots / 4 per pod.
  for (const auto& [key, pod] : pods_.pods()) {
    EXPECT_EQ(pod["metadata"]["namespace"], "gpu-ns");
    EXPECT_EQ(pod["metadata"]["labels"]["phalanx.io/gang-size"], "2");
    EXPECT_EQ(pod["spec"]["schedulingGates"][0]["name"], "phalanx.io/admission");
  }
  v1::GetExperimentResponse got = Get(exp.id());
  ASSERT_EQ(got.trials_size(), 2);
  const std::string a0 = got.trials(0).allocation_id();
  const std::string a1 = got.trials(1).allocation_id();
  EXPECT_EQ(got.trials(0).allocation_state(), v1::ALLOCATION_STATE_PENDING);

  Play(a0, core::PodPhase::kRunning);
  EXPECT_EQ(Get(exp.id()).trials(0).allocation_state(), v1::ALLOCATION_STATE_RUNNING);
  Play(a0, core::PodPhase::kSucceeded);
  ReapDeleted();
  Play(a1, core::PodPhase::kSucceeded);
  ReapDeleted();
  got = Get(exp.id());
  EXPECT_EQ(got.experiment().state(), v1::EXPERIMENT_STATE_COMPLETED);
  EXPECT_EQ(got.trials(0).state(), v1::TRIAL_STATE_COMPLETED);
  EXPECT_TRUE(pods_.pods().empty());
}

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

TEST_F(ServiceTest, LifeCycleEventsAreLogged) {
  std::vector<std::string> events;
  jobs_->SetEventLog([&](const std::string& line) { events.push_back(line); });
  v1::Experiment exp = Create("resources: {slots_per_trial: 4}\n");
  const std::string a = Get(exp.id()).trials(0).allocation_id();
  Play(a, core::PodPhase::kRunning);
  Play(a, core::PodPhase::kRunning, /*preempt=*/true);
  ASSERT_TRUE(jobs_->AckPreemption(a).ok());
  ReapDeleted();
  const std::string next = Get(exp.id()).trials(0).allocation_id();
  EXPECT_THAT(events, ElementsAre(HasSubstr(exp.job_id() + " submitted by admin: 1 trial(s)"),
                                  a + ": run started, 1 gated pod(s) created",
                                  HasSubstr(a + ": preemption requested"),
                                  a + ": preemption acknowledged; deleting its pods",
                                  a + ": run ended, its pods are gone",
                                  next + ": run started, 1 gated pod(s) created"));
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

// Pods are deleted without the manager's lock (each is an API round trip): while a killed gang's
// first pod is being deleted, another caller reads the queue.
TEST_F(ServiceTest, PodsAreDeletedWithoutTheManagerLock) {
  v1::Experiment exp = Create("resources: {slots_per_trial: 8}\n");  // Two pods.
  QueueReader other(*jobs_);
  pods_.OnDelete([&](const std::string&) {
    other.ReadOnce();
    return absl::OkStatus();
  });
  ASSERT_TRUE(jobs_->Kill(exp.job_id()).ok());
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
  int calls = 0;
  pods_.OnDelete([&](const std::string&) {
    return ++calls == 1 ? absl::UnavailableError("API server down") : absl::OkStatus();
  });
  ASSERT_TRUE(jobs_->Kill(exp.job_id()).ok());
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
  pods_.OnCreate([&](const nlohmann::json& pod) -> absl::Status {
    if (other.valid()) return absl::OkStatus();
    const std::string job = pod["metadata"]["labels"]["phalanx.io/job-id"];
    other = std::async(std::launch::async, [&, job] {
      queued = jobs_->Queue("")->size();
      return jobs_->Kill(job);
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

// A pod the API server refuses fails the submission loudly, but the experiment is stored: the
// gang's other pod is deleted, and the next tick starts the trial again.
TEST_F(ServiceTest, FailedPodCreationIsReportedUndoneAndRetried) {
  int calls = 0;
  pods_.OnCreate([&](const nlohmann::json&) {
    return ++calls == 2 ? absl::UnavailableError("API server down") : absl::OkStatus();
  });
  grpc::Status s;
  Create("resources: {slots_per_trial: 8}\n", &s);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(s.error_message(), HasSubstr("exp-1 was submitted but creating pods of exp-1-"));
  EXPECT_THAT(s.error_message(), HasSubstr("API server down"));
  EXPECT_TRUE(pods_.pods().empty());
  ASSERT_EQ(Jobs().size(), 1u);

  jobs_->Tick(absl::Now());
  EXPECT_EQ(pods_.pods().size(), 2u);
  EXPECT_EQ(Jobs()[0].job_id(), "exp-1");
}

// A trial that finishes while it is being preempted (before it acknowledged) is done, not rerun.
TEST_F(ServiceTest, RunThatFinishesWhilePreemptedCompletes) {
  const v1::Experiment exp = Create("resources: {slots_per_trial: 4}\n");
  const std::string a = Get(exp.id()).trials(0).allocation_id();
  Play(a, core::PodPhase::kRunning, /*preempt=*/true);
  EXPECT_EQ(Get(exp.id()).trials(0).allocation_state(), v1::ALLOCATION_STATE_PREEMPTING);
  Play(a, core::PodPhase::kSucceeded, /*preempt=*/true);
  ReapDeleted();
  const v1::Trial trial = Get(exp.id()).trials(0);
  EXPECT_EQ(trial.state(), v1::TRIAL_STATE_COMPLETED);
  EXPECT_EQ(trial.runs(), 1);
  EXPECT_TRUE(pods_.pods().empty());
}

// grpc.health.v1: the server and each phalanx service are SERVING, unknown names are NOT_FOUND,
// and a watch starts with SERVING.
TEST_F(ServiceTest, HealthAnswersForTheServerAndEachService) {
  using grpc::health::v1::HealthCheckRequest;
  using grpc::health::v1::HealthCheckResponse;
  auto health = grpc::health::v1::Health::NewStub(channel_);
  for (const char* service : {"", "phalanx.v1.ExperimentService", "phalanx.v1.JobService"}) {
    grpc::ClientContext ctx;
    HealthCheckRequest req;
    req.set_service(service);
    HealthCheckResponse resp;
    ASSERT_TRUE(health->Check(&ctx, req, &resp).ok()) << service;
    EXPECT_EQ(resp.status(), HealthCheckResponse::SERVING) << service;
  }
  grpc::ClientContext unknown_ctx;
  HealthCheckRequest unknown;
  unknown.set_service("phalanx.v1.Nope");
  HealthCheckResponse resp;
  EXPECT_EQ(health->Check(&unknown_ctx, unknown, &resp).error_code(), grpc::StatusCode::NOT_FOUND);

  grpc::ClientContext watch_ctx;
  std::unique_ptr<grpc::ClientReader<HealthCheckResponse>> watch =
      health->Watch(&watch_ctx, HealthCheckRequest());
  ASSERT_TRUE(watch->Read(&resp));
  EXPECT_EQ(resp.status(), HealthCheckResponse::SERVING);
  watch_ctx.TryCancel();
}

}  // namespace
}  // namespace phalanx::master
