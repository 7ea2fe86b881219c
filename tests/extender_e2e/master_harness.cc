// The master e2e fixture (see master_harness.h).
#include "tests/extender_e2e/master_harness.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "kube/json.h"
#include "simdjson.h"
#include "tests/extender_e2e/process.h"
#include "tests/master/testing/pg_fixture.h"

namespace phalanx::e2e {
namespace {

// master.yaml's db section from "postgresql://user@host:port/name".
std::string DbYaml(const std::string& url) {
  const size_t at = url.find('@'), colon = url.rfind(':'), slash = url.rfind('/');
  return absl::StrCat("db: {user: ", url.substr(url.find("//") + 2, at - url.find("//") - 2),
                      ", host: ", url.substr(at + 1, colon - at - 1),
                      ", port: ", url.substr(colon + 1, slash - colon - 1),
                      ", name: ", url.substr(slash + 1), "}\n");
}

}  // namespace

void MasterE2eTest::SetUp() {
  ExtenderE2eTest::SetUp();
  if (HasFatalFailure()) return;
  setenv("PHALANX_TEST_PG_DIR", PHALANX_TEST_PG_DIR_OF_RUN, 0);
  db_url_ = master::testing::FreshDatabaseUrl();
  ASSERT_FALSE(db_url_.empty());
  // The chart's classes (deploy/helm/phalanx/templates/priority-classes.yaml).
  EnsurePriorityClass("phalanx-high-priority", 100, false);
  EnsurePriorityClass("phalanx-medium-priority", 50, false);
  EnsurePriorityClass("phalanx-low-priority", 1, false);
  setenv("KUBECONFIG", kubeconfig().c_str(), 1);
  master_log_ = absl::StrCat(cluster_dir(), "/logs/master-", ns_, ".log");
}

void MasterE2eTest::TearDown() {
  StopMaster(SIGTERM);
  while (!replicas_.empty()) StopReplica(replicas_.back(), SIGTERM);
  if (HasFailure()) {
    std::printf("--- %s (last 40 lines)\n%s\n", master_log_.c_str(), Tail(master_log_, 40).c_str());
  }
  ExtenderE2eTest::TearDown();
}

void MasterE2eTest::StartMaster(int max_slots_per_pod, const std::string& more_yaml) {
  ASSERT_LT(master_, 0) << "master already running";
  config_path_ = absl::StrCat(cluster_dir(), "/master-", ns_, ".yaml");
  const std::string& config_path = config_path_;
  if (master_address_.empty()) {
    master_address_ = absl::StrCat("127.0.0.1:", FreePort());
    // The pool's pods tolerate the test pool's taint and select its nodes, as an admin's
    // pool-level task_container_defaults would.
    const std::string pod_spec = absl::StrCat(
        "{spec: {nodeSelector: {", kPoolKey, ": ", ns_, "}, tolerations: [{key: ", kPoolKey,
        ", operator: Equal, value: ", ns_, ", effect: NoSchedule}]}}");
    std::ofstream(config_path) << DbYaml(db_url_) << "max_slots_per_pod: " << max_slots_per_pod
                               << "\npreemption_timeout: 5m\nauth: {default_password: e2e}\n"
                               << "resource_pools:\n  - pool_name: gpu\n    kubernetes_namespace: "
                               << ns_
                               << "\n    task_container_defaults: {gpu_pod_spec: " << pod_spec
                               << ", cpu_pod_spec: " << pod_spec
                               << "}\n"
                               // The pool relaxes the pod-spec policy for the hostPort test.
                               << "    pod_spec_policy: {allow_host_ports: true}\n"
                               << more_yaml;
  }
  master_ = SpawnLogged({PHALANX_MASTER_BINARY, "--config", config_path, "--listen",
                         master_address_, "--metrics-listen", "127.0.0.1:0"},
                        master_log_);
  ASSERT_GT(master_, 0);
  channel_ = grpc::CreateChannel(master_address_, grpc::InsecureChannelCredentials());
  experiments_ = v1::ExperimentService::NewStub(channel_);
  tasks_ = v1::TaskService::NewStub(channel_);
  jobs_ = v1::JobService::NewStub(channel_);
  allocations_ = v1::AllocationService::NewStub(channel_);
  for (absl::Time deadline = absl::Now() + absl::Seconds(60); absl::Now() < deadline;) {
    token_ = Login(channel_);
    if (!token_.empty()) return;
    int status = 0;
    if (waitpid(master_, &status, WNOHANG) == master_) {
      master_ = -1;
      FAIL() << "phalanx-master exited (status " << status << "):\n" << Tail(master_log_, 20);
    }
    absl::SleepFor(absl::Milliseconds(200));
  }
  FAIL() << "phalanx-master accepted no login within 60 s:\n" << Tail(master_log_, 20);
}

pid_t MasterE2eTest::SpawnReplica(const std::string& listen, const std::string& metrics_listen,
                                  const std::string& log, const std::vector<std::string>& env) {
  EXPECT_FALSE(config_path_.empty()) << "StartMaster first";
  std::vector<std::string> args = {"/usr/bin/env"};
  args.insert(args.end(), env.begin(), env.end());
  args.insert(args.end(), {PHALANX_MASTER_BINARY, "--config", config_path_, "--listen", listen,
                           "--metrics-listen", metrics_listen});
  const pid_t pid = SpawnLogged(args, log);
  EXPECT_GT(pid, 0);
  if (pid > 0) replicas_.push_back(pid);
  return pid;
}

void MasterE2eTest::StopReplica(pid_t pid, int signal) {
  std::erase(replicas_, pid);
  const std::string stopped = StopProcess(pid, signal);
  EXPECT_EQ(stopped, "") << "phalanx-master replica " << pid << " " << stopped;
}

void MasterE2eTest::StopMaster(int signal) {
  if (master_ <= 0) return;
  const std::string stopped = StopProcess(master_, signal);
  EXPECT_EQ(stopped, "") << "phalanx-master " << stopped << "; its log:\n" << Tail(master_log_, 20);
  master_ = -1;
}

std::string MasterE2eTest::Login(const std::shared_ptr<grpc::Channel>& channel) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  v1::LoginRequest req;
  req.set_username("admin");
  req.set_password("e2e");
  v1::LoginResponse resp;
  return v1::AuthService::NewStub(channel)->Login(&ctx, req, &resp).ok() ? resp.token() : "";
}

