// The multi-user boundary through the master's gRPC services on a real Postgres: users act only on
// their own jobs (admins on all), a task pod only on its allocation; checkpoint ids are checked;
// configs shown to other users have their secrets redacted; logins take the same time whether the
// user exists, are rate limited, and expired tokens are deleted.
#include <algorithm>
#include <chrono>
#include <future>
#include <vector>

#include "master/store/auth.h"
#include "pqxx/pqxx"
#include "tests/master/testing/service_fixture.h"

namespace phalanx::master {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class OwnershipTest : public ServiceTest {
 protected:
  void SetUp() override {
    ServiceTest::SetUp();
    alice_ = AddUser("alice");
    bob_ = AddUser("bob");
    ASSERT_FALSE(alice_.empty());
    ASSERT_FALSE(bob_.empty());
  }

  // Creates user `name` (password "<name>-pw") and logs in.
  std::string AddUser(const std::string& name) {
    v1::CreateUserRequest req;
    req.set_username(name);
    req.set_password(name + "-pw");
    EXPECT_TRUE(auth_->CreateUser(Ctx().get(), req, Ignored<v1::CreateUserResponse>()).ok());
    return Login(name, name + "-pw");
  }

  grpc::Status CreateAs(const std::string& token, const std::string& yaml, v1::Experiment* out,
                        bool activate = true) {
    v1::CreateExperimentRequest req;
    req.set_config(yaml);
    req.set_activate(activate);
    v1::CreateExperimentResponse resp;
    grpc::Status s = experiments_->CreateExperiment(Ctx(token).get(), req, &resp);
    *out = resp.experiment();
    return s;
  }

