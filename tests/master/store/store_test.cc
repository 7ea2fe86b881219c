// Store tests on a real Postgres (fixture `postgres`): migrations, users and tokens, jobs with
// trials, filters and paging, allocations, checkpoints and their times, a trial's preemption
// history, trial metrics (exact values, paging, the bound, best validation values), durability
// across a reopen, reconnecting after the database restarts, and the connection string the master
// builds.
#include "master/store/store.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <regex>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/store/auth.h"
#include "pqxx/pqxx"
#include "tests/master/testing/pg_fixture.h"

namespace phalanx::master {
namespace {

using ::testing::HasSubstr;

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

// Stores `job` with `n` trials numbered after the store's last trial id; returns the trials.
std::vector<TrialRecord> InsertWithTrials(Store& store, const JobRecord& job, int n) {
  absl::StatusOr<Store::LastIds> last = store.LastJobIds();
  EXPECT_TRUE(last.ok()) << last.status();
  if (!last.ok()) return {};
  std::vector<TrialRecord> trials;
  for (int i = 1; i <= n; ++i) {
    trials.push_back({.id = last->trial + i, .job_id = job.job_id, .hparams = "{}"});
  }
  absl::Status s = store.InsertJob(job, trials);
  EXPECT_TRUE(s.ok()) << s;
  return trials;
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
  EXPECT_EQ(store_->LastJobIds()->experiment, 0);
  const std::string exp = "exp-12";
  JobRecord submitted = Job(exp, TaskType::kExperiment, "gpu");
  submitted.queue_position = 1732291234.123456;
  submitted.submit_ms = 1732291234123;
  ASSERT_TRUE(
      store_
          ->InsertJob(submitted, {{.id = 7, .hparams = R"({"lr":1})"}, {.id = 9, .hparams = "{}"}})
          .ok());
  EXPECT_EQ(store_->ListTrials(exp)->at(0).hparams, R"({"lr":1})");
  EXPECT_DOUBLE_EQ(store_->GetJob(exp)->queue_position, submitted.queue_position);
  EXPECT_EQ(store_->GetJob(exp)->submit_ms, submitted.submit_ms);
  ASSERT_TRUE(store_->UpdateJob(Job(exp, TaskType::kExperiment, "gpu")).ok());
  ASSERT_TRUE(store_->InsertJob(Job("cmd-1", TaskType::kCommand, "cpu"), {}).ok());
  EXPECT_TRUE(
      absl::IsAlreadyExists(store_->InsertJob(Job("cmd-1", TaskType::kCommand, "cpu"), {})));

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

  TrialRecord t = store_->ListTrials(exp)->at(1);
  t.runs = 2;
  t.restarts = 1;
  t.error = "a pod failed";
  t.state = RunState::kCompleted;
  ASSERT_TRUE(store_->UpdateTrial(t).ok());
  const TrialRecord stored = store_->ListTrials(exp)->at(1);
  EXPECT_EQ(stored.runs, 2);
  EXPECT_EQ(stored.restarts, 1);
  EXPECT_EQ(stored.error, "a pod failed");
  EXPECT_EQ(stored.state, RunState::kCompleted);
}

// A run's failure is counted once, however often its count is written (a retry after a write whose
// answer was lost); another run's failure counts again.
TEST_F(StoreTest, ARestartIsCountedOncePerRun) {
  ASSERT_TRUE(store_->InsertJob(Job("exp-3", TaskType::kExperiment, "gpu"), {{.id = 4}}).ok());
  ASSERT_TRUE(store_->CountRestart(4, "exp-3-trial-4-r1").ok());
  ASSERT_TRUE(store_->CountRestart(4, "exp-3-trial-4-r1").ok());
  TrialRecord t = *store_->GetTrial(4);
  EXPECT_EQ(t.restarts, 1);
  EXPECT_EQ(t.restarted_after, "exp-3-trial-4-r1");
  ASSERT_TRUE(store_->CountRestart(4, "exp-3-trial-4-r2").ok());
  t = *store_->GetTrial(4);
  EXPECT_EQ(t.restarts, 2);
  EXPECT_EQ(t.restarted_after, "exp-3-trial-4-r2");
  t.runs = 3;
  ASSERT_TRUE(store_->UpdateTrial(t).ok());
  EXPECT_EQ(store_->GetTrial(4)->restarted_after, "exp-3-trial-4-r2") << "kept by other writes";
}

// Values travel as quoted literals in one request: quotes, backslashes and semicolons arrive as
// sent.
TEST_F(StoreTest, InsertJobKeepsValuesExactly) {
  JobRecord odd = Job("cmd-2", TaskType::kCommand, "cpu");
  odd.name = R"(it's a "name" \ ; DROP TABLE jobs; --)";
  odd.config = "a: 'b'\n\\x\n";
  odd.queue_position = 1.0 / 3;
  odd.submit_ms = 1779000000123;
  ASSERT_TRUE(store_->InsertJob(odd, {}).ok());
  absl::StatusOr<JobRecord> got = store_->GetJob("cmd-2");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->name, odd.name);
  EXPECT_EQ(got->config, odd.config);
  EXPECT_EQ(got->queue_position, odd.queue_position);
  EXPECT_EQ(got->submit_ms, odd.submit_ms);
}

TEST_F(StoreTest, AllocationsAndCheckpoints) {
  auto trials = InsertWithTrials(*store_, Job("exp-1", TaskType::kExperiment, "gpu"), 1);
  ASSERT_EQ(trials.size(), 1u);
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

// A checkpoint reported again (a retried call) is recorded once; its uuid with other values is
// refused with a message, not a database error.
TEST_F(StoreTest, CheckpointsReportedAgain) {
  auto trials = InsertWithTrials(*store_, Job("exp-1", TaskType::kExperiment, "gpu"), 1);
  ASSERT_EQ(trials.size(), 1u);
  const AllocationRecord a{
      .id = "exp-1-trial-1-r1", .job_id = "exp-1", .trial_id = trials[0].id, .ns = "d"};
  ASSERT_TRUE(store_->StartRun({.trial = trials[0], .allocation = a}).ok());
  ASSERT_TRUE(store_->AddCheckpoint(a.id, trials[0].id, "ckpt-1", 100).ok());
  absl::StatusOr<int64_t> latest = store_->AddCheckpoint(a.id, trials[0].id, "ckpt-2", 200);
  ASSERT_TRUE(latest.ok()) << latest.status();
  absl::StatusOr<int64_t> again = store_->AddCheckpoint(a.id, trials[0].id, "ckpt-1", 100);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *latest) << "the time of the latest, ckpt-2";
  EXPECT_EQ(store_->GetTrial(trials[0].id)->latest_checkpoint, "ckpt-2");  // Not rolled back.
  absl::Status other = store_->AddCheckpoint(a.id, trials[0].id, "ckpt-1", 150).status();
  EXPECT_TRUE(absl::IsAlreadyExists(other)) << other;
  EXPECT_EQ(other.message(),
            "checkpoint \"ckpt-1\" was already reported by exp-1-trial-1-r1 at 100 steps");
  EXPECT_EQ(store_->GetTrial(trials[0].id)->steps_completed, 200);
}

// A reported checkpoint answers when it was reported (the database's clock), which the trial's
// history then holds.
TEST_F(StoreTest, CheckpointTimeIsWhenItWasReported) {
  auto trials = InsertWithTrials(*store_, Job("exp-1", TaskType::kExperiment, "gpu"), 1);
  ASSERT_EQ(trials.size(), 1u);
  const AllocationRecord a{
      .id = "exp-1-trial-1-r1", .job_id = "exp-1", .trial_id = trials[0].id, .ns = "d"};
  ASSERT_TRUE(store_->StartRun({.trial = trials[0], .allocation = a}).ok());
  EXPECT_EQ(store_->GetTrialHistory(trials[0].id, 16)->checkpoint_ms, 0) << "none yet";
  const int64_t before = absl::ToUnixMillis(absl::Now());
  absl::StatusOr<int64_t> at = store_->AddCheckpoint(a.id, trials[0].id, "ckpt-1", 100);
  const int64_t after = absl::ToUnixMillis(absl::Now());
  ASSERT_TRUE(at.ok()) << at.status();
  EXPECT_GE(*at, before - 1);  // The database rounds to the nearest millisecond.
  EXPECT_LE(*at, after + 1);
  EXPECT_EQ(store_->GetTrialHistory(trials[0].id, 16)->checkpoint_ms, *at);
}

// Training pace from checkpoints: steps over seconds between the first and last checkpoint of each
// run, from the trial's own runs first, then its experiment's other trials, then the owner's
// other experiments of that name; never another user's; a run with one checkpoint says nothing.
TEST_F(StoreTest, MeasurePaceFromCheckpoints) {
  JobRecord first = Job("exp-1", TaskType::kExperiment, "gpu");
  first.name = "mnist";
  auto trials = InsertWithTrials(*store_, first, 2);
  ASSERT_EQ(trials.size(), 2u);
  const AllocationRecord a{
      .id = "exp-1-trial-1-r1", .job_id = "exp-1", .trial_id = trials[0].id, .ns = "d"};
  ASSERT_TRUE(store_->StartRun({.trial = trials[0], .allocation = a}).ok());
  const AllocationRecord b{
      .id = "exp-1-trial-2-r1", .job_id = "exp-1", .trial_id = trials[1].id, .ns = "d"};
  ASSERT_TRUE(store_->StartRun({.trial = trials[1], .allocation = b}).ok());
  EXPECT_FALSE(*store_->MeasurePace(trials[0].id, first)) << "no checkpoint yet";
  ASSERT_TRUE(store_->AddCheckpoint(a.id, trials[0].id, "a-1", 100).ok());
  ASSERT_TRUE(store_->AddCheckpoint(a.id, trials[0].id, "a-2", 300).ok());
  ASSERT_TRUE(store_->AddCheckpoint(b.id, trials[1].id, "b-1", 50).ok());  // One alone.
  {
    pqxx::connection c(url_);
    pqxx::work tx(c);
    tx.exec(
        "UPDATE checkpoints SET reported_at = reported_at - interval '100 seconds' "
        "WHERE uuid = 'a-1'");
    tx.commit();
  }
  absl::StatusOr<std::optional<MeasuredPace>> pace = store_->MeasurePace(trials[0].id, first);
  ASSERT_TRUE(pace.ok()) << pace.status();
  ASSERT_TRUE(*pace);
  EXPECT_EQ((*pace)->source, MeasuredPace::Source::kTrial);
  EXPECT_NEAR((*pace)->steps_per_second, 2.0, 0.01);  // 200 steps in 100 s.
  pace = store_->MeasurePace(trials[1].id, first);
  ASSERT_TRUE(pace.ok() && *pace);
  EXPECT_EQ((*pace)->source, MeasuredPace::Source::kExperiment);

  JobRecord again = Job("exp-2", TaskType::kExperiment, "gpu");
  again.name = "mnist";
  auto later = InsertWithTrials(*store_, again, 1);
  pace = store_->MeasurePace(later[0].id, again);
  ASSERT_TRUE(pace.ok() && *pace);
  EXPECT_EQ((*pace)->source, MeasuredPace::Source::kOwnerHistory);
  EXPECT_NEAR((*pace)->steps_per_second, 2.0, 0.01);

  JobRecord other = Job("exp-3", TaskType::kExperiment, "gpu");
  other.name = "mnist";
  other.username = "mallory";
  auto theirs = InsertWithTrials(*store_, other, 1);
  pace = store_->MeasurePace(theirs[0].id, other);
  ASSERT_TRUE(pace.ok());
  EXPECT_FALSE(*pace) << "another user's runs";
}

// A trial's preemption history: when each of its runs was stored as a victim, its newest `max`
// times, oldest first; other runs and other trials' are not in it, and a victim run stays
// one, with its first time, whatever is written later.
TEST_F(StoreTest, TrialHistoryHoldsItsNewestVictimRunsOldestFirst) {
  auto trials = InsertWithTrials(*store_, Job("exp-1", TaskType::kExperiment, "gpu"), 2);
  ASSERT_EQ(trials.size(), 2u);
  auto run = [&](TrialRecord& t, bool victim) {
    t.runs += 1;
    AllocationRecord a{.id = absl::StrCat("exp-1-trial-", t.id, "-r", t.runs),
                       .job_id = "exp-1",
                       .trial_id = t.id,
                       .run = t.runs,
                       .ns = "d"};
    EXPECT_TRUE(store_->StartRun({.trial = t, .allocation = a}).ok());
    a.victim = victim;
    a.state = AllocState::kTerminating;
    EXPECT_TRUE(store_->UpdateAllocation(a).ok());
    return a;
  };
  for (bool victim : {true, true, false, true, true}) run(trials[0], victim);
  AllocationRecord other = run(trials[1], true);
  absl::StatusOr<TrialHistory> all = store_->GetTrialHistory(trials[0].id, 16);
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->preempted_ms.size(), 4u);
  EXPECT_TRUE(std::is_sorted(all->preempted_ms.begin(), all->preempted_ms.end()));
  absl::StatusOr<TrialHistory> newest = store_->GetTrialHistory(trials[0].id, 3);
  ASSERT_TRUE(newest.ok()) << newest.status();
  EXPECT_EQ(newest->preempted_ms,
            std::vector<int64_t>(all->preempted_ms.begin() + 1, all->preempted_ms.end()));
  const std::vector<int64_t> first = store_->GetTrialHistory(trials[1].id, 16)->preempted_ms;
  EXPECT_EQ(first.size(), 1u);

