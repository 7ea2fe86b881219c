// What a run's pods tell phalanx-extender about their trial's past (service_fixture.h: real
// Postgres, a fake cluster): ReportCheckpoint patches the checkpoint's time on the run's pods
// (phalanx.io/checkpointed-at), and a patch the API server refuses neither fails the report nor
// loses the checkpoint; a preempted run's recreated pods carry the trial's preemption times
// (phalanx.io/preempted-at, the newest 16, oldest first) and its checkpoint time, which pauses and
// re-plans do not add to and a restart of the master does not lose.
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "tests/master/testing/decoded_pod.h"
#include "tests/master/testing/service_fixture.h"

namespace phalanx::master {
namespace {

using ::testing::HasSubstr;

class PodHistoryTest : public ServiceTest {
 protected:
  // The pods of `allocation`, by rank.
  std::vector<nlohmann::json> PodsOf(const std::string& allocation) {
    std::vector<nlohmann::json> out;
    for (const auto& [key, pod] : pods_.pods()) {
      if (pod["metadata"]["labels"][std::string(kube::kGangLabel)] == allocation) {
        out.push_back(pod);
      }
    }
    return out;
  }

  // `pod` as the extender decodes it; its history must parse.
  static core::PodInfo Decoded(nlohmann::json pod) {
    core::PodInfo info = phalanx::testing::Decoded(std::move(pod));
    EXPECT_EQ(info.contract_error, "");
    return info;
  }

  // The history every pod of `allocation` carries (they must agree); none when it has no pods.
  core::PodInfo HistoryOf(const std::string& allocation) {
    const std::vector<nlohmann::json> pods = PodsOf(allocation);
    EXPECT_FALSE(pods.empty()) << allocation;
    if (pods.empty()) return {};
    const core::PodInfo first = Decoded(pods[0]);
    for (const nlohmann::json& pod : pods) {
      const core::PodInfo info = Decoded(pod);
      EXPECT_EQ(info.checkpoint_ms, first.checkpoint_ms) << pod["metadata"]["name"];
      EXPECT_EQ(info.preempted_ms, first.preempted_ms) << pod["metadata"]["name"];
    }
    return first;
  }

  // The open run of the job's first trial.
  std::string RunOf(const std::string& job_id) {
    absl::StatusOr<JobView> view = jobs_->GetJob(job_id);
    EXPECT_TRUE(view.ok()) << view.status();
    if (!view.ok() || !view->trials[0].allocation) return "";
    return view->trials[0].allocation->id;
  }

  // The trial process reports a checkpoint of `allocation` (directly: the master may be a new
  // one, without a gRPC server).
  void Checkpoint(const std::string& allocation, const std::string& uuid) {
    absl::Status s = jobs_->ReportCheckpoint(allocation, uuid, 100);
    EXPECT_TRUE(s.ok()) << s;
  }

  // Plays `allocation`'s pods marked by the extender, naming `by` as the preemptor.
  void PlayMarked(const std::string& allocation, core::PodPhase phase, const std::string& by) {
    for (const nlohmann::json& pod : PodsOf(allocation)) {
      PodState s = FakePodClient::StateOf(pod, phase, phase != core::PodPhase::kPending);
      s.preempt_requested = true;
      s.preempted_by = by;
      jobs_->OnPod(s);
    }
  }

  // The extender preempts the job's running run for another gang; the trial acknowledges, its pods
  // go, and the run after it is created. Its id.
  std::string Preempt(const std::string& job_id) {
    const std::string run = RunOf(job_id);
    Play(run, core::PodPhase::kRunning);
    PlayMarked(run, core::PodPhase::kRunning, "gpu-ns/exp-99-trial-99-r1");
    absl::Status acked = jobs_->AckPreemption(run);
    EXPECT_TRUE(acked.ok()) << acked;
    ReapDeleted();
    const std::string next = RunOf(job_id);
    EXPECT_NE(next, run);
    return next;
  }