  v1::Experiment MustCreateAs(const std::string& token, const std::string& yaml) {
    v1::Experiment exp;
    grpc::Status s = CreateAs(token, yaml, &exp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return exp;
  }

  grpc::Status LaunchAs(const std::string& token, v1::Task* out, const std::string& yaml = "") {
    v1::LaunchTaskRequest req;
    req.set_type(v1::TASK_TYPE_COMMAND);
    req.set_config(yaml);
    req.add_entrypoint("sleep");
    v1::LaunchTaskResponse resp;
    grpc::Status s = tasks_->LaunchTask(Ctx(token).get(), req, &resp);
    *out = resp.task();
    return s;
  }

  // The PHALANX_ALLOCATION_TOKEN its pods got.
  std::string AllocationToken(const std::string& allocation) {
    for (const auto& [key, pod] : pods_.pods()) {
      if (pod["metadata"]["labels"][std::string(kube::kGangLabel)] != allocation) continue;
      for (const nlohmann::json& env : pod["spec"]["containers"][0]["env"]) {
        if (env["name"] == "PHALANX_ALLOCATION_TOKEN") return env["value"];
      }
    }
    return "";
  }

  grpc::Status LoginStatus(const std::string& user, const std::string& password,
                           std::string* retry_after = nullptr) {
    grpc::ClientContext ctx;
    v1::LoginRequest req;
    req.set_username(user);
    req.set_password(password);
    grpc::Status s = auth_->Login(&ctx, req, Ignored<v1::LoginResponse>());
    if (retry_after != nullptr) {
      auto it = ctx.GetServerTrailingMetadata().find("retry-after");
      *retry_after = it == ctx.GetServerTrailingMetadata().end()
                         ? ""
                         : std::string(it->second.data(), it->second.size());
    }
    return s;
  }

  std::string alice_, bob_;
};

constexpr char kOneTrial[] = "resources: {slots_per_trial: 4}\n";

// bob can neither pause, activate, kill, reprioritize, move nor re-pool alice's experiment, and
// is told whose it is; alice and admins can.
TEST_F(OwnershipTest, OthersCannotChangeAnExperiment) {
  const v1::Experiment exp = MustCreateAs(alice_, kOneTrial);
  const std::string job_id = absl::StrCat("exp-", exp.id());
  const std::string prefix = absl::StrCat("experiment ", exp.id(), " belongs to alice; ");

  v1::PauseExperimentRequest pause;
  pause.set_id(exp.id());
  grpc::Status s =
      experiments_->PauseExperiment(Ctx(bob_).get(), pause, Ignored<v1::PauseExperimentResponse>());
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(s.error_message(), prefix + "only alice or an admin may pause it");
  v1::KillExperimentRequest kill;
  kill.set_id(exp.id());
  s = experiments_->KillExperiment(Ctx(bob_).get(), kill, Ignored<v1::KillExperimentResponse>());
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(s.error_message(), prefix + "only alice or an admin may kill it");
  v1::SetExperimentPriorityRequest priority;
  priority.set_id(exp.id());
  priority.set_priority(1);
  s = experiments_->SetExperimentPriority(Ctx(bob_).get(), priority,
                                          Ignored<v1::SetExperimentPriorityResponse>());
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  v1::ActivateExperimentRequest activate;
  activate.set_id(exp.id());
  EXPECT_EQ(
      experiments_
          ->ActivateExperiment(Ctx(bob_).get(), activate, Ignored<v1::ActivateExperimentResponse>())
          .error_code(),
      grpc::StatusCode::PERMISSION_DENIED);

  const v1::Experiment bobs = MustCreateAs(bob_, kOneTrial);
  for (int i = 0; i < 4; ++i) {
    v1::UpdateJobQueueRequest req;
    v1::QueueControl* u = req.add_updates();
    u->set_job_id(job_id);
    if (i == 0) u->set_priority(1);
    if (i == 1) u->set_ahead_of(absl::StrCat("exp-", bobs.id()));
    if (i == 2) u->set_behind_of(absl::StrCat("exp-", bobs.id()));
    if (i == 3) u->set_resource_pool("cpu");
    s = queue_->UpdateJobQueue(Ctx(bob_).get(), req, Ignored<v1::UpdateJobQueueResponse>());
    EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << i;
    EXPECT_THAT(s.error_message(), HasSubstr(prefix)) << i;
  }
  const v1::GetExperimentResponse got = Get(exp.id());
  EXPECT_EQ(got.experiment().state(), v1::EXPERIMENT_STATE_ACTIVE);
  EXPECT_EQ(got.experiment().priority(), exp.priority());
  EXPECT_EQ(got.experiment().resource_pool(), "gpu");
  EXPECT_TRUE(pods_.deleted().empty());

  // Its owner and an admin may.
  EXPECT_TRUE(experiments_
                  ->SetExperimentPriority(Ctx(alice_).get(), priority,
                                          Ignored<v1::SetExperimentPriorityResponse>())
                  .ok());
  EXPECT_TRUE(
      experiments_->KillExperiment(Ctx().get(), kill, Ignored<v1::KillExperimentResponse>()).ok());
  EXPECT_EQ(Get(exp.id()).experiment().state(), v1::EXPERIMENT_STATE_CANCELED);
}

TEST_F(OwnershipTest, OthersCannotKillOrReprioritizeATask) {
  v1::Task task;
  ASSERT_TRUE(LaunchAs(alice_, &task).ok());
  v1::KillTaskRequest kill;
  kill.set_id(task.id());
  grpc::Status s = tasks_->KillTask(Ctx(bob_).get(), kill, Ignored<v1::KillTaskResponse>());
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(
      s.error_message(),
      absl::StrCat("command ", task.id(), " belongs to alice; only alice or an admin may kill it"));
  v1::SetTaskPriorityRequest priority;
  priority.set_id(task.id());
  priority.set_priority(99);
  EXPECT_EQ(
      tasks_->SetTaskPriority(Ctx(bob_).get(), priority, Ignored<v1::SetTaskPriorityResponse>())
          .error_code(),
      grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_TRUE(pods_.deleted().empty());
  EXPECT_TRUE(tasks_->KillTask(Ctx(alice_).get(), kill, Ignored<v1::KillTaskResponse>()).ok());
}

// bob's own (valid) token does not let him report for, or watch, alice's allocation; the
// allocation's own token and alice's do.
TEST_F(OwnershipTest, OthersCannotActForAnAllocation) {
  const v1::Experiment exp = MustCreateAs(alice_, kOneTrial);
  const std::string a = Get(exp.id()).trials(0).allocation_id();
  Play(a, core::PodPhase::kRunning);

  v1::ReportCompletionRequest done;
  done.set_allocation_id(a);
  done.set_success(true);
  grpc::Status s = allocations_->ReportCompletion(Ctx(bob_).get(), done,
                                                  Ignored<v1::ReportCompletionResponse>());
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(s.error_message(), HasSubstr("belongs to alice"));
  v1::ReportCheckpointRequest ckpt;
  ckpt.set_allocation_id(a);
  ckpt.set_uuid("bobs-checkpoint");
  ckpt.set_steps_completed(1);
  EXPECT_EQ(
      allocations_->ReportCheckpoint(Ctx(bob_).get(), ckpt, Ignored<v1::ReportCheckpointResponse>())
          .error_code(),
      grpc::StatusCode::PERMISSION_DENIED);
  v1::WatchPreemptionRequest watch;
  watch.set_allocation_id(a);
  watch.set_timeout_seconds(1);
  EXPECT_EQ(
      allocations_->WatchPreemption(Ctx(bob_).get(), watch, Ignored<v1::WatchPreemptionResponse>())
          .error_code(),
      grpc::StatusCode::PERMISSION_DENIED);
  v1::AckPreemptionRequest ack;
  ack.set_allocation_id(a);
  EXPECT_EQ(allocations_->AckPreemption(Ctx(bob_).get(), ack, Ignored<v1::AckPreemptionResponse>())
                .error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  v1::Trial trial = Get(exp.id()).trials(0);
  EXPECT_EQ(trial.state(), v1::TRIAL_STATE_ACTIVE);
  EXPECT_EQ(trial.latest_checkpoint(), "");

  const std::string own = AllocationToken(a);
  ASSERT_FALSE(own.empty());
  EXPECT_TRUE(
      allocations_->ReportCheckpoint(Ctx(own).get(), ckpt, Ignored<v1::ReportCheckpointResponse>())
          .ok());
  ckpt.set_uuid("alices-checkpoint");
  EXPECT_TRUE(
      allocations_
          ->ReportCheckpoint(Ctx(alice_).get(), ckpt, Ignored<v1::ReportCheckpointResponse>())
          .ok());
  EXPECT_TRUE(
      allocations_->ReportCompletion(Ctx(own).get(), done, Ignored<v1::ReportCompletionResponse>())
          .ok());
  EXPECT_EQ(Get(exp.id()).trials(0).state(), v1::TRIAL_STATE_COMPLETED);
}

TEST_F(OwnershipTest, CheckpointIdsArePlainNames) {
  const v1::Experiment exp = MustCreateAs(alice_, kOneTrial);
  const std::string a = Get(exp.id()).trials(0).allocation_id();
  const std::string own = AllocationToken(a);
  const std::vector<std::string> refused = {
      "../../etc/passwd",   "..", "a/b", ".hidden", "x..y", std::string("nul\0byte", 8),
      std::string(129, 'a')};
  for (const std::string& bad : refused) {
    v1::ReportCheckpointRequest ckpt;
    ckpt.set_allocation_id(a);
    ckpt.set_uuid(bad);
    const grpc::Status s = allocations_->ReportCheckpoint(Ctx(own).get(), ckpt,
                                                          Ignored<v1::ReportCheckpointResponse>());
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << bad;
    EXPECT_THAT(s.error_message(), ::testing::StartsWith("uuid: ")) << bad;
  }
  EXPECT_EQ(Get(exp.id()).trials(0).latest_checkpoint(), "");
  for (const char* good : {"3f2b8c1e-9a4d-4f7e-8b2a-0c1d2e3f4a5b", "ckpt_1.0-final"}) {
    v1::ReportCheckpointRequest ckpt;
    ckpt.set_allocation_id(a);
    ckpt.set_uuid(good);
    EXPECT_TRUE(
        allocations_
            ->ReportCheckpoint(Ctx(own).get(), ckpt, Ignored<v1::ReportCheckpointResponse>())
            .ok())
        << good;
  }
}

// Storage credentials in alice's config are shown to alice and admins only.
TEST_F(OwnershipTest, OthersSeeConfigsWithSecretsRedacted) {
  const std::string yaml = R"(
name: with-keys
resources: {slots_per_trial: 4}
checkpoint_storage: {type: s3, bucket: alices-bucket, access_key: AKIAALICE, secret_key: s3cr3t-alice}
environment:
  environment_variables: [WANDB_API_KEY=wandb-alice, MODE=fast]
)";
  const v1::Experiment exp = MustCreateAs(alice_, yaml);
  v1::GetExperimentRequest req;
  req.set_id(exp.id());
  for (const std::string& token : {bob_, Login("determined", "pw")}) {
    v1::GetExperimentResponse resp;
    ASSERT_TRUE(experiments_->GetExperiment(Ctx(token).get(), req, &resp).ok());
    const std::string& config = resp.experiment().config();
    EXPECT_THAT(config, Not(HasSubstr("AKIAALICE")));
    EXPECT_THAT(config, Not(HasSubstr("s3cr3t-alice")));
    EXPECT_THAT(config, Not(HasSubstr("wandb-alice")));
    EXPECT_THAT(config, HasSubstr("alices-bucket"));
    EXPECT_THAT(config, HasSubstr("MODE=fast"));
    v1::ListExperimentsResponse list;
    ASSERT_TRUE(experiments_->ListExperiments(Ctx(token).get(), {}, &list).ok());
    ASSERT_EQ(list.experiments_size(), 1);
    EXPECT_THAT(list.experiments(0).config(), Not(HasSubstr("s3cr3t-alice")));
  }
  for (const std::string& token : {alice_, token_}) {
    v1::GetExperimentResponse resp;
    ASSERT_TRUE(experiments_->GetExperiment(Ctx(token).get(), req, &resp).ok());
    EXPECT_EQ(resp.experiment().config(), yaml);
  }

  v1::Task task;
  ASSERT_TRUE(
      LaunchAs(alice_, &task, "environment: {environment_variables: [HF_TOKEN=hf-alice]}\n").ok());
  v1::GetTaskRequest get_task;
  get_task.set_id(task.id());
  v1::GetTaskResponse got;
  ASSERT_TRUE(tasks_->GetTask(Ctx(bob_).get(), get_task, &got).ok());
  EXPECT_THAT(got.task().config(), Not(HasSubstr("hf-alice")));
  v1::ListTasksResponse tasks;
  ASSERT_TRUE(tasks_->ListTasks(Ctx(bob_).get(), {}, &tasks).ok());
  ASSERT_EQ(tasks.tasks_size(), 1);
  EXPECT_THAT(tasks.tasks(0).config(), Not(HasSubstr("hf-alice")));
}

// Secrets in flags, hyphenated keys and hyperparameters are redacted for others too, and names
// that only look alike (max_tokens, tokenizer) are not.
TEST_F(OwnershipTest, OthersSeeFlagsAndHyperparametersRedacted) {
  const std::string yaml = R"(
name: flags
resources: {slots_per_trial: 4}
data: {s3-access-key: AKIAHYPHEN}
entrypoint: [python3, train.py, --wandb-api-key, list-alice, --epochs, "3"]
hyperparameters:
  api_token: {type: const, val: hp-alice}
  max_tokens: {type: const, val: 512}
  tokenizer: {type: const, val: bert}
environment:
  environment_variables: ["RUN=python3 train.py --password string-alice"]
)";
  const v1::Experiment exp = MustCreateAs(alice_, yaml);
  v1::GetExperimentRequest req;
  req.set_id(exp.id());
  v1::GetExperimentResponse resp;
  ASSERT_TRUE(experiments_->GetExperiment(Ctx(bob_).get(), req, &resp).ok());
  const std::string& config = resp.experiment().config();
  for (const char* secret : {"AKIAHYPHEN", "list-alice", "string-alice", "hp-alice"}) {
    EXPECT_THAT(config, Not(HasSubstr(secret))) << config;
  }
  EXPECT_THAT(config, HasSubstr("--epochs"));
  ASSERT_EQ(resp.trials_size(), 1);
  const nlohmann::json hparams = nlohmann::json::parse(resp.trials(0).hparams_json());
  EXPECT_EQ(hparams["api_token"], "<redacted>");
  EXPECT_EQ(hparams["max_tokens"], 512);
  EXPECT_EQ(hparams["tokenizer"], "bert");
  ASSERT_TRUE(experiments_->GetExperiment(Ctx(alice_).get(), req, &resp).ok());
  EXPECT_THAT(resp.trials(0).hparams_json(), HasSubstr("hp-alice"));
}

// An expired token is refused and its row deleted.
TEST_F(OwnershipTest, ExpiredTokensAreDeleted) {
  const std::string token = NewToken();
  const int64_t alice_id = store_->FindUser("alice")->user.id;
  ASSERT_TRUE(store_->AddToken(TokenHash(token), alice_id, absl::Now() - absl::Minutes(1)).ok());
  pqxx::connection conn(url_);
  auto rows = [&] {
    return pqxx::nontransaction(conn)
        .exec_params1("SELECT count(*) FROM user_tokens WHERE token_hash = $1", TokenHash(token))[0]
        .as<int>();
  };
  ASSERT_EQ(rows(), 1);
  v1::CurrentUserResponse me;
  EXPECT_EQ(auth_->CurrentUser(Ctx(token).get(), {}, &me).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(rows(), 0);
}

// Unknown users and wrong passwords take the same time (a password check each): the medians of
// 8 logins each are within a factor of 2 (today both are one PBKDF2; before, an unknown user
// skipped it and answered some 20 times faster).
TEST_F(OwnershipTest, LoginTakesAsLongForUnknownUsers) {
  std::vector<std::string> users;
  for (int i = 0; i < 8; ++i) {
    users.push_back(absl::StrCat("user", i));
    AddUser(users.back());
  }
  auto time = [&](const std::string& user) {
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(LoginStatus(user, "wrong").error_code(), grpc::StatusCode::UNAUTHENTICATED);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  std::vector<double> unknown, wrong;
  for (int i = 0; i < 8; ++i) {  // Interleaved, so that load on the machine hits both alike.
    unknown.push_back(time(absl::StrCat("nobody", i)));
    wrong.push_back(time(users[i]));
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return (v[3] + v[4]) / 2;
  };
  const double ratio = median(wrong) / median(unknown);
  EXPECT_GT(ratio, 0.5);
  EXPECT_LT(ratio, 2.0) << "wrong password " << median(wrong) << " s, unknown user "
                        << median(unknown) << " s";
}

// After 5 failures a user name is refused for a while (even with its right password), with a
// retry-after; 20 failures from one peer lock out that peer for any name.
TEST_F(OwnershipTest, FailedLoginsAreRateLimited) {
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(LoginStatus("alice", "guess").error_code(), grpc::StatusCode::UNAUTHENTICATED) << i;
  }
  std::string retry_after;
  grpc::Status s = LoginStatus("alice", "alice-pw", &retry_after);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(s.error_message(), HasSubstr("retry after"));
  int seconds = 0;
  EXPECT_TRUE(absl::SimpleAtoi(retry_after, &seconds)) << retry_after;
  EXPECT_GT(seconds, 0);
  EXPECT_LE(seconds, 60);
  EXPECT_TRUE(LoginStatus("bob", "bob-pw").ok());  // Other users are not locked out.

  for (int i = 0; i < 15; ++i) LoginStatus(absl::StrCat("spray", i), "guess");  // 20 in all.
  EXPECT_EQ(LoginStatus("bob", "bob-pw").error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
}

// Wrong passwords tried at once are counted before they are checked: of 20 parallel logins for
// alice, at most 5 (the limit) get a password check, the rest are refused unchecked.
TEST_F(OwnershipTest, ParallelLoginsStayWithinTheLimit) {
  std::vector<std::future<grpc::StatusCode>> logins;
  for (int i = 0; i < 20; ++i) {
    logins.push_back(std::async(std::launch::async, [&, i] {
      return LoginStatus("alice", absl::StrCat("guess", i)).error_code();
    }));
  }
  int checked = 0, refused = 0;
  for (auto& login : logins) {
    const grpc::StatusCode code = login.get();
    checked += code == grpc::StatusCode::UNAUTHENTICATED;
    refused += code == grpc::StatusCode::RESOURCE_EXHAUSTED;
  }
  EXPECT_LE(checked, 5);
  EXPECT_EQ(checked + refused, 20);
  EXPECT_EQ(LoginStatus("alice", "alice-pw").error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
}

// A pool that relaxes the pod-spec policy does not launder a job into a strict one: moving a
// paused experiment whose pod spec or checkpoint storage only the relaxed pool allows is refused,
// naming the field and the pool, and the job stays where it was.
class PoolPolicyTest : public OwnershipTest {
 protected:
  std::string MasterYaml() const override {
    return R"(
max_slots_per_pod: 4
preemption_timeout: 30s
resource_pools:
  - pool_name: gpu
    kubernetes_namespace: gpu-ns
    pod_spec_policy: {allow_privileged: true, allowed_shared_fs_host_paths: [/mnt/shared]}
  - {pool_name: cpu, kubernetes_namespace: cpu-ns}
default_aux_resource_pool: cpu
)";
  }
};

TEST_F(PoolPolicyTest, MovingToAStricterPoolChecksItsPolicy) {
  struct Case {
    std::string yaml, field;
  };
  const Case cases[] = {
      {"resources: {slots_per_trial: 4}\nenvironment: {pod_spec: {spec: {containers: [{name: a, "
       "securityContext: {privileged: true}}]}}}\n",
       "environment.pod_spec.spec.containers[0].securityContext.privileged: refused by "
       "pod_spec_policy (allow_privileged is false in pool \"cpu\")"},
      {"resources: {slots_per_trial: 4}\ncheckpoint_storage: {type: shared_fs, host_path: "
       "/mnt/shared/x}\n",
       "checkpoint_storage.host_path: refused by pod_spec_policy"},
  };
  for (const Case& c : cases) {
    v1::Experiment exp;
    ASSERT_TRUE(CreateAs(alice_, c.yaml, &exp, /*activate=*/false).ok()) << c.field;
    v1::UpdateJobQueueRequest req;
    v1::QueueControl* u = req.add_updates();
    u->set_job_id(absl::StrCat("exp-", exp.id()));
    u->set_resource_pool("cpu");
    for (const std::string& token : {alice_, token_}) {
      grpc::Status s =
          queue_->UpdateJobQueue(Ctx(token).get(), req, Ignored<v1::UpdateJobQueueResponse>());
      EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << c.field;
      EXPECT_THAT(s.error_message(),
                  HasSubstr(absl::StrCat("exp-", exp.id(), " cannot move to pool \"cpu\": ")));
      EXPECT_THAT(s.error_message(), HasSubstr(c.field));
    }
    const v1::GetExperimentResponse got = Get(exp.id());
    EXPECT_EQ(got.experiment().resource_pool(), "gpu");
    EXPECT_EQ(got.experiment().state(), v1::EXPERIMENT_STATE_PAUSED);
  }
  // A config the stricter pool allows moves.
  const v1::Experiment plain = MustCreateAs(alice_, kOneTrial);
  v1::PauseExperimentRequest pause;
  pause.set_id(plain.id());
  ASSERT_TRUE(
      experiments_
          ->PauseExperiment(Ctx(alice_).get(), pause, Ignored<v1::PauseExperimentResponse>())
          .ok());
  v1::UpdateJobQueueRequest req;
  v1::QueueControl* u = req.add_updates();
  u->set_job_id(absl::StrCat("exp-", plain.id()));
  u->set_resource_pool("cpu");
  grpc::Status s =
      queue_->UpdateJobQueue(Ctx(alice_).get(), req, Ignored<v1::UpdateJobQueueResponse>());
  EXPECT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(Get(plain.id()).experiment().resource_pool(), "cpu");
}

// Quotas: refused submissions name the quota, its limit and the user's count; what was accepted
// stays, and other users are not limited by alice's work.
class ExperimentQuotaTest : public OwnershipTest {
 protected:
  std::string MasterYaml() const override {
    return absl::StrCat(kMaster, "quotas: {max_active_experiments_per_user: 1}\n");
  }
};

TEST_F(ExperimentQuotaTest, ActiveExperimentsAreLimited) {
  const v1::Experiment first = MustCreateAs(alice_, kOneTrial);
  v1::Experiment second;
  grpc::Status s = CreateAs(alice_, kOneTrial, &second);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(s.error_message(),
            "quota max_active_experiments_per_user is 1: alice has 1 active experiment(s) and "
            "this would add 1; finish, pause or kill some first");
  MustCreateAs(bob_, kOneTrial);
  v1::Experiment paused;
  ASSERT_TRUE(CreateAs(alice_, kOneTrial, &paused, /*activate=*/false).ok());
  v1::ActivateExperimentRequest activate;
  activate.set_id(paused.id());
  s = experiments_->ActivateExperiment(Ctx(alice_).get(), activate,
                                       Ignored<v1::ActivateExperimentResponse>());
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(Get(paused.id()).experiment().state(), v1::EXPERIMENT_STATE_PAUSED);
  EXPECT_EQ(Get(first.id()).experiment().state(), v1::EXPERIMENT_STATE_ACTIVE);

  v1::KillExperimentRequest kill;
  kill.set_id(first.id());
  ASSERT_TRUE(
      experiments_->KillExperiment(Ctx(alice_).get(), kill, Ignored<v1::KillExperimentResponse>())
          .ok());
  EXPECT_TRUE(experiments_
                  ->ActivateExperiment(Ctx(alice_).get(), activate,
                                       Ignored<v1::ActivateExperimentResponse>())
                  .ok());
}

class RunQuotaTest : public OwnershipTest {
 protected:
  std::string MasterYaml() const override {
    return absl::StrCat(kMaster,
                        "quotas: {max_active_trials_per_user: 3, max_queued_pods_per_user: 4}\n");
  }
};

constexpr char kTwoTrials[] = R"(
hyperparameters: {lr: {type: categorical, vals: [0.1, 0.2]}}
searcher: {name: grid}
resources: {slots_per_trial: 4}
)";

TEST_F(RunQuotaTest, ActiveTrialsAndQueuedPodsAreLimited) {
  const v1::Experiment first = MustCreateAs(alice_, kTwoTrials);  // 2 trials, 2 queued pods.
  v1::Experiment refused;
  grpc::Status s = CreateAs(alice_, kTwoTrials, &refused);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(s.error_message(),
            "quota max_active_trials_per_user is 3: alice has 2 active trial(s) and this would "
            "add 2; finish, pause or kill some first");
  v1::Task task;
  ASSERT_TRUE(LaunchAs(alice_, &task).ok());  // 3 queued pods.
  ASSERT_TRUE(LaunchAs(alice_, &task).ok());  // 4.
  s = LaunchAs(alice_, &task);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(s.error_message(),
            "quota max_queued_pods_per_user is 4: alice has 4 queued pod(s) and this would add "
            "1; finish, pause or kill some first");
  EXPECT_TRUE(LaunchAs(bob_, &task).ok());

  // Once a run's pods are bound they no longer queue.
  Play(Get(first.id()).trials(0).allocation_id(), core::PodPhase::kRunning);
  EXPECT_TRUE(LaunchAs(alice_, &task).ok());
  EXPECT_EQ(Get(first.id()).trials_size(), 2);
  EXPECT_EQ(Get(first.id()).experiment().state(), v1::EXPERIMENT_STATE_ACTIVE);
}

}  // namespace
}  // namespace phalanx::master