  other.state = AllocState::kTerminated;  // Later writes (the run's end) keep it, and its time.
  ASSERT_TRUE(store_->UpdateAllocation(other).ok());
  other.victim = false;
  ASSERT_TRUE(store_->UpdateAllocation(other).ok());
  EXPECT_TRUE(store_->GetAllocation(other.id)->victim);
  EXPECT_EQ(store_->GetTrialHistory(trials[1].id, 16)->preempted_ms, first);
  EXPECT_FALSE(store_->GetAllocation("exp-1-trial-1-r3")->victim);
}

// Metric values come back exactly, NaN and infinities included; a value of steps and name already
// stored is replaced, other names at those steps stay.
TEST_F(StoreTest, MetricsRoundTripAndMergeBySteps) {
  const int64_t trial =
      InsertWithTrials(*store_, Job("exp-1", TaskType::kExperiment, "gpu"), 1)[0].id;
  const double tiny = 4.9406564584124654e-324;
  ASSERT_TRUE(store_
                  ->AddMetrics(trial, "exp-1-trial-1-r1", MetricGroup::kTraining,
                               {{.steps = 10, .metrics = {{"loss", std::nan("")}, {"lr", tiny}}},
                                {.steps = 20, .metrics = {{"loss", HUGE_VAL}}}},
                               100)
                  .ok());
  ASSERT_TRUE(store_
                  ->AddMetrics(trial, "exp-1-trial-1-r2", MetricGroup::kTraining,
                               {{.steps = 10, .metrics = {{"loss", 0.1}}}}, 100)
                  .ok());
  bool more = true;
  absl::StatusOr<std::vector<MetricReport>> got =
      store_->GetMetrics(trial, MetricGroup::kTraining, -1, 10, 1000, &more);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_FALSE(more);
  ASSERT_EQ(got->size(), 2u);
  EXPECT_EQ((*got)[0].steps, 10);
  ASSERT_EQ((*got)[0].metrics.size(), 2u);
  EXPECT_EQ((*got)[0].metrics[0], (std::pair<std::string, double>("loss", 0.1)));
  EXPECT_EQ((*got)[0].metrics[1], (std::pair<std::string, double>("lr", tiny)));
  EXPECT_EQ((*got)[1].metrics[0].second, HUGE_VAL);
  EXPECT_TRUE(store_->GetMetrics(trial, MetricGroup::kValidation, -1, 10, 1000, &more)->empty());
}

