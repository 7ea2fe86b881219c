// Store tests on a real Postgres (fixture `postgres`): migrations, users and tokens, jobs with
// trials, filters and paging, allocations, checkpoints, durability across a reopen, and
// reconnecting after the database restarts.
#include "master/store.h"

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "master/auth.h"
#include "tests/master/pg_fixture.h"

namespace phalanx::master {
namespace {

JobRecord Job(const std::string& id, TaskType type, const std::string& pool) {
  return JobRecord{.job_id = id,
                   .type = type,
                   .name = id + "-name",
                   .username = "admin",
                   .resource_pool = pool,
                   .priority = 50,
                   .queue_position = 10.5,
                   .slots = 4,
                   .config = "name: x\n"};
}

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    url_ = testing::FreshDatabaseUrl();
    ASSERT_FALSE(url_.empty());
    absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(url_);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
  }
  std::string url_;
  std::unique_ptr<Store> store_;
};

TEST_F(StoreTest, MigrationsAreIdempotent) {
  absl::StatusOr<std::unique_ptr<Store>> again = Store::Open(url_);
  ASSERT_TRUE(again.ok()) << again.status();
}

TEST_F(StoreTest, UsersAndTokens) {
  ASSERT_TRUE(store_->EnsureUser("admin", HashPassword("pw"), true).ok());
  ASSERT_TRUE(store_->EnsureUser("admin", HashPassword("other"), false).ok());  // Left alone.
  absl::StatusOr<StoredUser> admin = store_->FindUser("admin");
  ASSERT_TRUE(admin.ok()) << admin.status();
  EXPECT_TRUE(admin->user.admin);
  EXPECT_TRUE(VerifyPassword("pw", admin->password_hash));
  EXPECT_FALSE(VerifyPassword("other", admin->password_hash));
  EXPECT_TRUE(absl::IsNotFound(store_->FindUser("nobody").status()));
  EXPECT_TRUE(absl::IsAlreadyExists(store_->CreateUser("admin", "x", false).status()));

  const std::string token = NewToken();
  ASSERT_TRUE(
      store_->AddToken(TokenHash(token), admin->user.id, absl::Now() + absl::Hours(1)).ok());
  absl::StatusOr<User> who = store_->UserForToken(TokenHash(token));
  ASSERT_TRUE(who.ok()) << who.status();
  EXPECT_EQ(who->username, "admin");
  ASSERT_TRUE(store_->DeleteToken(TokenHash(token)).ok());
  EXPECT_TRUE(absl::IsUnauthenticated(store_->UserForToken(TokenHash(token)).status()));
  ASSERT_TRUE(store_->AddToken("expired", admin->user.id, absl::Now() - absl::Seconds(1)).ok());
  EXPECT_TRUE(absl::IsUnauthenticated(store_->UserForToken("expired").status()));
}

TEST_F(StoreTest, JobsTrialsAndFilters) {
  absl::StatusOr<int64_t> n = store_->NextJobNumber(TaskType::kExperiment);
  ASSERT_TRUE(n.ok()) << n.status();
  const std::string exp = "exp-" + std::to_string(*n);
  absl::StatusOr<std::vector<TrialRecord>> trials = store_->InsertJob(
      Job(exp, TaskType::kExperiment, "gpu"), {{.hparams = R"({"lr":1})"}, {.hparams = "{}"}});
  ASSERT_TRUE(trials.ok()) << trials.status();
  ASSERT_EQ(trials->size(), 2u);
  EXPECT_GT((*trials)[0].id, 0);
  ASSERT_TRUE(store_->InsertJob(Job("cmd-1", TaskType::kCommand, "cpu"), {}).ok());
  EXPECT_TRUE(absl::IsAlreadyExists(
      store_->InsertJob(Job("cmd-1", TaskType::kCommand, "cpu"), {}).status()));

  JobRecord job = *store_->GetJob(exp);
  EXPECT_EQ(job.resource_pool, "gpu");
  EXPECT_DOUBLE_EQ(job.queue_position, 10.5);
  job.priority = 70;
  job.state = RunState::kPaused;
  ASSERT_TRUE(store_->UpdateJob(job).ok());
  EXPECT_EQ(store_->GetJob(exp)->priority, 70);
  EXPECT_TRUE(absl::IsNotFound(store_->GetJob("exp-999").status()));

  auto all = *store_->ListJobs({});
  EXPECT_EQ(all.second, 2);
  auto paused = *store_->ListJobs({.states = {RunState::kPaused}});
  ASSERT_EQ(paused.first.size(), 1u);
  EXPECT_EQ(paused.first[0].job_id, exp);
  auto commands = *store_->ListJobs({.types = {TaskType::kCommand}, .resource_pool = "cpu"});
  ASSERT_EQ(commands.first.size(), 1u);
  auto paged = *store_->ListJobs({.offset = 1, .limit = 1});
  EXPECT_EQ(paged.first.size(), 1u);
  EXPECT_EQ(paged.second, 2);
  EXPECT_EQ(store_->ListJobs({.name_substring = "cmd-1-na"})->first.size(), 1u);

  TrialRecord t = (*trials)[1];
  t.runs = 2;
  t.state = RunState::kCompleted;
  ASSERT_TRUE(store_->UpdateTrial(t).ok());
  EXPECT_EQ(store_->ListTrials(exp)->at(1).runs, 2);
}

