// ServiceTest: the phalanx.v1 services over a real gRPC channel, on a real Postgres (fixture
// `postgres`), with a fake cluster (FakePodClient) whose pod events the tests play into the
// JobManager.
#ifndef PHALANX_TESTS_MASTER_TESTING_SERVICE_FIXTURE_H_
#define PHALANX_TESTS_MASTER_TESTING_SERVICE_FIXTURE_H_

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "kube/decode.h"
#include "master/api/server.h"
#include "master/api/services.h"
#include "master/jobs/job_manager.h"
#include "master/store/store.h"
#include "tests/master/testing/fake_pod_client.h"
#include "tests/master/testing/pg_fixture.h"

namespace phalanx::master {

constexpr char kMaster[] = R"(
max_slots_per_pod: 4
preemption_timeout: 30s
resource_pools:
  - {pool_name: gpu, kubernetes_namespace: gpu-ns}
  - {pool_name: cpu, kubernetes_namespace: cpu-ns}
default_aux_resource_pool: cpu
)";

// Reads the queue from another thread, once, while a pod call is in progress (from inside the
// fake pod client): a read that has to wait for the manager's lock waits 10 s and is noted.
class QueueReader {
 public:
  explicit QueueReader(JobManager& jobs) : jobs_(jobs) {}
  // The first call starts the read and waits for it; true when it waited for the lock. Later
  // calls, also from other threads at the same time, return false at once.
  bool ReadOnce() {
    if (started_.exchange(true)) return false;
    read_ = std::async(std::launch::async, [this] { return jobs_.Queue("")->size(); });
    waited_ = read_.wait_for(std::chrono::seconds(10)) != std::future_status::ready;
    return waited_;
  }
  bool waited_for_the_lock() const { return waited_; }
  // The queue's length as read; 0 when no read was made (a failure is recorded).
  size_t size() {
    EXPECT_TRUE(read_.valid()) << "the queue was never read";
    return read_.valid() ? read_.get() : 0;
  }

 private:
  JobManager& jobs_;
  std::atomic<bool> started_ = false;
  std::future<size_t> read_;
  bool waited_ = false;
};

class ServiceTest : public ::testing::Test {
 protected:
  using FakePodClient = testing::FakePodClient;

  const User admin_{.username = "admin"};  // Who the tests' direct JobManager calls act for.

  void SetUp() override {
    url_ = testing::FreshDatabaseUrl();
    ASSERT_FALSE(url_.empty());
    store_ = *Store::Open(url_);
    ASSERT_TRUE(EnsureBuiltinUsers(*store_, "pw").ok());
    absl::StatusOr<MasterConfig> config = ParseMasterConfig(MasterYaml());
    ASSERT_TRUE(config.ok()) << config.status();
    config_ = *std::move(config);
    jobs_ = std::make_unique<JobManager>(config_, *store_, pods_);
    absl::StatusOr<std::unique_ptr<MasterServer>> server =
        MasterServer::Start("127.0.0.1:0", std::nullopt, *store_, *jobs_);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    channel_ = grpc::CreateChannel(absl::StrCat("127.0.0.1:", server_->port()),
                                   grpc::InsecureChannelCredentials());
    auth_ = v1::AuthService::NewStub(channel_);
    experiments_ = v1::ExperimentService::NewStub(channel_);
    tasks_ = v1::TaskService::NewStub(channel_);
    queue_ = v1::JobService::NewStub(channel_);
    allocations_ = v1::AllocationService::NewStub(channel_);
    token_ = Login("admin", "pw");
  }

  // The master.yaml of the test's master.
  virtual std::string MasterYaml() const { return kMaster; }

  std::string Login(const std::string& user, const std::string& password) {
    grpc::ClientContext ctx;
    v1::LoginRequest req;
    req.set_username(user);
    req.set_password(password);
    v1::LoginResponse resp;
    grpc::Status s = auth_->Login(&ctx, req, &resp);
    return s.ok() ? resp.token() : "";
  }

  // A client context carrying `token` (the admin's by default).
  std::unique_ptr<grpc::ClientContext> Ctx(const std::string& token = "") {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->AddMetadata("authorization", "Bearer " + (token.empty() ? token_ : token));
    return ctx;
  }

  // A response the test ignores (gRPC needs somewhere to put it).
  template <typename T>
  T* Ignored() {
    static T response;
    response.Clear();
    return &response;
  }

  v1::Experiment Create(const std::string& yaml, grpc::Status* status = nullptr) {
    v1::CreateExperimentRequest req;
    req.set_config(yaml);
    req.set_activate(true);
    v1::CreateExperimentResponse resp;
    grpc::Status s = experiments_->CreateExperiment(Ctx().get(), req, &resp);
    if (status != nullptr) *status = s;
    EXPECT_TRUE(status != nullptr || s.ok()) << s.error_message();
    return resp.experiment();
  }

  v1::GetExperimentResponse Get(int64_t id) {
    v1::GetExperimentRequest req;
    req.set_id(id);
    v1::GetExperimentResponse resp;
    grpc::Status s = experiments_->GetExperiment(Ctx().get(), req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return resp;
  }

  // Plays every stored pod of `allocation` in `phase` (bound unless pending), as the watcher would.
  void Play(const std::string& allocation, core::PodPhase phase, bool preempt = false) {
    for (const auto& [key, pod] : pods_.pods()) {
      if (pod["metadata"]["labels"][std::string(kube::kGangLabel)] != allocation) continue;
      PodState s = FakePodClient::StateOf(pod, phase, phase != core::PodPhase::kPending);
      s.preempt_requested = preempt;
      jobs_->OnPod(s);
    }
  }

  // The PHALANX_ALLOCATION_TOKEN its pods got.
  std::string AllocationToken(const std::string& allocation) {
    for (const auto& [key, pod] : pods_.pods()) {
      if (pod["metadata"]["labels"][std::string(kube::kGangLabel)] != allocation) continue;
      for (const nlohmann::json& env : pod["spec"]["containers"][0]["env"]) {
        if (env["name"] == "PHALANX_ALLOCATION_TOKEN") return env["value"];
      }
    }
    return "";
  }

  // The cluster finishes deleting what the master deleted.
  void ReapDeleted() {
    for (const std::string& name : pods_.deleted()) {
      if (reaped_.insert(name).second) jobs_->OnPodDeleted(NamespaceOf(name), name);
    }
  }
  std::string NamespaceOf(const std::string& name) {
    return name.rfind("tb-", 0) == 0 ? "cpu-ns" : "gpu-ns";
  }

  std::vector<v1::Job> Jobs() {
    v1::GetJobsRequest req;
    v1::GetJobsResponse resp;
    grpc::Status s = queue_->GetJobs(Ctx().get(), req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return {resp.jobs().begin(), resp.jobs().end()};
  }

  std::string url_;
  std::unique_ptr<Store> store_;
  MasterConfig config_;
  FakePodClient pods_;
  std::unique_ptr<JobManager> jobs_;
  std::unique_ptr<MasterServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::AuthService::Stub> auth_;
  std::unique_ptr<v1::ExperimentService::Stub> experiments_;
  std::unique_ptr<v1::TaskService::Stub> tasks_;
  std::unique_ptr<v1::JobService::Stub> queue_;
  std::unique_ptr<v1::AllocationService::Stub> allocations_;
  std::string token_;
  std::set<std::string> reaped_;
};

}  // namespace phalanx::master

#endif  // PHALANX_TESTS_MASTER_TESTING_SERVICE_FIXTURE_H_
