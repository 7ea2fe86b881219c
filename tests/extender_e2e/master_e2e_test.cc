// phalanx-master end to end on the real cluster, through gRPC, with the real phalanx-extender and
// kube-scheduler: the seeds' seven-step priority example (victims checkpoint through
// AllocationService before their pods go, then resume from that checkpoint), priorities,
// placements, the rendezvous of a run of two pods, its logs, and `phalanx job why`.
#include <csignal>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "kube/client.h"
#include "nlohmann/json.hpp"
#include "tests/extender_e2e/master_harness.h"
#include "tests/extender_e2e/process.h"

namespace phalanx::e2e {
namespace {

using MasterSevenStepE2e = MasterE2eTest;

std::string ExperimentYaml(const std::string& name, const std::string& searcher, int slots,
                           int priority) {
  return absl::StrCat("name: ", name, "\nsearcher: ", searcher,
                      "\nhyperparameters: {lr: {type: double, minval: 0.001, maxval: 0.1}}",
                      "\nresources: {slots_per_trial: ", slots, ", priority: ", priority, "}\n");
}

// The seeds' example (Determined's priorities 1, 2, 3 are the chart's classes high 100, medium 50,
// low 1) on two 4-GPU nodes with maxSlotsPerPod 4.
TEST_F(MasterSevenStepE2e, SevenStepPriorityExample) {
  AddNodes("n", 2, 4);
  StartExtender(4);
  StartMaster(4);

  const v1::Experiment asha = MustCreateExperiment(
      ExperimentYaml("asha", "{name: random, max_trials: 20, max_concurrent_trials: 20}", 1, 50));
  ASSERT_TRUE(WaitUntil([&] { return RunningAllocations(asha.job_id()).size() == 8; }));
  Settle();
  ShowQueue("1. priority-2 ASHA experiment, 20 one-slot trials: 8 run on all 8 GPUs");
  EXPECT_EQ(RunningAllocations(asha.job_id()).size(), 8u);
  EXPECT_EQ(Allocations(asha.job_id()).size(), 20u);

  const v1::Experiment dist1 =
      MustCreateExperiment(ExperimentYaml("dist-1", "{name: single}", 4, 100));
  const std::vector<std::string> victims = CheckpointVictims(asha.job_id(), 4);
  ASSERT_TRUE(WaitUntil([&] { return RunningAllocations(dist1.job_id()).size() == 1; }));
  Settle();
  ShowQueue("2. priority-1 4-slot experiment: 4 ASHA trials checkpoint and requeue; it runs");
  // Each victim's trial resumes gated under its next run, from the checkpoint it reported.
  for (const std::string& v : victims) {
    const std::string next = v.substr(0, v.rfind("-r")) + "-r2";
    EXPECT_TRUE(WaitUntil([&] { return Gated(next); })) << next;
    EXPECT_EQ(PodEnv(next, "PHALANX_LATEST_CHECKPOINT"), "ckpt-" + v);
  }

  const v1::Task notebook =
      LaunchTask(v1::TASK_TYPE_NOTEBOOK, "resources: {slots: 1, priority: 1}");
  Settle();
  ShowQueue("3. priority-3 notebook: waits behind the queued trials");
  EXPECT_TRUE(Gated(notebook.allocation_id())) << notebook.allocation_id();
  while (!Running(notebook.allocation_id())) {
    std::vector<std::string> running = RunningAllocations(asha.job_id());
    ASSERT_FALSE(running.empty()) << "the notebook waits with no ASHA trial left to finish";
    Complete(running.front());
    ASSERT_TRUE(WaitUntil([&] { return GangPods(running.front()).empty(); }));
    Settle();
  }
  // It started only once no ASHA trial waited (they needed at most 7 GPUs).
  for (const std::string& a : Allocations(asha.job_id())) EXPECT_FALSE(Gated(a)) << a;
  ShowQueue("3. ... trials complete; once the experiments need at most 7 GPUs the notebook runs");

  for (const std::string& a : RunningAllocations(asha.job_id())) Complete(a);
  Complete(RunningAllocations(dist1.job_id()).at(0));
  ASSERT_TRUE(WaitUntil(
      [&] { return Allocations(asha.job_id()).empty() && Allocations(dist1.job_id()).empty(); }));
  Settle();
  ShowQueue("4. ASHA and dist-1 complete; the notebook keeps running");
  for (int64_t id : {asha.id(), dist1.id()}) {
    EXPECT_TRUE(WaitUntil([&] {
      return GetExperiment(id).experiment().state() == v1::EXPERIMENT_STATE_COMPLETED;
    })) << "experiment "
        << id;
  }
  EXPECT_TRUE(Running(notebook.allocation_id()));

  const v1::Experiment dist2 =
      MustCreateExperiment(ExperimentYaml("dist-2", "{name: single}", 8, 100));
  Settle();
  ShowQueue("5. priority-1 8-slot experiment: cannot run (the notebook holds 1 GPU)");
  ASSERT_EQ(Allocations(dist2.job_id()).size(), 1u);
  EXPECT_TRUE(Gated(Allocations(dist2.job_id()).at(0)));

  const v1::Experiment dist3 =
      MustCreateExperiment(ExperimentYaml("dist-3", "{name: single}", 4, 50));
  ASSERT_TRUE(WaitUntil([&] { return RunningAllocations(dist3.job_id()).size() == 1; }));
  Settle();
  ShowQueue("6. priority-2 4-slot experiment: backfills onto the idle 4 GPUs");
  std::map<std::string, v1::JobState> states;
  EXPECT_TRUE(WaitUntil([&] {  // As the master has seen the pods.
    for (const v1::Job& j : Jobs()) states[j.job_id()] = j.state();
    return states[dist3.job_id()] == v1::JOB_STATE_SCHEDULED_BACKFILLED &&
           states[dist2.job_id()] == v1::JOB_STATE_QUEUED;
  })) << "dist-3 "
      << v1::JobState_Name(states[dist3.job_id()]) << ", dist-2 "
      << v1::JobState_Name(states[dist2.job_id()]);

  KillTask(notebook.id());
  const std::vector<std::string> dist3_victims = CheckpointVictims(dist3.job_id(), 1);
  ASSERT_TRUE(WaitUntil([&] { return RunningAllocations(dist2.job_id()).size() == 1; }));
  Settle();
  ShowQueue("7. the notebook is killed: dist-3 checkpoints and requeues; dist-2 runs");
  Complete(RunningAllocations(dist2.job_id()).at(0));
  ASSERT_TRUE(WaitUntil([&] { return RunningAllocations(dist3.job_id()).size() == 1; }));
  Settle();
  ShowQueue("7. ... dist-2 completes; dist-3 restarts from its checkpoint");
  const std::string resumed = RunningAllocations(dist3.job_id()).at(0);
  EXPECT_EQ(PodEnv(resumed, "PHALANX_LATEST_CHECKPOINT"), "ckpt-" + dist3_victims.at(0));
  EXPECT_TRUE(WaitUntil([&] {
    return GetExperiment(dist2.id()).experiment().state() == v1::EXPERIMENT_STATE_COMPLETED;
  }));
}

using MasterPriorityE2e = MasterE2eTest;

// A priority no chart class has runs under a class of exactly that value, which the master
// creates on first use: the pod's priority is what the experiment asked for. A later change leaves
// the running pods' priority, which the queue shows beside the new one.
TEST_F(MasterPriorityE2e, AnyPriorityRunsUnderAClassOfItsOwnValue) {
  AddNodes("n", 1, 4);
  StartExtender(4);
  StartMaster(4);
  const v1::Experiment e = MustCreateExperiment(ExperimentYaml("p70", "{name: single}", 4, 70));
  ASSERT_TRUE(WaitUntil([&] { return RunningAllocations(e.job_id()).size() == 1; }));
  const std::vector<PodState> pods = GangPods(RunningAllocations(e.job_id())[0]);
  ASSERT_EQ(pods.size(), 1u);
  EXPECT_EQ(pods[0].info.priority, 70);
  EXPECT_EQ(Jobs().at(0).priority(), 70);
  EXPECT_TRUE(Jobs().at(0).running_priorities().empty());
  // Once the master has seen it run: a change to a still-pending run recreates its pods.
  ASSERT_TRUE(WaitUntil([&] {
    const std::vector<v1::Job> jobs = Jobs();
    return jobs.size() == 1 && jobs[0].state() == v1::JOB_STATE_SCHEDULED;
  }));

  // The running trial keeps the priority its pods carry; the queue says so.
  SetExperimentPriority(e.id(), 80);
  const v1::Job job = Jobs().at(0);
  EXPECT_EQ(job.priority(), 80);
  ASSERT_EQ(job.running_priorities_size(), 1);
  EXPECT_EQ(job.running_priorities(0), 70);
}

using MasterRendezvousE2e = MasterE2eTest;

// A 16-slot trial at maxSlotsPerPod 8 runs as two pods with a headless Service that selects both
// and names their hostnames; their env agrees on chief, peers and world size. A master killed and
// restarted meanwhile neither duplicates nor loses the Service; it goes with the run. (The test
// cluster runs no DNS: that the names resolve is Kubernetes' part, not exercised here.)
TEST_F(MasterRendezvousE2e, ATwoPodTrialGetsItsServiceAndConsistentEnv) {
  AddNodes("n", 2, 8);
  StartExtender(8);
  StartMaster(8, "task_container_defaults: {gloo_port_range: \"20000:20999\"}\n");
  const v1::Experiment e = MustCreateExperiment(ExperimentYaml("dist", "{name: single}", 16, 50));
  ASSERT_TRUE(WaitUntil([&] { return RunningAllocations(e.job_id()).size() == 1; }));
  const std::string alloc = RunningAllocations(e.job_id())[0];
  const std::vector<PodState> pods = GangPods(alloc);
  ASSERT_EQ(pods.size(), 2u);

  auto services = [&] {
    std::vector<nlohmann::json> out;
    absl::StatusOr<std::string> list =
        client_->List(kube::kServices, ns_, {.label_selector = "phalanx.io/gang=" + alloc});
    EXPECT_TRUE(list.ok()) << list.status();
    if (list.ok()) out = nlohmann::json::parse(*list)["items"].get<std::vector<nlohmann::json>>();
    return out;
  };
  std::vector<nlohmann::json> found = services();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0]["metadata"]["name"], alloc);
  EXPECT_EQ(found[0]["spec"]["clusterIP"], "None");
  const std::string chief = absl::StrCat(alloc, "-0.", alloc, ".", ns_, ".svc");
  const std::string peers = absl::StrCat(chief, ",", alloc, "-1.", alloc, ".", ns_, ".svc");
  for (int rank = 0; rank < 2; ++rank) {
    absl::StatusOr<std::string> body =
        client_->Get(kube::kPods, ns_, absl::StrCat(alloc, "-", rank));
    ASSERT_TRUE(body.ok()) << body.status();
    const nlohmann::json pod = nlohmann::json::parse(*body);
    for (const auto& [key, value] : found[0]["spec"]["selector"].items()) {
      EXPECT_EQ(pod["metadata"]["labels"][key], value) << key;
    }
    EXPECT_EQ(pod["spec"]["hostname"], absl::StrCat(alloc, "-", rank));
    EXPECT_EQ(pod["spec"]["subdomain"], alloc);
    EXPECT_EQ(PodEnv(alloc, "PHALANX_POD_RANK", rank), std::to_string(rank));
    EXPECT_EQ(PodEnv(alloc, "PHALANX_NUM_PODS", rank), "2");
    EXPECT_EQ(PodEnv(alloc, "PHALANX_SLOTS_PER_POD", rank), "8");
    EXPECT_EQ(PodEnv(alloc, "PHALANX_WORLD_SIZE", rank), "16");
    EXPECT_EQ(PodEnv(alloc, "MASTER_ADDR", rank), chief);
    EXPECT_EQ(PodEnv(alloc, "MASTER_PORT", rank), "12355");
    EXPECT_EQ(PodEnv(alloc, "PHALANX_PEER_ADDRS", rank), peers);
    EXPECT_EQ(PodEnv(alloc, "GLOO_PORT_RANGE", rank), "20000:20999");
  }

