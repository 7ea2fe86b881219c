// Runs and outcomes when the cluster or the database fails them: pod creations refused for now
// or for good, refused writes stored at the next tick, preemption marks taken without the
// database, pods the cluster deletes or evicts (service_fixture.h).
#include <atomic>

#include "kube/status.h"
#include "master/k8s/kube_pod_client.h"
#include "pqxx/pqxx"
#include "tests/kube/scripted_server.h"
#include "tests/master/testing/service_fixture.h"

namespace phalanx::master {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

// A pod the API server refuses fails the submission loudly, but the experiment is stored: the
// gang's other pod is deleted, and the next tick starts the trial again.
TEST_F(ServiceTest, FailedPodCreationIsReportedUndoneAndRetried) {
  std::atomic<int> calls = 0;
  pods_.OnCreate([&](const nlohmann::json&) {
    return ++calls == 2 ? absl::UnavailableError("API server down") : absl::OkStatus();
  });
  grpc::Status s;
  Create("resources: {slots_per_trial: 8}\n", &s);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(s.error_message(), HasSubstr("exp-1 was submitted but creating pods of exp-1-"));
  EXPECT_THAT(s.error_message(), HasSubstr("API server down"));
  EXPECT_TRUE(pods_.pods().empty());
  ASSERT_EQ(Jobs().size(), 1u);

  jobs_->Tick(absl::Now());
  EXPECT_EQ(pods_.pods().size(), 2u);
  EXPECT_EQ(Jobs()[0].job_id(), "exp-1");
}

// Pods the API server refuses for good end their trial in ERROR, with the API server's message as
// the reason, and then the job: no new run is started.
TEST_F(ServiceTest, PodsRefusedForGoodEndTheTrialInError) {
  absl::Status refusal;
  int attempts = 0;
  pods_.OnCreate([&](const nlohmann::json&) {
    ++attempts;
    return refusal;
  });
  const std::vector<absl::Status> refusals = {
      kube::HttpError(400, "BadRequest", "bad request body"),
      kube::HttpError(403, "Forbidden", "pods is forbidden: violates PodSecurity"),
      kube::HttpError(404, "NotFound", "namespaces \"gpu-ns\" not found"),
      kube::HttpError(422, "Invalid", "Pod \"p\" is invalid: spec.containers[0].image: Required"),
  };
  for (size_t i = 0; i < refusals.size(); ++i) {
    refusal = refusals[i];
    attempts = 0;
    grpc::Status s;
    Create("resources: {slots_per_trial: 4}\n", &s);
    EXPECT_EQ(s.error_code(), static_cast<grpc::StatusCode>(refusal.code()));
    EXPECT_THAT(s.error_message(), HasSubstr("refused for good, the trial is in ERROR"));
    jobs_->Tick(absl::Now());
    jobs_->Tick(absl::Now());
    const v1::GetExperimentResponse got = Get(static_cast<int64_t>(i) + 1);
    EXPECT_EQ(attempts, 1) << refusal;
    EXPECT_EQ(got.experiment().state(), v1::EXPERIMENT_STATE_ERROR) << refusal;
    ASSERT_EQ(got.trials_size(), 1);
    EXPECT_EQ(got.trials(0).state(), v1::TRIAL_STATE_ERROR);
    EXPECT_EQ(got.trials(0).runs(), 1);
    EXPECT_THAT(got.trials(0).error(), HasSubstr(refusal.message())) << refusal;
  }
  EXPECT_TRUE(Jobs().empty());

  refusal = kube::HttpError(404, "NotFound", "namespaces \"cpu-ns\" not found");
  v1::LaunchTaskRequest launch;
  launch.set_type(v1::TASK_TYPE_TENSORBOARD);
  EXPECT_EQ(tasks_->LaunchTask(Ctx().get(), launch, Ignored<v1::LaunchTaskResponse>()).error_code(),
            grpc::StatusCode::NOT_FOUND);
  jobs_->Tick(absl::Now());
  v1::GetTaskRequest get;
  get.set_id("tb-1");
  v1::GetTaskResponse task;
  ASSERT_TRUE(tasks_->GetTask(Ctx().get(), get, &task).ok());
  EXPECT_EQ(task.task().state(), v1::TASK_STATE_ERROR);
  EXPECT_THAT(task.task().error(), HasSubstr("namespaces \"cpu-ns\" not found"));
}

// Refusals that can go away are retried at the next tick: the trial starts a new run.
TEST_F(ServiceTest, PodsRefusedForNowAreRetried) {
  absl::Status refusal;
  pods_.OnCreate([&](const nlohmann::json&) { return std::exchange(refusal, absl::OkStatus()); });
  const std::vector<absl::Status> refusals = {
      kube::HttpError(403, "Forbidden", "pods \"p\" is forbidden: exceeded quota: gpus"),
      kube::HttpError(409, "Conflict", "the object has been modified"),
      kube::HttpError(429, "TooManyRequests", "slow down"),
      kube::HttpError(500, "InternalError", "etcd timeout"),
      absl::UnavailableError("connection refused"),
  };
  for (size_t i = 0; i < refusals.size(); ++i) {
    refusal = refusals[i];
    grpc::Status s;
    Create("resources: {slots_per_trial: 4}\n", &s);
    EXPECT_FALSE(s.ok());
    jobs_->Tick(absl::Now());
    const v1::GetExperimentResponse got = Get(static_cast<int64_t>(i) + 1);
    EXPECT_EQ(got.experiment().state(), v1::EXPERIMENT_STATE_ACTIVE) << refusals[i];
    EXPECT_EQ(got.trials(0).state(), v1::TRIAL_STATE_ACTIVE) << refusals[i];
    EXPECT_EQ(got.trials(0).runs(), 2) << refusals[i];
    EXPECT_TRUE(got.trials(0).error().empty());
  }
  EXPECT_EQ(pods_.pods().size(), refusals.size());
}

// When the database refuses an allocation's end, its pods are deleted all the same, and the end
// is stored at the next tick once the database is back; then the trial runs again.
TEST(JobManagerDatabaseTest, EndsTheDatabaseRefusedAreStoredAtTheNextTick) {
  testing::PrivatePostgres pg;
  ASSERT_FALSE(pg.url().empty());
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(pg.url());
  ASSERT_TRUE(store.ok()) << store.status();
  testing::FakePodClient pods;
  JobManager jobs(*ParseMasterConfig(kMaster), **store, pods);
  absl::StatusOr<JobView> exp =
      jobs.CreateExperiment("resources: {slots_per_trial: 8}\n", User{.username = "admin"}, true);
  ASSERT_TRUE(exp.ok()) << exp.status();
  const std::string a = exp->trials.at(0).allocation->id;
  for (bool preempt : {false, true}) {  // Both pods run, then the extender marks the gang.
    for (const auto& [key, pod] : pods.pods()) {
      PodState s = testing::FakePodClient::StateOf(pod, core::PodPhase::kRunning, true);
      s.preempt_requested = preempt;
      jobs.OnPod(s);
    }
  }
  ASSERT_EQ((*store)->GetAllocation(a)->state, AllocState::kPreempting);
  ASSERT_TRUE(pg.Stop());
  jobs.Tick(absl::Now() + absl::Seconds(31));  // The preemption times out.
  EXPECT_EQ(pods.deleted().size(), 2u);
  for (const std::string& name : pods.deleted()) jobs.OnPodDeleted("gpu-ns", name);
  ASSERT_TRUE(pg.Start());
  EXPECT_EQ((*store)->GetAllocation(a)->state, AllocState::kPreempting);  // Nothing stored yet.
  jobs.Tick(absl::Now());
  EXPECT_EQ((*store)->GetAllocation(a)->state, AllocState::kTerminated);
  const JobView view = *jobs.GetJob(exp->job.job_id);
  EXPECT_EQ(view.trials.at(0).trial.runs, 2);
  EXPECT_EQ(pods.pods().size(), 2u);
}

// A run whose pods all succeed while it is being preempted (before its ack got through) finished
// its trial only if the trial reported so; otherwise it checkpointed and exited for the preemption,
// and the trial resumes.
TEST_F(ServiceTest, RunThatSucceedsWhilePreemptedCompletesOnlyIfItReportedSo) {
  const v1::Experiment done = Create("resources: {slots_per_trial: 4}\n");
  const std::string a = Get(done.id()).trials(0).allocation_id();
  Play(a, core::PodPhase::kRunning, /*preempt=*/true);
  EXPECT_EQ(Get(done.id()).trials(0).allocation_state(), v1::ALLOCATION_STATE_PREEMPTING);
  ASSERT_TRUE(jobs_->ReportCompletion(a, /*success=*/true, "").ok());
  Play(a, core::PodPhase::kSucceeded, /*preempt=*/true);
  ReapDeleted();
  v1::Trial trial = Get(done.id()).trials(0);
  EXPECT_EQ(trial.state(), v1::TRIAL_STATE_COMPLETED);
  EXPECT_EQ(trial.runs(), 1);

  const v1::Experiment stopped = Create("resources: {slots_per_trial: 4}\n");
  const std::string b = Get(stopped.id()).trials(0).allocation_id();
  Play(b, core::PodPhase::kRunning, /*preempt=*/true);
  ASSERT_TRUE(jobs_->ReportCheckpoint(b, "ckpt-b", 100).ok());
  Play(b, core::PodPhase::kSucceeded, /*preempt=*/true);
  ReapDeleted();
  trial = Get(stopped.id()).trials(0);
  EXPECT_EQ(trial.state(), v1::TRIAL_STATE_ACTIVE);
  EXPECT_EQ(trial.runs(), 2);
  EXPECT_EQ(trial.latest_checkpoint(), "ckpt-b");
  EXPECT_EQ(pods_.pods().size(), 1u);  // The resumed run's.
}

// Renames table `from` of the database at `url` to `to`: the store's statements on it fail (as
// errors of the database) until it is renamed back.
void RenameTable(const std::string& url, const std::string& from, const std::string& to) {
  pqxx::connection conn(url);
  pqxx::nontransaction tx(conn);
  tx.exec(absl::StrCat("ALTER TABLE ", from, " RENAME TO ", to));
}

// While `refuse`, every UPDATE of table `table` of the database at `url` fails (a trigger raises).
void RefuseUpdates(const std::string& url, const std::string& table, bool refuse) {
  pqxx::connection conn(url);
  pqxx::nontransaction tx(conn);
  if (!refuse) {
    tx.exec(absl::StrCat("DROP TRIGGER refuse_updates ON ", table));
    return;
  }
  tx.exec(
      "CREATE OR REPLACE FUNCTION refuse_updates() RETURNS trigger AS "
      "$$ BEGIN RAISE EXCEPTION 'updates refused by the test'; END $$ LANGUAGE plpgsql");
  tx.exec(absl::StrCat("CREATE TRIGGER refuse_updates BEFORE UPDATE ON ", table,
                       " FOR EACH ROW EXECUTE FUNCTION refuse_updates()"));
}

// A preemption mark that arrives while the job cannot be read is taken all the same (the extender
// sends it once): whether a run is preemptible is known without the database.
TEST_F(ServiceTest, PreemptionMarkIsTakenWhileTheJobCannotBeRead) {
  const v1::Experiment exp = Create("resources: {slots_per_trial: 4}\n");
  const std::string a = Get(exp.id()).trials(0).allocation_id();
  Play(a, core::PodPhase::kRunning);
  RenameTable(url_, "jobs", "jobs_away");
  Play(a, core::PodPhase::kRunning, /*preempt=*/true);
  const absl::StatusOr<bool> signalled = jobs_->WatchPreemption(a, absl::ZeroDuration());
  RenameTable(url_, "jobs_away", "jobs");
  ASSERT_TRUE(signalled.ok()) << signalled.status();
  EXPECT_TRUE(*signalled);
  EXPECT_EQ(store_->GetAllocation(a)->state, AllocState::kPreempting);
}

// When the trial's outcome cannot be stored, the run is kept, pods and all, until it is: a failed
// trial ends in ERROR rather than running again.
TEST_F(ServiceTest, OutcomesTheDatabaseRefusedAreStoredAtTheNextTick) {
  const v1::Experiment exp = Create("resources: {slots_per_trial: 4}\nmax_restarts: 0\n");
  const std::string a = Get(exp.id()).trials(0).allocation_id();
  Play(a, core::PodPhase::kRunning);
  RenameTable(url_, "trials", "trials_away");
  Play(a, core::PodPhase::kFailed);
  jobs_->Tick(absl::Now());  // Still refused.
  const std::vector<std::string> deleted = pods_.deleted();
  RenameTable(url_, "trials_away", "trials");
  EXPECT_TRUE(deleted.empty());
  jobs_->Tick(absl::Now());
  EXPECT_EQ(pods_.deleted().size(), 1u);
  ReapDeleted();
  const v1::GetExperimentResponse got = Get(exp.id());
  EXPECT_EQ(got.experiment().state(), v1::EXPERIMENT_STATE_ERROR);
  EXPECT_EQ(got.trials(0).state(), v1::TRIAL_STATE_ERROR);
  EXPECT_EQ(got.trials(0).runs(), 1);
  EXPECT_THAT(got.trials(0).error(), HasSubstr("a pod failed"));
}

// A kill stored CANCELED and stopped the pods, but its trials could not be ended: the next tick
// ends them (they stayed ACTIVE for good, and a second kill was refused as the job had ended).
TEST_F(ServiceTest, AKillWhoseTrialsCouldNotBeEndedEndsThemAtTheNextTick) {
  const v1::Experiment exp = Create("resources: {slots_per_trial: 4}\n");
  Play(Get(exp.id()).trials(0).allocation_id(), core::PodPhase::kRunning);
  RefuseUpdates(url_, "trials", true);
  EXPECT_FALSE(jobs_->Kill(exp.job_id(), admin_).ok());
  RefuseUpdates(url_, "trials", false);
  jobs_->Tick(absl::Now());
  ReapDeleted();
  const v1::GetExperimentResponse got = Get(exp.id());
  EXPECT_EQ(got.experiment().state(), v1::EXPERIMENT_STATE_CANCELED);
  EXPECT_EQ(got.trials(0).state(), v1::TRIAL_STATE_CANCELED);
}

// Runs a PodWatcher on gpu-ns whose list answers `pods` and whose watch then stays quiet, until it
// has listed; false if it never did.
bool ListThroughAWatcher(JobManager& jobs, const std::vector<nlohmann::json>& pods) {
  std::atomic<int> watches = 0;
  phalanx::testing::ScriptedServer server([&](const phalanx::testing::ScriptedRequest& r) {
    if (r.target.find("watch=true") == std::string::npos) {
      return phalanx::testing::ScriptedResponse{
          200,
          {absl::StrCat(R"({"kind":"PodList","metadata":{"resourceVersion":"1"},"items":)",
                        nlohmann::json(pods).dump(), "}")}};
    }
    ++watches;
    return phalanx::testing::ScriptedResponse{200, {}, absl::Seconds(30)};
  });
  kube::Client client(kube::Config{.server = server.url()});
  PodWatcher watcher(client, jobs, {"gpu-ns"});
  watcher.Start();
  for (int i = 0; i < 500 && watches == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  watcher.Stop();
  return watches > 0;
}

// A pod the watch lists but cannot decode (here a CPU request past int64 in millicores) is not
// taken for gone: its run goes on.
TEST_F(ServiceTest, PodWatcherKeepsListedPodsItCannotDecode) {
  const v1::Experiment exp = Create("resources: {slots_per_trial: 4}\n");
  const std::string run = Get(exp.id()).trials(0).allocation_id();
  Play(run, core::PodPhase::kRunning);
  ASSERT_EQ(pods_.pods().size(), 1u);
  nlohmann::json pod = pods_.pods().begin()->second;
  pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "10000000000000000";
  ASSERT_TRUE(ListThroughAWatcher(*jobs_, {pod})) << "the watcher never listed";
  EXPECT_TRUE(pods_.deleted().empty());
  EXPECT_EQ(Get(exp.id()).trials(0).allocation_id(), run);
}

// A pod deleted or evicted by someone else (a drain, node pressure, a taint, a node shutdown) loses
// the run, however its containers exit: the trial resumes from its latest checkpoint, not in
// ERROR. A pod being deleted on a lost node, still Running, ends the run too.
TEST_F(ServiceTest, RunsOfPodsTheClusterDeletesOrEvictsResume) {
  const nlohmann::json changes[] = {
      {{"status", {{"phase", "Failed"}, {"reason", "Evicted"}}}},
      {{"status",
        {{"phase", "Failed"},
         {"conditions",
          {{{"type", "DisruptionTarget"},
            {"status", "True"},
            {"reason", "TerminationByKubelet"}}}}}}},
      {{"metadata", {{"deletionTimestamp", "2025-01-01T00:00:00Z"}}},
       {"status", {{"phase", "Running"}}}},
  };
  for (const nlohmann::json& change : changes) {
    const v1::Experiment exp = Create("resources: {slots_per_trial: 4}\n");
    const std::string a = Get(exp.id()).trials(0).allocation_id();
    Play(a, core::PodPhase::kRunning);
    ASSERT_TRUE(jobs_->ReportCheckpoint(a, "ckpt-" + a, 100).ok());
    // The cluster's pods as listed: the run's pod changed as `change` says (the others do not
    // decode, and are left as they are).
    std::vector<nlohmann::json> listed;
    const std::string name = a + "-0";
    for (const auto& entry : pods_.pods()) {
      nlohmann::json pod = entry.second;
      if (pod["metadata"]["name"] == name) {
        pod["metadata"]["uid"] = "uid-" + name;
        pod["spec"]["nodeName"] = "node-1";
        pod.merge_patch(change);
      }
      listed.push_back(pod);
    }
    ASSERT_TRUE(ListThroughAWatcher(*jobs_, listed)) << "the watcher never listed";
    EXPECT_THAT(pods_.deleted(), Contains(name)) << change;
    ReapDeleted();
    const v1::Trial trial = Get(exp.id()).trials(0);
    EXPECT_EQ(trial.state(), v1::TRIAL_STATE_ACTIVE) << change;
    EXPECT_EQ(trial.error(), "") << change;
    EXPECT_EQ(trial.runs(), 2) << change;
    EXPECT_EQ(trial.latest_checkpoint(), "ckpt-" + a) << change;
  }
}

// A pod the kubelet evicts for going over its own ephemeral-storage limit would go the same way
// on its next run: the run fails and counts against max_restarts (here 0: the trial ends), where
// an eviction for node pressure resumes it (above).
TEST_F(ServiceTest, ARunEvictedForItsOwnLimitsFails) {
  const v1::Experiment exp = Create("resources: {slots_per_trial: 4}\nmax_restarts: 0\n");
  const std::string a = Get(exp.id()).trials(0).allocation_id();
  Play(a, core::PodPhase::kRunning);
  std::vector<nlohmann::json> listed;
  for (const auto& entry : pods_.pods()) {
    nlohmann::json pod = entry.second;
    pod["metadata"]["uid"] = "uid-" + pod["metadata"]["name"].get<std::string>();
    pod["spec"]["nodeName"] = "node-1";
    pod["status"] = {
        {"phase", "Failed"},
        {"reason", "Evicted"},
        {"message",
         "Pod ephemeral local storage usage exceeds the total limit of containers 2Gi. "}};
    listed.push_back(pod);
  }
  ASSERT_TRUE(ListThroughAWatcher(*jobs_, listed)) << "the watcher never listed";
  ReapDeleted();
  const v1::Trial trial = Get(exp.id()).trials(0);
  EXPECT_EQ(trial.state(), v1::TRIAL_STATE_ERROR);
  EXPECT_EQ(trial.runs(), 1);
  EXPECT_EQ(trial.error(),
            absl::StrCat(a, ": pod gpu-ns/", a,
                         "-0 was evicted for its own limits: Pod ephemeral local storage usage "
                         "exceeds the total limit of containers 2Gi."));
}

// A task has no checkpoint, and a command may not be safe to run twice: an evicted task pod is a
// failure, as before.
TEST_F(ServiceTest, AnEvictedTaskFails) {
  absl::StatusOr<JobView> cmd = jobs_->LaunchTask(TaskType::kCommand, "resources: {slots: 1}\n",
                                                  {"sleep", "60"}, User{.username = "admin"});
  ASSERT_TRUE(cmd.ok()) << cmd.status();
  const std::string a = cmd->trials.at(0).allocation->id;
  std::vector<nlohmann::json> listed;
  for (const auto& entry : pods_.pods()) {
    nlohmann::json pod = entry.second;
    pod["metadata"]["uid"] = "uid-" + pod["metadata"]["name"].get<std::string>();
    pod["spec"]["nodeName"] = "node-1";
    pod["status"] = {{"phase", "Failed"}, {"reason", "Evicted"}};
    listed.push_back(pod);
  }
  ASSERT_TRUE(ListThroughAWatcher(*jobs_, listed)) << "the watcher never listed";
  ReapDeleted();
  absl::StatusOr<JobView> got = jobs_->GetJob(cmd->job.job_id);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->trials.at(0).trial.state, RunState::kError);
  EXPECT_EQ(got->trials.at(0).trial.runs, 1);
}

}  // namespace
}  // namespace phalanx::master
