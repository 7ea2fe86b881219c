// The JobManager driven from many threads at once, as phalanx-master drives it (gRPC handlers, the
// pod watcher, the ticker), on a real Postgres (fixture `postgres`) and a fake cluster. Built
// without gRPC, so that the tsan stage of scripts/test-assurance runs it under ThreadSanitizer
// (label `threaded`). Checks that every call succeeds or is refused for a stated reason, and that
// once every job is killed and its pods are gone, nothing is left open.
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "kube/decode.h"
#include "master/config/config.h"
#include "master/jobs/job_manager.h"
#include "master/store/store.h"
#include "tests/master/testing/fake_pod_client.h"
#include "tests/master/testing/pg_fixture.h"

namespace phalanx::master {
namespace {

// One pool, `default`; runs told to stop go after 1 s.
constexpr char kMaster[] = "max_slots_per_pod: 4\npreemption_timeout: 1s\n";

constexpr int kSubmitters = 2;
constexpr int kJobsEach = 6;

class JobManagerThreadsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string url = testing::FreshDatabaseUrl();
    ASSERT_FALSE(url.empty());
    absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(url);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    absl::StatusOr<MasterConfig> config = ParseMasterConfig(kMaster);
    ASSERT_TRUE(config.ok()) << config.status();
    jobs_ = std::make_unique<JobManager>(*std::move(config), *store_, pods_);
    ASSERT_TRUE(jobs_->Recover().ok());
  }

  // Job ids submitted so far, for the threads that change them.
  std::vector<std::string> Submitted() {
    absl::MutexLock lock(&mu_);
    return submitted_;
  }

  void Submit(int submitter) {
    const User user{.username = "user" + std::to_string(submitter)};
    for (int i = 0; i < kJobsEach; ++i) {
      absl::StatusOr<JobView> job =
          i % 3 == 2 ? jobs_->LaunchTask(TaskType::kCommand, "", {"sleep", "1"}, user)
                     : jobs_->CreateExperiment("resources: {slots_per_trial: 2}\n", user, true);
      ASSERT_TRUE(job.ok()) << job.status();
      absl::MutexLock lock(&mu_);
      submitted_.push_back(job->job.job_id);
    }
  }

  // The cluster (one thread at a time): binds and runs every pod it holds, and confirms the
  // master's deletions.
  void PlayCluster() {
    for (const std::string& name : pods_.deleted()) {
      if (reaped_.insert(name).second) jobs_->OnPodDeleted(namespace_of_[name], name);
    }
    for (const auto& [key, pod] : pods_.pods()) {
      namespace_of_[pod["metadata"]["name"]] = pod["metadata"]["namespace"];
      jobs_->OnPod(testing::FakePodClient::StateOf(pod, core::PodPhase::kRunning, true));
    }
  }

  // Changes the jobs submitted so far, as users would.
  void Change(int round) {
    const User admin{.username = "admin", .admin = true};
    for (const std::string& id : Submitted()) {
      absl::Status s = round % 3 == 0   ? jobs_->SetPriority(id, 10 + round % 50, admin)
                       : round % 3 == 1 ? jobs_->Pause(id, admin)
                                        : jobs_->Activate(id, admin);
      // A task cannot be paused: the only refusal these calls may give.
      EXPECT_TRUE(s.ok() || absl::IsFailedPrecondition(s) || absl::IsInvalidArgument(s)) << s;
    }
  }

  int OpenAllocations() {
    int open = 0;
    for (const auto& [state, n] : jobs_->Stats().open_allocations) open += n;
    return open;
  }

  void Read() {
    EXPECT_TRUE(jobs_->Queue("").ok());
    (void)jobs_->Queue("gpu", {}, 0, 10);
    (void)jobs_->Stats();
    EXPECT_TRUE(jobs_->ListJobs(JobFilter{}).ok());
  }

  std::unique_ptr<Store> store_;
  testing::FakePodClient pods_;
  std::unique_ptr<JobManager> jobs_;
  std::set<std::string> reaped_;
  std::map<std::string, std::string> namespace_of_;
  absl::Mutex mu_;
  std::vector<std::string> submitted_ ABSL_GUARDED_BY(mu_);
};

// Runs `body(round)` in a loop on its own thread until `stop`.
std::thread Loop(std::atomic<bool>& stop, std::function<void(int)> body) {
  return std::thread([&stop, body = std::move(body)] {
    for (int round = 0; !stop.load(); ++round) body(round);
  });
}

TEST_F(JobManagerThreadsTest, ConcurrentCallsLeaveNothingOpenOnceAllIsKilled) {
  std::atomic<bool> stop = false;
  std::vector<std::thread> background;
  background.push_back(Loop(stop, [&](int) { PlayCluster(); }));
  background.push_back(Loop(stop, [&](int) { jobs_->Tick(absl::Now()); }));
  background.push_back(Loop(stop, [&](int round) { Change(round); }));
  background.push_back(Loop(stop, [&](int) { Read(); }));
  std::vector<std::thread> submitters;
  for (int s = 0; s < kSubmitters; ++s) submitters.emplace_back([this, s] { Submit(s); });
  for (std::thread& t : submitters) t.join();
  absl::SleepFor(absl::Milliseconds(300));
  stop = true;
  for (std::thread& t : background) t.join();

  const User admin{.username = "admin", .admin = true};
  ASSERT_EQ(Submitted().size(), size_t{kSubmitters * kJobsEach});
  std::vector<std::thread> killers;
  for (const std::string& id : Submitted()) {
    killers.emplace_back([&, id] { EXPECT_TRUE(jobs_->Kill(id, admin).ok()) << id; });
  }
  for (std::thread& t : killers) t.join();
  for (int i = 0; i < 50 && (!pods_.pods().empty() || OpenAllocations() > 0); ++i) {
    PlayCluster();
    jobs_->Tick(absl::Now());
  }
  EXPECT_GE(pods_.creates(), kSubmitters * kJobsEach);
  EXPECT_GT(jobs_->Stats().pod_events, 0);
  EXPECT_TRUE(pods_.pods().empty());
  EXPECT_EQ(OpenAllocations(), 0);
  for (const std::string& id : Submitted()) {
    absl::StatusOr<JobView> job = jobs_->GetJob(id);
    ASSERT_TRUE(job.ok()) << job.status();
    EXPECT_EQ(job->job.state, RunState::kCanceled) << id;
  }
}

}  // namespace
}  // namespace phalanx::master