// Pages end at `limit` reports, or once `max_values` values are in; a trial holds at most
// `max_values` values of a group, new names at old steps included.
TEST_F(StoreTest, MetricsPageByStepsAndStayBounded) {
  const int64_t trial =
      InsertWithTrials(*store_, Job("exp-1", TaskType::kExperiment, "gpu"), 1)[0].id;
  for (int64_t steps : {30, 10, 20}) {
    ASSERT_TRUE(store_
                    ->AddMetrics(trial, "a", MetricGroup::kValidation,
                                 {{.steps = steps, .metrics = {{"acc", 0.5}, {"loss", 1.0}}}}, 6)
                    .ok());
  }
  bool more = false;
  std::vector<MetricReport> page =
      *store_->GetMetrics(trial, MetricGroup::kValidation, -1, 2, 1000, &more);
  ASSERT_EQ(page.size(), 2u);
  EXPECT_EQ(page[1].steps, 20);
  EXPECT_EQ(page[1].metrics.size(), 2u);
  EXPECT_TRUE(more);
  page = *store_->GetMetrics(trial, MetricGroup::kValidation, 20, 2, 1000, &more);
  ASSERT_EQ(page.size(), 1u);
  EXPECT_EQ(page[0].steps, 30);
  EXPECT_FALSE(more);
  page = *store_->GetMetrics(trial, MetricGroup::kValidation, -1, 10, 3, &more);
  ASSERT_EQ(page.size(), 2u) << "the second report is begun below 3 values, the third is not";
  EXPECT_TRUE(more);

  // A seventh value, a new name at steps already held, is refused and nothing of the call is
  // stored; replacing a value is not a new one.
  const absl::Status full =
      store_->AddMetrics(trial, "a", MetricGroup::kValidation,
                         {{.steps = 10, .metrics = {{"acc", 0.9}, {"f1", 0.1}}}}, 6);
  EXPECT_TRUE(absl::IsResourceExhausted(full)) << full;
  EXPECT_THAT(std::string(full.message()), HasSubstr("would hold 7 metric values"));
  page = *store_->GetMetrics(trial, MetricGroup::kValidation, -1, 10, 1000, &more);
  ASSERT_EQ(page.size(), 3u);
  EXPECT_EQ(page[0].metrics,
            (std::vector<std::pair<std::string, double>>{{"acc", 0.5}, {"loss", 1.0}}));
  EXPECT_TRUE(store_
                  ->AddMetrics(trial, "a", MetricGroup::kValidation,
                               {{.steps = 10, .metrics = {{"acc", 0.7}}}}, 6)
                  .ok());
}

