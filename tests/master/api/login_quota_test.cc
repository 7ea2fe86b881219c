// Logins and quotas through the master's gRPC services on a real Postgres: logins take the same
// time whether the user exists, are rate limited (per user and per peer), and expired tokens are
// deleted; per-user quotas refuse submissions naming the quota, and keep what was accepted.
#include <algorithm>
#include <chrono>
#include <future>
#include <string>
#include <vector>

#include "master/store/auth.h"
#include "pqxx/pqxx"
#include "tests/master/testing/ownership_fixture.h"

namespace phalanx::master {
namespace {

using ::testing::HasSubstr;

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
