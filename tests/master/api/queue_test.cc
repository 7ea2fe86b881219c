// Tasks, the job queue (order, moves, priority changes, pending reasons, stats) and start-up
// recovery through the phalanx.v1 services (service_fixture.h).
#include <atomic>
#include <set>

#include "absl/strings/str_format.h"
#include "master/pods/pod_builder.h"
#include "tests/master/testing/service_fixture.h"

namespace phalanx::master {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

v1::Task Launch(v1::TaskService::Stub& stub, grpc::ClientContext* ctx, v1::TaskType type,
                const std::string& config, grpc::Status* status = nullptr) {
  v1::LaunchTaskRequest req;
  req.set_type(type);
  req.set_config(config);
  req.add_entrypoint("sleep");
  req.add_entrypoint("60");
  v1::LaunchTaskResponse resp;
  grpc::Status s = stub.LaunchTask(ctx, req, &resp);
  if (status != nullptr) *status = s;
  EXPECT_TRUE(status != nullptr || s.ok()) << s.error_message();
  return resp.task();
}

std::vector<std::string> Ids(const std::vector<v1::Job>& jobs) {
  std::vector<std::string> out;
  for (const v1::Job& j : jobs) out.push_back(j.job_id());
  return out;
}

TEST_F(ServiceTest, TasksAreNeverPreempted) {
  v1::Task cmd = Launch(*tasks_, Ctx().get(), v1::TASK_TYPE_COMMAND, "resources: {slots: 2}\n");
  ASSERT_EQ(pods_.pods().size(), 1u);
  const nlohmann::json pod = pods_.pods().begin()->second;
  EXPECT_EQ(pod["metadata"]["labels"]["phalanx.io/preemptible"], "false");
  EXPECT_EQ(pod["metadata"]["labels"]["phalanx.io/task-type"], "command");
  Play(cmd.allocation_id(), core::PodPhase::kRunning, /*preempt=*/true);
  EXPECT_TRUE(pods_.deleted().empty());
  v1::GetTaskRequest get;
  get.set_id(cmd.id());
  v1::GetTaskResponse got;
  ASSERT_TRUE(tasks_->GetTask(Ctx().get(), get, &got).ok());
  EXPECT_EQ(got.task().allocation_state(), v1::ALLOCATION_STATE_RUNNING);

  v1::SetTaskPriorityRequest prio;
  prio.set_id(cmd.id());
  prio.set_priority(90);
  EXPECT_EQ(tasks_->SetTaskPriority(Ctx().get(), prio, Ignored<v1::SetTaskPriorityResponse>())
                .error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  v1::KillTaskRequest kill;
  kill.set_id(cmd.id());
  ASSERT_TRUE(tasks_->KillTask(Ctx().get(), kill, Ignored<v1::KillTaskResponse>()).ok());
  EXPECT_TRUE(pods_.pods().empty());
}

// The extender marks a run whose planned node is gone before its pods bind: even a task is then
// recreated, gated again, to be planned anew; it had not started, so nothing is lost.
TEST_F(ServiceTest, ATaskMarkedBeforeItsPodsBindIsRecreated) {
  v1::Task cmd = Launch(*tasks_, Ctx().get(), v1::TASK_TYPE_COMMAND, "resources: {slots: 2}\n");
  Play(cmd.allocation_id(), core::PodPhase::kPending, /*preempt=*/true);
  ASSERT_EQ(pods_.deleted().size(), 1u);
  ReapDeleted();
  ASSERT_EQ(pods_.pods().size(), 1u);
  const nlohmann::json pod = pods_.pods().begin()->second;
  EXPECT_NE(pod["metadata"]["name"], pods_.deleted()[0]);
  EXPECT_EQ(pod["spec"]["schedulingGates"][0]["name"], "phalanx.io/admission");
  v1::GetTaskRequest get;
  get.set_id(cmd.id());
  v1::GetTaskResponse got;
  ASSERT_TRUE(tasks_->GetTask(Ctx().get(), get, &got).ok());
  EXPECT_NE(got.task().allocation_id(), cmd.allocation_id());
  EXPECT_EQ(got.task().state(), v1::TASK_STATE_ACTIVE);
}

// A TensorBoard (like any task) is told where the master's checkpoints are kept, and mounts the
// default shared_fs storage.
TEST_F(ServiceTest, TasksAreGivenTheCheckpointStorage) {
  Launch(*tasks_, Ctx().get(), v1::TASK_TYPE_TENSORBOARD, "");
  ASSERT_EQ(pods_.pods().size(), 1u);
  const nlohmann::json pod = pods_.pods().begin()->second;
  nlohmann::json want = {{"name", "PHALANX_CHECKPOINT_STORAGE"},
                         {"value", R"({"host_path":"/tmp/checkpoints","type":"shared_fs"})"}};
  const nlohmann::json& env = pod["spec"]["containers"][0]["env"];
  EXPECT_NE(std::find(env.begin(), env.end(), want), env.end()) << env.dump();
  EXPECT_EQ(pod["spec"]["volumes"][0]["hostPath"]["path"], "/tmp/checkpoints");
  EXPECT_EQ(pod["spec"]["containers"][0]["volumeMounts"][0]["mountPath"], "/determined_shared_fs");
}

// Tasks are listed by task type; experiments are not tasks.
TEST_F(ServiceTest, ListTasksRefusesTheExperimentType) {
  Create("resources: {slots_per_trial: 4}\n");
  Launch(*tasks_, Ctx().get(), v1::TASK_TYPE_COMMAND, "");
  v1::ListTasksRequest req;
  req.set_type(v1::TASK_TYPE_EXPERIMENT);
  v1::ListTasksResponse resp;
  grpc::Status s = tasks_->ListTasks(Ctx().get(), req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("type: must be COMMAND, NOTEBOOK, SHELL, TENSORBOARD"));
  EXPECT_EQ(resp.tasks_size(), 0);
  req.set_type(v1::TASK_TYPE_UNSPECIFIED);
  ASSERT_TRUE(tasks_->ListTasks(Ctx().get(), req, &resp).ok());
  ASSERT_EQ(resp.tasks_size(), 1);
  EXPECT_EQ(resp.tasks(0).id(), "cmd-1");
  EXPECT_EQ(resp.pagination().total(), 1);
}

TEST_F(ServiceTest, ZeroSlotTensorboardGoesToTheAuxPool) {
  v1::Task tb = Launch(*tasks_, Ctx().get(), v1::TASK_TYPE_TENSORBOARD, "");
  EXPECT_EQ(tb.resource_pool(), "cpu");
  EXPECT_EQ(tb.slots(), 0);
  ASSERT_EQ(pods_.pods().size(), 1u);
  EXPECT_EQ(pods_.pods().begin()->first, "cpu-ns/" + tb.allocation_id() + "-0");
}

// A move labels the job's pods without the manager's lock; a label the API server refuses is set
// at the next tick, to the position the job has then.
TEST_F(ServiceTest, QueueLabelsAreSetWithoutTheLockAndRetried) {
  v1::Experiment a = Create("resources: {slots_per_trial: 4}\n");
  v1::Experiment b = Create("resources: {slots_per_trial: 4}\n");
  QueueReader other(*jobs_);
  std::atomic<int> calls = 0;  // Pods are labelled side by side.
  pods_.OnLabel([&](const std::string&) {
    other.ReadOnce();
    return ++calls == 1 ? absl::UnavailableError("API server down") : absl::OkStatus();
  });
  auto label_of_b = [&] {
    for (const auto& [key, pod] : pods_.pods()) {
      if (pod["metadata"]["labels"]["phalanx.io/job-id"] == b.job_id()) {
        return pod["metadata"]["labels"]["phalanx.io/queue-position"].get<std::string>();
      }
    }
    return std::string("no pod");
  };
  const std::string before = label_of_b();
  ASSERT_TRUE(jobs_->Move(b.job_id(), a.job_id(), /*ahead=*/true, admin_).ok());
  EXPECT_FALSE(other.waited_for_the_lock());
  EXPECT_EQ(other.size(), 2u);
  EXPECT_EQ(label_of_b(), before);  // Refused.
  jobs_->Tick(absl::Now());
  std::vector<v1::Job> jobs = Jobs();
  ASSERT_THAT(Ids(jobs), ElementsAre(b.job_id(), a.job_id()));
  EXPECT_EQ(label_of_b(), absl::StrFormat("%.6f", jobs[0].queue_position()));
}

TEST_F(ServiceTest, QueueOrderMovesAndPriority) {
  v1::Experiment a = Create("resources: {slots_per_trial: 4}\n");
  v1::Experiment b = Create("resources: {slots_per_trial: 4}\n");
  v1::Experiment c = Create("resources: {slots_per_trial: 4, priority: 100}\n");
  EXPECT_THAT(Ids(Jobs()), ElementsAre(c.job_id(), a.job_id(), b.job_id()));

  v1::UpdateJobQueueRequest move;
  v1::QueueControl* u = move.add_updates();
  u->set_job_id(b.job_id());
  u->set_ahead_of(a.job_id());
  ASSERT_TRUE(
      queue_->UpdateJobQueue(Ctx().get(), move, Ignored<v1::UpdateJobQueueResponse>()).ok());
  std::vector<v1::Job> jobs = Jobs();
  EXPECT_THAT(Ids(jobs), ElementsAre(c.job_id(), b.job_id(), a.job_id()));
  int b_pods = 0;
  for (const auto& [key, pod] : pods_.pods()) {  // The pods carry the new position.
    if (pod["metadata"]["labels"]["phalanx.io/job-id"] == b.job_id()) {
      ++b_pods;
      EXPECT_EQ(pod["metadata"]["labels"]["phalanx.io/queue-position"],
                absl::StrFormat("%.6f", jobs[1].queue_position()));
    }
  }
  EXPECT_EQ(b_pods, 1);
  u->set_ahead_of(c.job_id());  // Another priority: refused.
  grpc::Status s = queue_->UpdateJobQueue(Ctx().get(), move, Ignored<v1::UpdateJobQueueResponse>());
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << s.error_message();

  // A queued job's new priority recreates its gated pods with the new class.
  v1::SetExperimentPriorityRequest prio;
  prio.set_id(a.id());
  prio.set_priority(100);
  const int before = pods_.creates();
  ASSERT_TRUE(
      experiments_
          ->SetExperimentPriority(Ctx().get(), prio, Ignored<v1::SetExperimentPriorityResponse>())
          .ok());
  ReapDeleted();
  EXPECT_EQ(pods_.creates(), before + 1);
  int a_pods = 0;
  for (const auto& [key, pod] : pods_.pods()) {
    if (pod["metadata"]["labels"]["phalanx.io/job-id"] == a.job_id()) {
      ++a_pods;
      EXPECT_EQ(pod["spec"]["priorityClassName"], "phalanx-high-priority");
    }
  }
  EXPECT_EQ(a_pods, 1);
  EXPECT_EQ(Jobs()[0].priority(), 100);
}

// A refused queue update is named by its place in the request and its field.
TEST_F(ServiceTest, QueueUpdateErrorsNameTheUpdateField) {
  v1::Experiment a = Create("resources: {slots_per_trial: 4}\n");
  v1::UpdateJobQueueRequest req;
  req.add_updates()->set_job_id(a.job_id());
  req.mutable_updates(0)->set_priority(60);
  v1::QueueControl* u = req.add_updates();
  const auto refusal = [&] {
    u->set_job_id(a.job_id());
    grpc::Status s =
        queue_->UpdateJobQueue(Ctx().get(), req, Ignored<v1::UpdateJobQueueResponse>());
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
    return s.error_message();
  };
  u->set_priority(-1);
  EXPECT_EQ(refusal(), "updates[1].priority: must be between 0 and 1000000");
  u->set_resource_pool("tpu");
  EXPECT_EQ(refusal(), "updates[1].resource_pool: no resource pool named \"tpu\"");
  u->set_ahead_of(a.job_id());
  EXPECT_EQ(refusal(), "updates[1].ahead_of: a job cannot move relative to itself");
  u->set_behind_of(a.job_id());
  EXPECT_EQ(refusal(), "updates[1].behind_of: a job cannot move relative to itself");
  u->Clear();
  EXPECT_EQ(refusal(), "updates[1].action: required");
}

// A class named in the pod spec sets the pods' priority, so set-priority would only change the
// queue's number: refused, and the pods stay as they are.
TEST_F(ServiceTest, SetPriorityIsRefusedWhenThePodSpecNamesTheClass) {
  v1::Experiment a = Create(
      "resources: {slots_per_trial: 4}\n"
      "environment: {pod_spec: {spec: {priorityClassName: phalanx-high-priority}}}\n");
  EXPECT_EQ(Jobs()[0].priority(), 100);
  v1::SetExperimentPriorityRequest prio;
  prio.set_id(a.id());
  prio.set_priority(10);
  const int before = pods_.creates();
  grpc::Status s = experiments_->SetExperimentPriority(
      Ctx().get(), prio, Ignored<v1::SetExperimentPriorityResponse>());
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(s.error_message(),
            a.job_id() +
                "'s pod spec names priorityClassName \"phalanx-high-priority\", which sets "
                "its pods' priority; its priority can only change with that class");
  EXPECT_EQ(pods_.creates(), before);
  EXPECT_EQ(Jobs()[0].priority(), 100);
}

// A pool changes only while no trial holds pods that run: a running experiment is told to pause
// first, and a paused one whose trials are still checkpointing is told to wait for them.
TEST_F(ServiceTest, SetPoolSaysWhatItWaitsFor) {
  v1::Experiment a = Create("resources: {slots_per_trial: 4}\n");
  const std::string run = Get(a.id()).trials(0).allocation_id();
  Play(run, core::PodPhase::kRunning);
  v1::UpdateJobQueueRequest req;
  v1::QueueControl* u = req.add_updates();
  u->set_job_id(a.job_id());
  u->set_resource_pool("gpu");
  const auto refusal = [&] {
    grpc::Status s =
        queue_->UpdateJobQueue(Ctx().get(), req, Ignored<v1::UpdateJobQueueResponse>());
    EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << s.error_message();
    return s.error_message();
  };
  EXPECT_EQ(refusal(), a.job_id() + " has scheduled trials; pause it before changing its pool");
  ASSERT_TRUE(jobs_->Pause(a.job_id(), admin_).ok());
  EXPECT_EQ(refusal(), a.job_id() + " is paused, but its trials are still stopping (" + run +
                           " is PREEMPTING); change its pool once they have stopped");
  ASSERT_TRUE(jobs_->AckPreemption(run).ok());
  ReapDeleted();
  EXPECT_TRUE(queue_->UpdateJobQueue(Ctx().get(), req, Ignored<v1::UpdateJobQueueResponse>()).ok());
}

// A job moved to a pool whose default pod spec names a phalanx class takes that class's priority,
// as a submission there would, and its own again when it moves back; a priority set by hand stays
// across pools where no class is named.
TEST_F(ServiceTest, APoolsDefaultClassSetsThePriorityOfAJobMovedThere) {
  absl::StatusOr<MasterConfig> config = ParseMasterConfig(R"(
max_slots_per_pod: 4
resource_pools:
  - {pool_name: gpu, kubernetes_namespace: gpu-ns}
  - {pool_name: gpu2, kubernetes_namespace: gpu2-ns}
  - pool_name: a100
    kubernetes_namespace: a100-ns
    task_container_defaults:
      gpu_pod_spec: {spec: {priorityClassName: phalanx-high-priority}}
)");
  ASSERT_TRUE(config.ok()) << config.status();
  JobManager jobs(*config, *store_, pods_);
  absl::StatusOr<JobView> a = jobs.CreateExperiment(
      "resources: {slots_per_trial: 4, priority: 30}\n", store_->FindUser("admin")->user, true);
  ASSERT_TRUE(a.ok()) << a.status();
  const std::string id = a->job.job_id;
  auto priority = [&] { return jobs.GetJob(id)->job.priority; };
  EXPECT_EQ(priority(), 30);
  ASSERT_TRUE(jobs.SetResourcePool(id, "a100", admin_).ok());
  EXPECT_EQ(priority(), 100);
  ASSERT_TRUE(jobs.SetResourcePool(id, "gpu", admin_).ok());
  EXPECT_EQ(priority(), 30);
  ASSERT_TRUE(jobs.SetPriority(id, 70, admin_).ok());
  ASSERT_TRUE(jobs.SetResourcePool(id, "gpu2", admin_).ok());
  EXPECT_EQ(priority(), 70);
}

// A priority change reaches the runs that start after it: the running trial keeps the priority its
// pods carry, which the queue shows beside the new one; the queued trial's pods are recreated.
TEST_F(ServiceTest, TheQueueShowsThePriorityRunningPodsCarry) {
  const v1::Experiment exp = Create(R"(
hyperparameters: {lr: {type: categorical, vals: [0.1, 0.2]}}
searcher: {name: grid}
resources: {slots_per_trial: 4, priority: 50}
)");
  const v1::GetExperimentResponse got = Get(exp.id());
  Play(got.trials(0).allocation_id(), core::PodPhase::kRunning);
  EXPECT_TRUE(Jobs().at(0).running_priorities().empty());
  ASSERT_TRUE(jobs_->SetPriority(exp.job_id(), 70, admin_).ok());
  v1::Job job = Jobs().at(0);
  EXPECT_EQ(job.priority(), 70);
  EXPECT_THAT(job.running_priorities(), ::testing::ElementsAre(50));
  for (const auto& [key, pod] : pods_.pods()) {
    const bool running =
        pod["metadata"]["labels"]["phalanx.io/gang"] == got.trials(0).allocation_id();
    EXPECT_EQ(pod["spec"]["priorityClassName"],
              running ? "phalanx-medium-priority" : "phalanx-priority-70")
        << key;
  }
  // Once the queued trial runs at 70 too, only the old run's 50 differs.
  Play(Get(exp.id()).trials(1).allocation_id(), core::PodPhase::kRunning);
  EXPECT_THAT(Jobs().at(0).running_priorities(), ::testing::ElementsAre(50));
}

TEST_F(ServiceTest, JobStatesPendingReasonsAndStats) {
  v1::Experiment a = Create("resources: {slots_per_trial: 4}\n");
  v1::Experiment b = Create("resources: {slots_per_trial: 8}\n");
  const std::string alloc_a = Get(a.id()).trials(0).allocation_id();
  const std::string alloc_b = Get(b.id()).trials(0).allocation_id();
  Play(alloc_a, core::PodPhase::kRunning);
  for (const auto& [key, pod] : pods_.pods()) {
    if (pod["metadata"]["labels"]["phalanx.io/gang"] != alloc_b) continue;
    PodState s = FakePodClient::StateOf(pod, core::PodPhase::kPending, false);
    s.pending_reason = "waiting for 8 GPUs; 4 free";
    jobs_->OnPod(s);
  }
  std::vector<v1::Job> jobs = Jobs();
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].state(), v1::JOB_STATE_SCHEDULED);
  EXPECT_EQ(jobs[0].allocated_slots(), 4);
  EXPECT_EQ(jobs[1].state(), v1::JOB_STATE_QUEUED);
  EXPECT_EQ(jobs[1].requested_slots(), 8);
  EXPECT_EQ(jobs[1].pending_reason(), "waiting for 8 GPUs; 4 free");
  EXPECT_EQ(jobs[1].jobs_ahead(), 0);

