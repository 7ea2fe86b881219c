// max_restarts: a failed run of a trial starts again from its latest checkpoint while its
// experiment's restarts (counted over all its trials) last; then the trial is in ERROR. Tasks and
// trials that report their own failure are not restarted (service_fixture.h).
#include "tests/master/testing/service_fixture.h"

namespace phalanx::master {
namespace {

using ::testing::HasSubstr;

TEST_F(ServiceTest, AFailedRunStartsAgainFromItsCheckpoint) {
  const v1::Experiment exp = Create("resources: {slots_per_trial: 4}\n");
  const std::string a = Get(exp.id()).trials(0).allocation_id();
  Play(a, core::PodPhase::kRunning);
  ASSERT_TRUE(jobs_->ReportCheckpoint(a, "ckpt-1", 100).ok());
  Play(a, core::PodPhase::kFailed);
  ReapDeleted();
  const v1::Trial trial = Get(exp.id()).trials(0);
  EXPECT_EQ(trial.state(), v1::TRIAL_STATE_ACTIVE);
  EXPECT_EQ(trial.runs(), 2);
  EXPECT_EQ(trial.restarts(), 1);
  EXPECT_EQ(trial.error(), "");
  EXPECT_NE(trial.allocation_id(), a);
  ASSERT_EQ(pods_.pods().size(), 1u);
  const nlohmann::json pod = pods_.pods().begin()->second;
  EXPECT_EQ(pod["spec"]["schedulingGates"][0]["name"], "phalanx.io/admission");
  EXPECT_THAT(pod["spec"]["containers"][0]["env"].dump(), HasSubstr("ckpt-1"));
}

// Restarts are the experiment's: here one, taken by the first trial that fails; the second
// trial's failure then puts it in ERROR, and the first trial's new run goes on.
TEST_F(ServiceTest, MaxRestartsCountsOverEveryTrial) {
  const v1::Experiment exp = Create(R"(
hyperparameters: {lr: {type: categorical, vals: [0.1, 0.2]}}
searcher: {name: grid}
resources: {slots_per_trial: 4}
max_restarts: 1
)");
  v1::GetExperimentResponse got = Get(exp.id());
  const std::string first = got.trials(0).allocation_id();
  const std::string second = got.trials(1).allocation_id();
  Play(first, core::PodPhase::kFailed);
  ReapDeleted();
  Play(second, core::PodPhase::kFailed);
  ReapDeleted();
  got = Get(exp.id());
  EXPECT_EQ(got.trials(0).state(), v1::TRIAL_STATE_ACTIVE);
  EXPECT_EQ(got.trials(0).restarts(), 1);
  EXPECT_EQ(got.trials(1).state(), v1::TRIAL_STATE_ERROR);
  EXPECT_EQ(got.trials(1).restarts(), 0);
  EXPECT_EQ(got.trials(1).error(),
            second + ": a pod failed; the experiment's max_restarts (1) are used up");
  EXPECT_EQ(got.experiment().state(), v1::EXPERIMENT_STATE_ACTIVE);

  Play(got.trials(0).allocation_id(), core::PodPhase::kSucceeded);
  ReapDeleted();
  got = Get(exp.id());
  EXPECT_EQ(got.trials(0).state(), v1::TRIAL_STATE_COMPLETED);
  EXPECT_EQ(got.experiment().state(), v1::EXPERIMENT_STATE_ERROR);
}

TEST_F(ServiceTest, MaxRestartsZeroEndsTheTrialAtItsFirstFailure) {
  const v1::Experiment exp = Create("resources: {slots_per_trial: 4}\nmax_restarts: 0\n");
  const std::string a = Get(exp.id()).trials(0).allocation_id();
  Play(a, core::PodPhase::kFailed);
  ReapDeleted();
  const v1::GetExperimentResponse got = Get(exp.id());
  EXPECT_EQ(got.trials(0).state(), v1::TRIAL_STATE_ERROR);
  EXPECT_EQ(got.trials(0).error(), a + ": a pod failed");
  EXPECT_EQ(got.trials(0).runs(), 1);
  EXPECT_EQ(got.experiment().state(), v1::EXPERIMENT_STATE_ERROR);
  EXPECT_TRUE(pods_.pods().empty());
}

// A trial that reports its own failure decided it: it is not restarted.
TEST_F(ServiceTest, AReportedFailureIsNotRestarted) {
  const v1::Experiment exp = Create("resources: {slots_per_trial: 4}\n");
  const std::string a = Get(exp.id()).trials(0).allocation_id();
  Play(a, core::PodPhase::kRunning);
  ASSERT_TRUE(jobs_->ReportCompletion(a, /*success=*/false, "loss is NaN").ok());
  Play(a, core::PodPhase::kFailed);
  ReapDeleted();
  const v1::Trial trial = Get(exp.id()).trials(0);
  EXPECT_EQ(trial.state(), v1::TRIAL_STATE_ERROR);
  EXPECT_EQ(trial.error(), "loss is NaN");
  EXPECT_EQ(trial.restarts(), 0);
  EXPECT_EQ(trial.runs(), 1);
}

// A command may not be safe to run twice: its failure is final.
TEST_F(ServiceTest, AFailedTaskIsNotRestarted) {
  absl::StatusOr<JobView> cmd = jobs_->LaunchTask(TaskType::kCommand, "resources: {slots: 1}\n",
                                                  {"false"}, User{.username = "admin"});
  ASSERT_TRUE(cmd.ok()) << cmd.status();
  const std::string a = cmd->trials.at(0).allocation->id;
  Play(a, core::PodPhase::kFailed);
  ReapDeleted();
  absl::StatusOr<JobView> got = jobs_->GetJob(cmd->job.job_id);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->trials.at(0).trial.state, RunState::kError);
  EXPECT_EQ(got->trials.at(0).trial.runs, 1);
  EXPECT_EQ(got->trials.at(0).trial.error, a + ": a pod failed");
}

}  // namespace
}  // namespace phalanx::master