  // A new master on the same database (opened again) and cluster.
  void RestartMaster() {
    server_.reset();
    jobs_.reset();
    store_ = *Store::Open(url_);
    jobs_ = std::make_unique<JobManager>(config_, *store_, pods_);
    ASSERT_TRUE(jobs_->Recover().ok());
  }
};

// Each checkpoint's time lands on every pod of the run as the store recorded it, and the run that
// resumes from it carries the same time from its creation.
TEST_F(PodHistoryTest, ReportCheckpointPatchesTheRunsPods) {
  const v1::Experiment exp = Create("resources: {slots_per_trial: 8}\n");  // Two pods.
  const std::string run = RunOf(exp.job_id());
  Play(run, core::PodPhase::kRunning);
  EXPECT_EQ(HistoryOf(run).checkpoint_ms, 0) << "no checkpoint yet";

  const int64_t before = absl::ToUnixMillis(absl::Now());
  v1::ReportCheckpointRequest req;
  req.set_allocation_id(run);
  req.set_uuid("ckpt-1");
  req.set_steps_completed(100);
  ASSERT_TRUE(
      allocations_->ReportCheckpoint(Ctx().get(), req, Ignored<v1::ReportCheckpointResponse>())
          .ok());
  const int64_t after = absl::ToUnixMillis(absl::Now());
  ASSERT_EQ(PodsOf(run).size(), 2u);
  const int64_t first = HistoryOf(run).checkpoint_ms;
  EXPECT_GE(first, before - 1);
  EXPECT_LE(first, after + 1);
  EXPECT_EQ(first, store_->GetTrialHistory(Get(exp.id()).trials(0).id(), 16)->checkpoint_ms);

  absl::SleepFor(absl::Milliseconds(5));
  Checkpoint(run, "ckpt-2");
  const int64_t second = HistoryOf(run).checkpoint_ms;
  EXPECT_GT(second, first);

  const std::string next = Preempt(exp.job_id());
  EXPECT_EQ(HistoryOf(next).checkpoint_ms, second);
  EXPECT_EQ(jobs_->Stats().checkpoint_annotation_failures, 0);
}

// The checkpoint is durable before any pod is patched: a refused patch is logged and counted, the
// report succeeds, and the run's next checkpoint patches the pods.
TEST_F(PodHistoryTest, APatchFailureLeavesTheCheckpointRecorded) {
  std::vector<std::string> events;
  jobs_->SetEventLog([&](const std::string& line) { events.push_back(line); });
  const v1::Experiment exp = Create("resources: {slots_per_trial: 8}\n");
  const std::string run = RunOf(exp.job_id());
  Play(run, core::PodPhase::kRunning);
  pods_.OnAnnotate([](const std::string&) { return absl::UnavailableError("API server down"); });

  v1::ReportCheckpointRequest req;
  req.set_allocation_id(run);
  req.set_uuid("ckpt-1");
  req.set_steps_completed(100);
  const grpc::Status reported =
      allocations_->ReportCheckpoint(Ctx().get(), req, Ignored<v1::ReportCheckpointResponse>());
  EXPECT_TRUE(reported.ok()) << reported.error_message();
  EXPECT_EQ(Get(exp.id()).trials(0).latest_checkpoint(), "ckpt-1");
  EXPECT_EQ(HistoryOf(run).checkpoint_ms, 0) << "not patched";
  EXPECT_EQ(jobs_->Stats().checkpoint_annotation_failures, 2);
  EXPECT_THAT(events, ::testing::Contains(HasSubstr(
                          "annotating pod gpu-ns/" + run +
                          "-0 with its checkpoint time: API server down; written again at the "
                          "run's next checkpoint")));

  pods_.OnAnnotate(nullptr);
  Checkpoint(run, "ckpt-2");
  EXPECT_EQ(HistoryOf(run).checkpoint_ms,
            store_->GetTrialHistory(Get(exp.id()).trials(0).id(), 16)->checkpoint_ms);
  EXPECT_GT(HistoryOf(run).checkpoint_ms, 0);
}

// Each preemption adds its time to the pods of the runs after it: oldest first, the newest 16.
TEST_F(PodHistoryTest, RecreatedPodsCarryThePreemptionTimesOldestFirstCappedAt16) {
  const v1::Experiment exp = Create("resources: {slots_per_trial: 8}\n");
  EXPECT_TRUE(HistoryOf(RunOf(exp.job_id())).preempted_ms.empty()) << "a first run";
  std::vector<int64_t> before;
  for (int n = 1; n <= core::kMaxPreemptionHistory + 2; ++n) {
    const int64_t earliest = absl::ToUnixMillis(absl::Now());
    const std::vector<int64_t> got = HistoryOf(Preempt(exp.job_id())).preempted_ms;
    const size_t kept = std::min(n, core::kMaxPreemptionHistory);
    ASSERT_EQ(got.size(), kept) << "after " << n << " preemptions";
    EXPECT_GE(got.back(), earliest - 1) << "the newest is this one";
    // The earlier times stay, oldest first; past 16 the oldest goes.
    std::vector<int64_t> want(before.end() - (kept - 1), before.end());
    want.push_back(got.back());
    EXPECT_EQ(got, want) << "after " << n << " preemptions";
    before = got;
  }
}

// A pause is the owner's doing and a re-plan (the extender names the gang itself) loses no work:
// neither is a preemption. A run marked as a victim before it ran is one.
TEST_F(PodHistoryTest, PausesAndReplansAreNotPreemptions) {
  const v1::Experiment exp = Create("resources: {slots_per_trial: 4}\n");
  std::string run = RunOf(exp.job_id());
  Play(run, core::PodPhase::kRunning);
  ASSERT_TRUE(jobs_->Pause(exp.job_id(), admin_).ok());
  ASSERT_TRUE(jobs_->AckPreemption(run).ok());
  ReapDeleted();
  ASSERT_TRUE(jobs_->Activate(exp.job_id(), admin_).ok());
  run = RunOf(exp.job_id());
  EXPECT_TRUE(HistoryOf(run).preempted_ms.empty()) << "after a pause";

  PlayMarked(run, core::PodPhase::kPending, "gpu-ns/" + run);  // Re-planned.
  ReapDeleted();
  ASSERT_NE(RunOf(exp.job_id()), run);
  run = RunOf(exp.job_id());
  EXPECT_TRUE(HistoryOf(run).preempted_ms.empty()) << "after a re-plan";

  PlayMarked(run, core::PodPhase::kPending, "gpu-ns/exp-99-trial-99-r1");  // A victim.
  ReapDeleted();
  ASSERT_NE(RunOf(exp.job_id()), run);
  EXPECT_EQ(HistoryOf(RunOf(exp.job_id())).preempted_ms.size(), 1u);
}

// The history is the database's: a new master gives the next run every earlier preemption time and
// the latest checkpoint's time.
TEST_F(PodHistoryTest, HistorySurvivesAMasterRestart) {
  const v1::Experiment exp = Create("resources: {slots_per_trial: 8}\n");
  Preempt(exp.job_id());
  std::string run = Preempt(exp.job_id());
  const std::vector<int64_t> two = HistoryOf(run).preempted_ms;
  ASSERT_EQ(two.size(), 2u);
  Play(run, core::PodPhase::kRunning);
  Checkpoint(run, "ckpt-1");
  const int64_t checkpoint_ms = HistoryOf(run).checkpoint_ms;
  ASSERT_GT(checkpoint_ms, 0);

  RestartMaster();
  ASSERT_EQ(RunOf(exp.job_id()), run) << "re-attached";
  const core::PodInfo next = HistoryOf(Preempt(exp.job_id()));
  ASSERT_EQ(next.preempted_ms.size(), 3u);
  EXPECT_EQ(std::vector<int64_t>(next.preempted_ms.begin(), next.preempted_ms.begin() + 2), two);
  EXPECT_EQ(next.checkpoint_ms, checkpoint_ms);
}

}  // namespace
}  // namespace phalanx::master
