// The multi-user boundary through the master's gRPC services on a real Postgres: users act only on
// their own jobs (admins on all), a task pod only on its allocation; checkpoint ids are checked;
// configs shown to other users have their secrets redacted; a pool's relaxed policy does not
// follow a job moved to a stricter pool.
#include <string>

#include "tests/master/testing/ownership_fixture.h"

namespace phalanx::master {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

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
}  // namespace
}  // namespace phalanx::master