// The best finite validation value of each trial: NaN and infinities never count.
TEST_F(StoreTest, BestValidationIgnoresValuesThatAreNotFinite) {
  const auto trials = InsertWithTrials(*store_, Job("exp-1", TaskType::kExperiment, "gpu"), 3);
  auto report = [&](int i, double v, int64_t steps) {
    ASSERT_TRUE(store_
                    ->AddMetrics(trials[i].id, "a", MetricGroup::kValidation,
                                 {{.steps = steps, .metrics = {{"loss", v}}}}, 100)
                    .ok());
  };
  report(0, 0.5, 1);
  report(0, 0.2, 2);
  report(0, -HUGE_VAL, 3);
  report(1, std::nan(""), 1);
  report(1, 0.7, 2);
  report(2, std::nan(""), 1);
  ASSERT_TRUE(store_
                  ->AddMetrics(trials[2].id, "a", MetricGroup::kTraining,
                               {{.steps = 1, .metrics = {{"loss", 0.01}}}}, 100)
                  .ok());
  EXPECT_EQ(*store_->BestValidation("exp-1", "loss", true),
            (std::map<int64_t, double>{{trials[0].id, 0.2}, {trials[1].id, 0.7}}));
  EXPECT_EQ(*store_->BestValidation("exp-1", "loss", false),
            (std::map<int64_t, double>{{trials[0].id, 0.5}, {trials[1].id, 0.7}}));
  EXPECT_TRUE(store_->BestValidation("exp-1", "acc", true)->empty());
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
  // A write whose first send meets the dead connection goes out once more, and only once.
  ASSERT_TRUE(pg.Stop());
  ASSERT_TRUE(pg.Start());
  ASSERT_TRUE((*store)->InsertJob(Job("cmd-2", TaskType::kCommand, "cpu"), {}).ok());
  EXPECT_EQ((*store)->ListJobs({})->second, 2);
}

