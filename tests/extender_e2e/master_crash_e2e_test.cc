// phalanx-master killed with SIGKILL while 100 experiments are being submitted over gRPC, then
// restarted, three times: every experiment the master acknowledged is still there, and no trial
// has live pods of two allocations at once (the Watcher checks that at every pod event).
#include <signal.h>

#include <atomic>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "tests/extender_e2e/master_harness.h"

namespace phalanx::e2e {
namespace {

using MasterCrashE2e = MasterE2eTest;

constexpr int kSubmissions = 100;

TEST_F(MasterCrashE2e, KillNineDuringSubmissionsLosesNothingAndDuplicatesNoPod) {
  AddNodes("n", 2, 8);
  StartExtender(8);
  StartMaster(8);
  std::mt19937 rng(E2eSeed());

  absl::Mutex mu;
  std::map<int64_t, std::string> acked;  // Experiment id -> name, once CreateExperiment answered.
  int retries = 0;
  std::atomic<int> submitted{0};
  std::atomic<bool> abandon{false};
  std::thread submitter([&] {
    auto channel = grpc::CreateChannel(master_address(), grpc::InsecureChannelCredentials());
    std::string token;
    for (int i = 0; i < kSubmissions && !abandon; ++i) {
      const std::string name = absl::StrCat("sub-", i);
      int tries = 0;
      const int64_t id = SubmitUntilAcknowledged(channel, token, name, tries);
      absl::MutexLock lock(&mu);
      if (id > 0) acked[id] = name;
      retries += tries;  // Not acknowledged: the caller submits again, as a user would.
      submitted = i + 1;
    }
  });

  for (int kill = 1; kill <= 3; ++kill) {
    const int at = kill * 25 + static_cast<int>(rng() % 10);
    while (submitted < at && submitted < kSubmissions) absl::SleepFor(absl::Milliseconds(1));
    absl::SleepFor(absl::Milliseconds(rng() % 40));
    StopMaster(SIGKILL);
    std::printf("kill %d after %d submissions\n", kill, submitted.load());
    absl::SleepFor(absl::Milliseconds(rng() % 500));
    StartMaster(8);
    if (HasFatalFailure()) break;
  }
  abandon = HasFatalFailure();
  submitter.join();
  ASSERT_EQ(submitted, kSubmissions);

  // Every acknowledged experiment is stored, active, and ends with one live allocation of its one
  // trial (running or queued gated) once the master reconciled.
  absl::MutexLock lock(&mu);
  std::printf("%zu acknowledged, %d submissions retried\n", acked.size(), retries);
  EXPECT_EQ(acked.size(), static_cast<size_t>(kSubmissions));
  for (const auto& [id, name] : acked) {
    v1::GetExperimentResponse e = GetExperiment(id);
    EXPECT_EQ(e.experiment().name(), name) << id;
    EXPECT_EQ(e.experiment().state(), v1::EXPERIMENT_STATE_ACTIVE) << id;
  }
  EXPECT_TRUE(WaitUntil([&] {
    std::set<std::string> live;
    for (const PodState& p : Pods()) {
      if (p.Live()) live.insert(p.info.gang.substr(0, p.info.gang.find("-trial-")));
    }
    for (const auto& [id, name] : acked) {
      if (!live.count(GetExperiment(id).experiment().job_id())) return false;
    }
    return true;
  })) << "some acknowledged experiment has no pods";
  Settle();
  // The restarted master accounts for what it re-attached to.
  int scheduled = 0;
  for (const v1::Job& j : Jobs()) {
    if (j.state() != v1::JOB_STATE_SCHEDULED) continue;
    ++scheduled;
    EXPECT_EQ(j.allocated_slots(), j.requested_slots()) << j.job_id();
  }
  EXPECT_EQ(scheduled, 16) << "2 nodes of 8 GPUs run 16 one-GPU experiments";
  ShowQueue("after 100 submissions and 3 kills");
}

}  // namespace
}  // namespace phalanx::e2e
