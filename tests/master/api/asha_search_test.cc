// adaptive_asha through the master's services on a fake cluster (service_fixture.h): trials report
// validation metrics with their allocation's token; a trial that is not promotable at its rung
// has its run preempted and its gang released, a later promotion resumes it in a new run, and
// the search ends its waiting trials once nothing can be promoted.
#include <map>
#include <string>

#include "phalanx/v1/metrics.pb.h"
#include "tests/master/testing/service_fixture.h"

namespace phalanx::master {
namespace {

// One bracket (aggressive) of 2 rungs, 2 and 4 batches; divisor 2; two runs at once.
constexpr char kAsha[] = R"(
hyperparameters: {lr: {type: double, minval: 0.01, maxval: 0.1}}
searcher:
  name: adaptive_asha
  metric: loss
  max_trials: 4
  max_length: {batches: 4}
  divisor: 2
  max_rungs: 2
  mode: aggressive
  max_concurrent_trials: 2
resources: {slots_per_trial: 1}
)";

class AshaSearchTest : public ServiceTest {
 protected:
  void SetUp() override {
    ServiceTest::SetUp();
    exp_ = Create(kAsha).id();
  }
  v1::Trial Trial(int i) { return Get(exp_).trials(i); }

  // Trial i's current run reports validation loss `loss` at `steps`, with its own token.
  void Validate(int i, int64_t steps, double loss) {
    ValidateAs(Trial(i).allocation_id(), steps, loss);
  }
  void ValidateAs(const std::string& a, int64_t steps, double loss) {
    v1::ReportMetricsRequest req;
    req.set_allocation_id(a);
    req.set_group(v1::METRIC_GROUP_VALIDATION);
    v1::MetricReport* r = req.add_reports();
    r->set_steps_completed(steps);
    (*r->mutable_metrics())["loss"] = loss;
    const grpc::Status s = allocations_->ReportMetrics(Ctx(AllocationToken(a)).get(), req,
                                                       Ignored<v1::ReportMetricsResponse>());
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  v1::GetSearcherOperationResponse Op(const std::string& a) {
    v1::GetSearcherOperationRequest req;
    req.set_allocation_id(a);
    v1::GetSearcherOperationResponse resp;
    const grpc::Status s =
        allocations_->GetSearcherOperation(Ctx(AllocationToken(a)).get(), req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return resp;
  }
  // The run of trial i, preempted by the searcher, checkpoints, acknowledges and its pods go.
  void EndPreempted(int i) {
    const std::string a = Trial(i).allocation_id();
    ASSERT_EQ(Trial(i).allocation_state(), v1::ALLOCATION_STATE_PREEMPTING) << a;
    EXPECT_TRUE(Op(a).done());
    ASSERT_TRUE(jobs_->ReportCheckpoint(a, "ckpt-" + a, 2).ok());
    ASSERT_TRUE(jobs_->AckPreemption(a).ok());
    ReapDeleted();
  }
  void Succeed(int i) {
    const std::string a = Trial(i).allocation_id();
    Play(a, core::PodPhase::kSucceeded);
    ReapDeleted();
  }

  int64_t exp_ = 0;
};

TEST_F(AshaSearchTest, PromotesByAshasRuleAndReleasesWaitingGangs) {
  // Trials 1 and 2 run (max_concurrent_trials 2); each trains to rung 1 (2 batches).
  ASSERT_FALSE(Trial(0).allocation_id().empty());
  ASSERT_FALSE(Trial(1).allocation_id().empty());
  EXPECT_TRUE(Trial(2).allocation_id().empty());
  Play(Trial(0).allocation_id(), core::PodPhase::kRunning);
  Play(Trial(1).allocation_id(), core::PodPhase::kRunning);
  EXPECT_EQ(Op(Trial(0).allocation_id()).length(), 2);
  EXPECT_EQ(Trial(0).searcher_progress(), "rung 1 of 2 (2): training");
  const std::string first_run = Trial(0).allocation_id();

  // Trial 1 is alone at rung 1: floor(1/2) = 0 promotable, so it waits and its gang is released;
  // trial 3 takes the slot.
  Validate(0, 2, 0.2);
  EXPECT_EQ(Trial(0).searcher_progress(), "rung 1 of 2 (2): waiting for a promotion");
  EndPreempted(0);
  EXPECT_TRUE(Trial(0).allocation_id().empty());
  EXPECT_EQ(Trial(0).state(), v1::TRIAL_STATE_ACTIVE);
  ASSERT_FALSE(Trial(2).allocation_id().empty());
  Play(Trial(2).allocation_id(), core::PodPhase::kRunning);

  // Trial 2 ranks behind trial 1 (n = 2, one promotable): it waits. Its process stops as asked
  // and reports success: that ends the run as an acknowledgement would, and does not complete
  // the trial. Then trial 1 is promoted (late, as ASHA allows) and resumes in a new run that
  // trains to rung 2, from its checkpoint; promotions go before new trials.
  Validate(1, 3, 0.3);
  const std::string second = Trial(1).allocation_id();
  EXPECT_EQ(Trial(1).allocation_state(), v1::ALLOCATION_STATE_PREEMPTING);
  ASSERT_TRUE(jobs_->ReportCompletion(second, true, "").ok());
  ReapDeleted();
  EXPECT_EQ(Trial(1).state(), v1::TRIAL_STATE_ACTIVE);
  EXPECT_TRUE(Trial(1).allocation_id().empty());
  const v1::Trial first = Trial(0);
  ASSERT_FALSE(first.allocation_id().empty());
  EXPECT_EQ(first.runs(), 2);
  EXPECT_EQ(first.latest_checkpoint(), "ckpt-" + first_run);
  EXPECT_EQ(first.searcher_progress(), "rung 2 of 2 (4): training");
  EXPECT_EQ(Op(first.allocation_id()).length(), 4);
  EXPECT_FALSE(Op(first.allocation_id()).done());
  // Its ended run's token still reports metrics, but they are no result of its new run.
  ValidateAs(first_run, 4, 0.01);
  EXPECT_EQ(Trial(0).searcher_progress(), "rung 2 of 2 (4): training");
  EXPECT_TRUE(Trial(3).allocation_id().empty());
  Play(first.allocation_id(), core::PodPhase::kRunning);

  // Trial 3 is third of 3 (one promotable): it waits; trial 4 takes its slot.
  Validate(2, 2, 0.9);
  EndPreempted(2);
  ASSERT_FALSE(Trial(3).allocation_id().empty());
  Play(Trial(3).allocation_id(), core::PodPhase::kRunning);

  // Trial 4 is best of 4 (two promotable): it continues in its own run, to rung 2.
  const std::string fourth = Trial(3).allocation_id();
  Validate(3, 2, 0.1);
  EXPECT_EQ(Trial(3).allocation_state(), v1::ALLOCATION_STATE_RUNNING);
  EXPECT_EQ(Op(fourth).length(), 4);
  EXPECT_FALSE(Op(fourth).done());

  // Both reach the last rung and finish. Then nothing is promotable (trials 1 and 4 are the top
  // two of rung 1): the search is over and the waiting trials 2 and 3 end.
  Validate(0, 4, 0.15);
  EXPECT_TRUE(Op(Trial(0).allocation_id()).done());
  ASSERT_TRUE(jobs_->ReportCompletion(Trial(0).allocation_id(), true, "").ok());
  Succeed(0);
  EXPECT_EQ(Trial(1).state(), v1::TRIAL_STATE_ACTIVE);
  Validate(3, 4, 0.05);
  Succeed(3);
  const v1::GetExperimentResponse done = Get(exp_);
  EXPECT_EQ(done.experiment().state(), v1::EXPERIMENT_STATE_COMPLETED);
  const std::string want[] = {"rung 2 of 2 (4): done", "rung 1 of 2 (2): not promoted",
                              "rung 1 of 2 (2): not promoted", "rung 2 of 2 (4): done"};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(done.trials(i).state(), v1::TRIAL_STATE_COMPLETED) << i;
    EXPECT_EQ(done.trials(i).searcher_progress(), want[i]) << i;
  }
  EXPECT_EQ(done.experiment().best_validation_metric(), 0.05);
  EXPECT_EQ(pods_.pods().size(), 0u) << "every gang was released";
}

TEST_F(AshaSearchTest, APreemptedRunThatReportsSuccessResumes) {
  // The extender preempts trial 1's run before its first rung; its process sees the operations
  // end and reports success, as a script that follows them does. That acknowledges the
  // preemption: the trial is not complete, and a new run resumes it.
  const std::string run = Trial(0).allocation_id();
  Play(run, core::PodPhase::kRunning);
  Play(run, core::PodPhase::kRunning, /*preempt=*/true);
  ASSERT_EQ(Trial(0).allocation_state(), v1::ALLOCATION_STATE_PREEMPTING);
  EXPECT_TRUE(Op(run).done());
  ASSERT_TRUE(jobs_->ReportCompletion(run, true, "").ok());
  ReapDeleted();
  EXPECT_EQ(Trial(0).state(), v1::TRIAL_STATE_ACTIVE);
  EXPECT_EQ(Trial(0).runs(), 2);
  EXPECT_EQ(Trial(0).searcher_progress(), "rung 1 of 2 (2): training");
}

TEST_F(AshaSearchTest, OtherSearchersHaveNoOperations) {
  const v1::Experiment exp = Create("searcher: {name: single, metric: loss, max_length: 5}\n");
  const std::string a = Get(exp.id()).trials(0).allocation_id();
  v1::GetSearcherOperationRequest req;
  req.set_allocation_id(a);
  const grpc::Status s = allocations_->GetSearcherOperation(
      Ctx(AllocationToken(a)).get(), req, Ignored<v1::GetSearcherOperationResponse>());
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(Get(exp.id()).trials(0).searcher_progress(), "");
  // Another run's token reads nothing of this one.
  const std::string other = Trial(0).allocation_id();
  EXPECT_EQ(allocations_
                ->GetSearcherOperation(Ctx(AllocationToken(other)).get(), req,
                                       Ignored<v1::GetSearcherOperationResponse>())
                .error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
}

}  // namespace
}  // namespace phalanx::master