// A submission's first runs are stored with the job in the same transaction, or not at all.
TEST_F(StoreTest, InsertJobStoresFirstRunsInTheSameTransaction) {
  const TrialRecord trial{.id = 1, .hparams = "{}", .runs = 1};
  const AllocationRecord run{
      .id = "exp-1-trial-1-r1", .job_id = "exp-1", .trial_id = trial.id, .ns = "d", .pods = 2};
  ASSERT_TRUE(store_->InsertJob(Job("exp-1", TaskType::kExperiment, "gpu"), {trial}, {run}).ok());
  EXPECT_EQ(store_->GetTrial(trial.id)->runs, 1);
  EXPECT_EQ(store_->GetAllocation(run.id)->trial_id, trial.id);
  EXPECT_EQ(store_->GetAllocation(run.id)->pods, 2);

  // The run's allocation id is taken: the whole submission of exp-2 rolls back.
  AllocationRecord clash = run;
  clash.job_id = "exp-2";
  clash.trial_id = 2;
  absl::Status s = store_->InsertJob(Job("exp-2", TaskType::kExperiment, "gpu"),
                                     {{.id = 2, .hparams = "{}"}}, {clash});
  EXPECT_TRUE(absl::IsAlreadyExists(s)) << s;
  EXPECT_TRUE(absl::IsNotFound(store_->GetJob("exp-2").status()));
  EXPECT_TRUE(absl::IsNotFound(store_->GetTrial(2).status()));
}

