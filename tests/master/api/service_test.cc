// Users, experiments and their trials, reports, lists and health through the master's gRPC
// services (service_fixture.h); preemption, pause, kill and how pods are created and deleted in
// service_pods_test.cc; failures of the database and the cluster in service_failure_test.cc.
#include <chrono>
#include <future>

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
