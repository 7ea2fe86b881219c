// Secure defaults of the master: no built-in user with an empty password unless master.yaml says
// auth.allow_empty_password, a generated password logged once; the master's storage credentials
// reach pods from a Secret.
#include <vector>

#include "tests/master/testing/service_fixture.h"

namespace phalanx::master {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Logs in over gRPC to a master on `store`.
class BuiltinUsers {
 public:
  explicit BuiltinUsers(Store& store)
      : config_(*ParseMasterConfig("max_slots_per_pod: 1\n")), jobs_(config_, store, pods_) {
    server_ = *MasterServer::Start("127.0.0.1:0", std::nullopt, store, jobs_);
    auth_ = v1::AuthService::NewStub(grpc::CreateChannel(
        absl::StrCat("127.0.0.1:", server_->port()), grpc::InsecureChannelCredentials()));
  }
  grpc::Status Login(const std::string& user, const std::string& password) {
    grpc::ClientContext ctx;
    v1::LoginRequest req;
    req.set_username(user);
    req.set_password(password);
    v1::LoginResponse resp;
    return auth_->Login(&ctx, req, &resp);
  }

 private:
  MasterConfig config_;
  testing::FakePodClient pods_;
  JobManager jobs_;
  std::unique_ptr<MasterServer> server_;
  std::unique_ptr<v1::AuthService::Stub> auth_;
};

TEST(BuiltinUsersTest, NoEmptyPasswordByDefault) {
  const std::string url = testing::FreshDatabaseUrl();
  ASSERT_FALSE(url.empty());
  std::unique_ptr<Store> store = *Store::Open(url);
  std::vector<std::string> log;
  auto to_log = [&](const std::string& line) { log.push_back(line); };
  ASSERT_TRUE(EnsureBuiltinUsers(*store, "", /*allow_empty_password=*/false, to_log).ok());
  // One line per user, each with a password of its own.
  ASSERT_EQ(log.size(), 2u);
  EXPECT_THAT(log[0], HasSubstr("created user admin "));
  EXPECT_THAT(log[1], HasSubstr("created user determined "));
  std::vector<std::string> passwords;
  for (const std::string& line : log) {
    const std::string marker = "generated password ";
    const size_t at = line.find(marker);
    ASSERT_NE(at, std::string::npos);
    passwords.push_back(line.substr(at + marker.size(), 32));
    EXPECT_EQ(passwords.back().size(), 32u);
  }
  EXPECT_NE(passwords[0], passwords[1]);
  // A restart creates nobody and logs nothing.
  ASSERT_TRUE(EnsureBuiltinUsers(*store, "", false, to_log).ok());
  EXPECT_EQ(log.size(), 2u);

  BuiltinUsers master(*store);
  EXPECT_EQ(master.Login("admin", "").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(master.Login("determined", "").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  // determined's password does not open admin.
  EXPECT_EQ(master.Login("admin", passwords[1]).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(master.Login("admin", passwords[0]).ok());
  EXPECT_TRUE(master.Login("determined", passwords[1]).ok());
}

TEST(BuiltinUsersTest, EmptyPasswordOnlyWhenAllowed) {
  std::unique_ptr<Store> store = *Store::Open(testing::FreshDatabaseUrl());
  std::vector<std::string> log;
  ASSERT_TRUE(
      EnsureBuiltinUsers(*store, "", /*allow_empty_password=*/true, [&](const std::string& line) {
        log.push_back(line);
      }).ok());
  EXPECT_TRUE(log.empty());
  EXPECT_TRUE(BuiltinUsers(*store).Login("admin", "").ok());
  EXPECT_TRUE(ParseMasterConfig("max_slots_per_pod: 1\nauth: {allow_empty_password: true}\n")
                  ->allow_empty_password);
  EXPECT_FALSE(ParseMasterConfig("max_slots_per_pod: 1\n")->allow_empty_password);
}

// With checkpoint_storage.credentials_secret, pods read the master's storage credentials from
// that Secret, never as plain values.
class CredentialsSecretTest : public ServiceTest {
 protected:
  std::string MasterYaml() const override {
    return absl::StrCat(kMaster,
                        "checkpoint_storage: {type: s3, bucket: ckpts, "
                        "credentials_secret: phalanx-storage}\n");
  }
};

TEST_F(CredentialsSecretTest, PodsGetStorageCredentialsFromTheSecret) {
  Create("resources: {slots_per_trial: 4}\n");
  ASSERT_EQ(pods_.pods().size(), 1u);
  const nlohmann::json env = pods_.pods().begin()->second["spec"]["containers"][0]["env"];
  nlohmann::json storage, access;
  for (const nlohmann::json& e : env) {
    if (e["name"] == "PHALANX_CHECKPOINT_STORAGE")
      storage = nlohmann::json::parse(e["value"].get<std::string>());
    if (e["name"] == "PHALANX_CHECKPOINT_ACCESS_KEY") access = e;
  }
  EXPECT_EQ(storage, nlohmann::json::parse(R"({"type": "s3", "bucket": "ckpts"})"));
  EXPECT_EQ(access, nlohmann::json::parse(R"({"name": "PHALANX_CHECKPOINT_ACCESS_KEY",
      "valueFrom": {"secretKeyRef": {"name": "phalanx-storage", "key": "access_key",
                                     "optional": true}}})"));
}

TEST(CredentialsSecretConfigTest, InlineCredentialsAreRefusedWithASecret) {
  absl::StatusOr<MasterConfig> c = ParseMasterConfig(
      "max_slots_per_pod: 1\ncheckpoint_storage: {type: s3, bucket: b, secret_key: x, "
      "credentials_secret: phalanx-storage}\n");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(c.status().message(), HasSubstr("checkpoint_storage: secret_key: not allowed"));
  c = ParseMasterConfig(
      "max_slots_per_pod: 1\ncheckpoint_storage: {type: s3, bucket: b, "
      "credentials_secret: ../x}\n");
  EXPECT_THAT(c.status().message(), HasSubstr("checkpoint_storage.credentials_secret: must be"));
  c = ParseMasterConfig("max_slots_per_pod: 1\nquotas: {max_queued_pods_per_user: -1}\n");
  EXPECT_THAT(c.status().message(), HasSubstr("quotas.max_queued_pods_per_user: must be"));
  // A user's experiment config cannot name the master's Secret.
  EXPECT_EQ(InlineCredentials(nlohmann::json::parse(R"({"type": "s3", "access_key": "a"})")),
            "access_key");
}

}  // namespace
}  // namespace phalanx::master
