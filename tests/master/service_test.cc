// Experiments, auth, graceful preemption and health through the master's gRPC services
// (service_fixture.h).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "grpc/health/v1/health.grpc.pb.h"
#include "kube/status.h"
#include "master/kube_pod_client.h"
#include "pqxx/pqxx"
#include "tests/kube/scripted_server.h"
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
  v1::CreateUserRequest no_password;
  no_password.set_username("bob");
  const grpc::Status refused = auth_->CreateUser(Ctx().get(), no_password, &resp);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(refused.error_message(), "password: required");
  const std::string alice = Login("alice", "secret");
  v1::CurrentUserResponse me;
  ASSERT_TRUE(auth_->CurrentUser(Ctx(alice).get(), {}, &me).ok());
  EXPECT_EQ(me.user().username(), "alice");
  ASSERT_TRUE(auth_->Logout(Ctx(alice).get(), {}, Ignored<v1::LogoutResponse>()).ok());
  EXPECT_EQ(auth_->CurrentUser(Ctx(alice).get(), {}, &me).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
}

// Users set their own password, admins anyone's. The user's other tokens are revoked at once (even
// ones just used, so trusted without asking the store); the caller's own token stays valid.
TEST_F(ServiceTest, SetUserPassword) {
  const std::string determined = Login("determined", "pw");
  const std::string other_session = Login("determined", "pw");
  ASSERT_FALSE(other_session.empty());
  v1::CurrentUserResponse me;
  ASSERT_TRUE(auth_->CurrentUser(Ctx(other_session).get(), {}, &me).ok());

  v1::SetUserPasswordRequest own;
  own.set_password("new-pw");
  v1::SetUserPasswordResponse resp;
  ASSERT_TRUE(auth_->SetUserPassword(Ctx(determined).get(), own, &resp).ok());
  EXPECT_EQ(resp.user().username(), "determined");
  EXPECT_FALSE(resp.user().admin());
  EXPECT_TRUE(Login("determined", "pw").empty());
  EXPECT_FALSE(Login("determined", "new-pw").empty());
  EXPECT_TRUE(auth_->CurrentUser(Ctx(determined).get(), {}, &me).ok());
  EXPECT_EQ(auth_->CurrentUser(Ctx(other_session).get(), {}, &me).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);

  v1::SetUserPasswordRequest admins;
  admins.set_username("admin");
  admins.set_password("mine-now");
  const grpc::Status denied = auth_->SetUserPassword(Ctx(determined).get(), admins, &resp);
  EXPECT_EQ(denied.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(denied.error_message(), "only admins set another user's password");
  EXPECT_FALSE(Login("admin", "pw").empty());

  v1::SetUserPasswordRequest by_admin;
  by_admin.set_username("determined");
  by_admin.set_password("reset");
  ASSERT_TRUE(auth_->SetUserPassword(Ctx().get(), by_admin, &resp).ok());
  EXPECT_EQ(resp.user().username(), "determined");
  EXPECT_EQ(auth_->CurrentUser(Ctx(determined).get(), {}, &me).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(Login("determined", "new-pw").empty());
  EXPECT_FALSE(Login("determined", "reset").empty());
  EXPECT_TRUE(auth_->CurrentUser(Ctx().get(), {}, &me).ok());

  v1::SetUserPasswordRequest empty;
  empty.set_username("determined");
  const grpc::Status refused = auth_->SetUserPassword(Ctx().get(), empty, &resp);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(refused.error_message(), "password: required");
  EXPECT_FALSE(Login("determined", "reset").empty());

  v1::SetUserPasswordRequest unknown;
  unknown.set_username("nobody");
  unknown.set_password("x");
  const grpc::Status missing = auth_->SetUserPassword(Ctx().get(), unknown, &resp);
  EXPECT_EQ(missing.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(missing.error_message(), "no user \"nobody\"");
  grpc::ClientContext anonymous;
  EXPECT_EQ(auth_->SetUserPassword(&anonymous, own, &resp).error_code(),
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

// A trial's pods mount its shared_fs checkpoint storage from the node, so that a checkpoint
// written before a preemption outlives the pod.
TEST_F(ServiceTest, TrialsMountTheirSharedFsCheckpointStorage) {
  Create(R"(
resources: {slots_per_trial: 4}
checkpoint_storage: {type: shared_fs, host_path: /mnt/ckpt, storage_path: exp}
)");
  ASSERT_EQ(pods_.pods().size(), 1u);
  const nlohmann::json pod = pods_.pods().begin()->second;
  const nlohmann::json& spec = pod["spec"];
  EXPECT_EQ(spec["volumes"], nlohmann::json::parse(R"([{"name": "phalanx-checkpoints",
    "hostPath": {"path": "/mnt/ckpt", "type": "DirectoryOrCreate"}}])"));
  const nlohmann::json& c = spec["containers"][0];
  EXPECT_EQ(c["volumeMounts"], nlohmann::json::parse(R"([{"name": "phalanx-checkpoints",
    "mountPath": "/determined_shared_fs"}])"));
  EXPECT_THAT(c["env"], Contains(nlohmann::json{{"name", "PHALANX_CHECKPOINT_DIR"},
                                                {"value", "/determined_shared_fs/exp"}}));
}

// An experiment's free-form `data` reaches its trials as JSON in PHALANX_DATA.
TEST_F(ServiceTest, TrialsGetTheExperimentsData) {
  Create("resources: {slots_per_trial: 4}\ndata: {url: s3://bucket/mnist, shards: 8}\n");
  ASSERT_EQ(pods_.pods().size(), 1u);
  const nlohmann::json pod = pods_.pods().begin()->second;
  EXPECT_THAT(pod["spec"]["containers"][0]["env"],
              Contains(nlohmann::json{{"name", "PHALANX_DATA"},
                                      {"value", R"({"shards":8,"url":"s3://bucket/mnist"})"}}));
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
  ASSERT_TRUE(jobs_->Pause(exp.job_id()).ok());
  got = Get(exp.id());
  EXPECT_EQ(got.trials(0).allocation_state(), v1::ALLOCATION_STATE_PREEMPTING);
  EXPECT_EQ(got.trials(1).allocation_state(), v1::ALLOCATION_STATE_PREEMPTING);
  EXPECT_TRUE(pods_.deleted().empty());
  ASSERT_TRUE(jobs_->Kill(exp.job_id()).ok());
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
  std::atomic<int> calls = 0;  // A gang's pods are deleted side by side.
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
  std::atomic<bool> first_taken = false;  // The gang's pods are created side by side.
  pods_.OnCreate([&](const nlohmann::json& pod) -> absl::Status {
    if (first_taken.exchange(true)) return absl::OkStatus();
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
  ASSERT_TRUE(jobs_->Kill(exp.job_id()).ok());
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

// A pod the API server refuses fails the submission loudly, but the experiment is stored: the
// gang's other pod is deleted, and the next tick starts the trial again.
TEST_F(ServiceTest, FailedPodCreationIsReportedUndoneAndRetried) {
  std::atomic<int> calls = 0;
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

// Pods the API server refuses for good end their trial in ERROR, with the API server's message as
// the reason, and then the job: no new run is started.
TEST_F(ServiceTest, PodsRefusedForGoodEndTheTrialInError) {
  absl::Status refusal;
  int attempts = 0;
  pods_.OnCreate([&](const nlohmann::json&) {
    ++attempts;
    return refusal;
  });
  const std::vector<absl::Status> refusals = {
      kube::HttpError(400, "BadRequest", "bad request body"),
      kube::HttpError(403, "Forbidden", "pods is forbidden: violates PodSecurity"),
      kube::HttpError(404, "NotFound", "namespaces \"gpu-ns\" not found"),
      kube::HttpError(422, "Invalid", "Pod \"p\" is invalid: spec.containers[0].image: Required"),
  };
  for (size_t i = 0; i < refusals.size(); ++i) {
    refusal = refusals[i];
    attempts = 0;
    grpc::Status s;
    Create("resources: {slots_per_trial: 4}\n", &s);
    EXPECT_EQ(s.error_code(), static_cast<grpc::StatusCode>(refusal.code()));
    EXPECT_THAT(s.error_message(), HasSubstr("refused for good, the trial is in ERROR"));
    jobs_->Tick(absl::Now());
    jobs_->Tick(absl::Now());
    const v1::GetExperimentResponse got = Get(static_cast<int64_t>(i) + 1);
    EXPECT_EQ(attempts, 1) << refusal;
    EXPECT_EQ(got.experiment().state(), v1::EXPERIMENT_STATE_ERROR) << refusal;
    ASSERT_EQ(got.trials_size(), 1);
    EXPECT_EQ(got.trials(0).state(), v1::TRIAL_STATE_ERROR);
    EXPECT_EQ(got.trials(0).runs(), 1);
    EXPECT_THAT(got.trials(0).error(), HasSubstr(refusal.message())) << refusal;
  }
  EXPECT_TRUE(Jobs().empty());

  refusal = kube::HttpError(404, "NotFound", "namespaces \"cpu-ns\" not found");
  v1::LaunchTaskRequest launch;
  launch.set_type(v1::TASK_TYPE_TENSORBOARD);
  EXPECT_EQ(tasks_->LaunchTask(Ctx().get(), launch, Ignored<v1::LaunchTaskResponse>()).error_code(),
            grpc::StatusCode::NOT_FOUND);
  jobs_->Tick(absl::Now());
  v1::GetTaskRequest get;
  get.set_id("tb-1");
  v1::GetTaskResponse task;
  ASSERT_TRUE(tasks_->GetTask(Ctx().get(), get, &task).ok());
  EXPECT_EQ(task.task().state(), v1::TASK_STATE_ERROR);
  EXPECT_THAT(task.task().error(), HasSubstr("namespaces \"cpu-ns\" not found"));
}

// A trial that reports failure is in ERROR with the error it reported.
TEST_F(ServiceTest, ReportedFailureIsKept) {
  const v1::Experiment exp = Create("resources: {slots_per_trial: 4}\n");
  const std::string a = Get(exp.id()).trials(0).allocation_id();
  ASSERT_TRUE(jobs_->ReportCompletion(a, /*success=*/false, "CUDA out of memory").ok());
  const v1::Trial trial = Get(exp.id()).trials(0);
  EXPECT_EQ(trial.state(), v1::TRIAL_STATE_ERROR);
  EXPECT_EQ(trial.error(), "CUDA out of memory");
}

// A command on a job whose submission is still being stored waits for nothing and changes
// nothing: it is refused as UNAVAILABLE. (Before, a kill got through once the commit was in and
// the submission then opened the killed job's runs and created their pods.) A lock on the jobs
// table holds the submission in its commit.
TEST_F(ServiceTest, CommandsOnAJobBeingSubmittedAreRefused) {
  pqxx::connection locker(url_);
  pqxx::work hold(locker);
  hold.exec("LOCK TABLE jobs IN SHARE ROW EXCLUSIVE MODE");  // Reads go on, inserts wait.
  auto submit = std::async(std::launch::async, [&] {
    const User admin = store_->FindUser("admin")->user;
    return jobs_->CreateExperiment("resources: {slots_per_trial: 4}\n", admin, true).status();
  });
  ASSERT_TRUE(testing::WaitForALockWaiter(url_)) << "the submission never reached its commit";
  auto kill = std::async(std::launch::async, [&] { return jobs_->Kill("exp-1"); });
  const bool answered = kill.wait_for(std::chrono::seconds(3)) == std::future_status::ready;
  hold.commit();  // The submission goes on.
  const absl::Status killed = kill.get();
  EXPECT_TRUE(answered) << "the kill waited for the submission";
  EXPECT_TRUE(absl::IsUnavailable(killed)) << killed;
  EXPECT_THAT(std::string(killed.message()), HasSubstr("exp-1 is still being submitted"));
  ASSERT_TRUE(submit.get().ok());
  EXPECT_EQ(pods_.pods().size(), 1u);
  EXPECT_EQ(Get(1).experiment().state(), v1::EXPERIMENT_STATE_ACTIVE);
}

// Reports the trial state does not take: a failure while the run is being preempted (the
// preemption stopped it; it resumes later) and any report once the trial has ended.
TEST_F(ServiceTest, ReportsDuringPreemptionOrAfterTheEndLeaveTheTrial) {
  const v1::Experiment exp = Create("resources: {slots_per_trial: 4}\n");
  const std::string a = Get(exp.id()).trials(0).allocation_id();
  Play(a, core::PodPhase::kRunning, /*preempt=*/true);
  ASSERT_TRUE(jobs_->ReportCompletion(a, /*success=*/false, "terminated").ok());
  EXPECT_EQ(Get(exp.id()).trials(0).state(), v1::TRIAL_STATE_ACTIVE);

  const v1::Experiment killed = Create("resources: {slots_per_trial: 4}\n");
  const std::string b = Get(killed.id()).trials(0).allocation_id();
  Play(b, core::PodPhase::kRunning);
  v1::KillExperimentRequest kill;
  kill.set_id(killed.id());
  ASSERT_TRUE(
      experiments_->KillExperiment(Ctx().get(), kill, Ignored<v1::KillExperimentResponse>()).ok());
  ASSERT_TRUE(jobs_->ReportCompletion(b, /*success=*/false, "terminated").ok());
  const v1::Trial trial = Get(killed.id()).trials(0);
  EXPECT_EQ(trial.state(), v1::TRIAL_STATE_CANCELED);
  EXPECT_EQ(trial.error(), "");
}

// Refusals that can go away are retried at the next tick: the trial starts a new run.
TEST_F(ServiceTest, PodsRefusedForNowAreRetried) {
  absl::Status refusal;
  pods_.OnCreate([&](const nlohmann::json&) { return std::exchange(refusal, absl::OkStatus()); });
  const std::vector<absl::Status> refusals = {
      kube::HttpError(403, "Forbidden", "pods \"p\" is forbidden: exceeded quota: gpus"),
      kube::HttpError(409, "Conflict", "the object has been modified"),
      kube::HttpError(429, "TooManyRequests", "slow down"),
      kube::HttpError(500, "InternalError", "etcd timeout"),
      absl::UnavailableError("connection refused"),
  };
  for (size_t i = 0; i < refusals.size(); ++i) {
    refusal = refusals[i];
    grpc::Status s;
    Create("resources: {slots_per_trial: 4}\n", &s);
    EXPECT_FALSE(s.ok());
    jobs_->Tick(absl::Now());
    const v1::GetExperimentResponse got = Get(static_cast<int64_t>(i) + 1);
    EXPECT_EQ(got.experiment().state(), v1::EXPERIMENT_STATE_ACTIVE) << refusals[i];
    EXPECT_EQ(got.trials(0).state(), v1::TRIAL_STATE_ACTIVE) << refusals[i];
    EXPECT_EQ(got.trials(0).runs(), 2) << refusals[i];
    EXPECT_TRUE(got.trials(0).error().empty());
  }
  EXPECT_EQ(pods_.pods().size(), refusals.size());
}

// Experiments are listed with their number of trials.
TEST_F(ServiceTest, ListExperimentsCountsTrials) {
  Create(R"(
hyperparameters: {lr: {type: categorical, vals: [0.1, 0.2]}}
searcher: {name: grid}
resources: {slots_per_trial: 4}
)");
  Create("resources: {slots_per_trial: 4}\n");
  v1::ListExperimentsResponse list;
  ASSERT_TRUE(experiments_->ListExperiments(Ctx().get(), {}, &list).ok());
  ASSERT_EQ(list.experiments_size(), 2);
  EXPECT_EQ(list.experiments(0).num_trials(), 1);  // Newest first.
  EXPECT_EQ(list.experiments(1).num_trials(), 2);
  EXPECT_EQ(Get(1).experiment().num_trials(), 2);
}

// validate_only checks all that creating checks, the searcher's trials included, and stores
// nothing.
TEST_F(ServiceTest, ValidateOnlyChecksWhatCreateChecks) {
  const std::pair<std::string, std::string> refused[] = {
      {"hyperparameters: {opt: {lr: {type: double, minval: 1, maxval: 2}}}\n"
       "searcher: {name: grid}\n",
       "hyperparameters.opt.lr.count: required for the grid searcher"},
      {"hyperparameters:\n"
       "  a: {type: int, minval: 1, maxval: 1000, count: 1000}\n"
       "  b: {type: int, minval: 1, maxval: 1000, count: 1000}\n"
       "searcher: {name: grid}\n",
       "hyperparameters: the grid has more than 10000 trials"},
  };
  v1::CreateExperimentRequest validate;
  validate.set_validate_only(true);
  v1::CreateExperimentResponse resp;
  for (const auto& [yaml, message] : refused) {
    validate.set_config(yaml);
    grpc::Status s = experiments_->CreateExperiment(Ctx().get(), validate, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << yaml;
    EXPECT_EQ(s.error_message(), message);
    Create(yaml, &s);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << yaml;
    EXPECT_EQ(s.error_message(), message);
  }
  validate.set_config(
      "hyperparameters: {lr: {type: double, minval: 1, maxval: 2, count: 2}}\n"
      "searcher: {name: grid}\n");
  grpc::Status s = experiments_->CreateExperiment(Ctx().get(), validate, &resp);
  EXPECT_TRUE(s.ok()) << s.error_message();
  v1::ListExperimentsResponse list;
  ASSERT_TRUE(experiments_->ListExperiments(Ctx().get(), {}, &list).ok());
  EXPECT_EQ(list.experiments_size(), 0);
  EXPECT_EQ(pods_.creates(), 0);
}

// A states filter with a value that is no state is refused, not dropped (which would list all).
TEST_F(ServiceTest, ListsRefuseUnknownStates) {
  Create("resources: {slots_per_trial: 4}\n");
  v1::ListExperimentsRequest experiments;
  experiments.add_states(v1::EXPERIMENT_STATE_ACTIVE);
  experiments.add_states(static_cast<v1::ExperimentState>(42));
  v1::ListExperimentsResponse list;
  grpc::Status s = experiments_->ListExperiments(Ctx().get(), experiments, &list);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "states[1]: 42 is not a state to list by");
  EXPECT_EQ(list.experiments_size(), 0);
  v1::ListTasksRequest tasks;
  tasks.add_states(v1::TASK_STATE_UNSPECIFIED);
  v1::ListTasksResponse task_list;
  s = tasks_->ListTasks(Ctx().get(), tasks, &task_list);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "states[0]: 0 is not a state to list by");
  v1::GetJobsRequest jobs;
  jobs.add_states(v1::JOB_STATE_QUEUED);
  jobs.add_states(static_cast<v1::JobState>(42));
  v1::GetJobsResponse job_list;
  s = queue_->GetJobs(Ctx().get(), jobs, &job_list);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "states[1]: 42 is not a state to list by");
  EXPECT_EQ(job_list.jobs_size(), 0);
}

// When the database refuses an allocation's end, its pods are deleted all the same, and the end
// is stored at the next tick once the database is back; then the trial runs again.
TEST(JobManagerDatabaseTest, EndsTheDatabaseRefusedAreStoredAtTheNextTick) {
  testing::PrivatePostgres pg;
  ASSERT_FALSE(pg.url().empty());
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(pg.url());
  ASSERT_TRUE(store.ok()) << store.status();
  testing::FakePodClient pods;
  JobManager jobs(*ParseMasterConfig(kMaster), **store, pods);
  absl::StatusOr<JobView> exp =
      jobs.CreateExperiment("resources: {slots_per_trial: 8}\n", User{.username = "admin"}, true);
  ASSERT_TRUE(exp.ok()) << exp.status();
  const std::string a = exp->trials.at(0).allocation->id;
  for (bool preempt : {false, true}) {  // Both pods run, then the extender marks the gang.
    for (const auto& [key, pod] : pods.pods()) {
      PodState s = testing::FakePodClient::StateOf(pod, core::PodPhase::kRunning, true);
      s.preempt_requested = preempt;
      jobs.OnPod(s);
    }
  }
  ASSERT_EQ((*store)->GetAllocation(a)->state, AllocState::kPreempting);
  ASSERT_TRUE(pg.Stop());
  jobs.Tick(absl::Now() + absl::Seconds(31));  // The preemption times out.
  EXPECT_EQ(pods.deleted().size(), 2u);
  for (const std::string& name : pods.deleted()) jobs.OnPodDeleted("gpu-ns", name);
  ASSERT_TRUE(pg.Start());
  EXPECT_EQ((*store)->GetAllocation(a)->state, AllocState::kPreempting);  // Nothing stored yet.
  jobs.Tick(absl::Now());
  EXPECT_EQ((*store)->GetAllocation(a)->state, AllocState::kTerminated);
  const JobView view = *jobs.GetJob(exp->job.job_id);
  EXPECT_EQ(view.trials.at(0).trial.runs, 2);
  EXPECT_EQ(pods.pods().size(), 2u);
}

// A run whose pods all succeed while it is being preempted (before its ack got through) finished
// its trial only if the trial reported so; otherwise it checkpointed and exited for the preemption,
// and the trial resumes.
TEST_F(ServiceTest, RunThatSucceedsWhilePreemptedCompletesOnlyIfItReportedSo) {
  const v1::Experiment done = Create("resources: {slots_per_trial: 4}\n");
  const std::string a = Get(done.id()).trials(0).allocation_id();
  Play(a, core::PodPhase::kRunning, /*preempt=*/true);
  EXPECT_EQ(Get(done.id()).trials(0).allocation_state(), v1::ALLOCATION_STATE_PREEMPTING);
  ASSERT_TRUE(jobs_->ReportCompletion(a, /*success=*/true, "").ok());
  Play(a, core::PodPhase::kSucceeded, /*preempt=*/true);
  ReapDeleted();
  v1::Trial trial = Get(done.id()).trials(0);
  EXPECT_EQ(trial.state(), v1::TRIAL_STATE_COMPLETED);
  EXPECT_EQ(trial.runs(), 1);

  const v1::Experiment stopped = Create("resources: {slots_per_trial: 4}\n");
  const std::string b = Get(stopped.id()).trials(0).allocation_id();
  Play(b, core::PodPhase::kRunning, /*preempt=*/true);
  ASSERT_TRUE(jobs_->ReportCheckpoint(b, "ckpt-b", 100).ok());
  Play(b, core::PodPhase::kSucceeded, /*preempt=*/true);
  ReapDeleted();
  trial = Get(stopped.id()).trials(0);
  EXPECT_EQ(trial.state(), v1::TRIAL_STATE_ACTIVE);
  EXPECT_EQ(trial.runs(), 2);
  EXPECT_EQ(trial.latest_checkpoint(), "ckpt-b");
  EXPECT_EQ(pods_.pods().size(), 1u);  // The resumed run's.
}

// Renames table `from` of the database at `url` to `to`: the store's statements on it fail (as
// errors of the database) until it is renamed back.
void RenameTable(const std::string& url, const std::string& from, const std::string& to) {
  pqxx::connection conn(url);
  pqxx::nontransaction tx(conn);
  tx.exec(absl::StrCat("ALTER TABLE ", from, " RENAME TO ", to));
}

// While `refuse`, every UPDATE of table `table` of the database at `url` fails (a trigger raises).
void RefuseUpdates(const std::string& url, const std::string& table, bool refuse) {
  pqxx::connection conn(url);
  pqxx::nontransaction tx(conn);
  if (!refuse) {
    tx.exec(absl::StrCat("DROP TRIGGER refuse_updates ON ", table));
    return;
  }
  tx.exec(
      "CREATE OR REPLACE FUNCTION refuse_updates() RETURNS trigger AS "
      "$$ BEGIN RAISE EXCEPTION 'updates refused by the test'; END $$ LANGUAGE plpgsql");
  tx.exec(absl::StrCat("CREATE TRIGGER refuse_updates BEFORE UPDATE ON ", table,
                       " FOR EACH ROW EXECUTE FUNCTION refuse_updates()"));
}

// A preemption mark that arrives while the job cannot be read is taken all the same (the extender
// sends it once): whether a run is preemptible is known without the database.
TEST_F(ServiceTest, PreemptionMarkIsTakenWhileTheJobCannotBeRead) {
  const v1::Experiment exp = Create("resources: {slots_per_trial: 4}\n");
  const std::string a = Get(exp.id()).trials(0).allocation_id();
  Play(a, core::PodPhase::kRunning);
  RenameTable(url_, "jobs", "jobs_away");
  Play(a, core::PodPhase::kRunning, /*preempt=*/true);
  const absl::StatusOr<bool> signalled = jobs_->WatchPreemption(a, absl::ZeroDuration());
  RenameTable(url_, "jobs_away", "jobs");
  ASSERT_TRUE(signalled.ok()) << signalled.status();
  EXPECT_TRUE(*signalled);
  EXPECT_EQ(store_->GetAllocation(a)->state, AllocState::kPreempting);
}

// When the trial's outcome cannot be stored, the run is kept, pods and all, until it is: a failed
// trial ends in ERROR rather than running again.
TEST_F(ServiceTest, OutcomesTheDatabaseRefusedAreStoredAtTheNextTick) {
  const v1::Experiment exp = Create("resources: {slots_per_trial: 4}\n");
  const std::string a = Get(exp.id()).trials(0).allocation_id();
  Play(a, core::PodPhase::kRunning);
  RenameTable(url_, "trials", "trials_away");
  Play(a, core::PodPhase::kFailed);
  jobs_->Tick(absl::Now());  // Still refused.
  const std::vector<std::string> deleted = pods_.deleted();
  RenameTable(url_, "trials_away", "trials");
  EXPECT_TRUE(deleted.empty());
  jobs_->Tick(absl::Now());
  EXPECT_EQ(pods_.deleted().size(), 1u);
  ReapDeleted();
  const v1::GetExperimentResponse got = Get(exp.id());
  EXPECT_EQ(got.experiment().state(), v1::EXPERIMENT_STATE_ERROR);
  EXPECT_EQ(got.trials(0).state(), v1::TRIAL_STATE_ERROR);
  EXPECT_EQ(got.trials(0).runs(), 1);
  EXPECT_THAT(got.trials(0).error(), HasSubstr("a pod failed"));
}

// A kill stored CANCELED and stopped the pods, but its trials could not be ended: the next tick
// ends them (they stayed ACTIVE for good, and a second kill was refused as the job had ended).
TEST_F(ServiceTest, AKillWhoseTrialsCouldNotBeEndedEndsThemAtTheNextTick) {
  const v1::Experiment exp = Create("resources: {slots_per_trial: 4}\n");
  Play(Get(exp.id()).trials(0).allocation_id(), core::PodPhase::kRunning);
  RefuseUpdates(url_, "trials", true);
  EXPECT_FALSE(jobs_->Kill(exp.job_id()).ok());
  RefuseUpdates(url_, "trials", false);
  jobs_->Tick(absl::Now());
  ReapDeleted();
  const v1::GetExperimentResponse got = Get(exp.id());
  EXPECT_EQ(got.experiment().state(), v1::EXPERIMENT_STATE_CANCELED);
  EXPECT_EQ(got.trials(0).state(), v1::TRIAL_STATE_CANCELED);
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

// Runs a PodWatcher on gpu-ns whose list answers `pods` and whose watch then stays quiet, until it
// has listed; false if it never did.
bool ListThroughAWatcher(JobManager& jobs, const std::vector<nlohmann::json>& pods) {
  std::atomic<int> watches = 0;
  phalanx::testing::ScriptedServer server([&](const phalanx::testing::ScriptedRequest& r) {
    if (r.target.find("watch=true") == std::string::npos) {
      return phalanx::testing::ScriptedResponse{
          200,
          {absl::StrCat(R"({"kind":"PodList","metadata":{"resourceVersion":"1"},"items":)",
                        nlohmann::json(pods).dump(), "}")}};
    }
    ++watches;
    return phalanx::testing::ScriptedResponse{200, {}, absl::Seconds(30)};
  });
  kube::Client client(kube::Config{.server = server.url()});
  PodWatcher watcher(client, jobs, {"gpu-ns"});
  watcher.Start();
  for (int i = 0; i < 500 && watches == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  watcher.Stop();
  return watches > 0;
}

// A pod the watch lists but cannot decode (here a CPU request past int64 in millicores) is not
// taken for gone: its run goes on.
TEST_F(ServiceTest, PodWatcherKeepsListedPodsItCannotDecode) {
  const v1::Experiment exp = Create("resources: {slots_per_trial: 4}\n");
  const std::string run = Get(exp.id()).trials(0).allocation_id();
  Play(run, core::PodPhase::kRunning);
  ASSERT_EQ(pods_.pods().size(), 1u);
  nlohmann::json pod = pods_.pods().begin()->second;
  pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "10000000000000000";
  ASSERT_TRUE(ListThroughAWatcher(*jobs_, {pod})) << "the watcher never listed";
  EXPECT_TRUE(pods_.deleted().empty());
  EXPECT_EQ(Get(exp.id()).trials(0).allocation_id(), run);
}

// A pod deleted or evicted by someone else (a drain, node pressure, a taint, a node shutdown) loses
// the run, however its containers exit: the trial resumes from its latest checkpoint, not in
// ERROR. A pod being deleted on a lost node, still Running, ends the run too.
TEST_F(ServiceTest, RunsOfPodsTheClusterDeletesOrEvictsResume) {
  const nlohmann::json changes[] = {
      {{"status", {{"phase", "Failed"}, {"reason", "Evicted"}}}},
      {{"status",
        {{"phase", "Failed"},
         {"conditions",
          {{{"type", "DisruptionTarget"},
            {"status", "True"},
            {"reason", "TerminationByKubelet"}}}}}}},
      {{"metadata", {{"deletionTimestamp", "2025-01-01T00:00:00Z"}}},
       {"status", {{"phase", "Running"}}}},
  };
  for (const nlohmann::json& change : changes) {
    const v1::Experiment exp = Create("resources: {slots_per_trial: 4}\n");
    const std::string a = Get(exp.id()).trials(0).allocation_id();
    Play(a, core::PodPhase::kRunning);
    ASSERT_TRUE(jobs_->ReportCheckpoint(a, "ckpt-" + a, 100).ok());
    // The cluster's pods as listed: the run's pod changed as `change` says (the others do not
    // decode, and are left as they are).
    std::vector<nlohmann::json> listed;
    const std::string name = a + "-0";
    for (const auto& entry : pods_.pods()) {
      nlohmann::json pod = entry.second;
      if (pod["metadata"]["name"] == name) {
        pod["metadata"]["uid"] = "uid-" + name;
        pod["spec"]["nodeName"] = "node-1";
        pod.merge_patch(change);
      }
      listed.push_back(pod);
    }
    ASSERT_TRUE(ListThroughAWatcher(*jobs_, listed)) << "the watcher never listed";
    EXPECT_THAT(pods_.deleted(), Contains(name)) << change;
    ReapDeleted();
    const v1::Trial trial = Get(exp.id()).trials(0);
    EXPECT_EQ(trial.state(), v1::TRIAL_STATE_ACTIVE) << change;
    EXPECT_EQ(trial.error(), "") << change;
    EXPECT_EQ(trial.runs(), 2) << change;
    EXPECT_EQ(trial.latest_checkpoint(), "ckpt-" + a) << change;
  }
}

// A task has no checkpoint, and a command may not be safe to run twice: an evicted task pod is a
// failure, as before.
TEST_F(ServiceTest, AnEvictedTaskFails) {
  absl::StatusOr<JobView> cmd = jobs_->LaunchTask(TaskType::kCommand, "resources: {slots: 1}\n",
                                                  {"sleep", "60"}, User{.username = "admin"});
  ASSERT_TRUE(cmd.ok()) << cmd.status();
  const std::string a = cmd->trials.at(0).allocation->id;
  std::vector<nlohmann::json> listed;
  for (const auto& entry : pods_.pods()) {
    nlohmann::json pod = entry.second;
    pod["metadata"]["uid"] = "uid-" + pod["metadata"]["name"].get<std::string>();
    pod["spec"]["nodeName"] = "node-1";
    pod["status"] = {{"phase", "Failed"}, {"reason", "Evicted"}};
    listed.push_back(pod);
  }
  ASSERT_TRUE(ListThroughAWatcher(*jobs_, listed)) << "the watcher never listed";
  ReapDeleted();
  absl::StatusOr<JobView> got = jobs_->GetJob(cmd->job.job_id);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->trials.at(0).trial.state, RunState::kError);
  EXPECT_EQ(got->trials.at(0).trial.runs, 1);
}

}  // namespace
}  // namespace phalanx::master