  v1::GetJobQueueStatsResponse stats;
  ASSERT_TRUE(queue_->GetJobQueueStats(Ctx().get(), {}, &stats).ok());
  ASSERT_EQ(stats.results_size(), 2);  // Every configured pool.
  EXPECT_EQ(stats.results(1).resource_pool(), "gpu");
  EXPECT_EQ(stats.results(1).queued_count(), 1);
  EXPECT_EQ(stats.results(1).scheduled_count(), 1);
}

// The extender's forecast on a waiting job's pods reaches GetJob and GetJobs: the start, the basis
// of the run's expected runtime (written by the master at creation), and the what-if answer with
// the gangs it names resolved to their jobs and owners. Texts that do not read are left out.
TEST_F(ServiceTest, ForecastOfAWaitingJob) {
  v1::Experiment a = Create("resources: {slots_per_trial: 4}\n");
  v1::Experiment b = Create("resources: {slots_per_trial: 8, expected_runtime: 2h}\n");
  const std::string alloc_a = Get(a.id()).trials(0).allocation_id();
  const std::string alloc_b = Get(b.id()).trials(0).allocation_id();
  Play(alloc_a, core::PodPhase::kRunning);
  auto observe = [&](const std::string& eta, const std::string& what_if) {
    for (const auto& [key, pod] : pods_.pods()) {
      if (pod["metadata"]["labels"]["phalanx.io/gang"] != alloc_b) continue;
      EXPECT_EQ(pod["metadata"]["annotations"]["phalanx.io/expected-runtime"], "7200");
      PodState s = FakePodClient::StateOf(pod, core::PodPhase::kPending, false);
      s.expected_runtime_basis =
          pod["metadata"]["annotations"]["phalanx.io/expected-runtime-basis"];
      s.eta = eta;
      s.what_if = what_if;
      jobs_->OnPod(s);
    }
  };
  const std::string ns = pods_.pods().begin()->second["metadata"]["namespace"];
  observe("2026-11-29T16:05:00Z",
          absl::StrCat(R"({"slots":4,"priority":51,"victims":[")", ns, "/", alloc_a,
                       R"("],"pool":"cpu","ahead":["other/foreign"]})"));
  v1::GetJobRequest req;
  req.set_job_id("exp-2");
  v1::GetJobResponse got;
  ASSERT_TRUE(queue_->GetJob(Ctx().get(), req, &got).ok());
  const v1::Job& j = got.job();
  EXPECT_EQ(j.state(), v1::JOB_STATE_QUEUED);
  EXPECT_EQ(j.eta_ms(), 1795968300000);  // 2026-11-29T16:05:00Z
  EXPECT_THAT(j.eta_basis(), HasSubstr("resources.expected_runtime"));
  ASSERT_TRUE(j.has_what_if());
  EXPECT_EQ(j.what_if().slots(), 4);
  EXPECT_EQ(j.what_if().priority(), 51);
  ASSERT_EQ(j.what_if().victims_size(), 1);
  EXPECT_EQ(j.what_if().victims(0).job_id(), "exp-1");
  EXPECT_EQ(j.what_if().victims(0).username(), "admin");
  EXPECT_EQ(j.what_if().pool(), "cpu");
  ASSERT_EQ(j.what_if().ahead_size(), 1);
  EXPECT_EQ(j.what_if().ahead(0).gang(), "other/foreign");
  EXPECT_EQ(j.what_if().ahead(0).job_id(), "");
  EXPECT_EQ(Jobs().at(1).eta_ms(), j.eta_ms());

  observe("none: waits on work with no expected end", "{\"slots\": [");
  ASSERT_TRUE(queue_->GetJob(Ctx().get(), req, &got).ok());
  EXPECT_EQ(got.job().eta_ms(), 0);
  EXPECT_EQ(got.job().eta_note(), "waits on work with no expected end");
  EXPECT_FALSE(got.job().has_what_if());
  observe("tomorrow", R"({"slots":"many","priority":99999999999,"pool":"nowhere","ahead":[7]})");
  ASSERT_TRUE(queue_->GetJob(Ctx().get(), req, &got).ok());
  EXPECT_EQ(got.job().eta_ms(), 0);
  EXPECT_EQ(got.job().eta_note(), "");
  EXPECT_FALSE(got.job().what_if().has_slots());
  EXPECT_FALSE(got.job().what_if().has_priority());
  EXPECT_FALSE(got.job().what_if().has_pool()) << "a pool this master does not have";
  EXPECT_EQ(got.job().what_if().ahead_size(), 0);
  observe("tomorrow", R"({"pool":"gpu","ahead":[]})");
  ASSERT_TRUE(queue_->GetJob(Ctx().get(), req, &got).ok());
  EXPECT_FALSE(got.job().what_if().has_pool()) << "the job's own pool";

  req.set_job_id("exp-9");
  EXPECT_EQ(queue_->GetJob(Ctx().get(), req, &got).error_code(), grpc::StatusCode::NOT_FOUND);
  req.set_job_id("");
  EXPECT_EQ(queue_->GetJob(Ctx().get(), req, &got).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

// A pool that is not configured is refused, named, rather than shown as an empty queue.
TEST_F(ServiceTest, QueueReadsRefuseAnUnknownPool) {
  v1::GetJobsRequest jobs;
  jobs.set_resource_pool("gpus");
  grpc::Status s = queue_->GetJobs(Ctx().get(), jobs, Ignored<v1::GetJobsResponse>());
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "resource_pool: no resource pool named \"gpus\"");
  jobs.set_resource_pool("cpu");
  EXPECT_TRUE(queue_->GetJobs(Ctx().get(), jobs, Ignored<v1::GetJobsResponse>()).ok());

  v1::GetJobQueueStatsRequest stats;
  stats.add_resource_pools("gpu");
  stats.add_resource_pools("gpus");
  s = queue_->GetJobQueueStats(Ctx().get(), stats, Ignored<v1::GetJobQueueStatsResponse>());
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "resource_pools[1]: no resource pool named \"gpus\"");
  stats.mutable_resource_pools()->RemoveLast();
  v1::GetJobQueueStatsResponse resp;
  ASSERT_TRUE(queue_->GetJobQueueStats(Ctx().get(), stats, &resp).ok());
  ASSERT_EQ(resp.results_size(), 1);
  EXPECT_EQ(resp.results(0).resource_pool(), "gpu");
}