// InsertJob of `ids` from one thread each, each with a trial and its first run; their results in
// order. A table lock holds the first commit until the others have queued behind it, so that they
// are committed together.
std::vector<absl::Status> InsertBehindALock(Store& store, const std::string& url,
                                            const std::vector<std::string>& ids) {
  pqxx::connection locker(url);
  pqxx::work hold(locker);
  hold.exec("LOCK TABLE jobs IN SHARE ROW EXCLUSIVE MODE");
  std::vector<absl::Status> results(ids.size());
  std::atomic<size_t> ready = 0;
  std::vector<std::thread> callers;
  for (size_t i = 0; i < ids.size(); ++i) {
    callers.emplace_back([&, i] {
      ++ready;
      const int64_t trial = static_cast<int64_t>(i) + 1;
      results[i] = store.InsertJob(
          Job(ids[i], TaskType::kExperiment, "cpu"), {{.id = trial, .hparams = "{}", .runs = 1}},
          {{.id = absl::StrCat(ids[i], "-", trial), .job_id = ids[i], .trial_id = trial}});
    });
  }
  EXPECT_TRUE(testing::WaitForALockWaiter(url)) << "no insert reached its commit";
  while (ready < ids.size()) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // The rest queue behind it.
  hold.commit();
  for (std::thread& t : callers) t.join();
  return results;
}

