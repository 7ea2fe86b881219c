// Trial metrics through the master's gRPC services (service_fixture.h): a trial reports with its
// allocation's token, users read them paged and see each trial's and the experiment's best
// validation value; bad reports are refused naming the field, and nothing of them is stored.
#include <cmath>
#include <string>

#include "phalanx/v1/metrics.pb.h"
#include "tests/master/testing/service_fixture.h"

namespace phalanx::master {
namespace {

using ::testing::HasSubstr;

class TrialMetricsTest : public ServiceTest {
 protected:
  // Reports {steps: {name: value}} of `group` for the allocation, with its own token.
  grpc::Status Report(const std::string& allocation, v1::MetricGroup group,
                      const std::map<int64_t, std::map<std::string, double>>& reports) {
    v1::ReportMetricsRequest req;
    req.set_allocation_id(allocation);
    req.set_group(group);
    for (const auto& [steps, metrics] : reports) {
      v1::MetricReport* r = req.add_reports();
      r->set_steps_completed(steps);
      for (const auto& [name, value] : metrics) (*r->mutable_metrics())[name] = value;
    }
    return allocations_->ReportMetrics(Ctx(AllocationToken(allocation)).get(), req,
                                       Ignored<v1::ReportMetricsResponse>());
  }

  v1::GetTrialMetricsResponse Read(int64_t trial, v1::MetricGroup group, int64_t after = -1,
                                   int limit = 0) {
    v1::GetTrialMetricsRequest req;
    req.set_trial_id(trial);
    req.set_group(group);
    req.set_after_steps(after);
    req.set_limit(limit);
    v1::GetTrialMetricsResponse resp;
    grpc::Status s = experiments_->GetTrialMetrics(Ctx().get(), req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return resp;
  }
};

constexpr char kTwoTrials[] = R"(
hyperparameters: {lr: {type: categorical, vals: [0.1, 0.2]}}
searcher: {name: grid, metric: loss, smaller_is_better: true}
resources: {slots_per_trial: 1}
)";

TEST_F(TrialMetricsTest, ReportedReadAndTheBestShown) {
  const v1::Experiment exp = Create(kTwoTrials);
  v1::GetExperimentResponse got = Get(exp.id());
  EXPECT_FALSE(got.experiment().has_best_validation_metric());
  const v1::Trial first = got.trials(0), second = got.trials(1);
  ASSERT_TRUE(Report(first.allocation_id(), v1::METRIC_GROUP_TRAINING,
                     {{100, {{"loss", 0.9}, {"lr", 0.1}}}, {200, {{"loss", 0.5}}}})
                  .ok());
  ASSERT_TRUE(
      Report(first.allocation_id(), v1::METRIC_GROUP_VALIDATION, {{200, {{"loss", 0.4}}}}).ok());
  ASSERT_TRUE(Report(second.allocation_id(), v1::METRIC_GROUP_VALIDATION,
                     {{200, {{"loss", std::nan("")}}}, {400, {{"loss", 0.3}}}})
                  .ok());

  v1::GetTrialMetricsResponse page = Read(first.id(), v1::METRIC_GROUP_TRAINING, -1, 1);
  ASSERT_EQ(page.reports_size(), 1);
  EXPECT_EQ(page.reports(0).steps_completed(), 100);
  EXPECT_EQ(page.reports(0).metrics().at("lr"), 0.1);
  EXPECT_TRUE(page.more());
  page = Read(first.id(), v1::METRIC_GROUP_TRAINING, 100);
  ASSERT_EQ(page.reports_size(), 1);
  EXPECT_EQ(page.reports(0).metrics().at("loss"), 0.5);
  EXPECT_FALSE(page.more());
  page = Read(second.id(), v1::METRIC_GROUP_VALIDATION);
  ASSERT_EQ(page.reports_size(), 2);
  EXPECT_TRUE(std::isnan(page.reports(0).metrics().at("loss")));

  got = Get(exp.id());
  EXPECT_EQ(got.experiment().best_validation_metric(), 0.3);
  EXPECT_EQ(got.trials(0).best_validation_metric(), 0.4);
  EXPECT_EQ(got.trials(1).best_validation_metric(), 0.3);
  v1::ListExperimentsResponse listed;
  ASSERT_TRUE(
      experiments_->ListExperiments(Ctx().get(), v1::ListExperimentsRequest(), &listed).ok());
  ASSERT_EQ(listed.experiments_size(), 1);
  EXPECT_EQ(listed.experiments(0).best_validation_metric(), 0.3);
}

TEST_F(TrialMetricsTest, BadReportsAreRefusedNamingTheField) {
  const v1::Experiment exp = Create(kTwoTrials);
  const std::string a = Get(exp.id()).trials(0).allocation_id();
  const std::pair<std::map<int64_t, std::map<std::string, double>>, std::string> cases[] = {
      {{{1, {{"lo ss", 1}}}},
       "reports[0].metrics: a name is 1-128 of [A-Za-z0-9_./-], got \"lo ss\""},
      {{{1, {{std::string("lo\0ss", 5), 1}}}}, "got \"lo\\x00ss\""},
      {{{1, {{std::string(129, 'a'), 1}}}}, "reports[0].metrics: a name is 1-128"},
      {{{-1, {{"loss", 1}}}}, "reports[0].steps_completed: must be at least 0, got -1"},
      {{{1, {}}}, "reports[0].metrics: 1 to 64 names, got 0"},
      {{}, "reports: none given"},
  };
  for (const auto& [reports, want] : cases) {
    const grpc::Status s = Report(a, v1::METRIC_GROUP_TRAINING, reports);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << want;
    EXPECT_THAT(s.error_message(), HasSubstr(want));
  }
  std::map<std::string, double> many;
  for (int i = 0; i < 65; ++i) many["m" + std::to_string(i)] = i;
  EXPECT_THAT(Report(a, v1::METRIC_GROUP_TRAINING, {{1, many}}).error_message(),
              HasSubstr("1 to 64 names, got 65"));
  std::map<int64_t, std::map<std::string, double>> too_many;
  for (int i = 0; i < 1001; ++i) too_many[i] = {{"loss", 1}};
  EXPECT_THAT(Report(a, v1::METRIC_GROUP_TRAINING, too_many).error_message(),
              HasSubstr("reports: at most 1000 per call, got 1001"));
  EXPECT_THAT(Report(a, v1::METRIC_GROUP_UNSPECIFIED, {{1, {{"loss", 1}}}}).error_message(),
              HasSubstr("group: required"));
  EXPECT_EQ(Read(Get(exp.id()).trials(0).id(), v1::METRIC_GROUP_TRAINING).reports_size(), 0);

  v1::GetTrialMetricsRequest req;
  req.set_trial_id(999);
  req.set_group(v1::METRIC_GROUP_TRAINING);
  v1::GetTrialMetricsResponse resp;
  EXPECT_EQ(experiments_->GetTrialMetrics(Ctx().get(), req, &resp).error_code(),
            grpc::StatusCode::NOT_FOUND);
  req.set_trial_id(Get(exp.id()).trials(0).id());
  req.set_limit(10001);
  EXPECT_THAT(experiments_->GetTrialMetrics(Ctx().get(), req, &resp).error_message(),
              HasSubstr("limit: 0 (1000) to 10000, got 10001"));
}

// A task has no trial to hold metrics.
TEST_F(TrialMetricsTest, TasksDoNotReportMetrics) {
  v1::LaunchTaskRequest req;
  req.set_type(v1::TASK_TYPE_COMMAND);
  req.add_entrypoint("sleep");
  v1::LaunchTaskResponse resp;
  ASSERT_TRUE(tasks_->LaunchTask(Ctx().get(), req, &resp).ok());
  const grpc::Status s =
      Report(resp.task().allocation_id(), v1::METRIC_GROUP_TRAINING, {{1, {{"loss", 1}}}});
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(s.error_message(), HasSubstr("runs a task; only trials report metrics"));
}

}  // namespace
}  // namespace phalanx::master
