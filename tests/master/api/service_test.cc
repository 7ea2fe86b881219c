// Experiments, auth, graceful preemption, pod creation and health through the master's gRPC
// services (service_fixture.h); failures of the database and the cluster in
// service_failure_test.cc.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "grpc/health/v1/health.grpc.pb.h"
#include "pqxx/pqxx"
#include "tests/master/testing/service_fixture.h"

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
// (A user's shared_fs host_path is the master's own, pod_spec_policy.h.)
TEST_F(ServiceTest, TrialsMountTheirSharedFsCheckpointStorage) {
  Create(R"(
resources: {slots_per_trial: 4}
checkpoint_storage: {type: shared_fs, host_path: /tmp/checkpoints, storage_path: exp}
)");
  ASSERT_EQ(pods_.pods().size(), 1u);
  const nlohmann::json pod = pods_.pods().begin()->second;
  const nlohmann::json& spec = pod["spec"];
  EXPECT_EQ(spec["volumes"], nlohmann::json::parse(R"([{"name": "phalanx-checkpoints",
    "hostPath": {"path": "/tmp/checkpoints", "type": "DirectoryOrCreate"}}])"));
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
  auto kill = std::async(std::launch::async, [&] { return jobs_->Kill("exp-1", admin_); });
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