// Submissions made while a commit is under way are committed together (group commit): fewer
// transactions than jobs.
TEST_F(StoreTest, SubmissionsMadeAtOnceAreCommittedTogether) {
  std::vector<std::string> ids;
  for (int i = 0; i < 16; ++i) ids.push_back(absl::StrCat("cmd-", i));
  for (const absl::Status& s : InsertBehindALock(*store_, url_, ids)) EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(store_->ListJobs({})->second, 16);
  for (int64_t trial = 1; trial <= 16; ++trial) {
    EXPECT_EQ(store_->GetTrial(trial)->runs, 1);
    absl::StatusOr<AllocationRecord> run =
        store_->GetAllocation(absl::StrCat(ids[trial - 1], "-", trial));
    ASSERT_TRUE(run.ok()) << run.status();
    EXPECT_EQ(run->trial_id, trial);
  }
  pqxx::connection conn(url_);
  EXPECT_LT(
      pqxx::nontransaction(conn).exec1("SELECT count(DISTINCT xmin::TEXT) FROM jobs")[0].as<int>(),
      16);
}

// A submission that fails does not fail those committed with it: the batch behind the lock holds
// a duplicate, and the others are then stored one by one.
TEST_F(StoreTest, ASubmissionCommittedWithOthersFailsAlone) {
  std::vector<std::string> ids = {"cmd-dup", "cmd-dup"};
  for (int i = 0; i < 14; ++i) ids.push_back(absl::StrCat("cmd-", i));
  std::vector<absl::Status> results = InsertBehindALock(*store_, url_, ids);
  EXPECT_NE(results[0].ok(), results[1].ok()) << results[0] << " / " << results[1];
  EXPECT_TRUE(absl::IsAlreadyExists(results[0].ok() ? results[1] : results[0]));
  for (size_t i = 2; i < ids.size(); ++i) EXPECT_TRUE(results[i].ok()) << ids[i] << results[i];
  EXPECT_EQ(store_->ListJobs({})->second, 15);
}

// The connection string phalanx-master connects with: values quoted and escaped, connections
// that notice a dead peer within about a minute, statements cut after one; and the server it
// names takes it.
TEST_F(StoreTest, ConnectionStringBoundsDeadPeersAndStatements) {
  EXPECT_EQ(
      ConnectionString({.host = "db", .name = "phalanx", .password = "it's"}),
      "host='db' port=5432 dbname='phalanx' user='postgres' password='it\\'s' sslmode='prefer' "
      "connect_timeout=10 keepalives=1 keepalives_idle=30 keepalives_interval=10 "
      "keepalives_count=3 tcp_user_timeout=60000 application_name=phalanx-master "
      "options='-c statement_timeout=60s -c idle_in_transaction_session_timeout=60s "
      "-c tcp_keepalives_idle=30 -c tcp_keepalives_interval=10 -c tcp_keepalives_count=3'");
  std::smatch parts;
  ASSERT_TRUE(
      std::regex_match(url_, parts, std::regex("postgresql://([^@]+)@([^:]+):([0-9]+)/(.+)")))
      << url_;
  const DbConfig db{
      .host = parts[2], .port = std::stoi(parts[3]), .name = parts[4], .user = parts[1]};
  ASSERT_TRUE(Store::Open(ConnectionString(db)).ok());
  pqxx::connection conn(ConnectionString(db));
  pqxx::nontransaction tx(conn);
  EXPECT_EQ(tx.exec1("SHOW statement_timeout")[0].as<std::string>(), "1min");
  EXPECT_EQ(tx.exec1("SHOW idle_in_transaction_session_timeout")[0].as<std::string>(), "1min");
  EXPECT_EQ(tx.exec1("SHOW application_name")[0].as<std::string>(), "phalanx-master");
}

}  // namespace
}  // namespace phalanx::master