  StopMaster(SIGKILL);
  StartMaster(8);
  Settle();
  EXPECT_EQ(services().size(), 1u) << "a restarted master keeps the run's one Service";
  EXPECT_EQ(RunningAllocations(e.job_id()), std::vector<std::string>{alloc});

  Complete(alloc);
  ASSERT_TRUE(WaitUntil([&] { return GangPods(alloc).empty() && services().empty(); }))
      << "the Service outlived its run";
}

using MasterTrialLogsE2e = MasterE2eTest;

// The logs of both pods of a trial's run, through the master, from the API server, which reads
// them from kwok (it serves every pod the lines of the cluster's pod.log; scripts/test-cluster).
// Following, a line written later reaches the reader from each pod.
TEST_F(MasterTrialLogsE2e, EveryRankThroughTheApiServerAndFollowed) {
  AddNodes("n", 2, 8);
  StartExtender(8);
  StartMaster(8);
  const v1::Experiment e = MustCreateExperiment(ExperimentYaml("logs", "{name: single}", 16, 50));
  ASSERT_TRUE(WaitUntil([&] { return RunningAllocations(e.job_id()).size() == 1; }));
  const std::string alloc = RunningAllocations(e.job_id())[0];
  v1::GetTrialLogsRequest req;
  req.set_trial_id(GetExperiment(e.id()).trials(0).id());

  std::map<std::string, std::vector<std::string>> lines;  // By pod.
  std::unique_ptr<grpc::ClientContext> ctx = Ctx();
  auto reader = experiments().GetTrialLogs(ctx.get(), req);
  for (v1::GetTrialLogsResponse line; reader->Read(&line);) {
    EXPECT_EQ(line.run(), 1);
    lines[line.pod()].push_back(line.line());
  }
  ASSERT_TRUE(reader->Finish().ok());
  ASSERT_EQ(lines.size(), 2u);
  for (int rank = 0; rank < 2; ++rank) {
    const std::vector<std::string>& got = lines[absl::StrCat(alloc, "-", rank)];
    ASSERT_GE(got.size(), 2u) << rank;
    EXPECT_EQ(got[0], "pod log line 1");
    EXPECT_EQ(got[1], "pod log line 2");
  }

  req.set_follow(true);
  req.set_rank(1);
  req.set_tail_lines(1);
  ctx = Ctx(absl::Seconds(60));
  reader = experiments().GetTrialLogs(ctx.get(), req);
  v1::GetTrialLogsResponse line;
  ASSERT_TRUE(reader->Read(&line));
  EXPECT_EQ(line.pod(), alloc + "-1");
  const std::string later = absl::StrCat("written later ", absl::ToUnixNanos(absl::Now()));
  std::ofstream(cluster_dir() + "/pod.log", std::ios::app)
      << "2026-01-01T00:00:02.000000000Z stdout F " << later << "\n";
  bool seen = false;
  while (!seen && reader->Read(&line)) seen = line.line() == later;
  EXPECT_TRUE(seen) << "a followed log missed a line written later";
  ctx->TryCancel();
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
}

