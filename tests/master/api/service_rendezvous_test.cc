// The headless Service of a run of several pods (rendezvous.h) through the master's services
// (service_fixture.h): created before the pods, deleted with them, a refusal undoing the run, and
// a restarted master leaving neither an orphan nor a duplicate.
#include <set>
#include <string>

#include "kube/status.h"
#include "master/pods/rendezvous.h"
#include "tests/master/testing/service_fixture.h"

namespace phalanx::master {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// The names of the fake cluster's Services.
std::set<std::string> ServiceNames(testing::FakePodClient& pods) {
  std::set<std::string> out;
  for (const auto& [key, service] : pods.services()) out.insert(service["metadata"]["name"]);
  return out;
}

TEST_F(ServiceTest, ARunOfSeveralPodsHasItsServiceUntilItEnds) {
  const v1::Experiment exp = Create("resources: {slots_per_trial: 8}\n");
  const std::string alloc = Get(exp.id()).trials(0).allocation_id();
  ASSERT_EQ(pods_.pods().size(), 2u);
  const auto services = pods_.services();
  ASSERT_EQ(services.size(), 1u);
  EXPECT_EQ(services.begin()->first, "gpu-ns/" + alloc);
  EXPECT_EQ(services.begin()->second["spec"]["selector"][std::string(kube::kGangLabel)], alloc);

  Play(alloc, core::PodPhase::kSucceeded);
  EXPECT_THAT(ServiceNames(pods_), IsEmpty());
  EXPECT_TRUE(pods_.pods().empty());
}

TEST_F(ServiceTest, ARunOfOnePodHasNoService) {
  Create("resources: {slots_per_trial: 4}\n");
  ASSERT_EQ(pods_.pods().size(), 1u);
  EXPECT_EQ(pods_.service_creates(), 0);
}

// Its peers could not find each other: no pod is created, and the trial starts a new run once
// the API server takes Services again. The old run's Service deletion is retried too.
TEST_F(ServiceTest, ARunWhoseServiceIsRefusedStartsAgain) {
  std::vector<std::string> events;
  jobs_->SetEventLog([&](const std::string& line) { events.push_back(line); });
  pods_.FailServices(absl::UnavailableError("API server down"));
  grpc::Status refused;
  Create("resources: {slots_per_trial: 8}\n", &refused);
  EXPECT_THAT(refused.error_message(),
              HasSubstr("exp-1 was submitted but creating pods of exp-1-trial-1-r1: its Service: "
                        "API server down"));
  EXPECT_TRUE(pods_.pods().empty());
  EXPECT_THAT(events, Contains(HasSubstr("its Service: API server down")));

  pods_.FailServices(absl::OkStatus());
  jobs_->Tick(absl::Now());
  const std::string alloc = Get(1).trials(0).allocation_id();
  EXPECT_THAT(alloc, ::testing::EndsWith("-r2"));
  EXPECT_THAT(ServiceNames(pods_), ElementsAre(alloc));
  EXPECT_EQ(pods_.pods().size(), 2u);
}

// The master may not create Services (its Role lacks them): the API server's 403 is for good, so
// the trial is in ERROR with the refusal as why, instead of starting run after run.
TEST_F(ServiceTest, AServiceRefusedForGoodPutsTheTrialInError) {
  pods_.FailServices(
      kube::HttpError(403, "Forbidden", "services is forbidden: User cannot create"));
  grpc::Status refused;
  Create("resources: {slots_per_trial: 8}\n", &refused);
  EXPECT_THAT(refused.error_message(), HasSubstr("refused for good, the trial is in ERROR"));
  jobs_->Tick(absl::Now());
  const v1::Trial trial = Get(1).trials(0);
  EXPECT_EQ(trial.state(), v1::TRIAL_STATE_ERROR);
  EXPECT_EQ(trial.runs(), 1);
  EXPECT_THAT(trial.error(), HasSubstr("its Service: services is forbidden"));
  EXPECT_TRUE(pods_.pods().empty());
}

TEST_F(ServiceTest, AFailedServiceDeletionIsRetriedAtTheNextTick) {
  const v1::Experiment exp = Create("resources: {slots_per_trial: 8}\n");
  std::vector<std::string> events;
  jobs_->SetEventLog([&](const std::string& line) { events.push_back(line); });
  pods_.FailServices(absl::UnavailableError("API server down"));
  ASSERT_TRUE(jobs_->Kill(exp.job_id(), admin_).ok());
  EXPECT_TRUE(pods_.pods().empty());
  EXPECT_EQ(pods_.services().size(), 1u);
  EXPECT_THAT(events, Contains(HasSubstr("deleting Service gpu-ns/")));
  pods_.FailServices(absl::OkStatus());
  jobs_->Tick(absl::Now());
  EXPECT_TRUE(pods_.services().empty());
}

// A new master deletes the Services of runs it does not know and creates the missing one of a
// run it does, once: a second restart creates nothing.
TEST_F(ServiceTest, RecoveryDeletesOrphanServicesAndCreatesMissingOnes) {
  const v1::Experiment exp = Create("resources: {slots_per_trial: 8}\n");
  const std::string alloc = Get(exp.id()).trials(0).allocation_id();
  ASSERT_TRUE(pods_.CreateService(RunService("gpu-ns", "exp-999-trial-1-r1", "exp-999")).ok());
  // The run's name, in a namespace the run is not in.
  ASSERT_TRUE(pods_.CreateService(RunService("cpu-ns", alloc, "exp-1")).ok());
  ASSERT_TRUE(pods_.DeleteService("gpu-ns", alloc).ok());
  const int creates = pods_.service_creates();

  server_.reset();
  jobs_ = std::make_unique<JobManager>(config_, *store_, pods_);
  ASSERT_TRUE(jobs_->Recover().ok());
  EXPECT_THAT(pods_.services(), ElementsAre(::testing::Key("gpu-ns/" + alloc)));
  EXPECT_EQ(pods_.service_creates(), creates + 1);

  jobs_ = std::make_unique<JobManager>(config_, *store_, pods_);
  ASSERT_TRUE(jobs_->Recover().ok());
  EXPECT_THAT(ServiceNames(pods_), ElementsAre(alloc));
  EXPECT_EQ(pods_.service_creates(), creates + 1);
}

}  // namespace
}  // namespace phalanx::master