int64_t MasterE2eTest::SubmitUntilAcknowledged(const std::shared_ptr<grpc::Channel>& channel,
                                               std::string& token, const std::string& name,
                                               int& retries) {
  auto stub = v1::ExperimentService::NewStub(channel);
  for (absl::Time deadline = absl::Now() + absl::Seconds(120); absl::Now() < deadline;) {
    if (token.empty()) token = Login(channel);
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", "Bearer " + token);
    ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
    v1::CreateExperimentRequest req;
    req.set_config(absl::StrCat("name: ", name, "\nresources: {slots_per_trial: 1}\n"));
    req.set_activate(true);
    v1::CreateExperimentResponse resp;
    if (stub->CreateExperiment(&ctx, req, &resp).ok()) return resp.experiment().id();
    ++retries;
    absl::SleepFor(absl::Milliseconds(100));
  }
  return -1;
}

std::unique_ptr<grpc::ClientContext> MasterE2eTest::Ctx(absl::Duration deadline) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->AddMetadata("authorization", "Bearer " + token_);
  ctx->set_deadline(absl::ToChronoTime(absl::Now() + deadline));
  return ctx;
}

grpc::Status MasterE2eTest::CreateExperiment(const std::string& yaml, v1::Experiment* out) {
  v1::CreateExperimentRequest req;
  req.set_config(yaml);
  req.set_activate(true);
  v1::CreateExperimentResponse resp;
  grpc::Status s = experiments_->CreateExperiment(Ctx().get(), req, &resp);
  *out = resp.experiment();
  return s;
}