using MasterPlacementE2e = MasterE2eTest;

// A trial whose pod asks for a host port that a pod on its planned node holds: kube-scheduler
// refuses it there. Once the extender marks the trial for re-planning, the master recreates it,
// and its next run goes to the other node (the extender keeps the job off the refusing one).
using MasterForecastE2e = MasterE2eTest;

// "Why pending, and when": on one 4-GPU node, exp-1 (4 slots, expected to run 30 minutes) runs and
// exp-2 waits. The extender's forecast reaches exp-2's pods, the master and `phalanx job why`: it
// starts when exp-1 ends (30 minutes from exp-1's start, plus the forecast's one-minute step), and
// it would start now at priority 51, preempting exp-1.
TEST_F(MasterForecastE2e, JobWhyOnTheRealCluster) {
  AddNodes("n", 1, 4);
  StartExtender(4, {"--forecast-interval-ms", "1000"});
  StartMaster(4);
  const std::string yaml =
      "searcher: {name: single, max_length: 1000}\nresources: {slots_per_trial: 4, "
      "expected_runtime: 30m}\n";
  const v1::Experiment first = MustCreateExperiment("name: first\n" + yaml);
  ASSERT_TRUE(WaitUntil([&] { return RunningAllocations(first.job_id()).size() == 1; }));
  const int64_t started_ms = absl::ToUnixMillis(absl::Now());
  const v1::Experiment second = MustCreateExperiment("name: second\n" + yaml);
  v1::Job waiting;
  ASSERT_TRUE(WaitUntil([&] {
    for (const v1::Job& j : Jobs()) {
      if (j.job_id() == second.job_id()) waiting = j;
    }
    return waiting.eta_ms() > 0 && waiting.has_what_if();
  })) << waiting.DebugString();
  EXPECT_GE(waiting.eta_ms(), started_ms + 29 * 60'000);
  EXPECT_LE(waiting.eta_ms(), started_ms + 33 * 60'000);
  EXPECT_EQ(waiting.eta_basis(), "resources.expected_runtime for 1000 batches, 1000 left");
  EXPECT_EQ(waiting.what_if().priority(), 51);
  ASSERT_EQ(waiting.what_if().victims_size(), 1);
  EXPECT_EQ(waiting.what_if().victims(0).job_id(), first.job_id());

  const std::string token_file = absl::StrCat(::testing::TempDir(), "/forecast-token");
  std::ofstream(token_file) << token();
  int status = 0;
  const std::string out =
      Command(absl::StrCat("PHALANX_TOKEN_FILE=", token_file, " ", PHALANX_CLI_BINARY,
                           " --master ", master_address(), " job why ", second.job_id(), " 2>&1"),
              &status);
  std::printf("%s", out.c_str());
  EXPECT_EQ(status, 0) << out;
  EXPECT_THAT(out, ::testing::HasSubstr("QUEUED: #2 in pool"));
  EXPECT_THAT(out, ::testing::ContainsRegex("Expected start: 20[0-9-]+ [0-9:]+ UTC \\(in "));
  EXPECT_THAT(out, ::testing::HasSubstr("  its runtime: resources.expected_runtime"));
  EXPECT_THAT(out, ::testing::HasSubstr(
                       absl::StrCat("at priority >= 51, preempting ", first.job_id(), " (admin)")));
  long code = 0;
  EXPECT_THAT(ExtenderGet("/debug/queue", &code), ::testing::HasSubstr("\"eta\":\"20"));
}

TEST_F(MasterPlacementE2e, ATrialKubeSchedulerRefusesRunsOffThatNode) {
  AddNodes("n", 2, 4);
  StartExtender(4, {"--refused-placement-timeout-ms", "3000"});
  StartMaster(4);
  const std::string first = NodeName("n", 0);
  Submit({.name = "squatter", .gpus = 1, .position = 1, .host_port = 9000});
  ASSERT_TRUE(WaitUntil([&] { return Running("squatter"); }));
  ASSERT_EQ(BoundNodes("squatter"), (std::vector<std::string>{first}));

  const v1::Experiment e = MustCreateExperiment(absl::StrCat(
      ExperimentYaml("ports", "{name: single}", 1, 50),
      "environment:\n  pod_spec:\n    apiVersion: v1\n    kind: Pod\n    spec:\n      "
      "containers:\n",
      "      - name: phalanx-container\n        ports: [{containerPort: 9000, hostPort: 9000}]\n"));
  ASSERT_TRUE(WaitUntil([&] { return RunningAllocations(e.job_id()).size() == 1; }))
      << "the trial never runs";
  const std::vector<PodState> pods = GangPods(RunningAllocations(e.job_id())[0]);
  ASSERT_EQ(pods.size(), 1u);
  EXPECT_EQ(pods[0].info.node, NodeName("n", 1));
  EXPECT_EQ(pods[0].info.avoid_nodes, std::vector<std::string>{first});
  const v1::GetExperimentResponse got = GetExperiment(e.id());
  ASSERT_EQ(got.trials_size(), 1);
  EXPECT_EQ(got.trials(0).restarts(), 0) << "a re-plan is not a failure";
}

// A node dies under a running trial. Its pod, evicted as the node lifecycle controller's taint
// manager would, stays terminating for good: no kubelet ends it, and the run cannot end. The
// master force-deletes it once terminating_pod_timeout has passed, and the trial's next run goes
// to a live node.
TEST_F(MasterPlacementE2e, ATrialOnANodeThatDiesResumesElsewhere) {
  const std::string doomed = AddUnmanagedNode("doomed", 4);
  StartExtender(4);
  StartMaster(4, "terminating_pod_timeout: 2s\n");
  const v1::Experiment e = MustCreateExperiment(ExperimentYaml("doomed", "{name: single}", 1, 50));
  ASSERT_TRUE(WaitUntil([&] {
    const std::vector<std::string> a = RunningAllocations(e.job_id());
    return a.size() == 1 && BoundNodes(a[0]) == std::vector<std::string>{doomed};
  })) << "the first run never ran on the only node";
  const std::string first = RunningAllocations(e.job_id())[0];
  SetPodRunning(first + "-0");
  ASSERT_TRUE(WaitUntil([&] {
    const std::vector<v1::Job> jobs = Jobs();
    return jobs.size() == 1 && jobs[0].state() == v1::JOB_STATE_SCHEDULED;
  }));

  LoseNode(doomed);
  AddNodes("n", 1, 4);
  ASSERT_TRUE(client_->Delete(kube::kPods, ns_, first + "-0", {.grace_period_seconds = 1}).ok());
  ASSERT_TRUE(WaitUntil([&] {
    const std::vector<std::string> a = RunningAllocations(e.job_id());
    return a.size() == 1 && a[0] != first;
  })) << "the trial never ran again";
  const std::string next = RunningAllocations(e.job_id())[0];
  EXPECT_EQ(BoundNodes(next), std::vector<std::string>{NodeName("n", 0)});
  EXPECT_TRUE(absl::IsNotFound(client_->Get(kube::kPods, ns_, first + "-0").status()))
      << "the stuck pod was force-deleted";
  const v1::GetExperimentResponse got = GetExperiment(e.id());
  ASSERT_EQ(got.trials_size(), 1);
  EXPECT_EQ(got.trials(0).restarts(), 0) << "a lost node is not the trial's failure";
}

}  // namespace
}  // namespace phalanx::e2e