// exp-1's and exp-10's allocations sit next to each other in id order; each job sees only its own.
// States filter and pages apply before copying out.
TEST_F(ServiceTest, QueueStatesAmongSimilarIdsFiltersAndPages) {
  std::vector<v1::Experiment> exps;
  for (int i = 0; i < 11; ++i) exps.push_back(Create("resources: {slots_per_trial: 4}\n"));
  ASSERT_EQ(exps[9].job_id(), "exp-10");
  Play(Get(exps[0].id()).trials(0).allocation_id(), core::PodPhase::kRunning);
  Play(Get(exps[9].id()).trials(0).allocation_id(), core::PodPhase::kRunning);

  v1::GetJobsRequest req;
  req.add_states(v1::JOB_STATE_SCHEDULED);
  v1::GetJobsResponse resp;
  ASSERT_TRUE(queue_->GetJobs(Ctx().get(), req, &resp).ok());
  EXPECT_THAT(Ids({resp.jobs().begin(), resp.jobs().end()}), ElementsAre("exp-1", "exp-10"));
  EXPECT_EQ(resp.jobs(1).allocated_slots(), 4);
  EXPECT_EQ(resp.pagination().total(), 2);

  req.set_states(0, v1::JOB_STATE_QUEUED);
  req.set_offset(2);
  req.set_limit(3);
  resp.Clear();
  ASSERT_TRUE(queue_->GetJobs(Ctx().get(), req, &resp).ok());
  EXPECT_THAT(Ids({resp.jobs().begin(), resp.jobs().end()}),
              ElementsAre("exp-4", "exp-5", "exp-6"));
  EXPECT_EQ(resp.jobs(0).position(), 3);  // Positions count every job of the pool.
  EXPECT_EQ(resp.jobs(0).jobs_ahead(), 2);
  EXPECT_EQ(resp.pagination().total(), 9);

  req.set_states(0, v1::JOB_STATE_UNSPECIFIED);
  EXPECT_EQ(queue_->GetJobs(Ctx().get(), req, &resp).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

// A move made while the moved job's pods are being created reaches those pods too (the move's own
// relabel finds no pod yet).
TEST_F(ServiceTest, MoveDuringPodCreationRelabelsThePods) {
  Create("resources: {slots_per_trial: 4}\n");
  std::atomic<bool> moved = false;
  absl::Status move;
  pods_.OnCreate([&](const nlohmann::json& pod) {
    if (pod["metadata"]["labels"][std::string(kube::kJobIdLabel)] == "exp-2" &&
        !moved.exchange(true)) {
      move = jobs_->Move("exp-2", "exp-1", /*ahead=*/true, admin_);
    }
    return absl::OkStatus();
  });
  Create("resources: {slots_per_trial: 4}\n");
  ASSERT_TRUE(moved);
  ASSERT_TRUE(move.ok()) << move;
  const double position = store_->GetJob("exp-2")->queue_position;
  EXPECT_LT(position, store_->GetJob("exp-1")->queue_position);
  int pods = 0;
  for (const auto& [key, pod] : pods_.pods()) {
    const nlohmann::json& labels = pod["metadata"]["labels"];
    if (labels[std::string(kube::kJobIdLabel)] != "exp-2") continue;
    ++pods;
    EXPECT_EQ(labels[std::string(kube::kQueuePositionLabel)], FormatQueuePosition(position));
  }
  EXPECT_EQ(pods, 1);
}

// A job stored as ended whose run was not stopped (a kill cut short by the database) has its pods
// deleted by the next master's recovery.
TEST_F(ServiceTest, RecoveryStopsRunsOfEndedJobs) {
  const v1::Experiment exp = Create("resources: {slots_per_trial: 8}\n");
  const std::string alloc = Get(exp.id()).trials(0).allocation_id();
  JobRecord job = *store_->GetJob(exp.job_id());
  job.state = RunState::kCanceled;
  ASSERT_TRUE(store_->UpdateJob(job).ok());  // What a kill stores first.
  ASSERT_EQ(pods_.pods().size(), 2u);

  server_.reset();
  jobs_ = std::make_unique<JobManager>(config_, *store_, pods_);
  ASSERT_TRUE(jobs_->Recover().ok());
  EXPECT_TRUE(pods_.pods().empty());
  EXPECT_EQ(store_->GetAllocation(alloc)->state, AllocState::kTerminating);
}

TEST_F(ServiceTest, RecoveryReattachesDeletesOrphansAndNeverDuplicates) {
  v1::Experiment a = Create("resources: {slots_per_trial: 8}\n");
  const std::string alloc = Get(a.id()).trials(0).allocation_id();
  nlohmann::json orphan = pods_.pods().begin()->second;
  orphan["metadata"]["name"] = "exp-999-trial-1-r1-0";
  orphan["metadata"]["labels"]["phalanx.io/gang"] = "exp-999-trial-1-r1";
  ASSERT_TRUE(pods_.CreatePod(orphan).ok());
  const int creates = pods_.creates();

  // A new master on the same database and cluster.
  server_.reset();
  jobs_ = std::make_unique<JobManager>(config_, *store_, pods_);
  ASSERT_TRUE(jobs_->Recover().ok());
  EXPECT_EQ(pods_.creates(), creates);  // Re-attached, nothing duplicated.
  EXPECT_THAT(pods_.deleted(), ElementsAre("exp-999-trial-1-r1-0"));
  EXPECT_EQ(jobs_->GetJob(a.job_id())->trials[0].allocation->id, alloc);

  // A gang that lost a pod meanwhile is replaced by a new run. Recover deletes the rest of the
  // old gang before the pod watch starts, so no deletion is ever watched: the watch's first list
  // (without them) ends the old run.
  ASSERT_TRUE(pods_.DeletePod("gpu-ns", alloc + "-1").ok());
  jobs_ = std::make_unique<JobManager>(config_, *store_, pods_);
  ASSERT_TRUE(jobs_->Recover().ok());
  EXPECT_EQ(store_->GetAllocation(alloc)->state, AllocState::kTerminating);
  std::set<std::string> listed;
  for (const auto& [key, pod] : pods_.pods()) listed.insert(pod["metadata"]["name"]);
  jobs_->OnPodsListed("gpu-ns", listed);
  EXPECT_EQ(store_->GetAllocation(alloc)->state, AllocState::kTerminated);
  const JobView view = *jobs_->GetJob(a.job_id());
  ASSERT_TRUE(view.trials[0].allocation.has_value());
  EXPECT_NE(view.trials[0].allocation->id, alloc);
  EXPECT_EQ(view.trials[0].trial.runs, 2);
}

}  // namespace
}  // namespace phalanx::master
