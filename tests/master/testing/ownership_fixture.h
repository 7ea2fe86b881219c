// OwnershipTest: ServiceTest with two users, alice and bob, each logged in, and calls made as one
// of them (tests/master/api/ownership_test.cc, login_quota_test.cc).
#ifndef PHALANX_TESTS_MASTER_TESTING_OWNERSHIP_FIXTURE_H_
#define PHALANX_TESTS_MASTER_TESTING_OWNERSHIP_FIXTURE_H_

#include <string>

#include "tests/master/testing/service_fixture.h"

namespace phalanx::master {

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

}  // namespace phalanx::master

#endif  // PHALANX_TESTS_MASTER_TESTING_OWNERSHIP_FIXTURE_H_