TEST_F(StoreTest, AllocationsAndCheckpoints) {
  auto trials = *store_->InsertJob(Job("exp-1", TaskType::kExperiment, "gpu"), {{.hparams = "{}"}});
  AllocationRecord a{.id = "exp-1-trial-1-r1",
                     .job_id = "exp-1",
                     .trial_id = trials[0].id,
                     .ns = "default",
                     .pods = 2,
                     .token_hash = "h"};
  TrialRecord run = trials[0];
  run.runs = 1;
  ASSERT_TRUE(store_->StartRun({.trial = run, .allocation = a}).ok());
  EXPECT_EQ(store_->GetTrial(run.id)->runs, 1);
  a.state = AllocState::kPreempting;
  a.preempt_requested = true;
  ASSERT_TRUE(store_->UpdateAllocation(a).ok());
  AllocationRecord got = *store_->GetAllocation(a.id);
  EXPECT_EQ(got.state, AllocState::kPreempting);
  EXPECT_EQ(got.trial_id, trials[0].id);
  EXPECT_TRUE(got.preempt_ms.has_value());
  EXPECT_EQ(store_->ListOpenAllocations()->size(), 1u);
  a.state = AllocState::kTerminated;
  ASSERT_TRUE(store_->UpdateAllocation(a).ok());
  EXPECT_TRUE(store_->ListOpenAllocations()->empty());

  ASSERT_TRUE(store_->AddCheckpoint(a.id, trials[0].id, "ckpt-1", 100).ok());
  TrialRecord trial = *store_->GetTrial(trials[0].id);
  EXPECT_EQ(trial.latest_checkpoint, "ckpt-1");
  EXPECT_EQ(trial.steps_completed, 100);
}

TEST_F(StoreTest, AcknowledgedWritesSurviveReopen) {
  ASSERT_TRUE(store_->InsertJob(Job("tb-3", TaskType::kTensorboard, "cpu"), {}).ok());
  store_.reset();
  absl::StatusOr<std::unique_ptr<Store>> reopened = Store::Open(url_);
  ASSERT_TRUE(reopened.ok());
  EXPECT_EQ((*reopened)->GetJob("tb-3")->type, TaskType::kTensorboard);
}

TEST(StoreRestartTest, ReconnectsAfterTheDatabaseRestarts) {
  testing::PrivatePostgres pg;
  ASSERT_FALSE(pg.url().empty());
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(pg.url());
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)->InsertJob(Job("cmd-1", TaskType::kCommand, "cpu"), {}).ok());
  ASSERT_TRUE(pg.Stop());
  EXPECT_TRUE(absl::IsUnavailable((*store)->GetJob("cmd-1").status()));
  ASSERT_TRUE(pg.Start());
  absl::StatusOr<JobRecord> job = (*store)->GetJob("cmd-1");
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->type, TaskType::kCommand);
}

// A submission's first runs are stored with the job in the same transaction, or not at all.
TEST_F(StoreTest, InsertJobStoresFirstRunsInTheSameTransaction) {
  auto first_run = [](const std::vector<TrialRecord>& trials) {
    TrialRecord t = trials[0];
    t.runs = 1;
    return std::vector<StartedRun>{
        {.trial = t,
         .allocation = {.id = "exp-1-trial-1-r1", .job_id = "exp-1", .trial_id = t.id, .ns = "d"}}};
  };
  auto trials =
      store_->InsertJob(Job("exp-1", TaskType::kExperiment, "gpu"), {{.hparams = "{}"}}, first_run);
  ASSERT_TRUE(trials.ok()) << trials.status();
  EXPECT_EQ(store_->GetTrial((*trials)[0].id)->runs, 1);
  EXPECT_EQ(store_->GetAllocation("exp-1-trial-1-r1")->trial_id, (*trials)[0].id);

  // The run's allocation id is taken: the whole submission of exp-2 rolls back.
  auto clash =
      store_->InsertJob(Job("exp-2", TaskType::kExperiment, "gpu"), {{.hparams = "{}"}}, first_run);
  EXPECT_TRUE(absl::IsAlreadyExists(clash.status())) << clash.status();
  EXPECT_TRUE(absl::IsNotFound(store_->GetJob("exp-2").status()));
}

}  // namespace
}  // namespace phalanx::master