v1::Experiment MasterE2eTest::MustCreateExperiment(const std::string& yaml) {
  v1::Experiment exp;
  grpc::Status s = CreateExperiment(yaml, &exp);
  EXPECT_TRUE(s.ok()) << s.error_message() << "\n" << yaml;
  return exp;
}

v1::GetExperimentResponse MasterE2eTest::GetExperiment(int64_t id) {
  v1::GetExperimentRequest req;
  req.set_id(id);
  v1::GetExperimentResponse resp;
  grpc::Status s = experiments_->GetExperiment(Ctx().get(), req, &resp);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return resp;
}

void MasterE2eTest::SetExperimentPriority(int64_t id, int priority) {
  v1::SetExperimentPriorityRequest req;
  req.set_id(id);
  req.set_priority(priority);
  v1::SetExperimentPriorityResponse resp;
  grpc::Status s = experiments_->SetExperimentPriority(Ctx().get(), req, &resp);
  EXPECT_TRUE(s.ok()) << s.error_message();
}

v1::Task MasterE2eTest::LaunchTask(v1::TaskType type, const std::string& yaml) {
  v1::LaunchTaskRequest req;
  req.set_type(type);
  req.set_config(yaml);
  v1::LaunchTaskResponse resp;
  grpc::Status s = tasks_->LaunchTask(Ctx().get(), req, &resp);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return resp.task();
}

void MasterE2eTest::KillTask(const std::string& id) {
  v1::KillTaskRequest req;
  req.set_id(id);
  v1::KillTaskResponse resp;
  grpc::Status s = tasks_->KillTask(Ctx().get(), req, &resp);
  EXPECT_TRUE(s.ok()) << s.error_message();
}

std::vector<v1::Job> MasterE2eTest::Jobs() {
  v1::GetJobsRequest req;
  v1::GetJobsResponse resp;
  grpc::Status s = jobs_->GetJobs(Ctx().get(), req, &resp);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return {resp.jobs().begin(), resp.jobs().end()};
}

void MasterE2eTest::ShowQueue(const std::string& title) {
  std::printf("\n== %s\n  job queue (JobService.GetJobs):\n", title.c_str());
  for (const v1::Job& j : Jobs()) {
    std::printf("    %2d. %-8s %-14s prio %-3d %d/%d slots  %-28s %s\n", j.position() + 1,
                j.job_id().c_str(), j.name().c_str(), j.priority(), j.allocated_slots(),
                j.requested_slots(), v1::JobState_Name(j.state()).c_str(),
                j.pending_reason().c_str());
  }
  std::map<std::string, std::vector<std::string>> running;
  for (const PodState& p : Pods()) {
    if (p.Live() && !p.info.node.empty()) running[p.info.gang].push_back(p.info.node);
  }
  std::printf("  running gangs:\n");
  for (const auto& [gang, nodes] : running) {
    std::printf("    %-28s on %s\n", gang.c_str(), absl::StrJoin(nodes, ", ").c_str());
  }
  std::fflush(stdout);
}

std::vector<std::string> MasterE2eTest::Allocations(const std::string& job_id) {
  std::set<std::string> out;
  for (const PodState& p : Pods()) {
    if (p.Live() && absl::StartsWith(p.info.gang, job_id + "-")) out.insert(p.info.gang);
  }
  return {out.begin(), out.end()};
}

std::vector<std::string> MasterE2eTest::RunningAllocations(const std::string& job_id) {
  std::vector<std::string> out;
  for (const std::string& a : Allocations(job_id)) {
    if (Running(a)) out.push_back(a);
  }
  return out;
}

std::string MasterE2eTest::PodEnv(const std::string& allocation, const std::string& name,
                                  int rank) {
  absl::StatusOr<std::string> pod =
      client_->Get(kube::kPods, ns_, absl::StrCat(allocation, "-", rank));
  if (!pod.ok()) {
    ADD_FAILURE() << pod.status();
    return "";
  }
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(*pod).get(doc) != simdjson::SUCCESS) return "";
  simdjson::dom::array containers;
  if (doc["spec"]["containers"].get(containers) != simdjson::SUCCESS) return "";
  for (simdjson::dom::element c : containers) {
    simdjson::dom::array env;
    if (c["env"].get(env) != simdjson::SUCCESS) continue;
    for (simdjson::dom::element e : env) {
      std::string_view key, value;
      if (e["name"].get(key) == simdjson::SUCCESS && key == name &&
          e["value"].get(value) == simdjson::SUCCESS) {
        return std::string(value);
      }
    }
  }
  return "";
}

std::unique_ptr<grpc::ClientContext> MasterE2eTest::AllocationCtx(const std::string& allocation) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  const std::string token = PodEnv(allocation, "PHALANX_ALLOCATION_TOKEN");
  EXPECT_FALSE(token.empty()) << allocation << " has no PHALANX_ALLOCATION_TOKEN";
  ctx->AddMetadata("authorization", "Bearer " + token);
  ctx->set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
  return ctx;
}

bool MasterE2eTest::PreemptionSignalled(const std::string& allocation) {
  v1::WatchPreemptionRequest req;
  req.set_allocation_id(allocation);
  req.set_timeout_seconds(20);  // Returns as soon as it is signalled.
  v1::WatchPreemptionResponse resp;
  grpc::Status s = allocations_->WatchPreemption(AllocationCtx(allocation).get(), req, &resp);
  EXPECT_TRUE(s.ok()) << allocation << ": " << s.error_message();
  return resp.preempt();
}

void MasterE2eTest::CheckpointAndAck(const std::string& allocation, const std::string& uuid) {
  v1::ReportCheckpointRequest checkpoint;
  checkpoint.set_allocation_id(allocation);
  checkpoint.set_uuid(uuid);
  checkpoint.set_steps_completed(100);
  v1::ReportCheckpointResponse checkpointed;
  grpc::Status s =
      allocations_->ReportCheckpoint(AllocationCtx(allocation).get(), checkpoint, &checkpointed);
  ASSERT_TRUE(s.ok()) << allocation << ": " << s.error_message();
  v1::AckPreemptionRequest ack;
  ack.set_allocation_id(allocation);
  v1::AckPreemptionResponse acked;
  s = allocations_->AckPreemption(AllocationCtx(allocation).get(), ack, &acked);
  ASSERT_TRUE(s.ok()) << allocation << ": " << s.error_message();
}

std::vector<std::string> MasterE2eTest::CheckpointVictims(const std::string& job_id,
                                                          size_t expected) {
  std::vector<std::string> marked;
  EXPECT_TRUE(WaitUntil([&] {
    marked.clear();
    for (const std::string& a : Allocations(job_id)) {
      if (Marked(a)) marked.push_back(a);
    }
    return marked.size() == expected;
  })) << marked.size()
      << " of " << job_id << "'s allocations marked, want " << expected;
  for (const std::string& a : marked) {
    EXPECT_TRUE(PreemptionSignalled(a)) << a << " was marked but the master did not signal it";
    EXPECT_FALSE(GangPods(a).empty()) << a << "'s pods went before it checkpointed";
    CheckpointAndAck(a, "ckpt-" + a);
  }
  for (const std::string& a : marked) {
    EXPECT_TRUE(WaitUntil([&] { return GangPods(a).empty(); })) << a << " was not deleted";
  }
  return marked;
}

void MasterE2eTest::Complete(const std::string& allocation) {
  v1::ReportCompletionRequest req;
  req.set_allocation_id(allocation);
  req.set_success(true);
  v1::ReportCompletionResponse resp;
  grpc::Status s = allocations_->ReportCompletion(AllocationCtx(allocation).get(), req, &resp);
  ASSERT_TRUE(s.ok()) << allocation << ": " << s.error_message();
  for (const PodState& p : GangPods(allocation)) {
    absl::StatusOr<std::string> r =
        client_->Patch(kube::kPods, ns_, p.info.name, kube::PatchType::kMerge,
                       R"({"metadata":{"annotations":{"phalanx.io/sim-duration":"0"}}})");
    ASSERT_TRUE(r.ok()) << r.status();
  }
}

}  // namespace phalanx::e2e
