// High availability of the scheduler: two replicas, each a real kube-scheduler in a host of its own
// (scripts/test-cluster add-scheduler) with its own phalanx-extender following the kube-schedulers'
// leader-election Lease (leadership.h). The leading replica (both processes) is SIGKILLed while it
// admits many gangs, three times, each time brought back as the new standby, as Kubernetes
// restarts a pod. The standby takes over; no node is ever double-booked and no gang is ever partly
// bound (the Watcher checks both at every pod event, TearDown the final state); every gang runs in
// the end. The time from each kill to the standby's first round is printed for bench/RESULTS.md.
#include <signal.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "kube/client.h"
#include "tests/extender_e2e/harness.h"
#include "tests/extender_e2e/process.h"

namespace phalanx::e2e {
namespace {

// One scheduler replica: its kube-scheduler (started by the script) and its extender.
struct Replica {
  std::string name;
  int port = 0;
  pid_t extender = -1;
  std::string log;
};

class ExtenderHaE2e : public ExtenderE2eTest {
 protected:
  void SetUp() override {
    ExtenderE2eTest::SetUp();
    // Its own Lease and schedulerName, so the cluster's own kube-scheduler leaves these pods alone.
    lease_ = absl::StrCat("ha-", ns_.substr(ns_.size() - std::min<size_t>(ns_.size(), 40)));
    scheduler_name_ = lease_;
  }

  void TearDown() override {
    if (!HasFailure()) Settle();
    for (Replica& r : replicas_) Kill(r, SIGTERM);
    ExtenderE2eTest::TearDown();
    client_->Delete(kLeases, "kube-system", lease_).IgnoreError();
  }

  static constexpr kube::Resource kLeases{"/apis/coordination.k8s.io/v1", "leases", true};

  void Start(Replica& r) {
    if (r.port == 0) r.port = FreePort();
    ASSERT_GT(r.port, 0);
    r.log = absl::StrCat(cluster_dir(), "/logs/extender-", ns_, "-", r.name, ".log");
    int status = 0;
    const std::string out = Command(
        absl::StrCat(PHALANX_TEST_CLUSTER_SCRIPT, " add-scheduler --dir ", cluster_dir(),
                     " --name ", r.name, " --extender-port ", r.port, " --lease ", lease_, " 2>&1"),
        &status);
    ASSERT_EQ(status, 0) << out;
    r.extender =
        SpawnLogged({PHALANX_EXTENDER_BINARY, "--kubeconfig", kubeconfig(), "--listen",
                     absl::StrCat("127.0.0.1:", r.port), "--max-slots-per-pod", "4",
                     "--placement-key-file", key_path(), "--follow-lease", "kube-system/" + lease_,
                     "--lease-holder-prefix", r.name + "_", "--lease-poll-ms", "100"},
                    r.log);
    ASSERT_GT(r.extender, 0);
    ASSERT_TRUE(
        WaitFor([&] { return Metric(r, "phalanx_extender_leader") >= 0; }, absl::Seconds(60)))
        << r.name << "'s extender is not serving:\n"
        << Tail(r.log, 20);
  }

  // Both processes of the replica, by `signal` (SIGKILL: as a lost node or a crashed pod).
  void Kill(Replica& r, int signal) {
    if (signal == SIGKILL) {
      // The script started it in a process group of its own, led by the pid it wrote.
      std::ifstream pid_file(absl::StrCat(cluster_dir(), "/pids/kube-scheduler-", r.name));
      pid_t pid = 0;
      ASSERT_TRUE(pid_file >> pid) << "no pid file of " << r.name;
      ASSERT_EQ(::kill(-pid, SIGKILL), 0) << r.name << ": " << std::strerror(errno);
    } else {
      Command(absl::StrCat(PHALANX_TEST_CLUSTER_SCRIPT, " stop-scheduler --dir ", cluster_dir(),
                           " --name ", r.name));
    }
    if (r.extender > 0) StopProcess(r.extender, signal);
    r.extender = -1;
  }

  // The value of an unlabelled gauge on the replica's /metrics; -1 when it cannot be read.
  double Metric(const Replica& r, const std::string& name) {
    const std::string text =
        Command(absl::StrCat("curl -fsS --max-time 2 http://127.0.0.1:", r.port, "/metrics"));
    for (absl::string_view line : absl::StrSplit(text, '\n')) {
      if (!absl::ConsumePrefix(&line, name + " ")) continue;
      double v;
      if (absl::SimpleAtod(line, &v)) return v;
    }
    return -1;
  }

  bool Leads(const Replica& r) { return Metric(r, "phalanx_extender_leader") == 1; }

  bool WaitFor(const std::function<bool()>& pred, absl::Duration timeout) {
    for (absl::Time end = absl::Now() + timeout; absl::Now() < end;) {
      if (pred()) return true;
      absl::SleepFor(absl::Milliseconds(50));
    }
    return pred();
  }

  std::string lease_;
  std::array<Replica, 2> replicas_{Replica{.name = "ha-a"}, Replica{.name = "ha-b"}};
};

TEST_F(ExtenderHaE2e, TheStandbyTakesOverWhenTheLeaderIsKilled) {
  AddNodes("n", 4, 8);
  for (Replica& r : replicas_) ASSERT_NO_FATAL_FAILURE(Start(r));
  int leader = -1;
  ASSERT_TRUE(WaitFor(
      [&] {
        const bool a = Leads(replicas_[0]), b = Leads(replicas_[1]);
        leader = a ? 0 : 1;
        return a != b;
      },
      absl::Seconds(60)))
      << "no single leader";
  // 16 gangs of 2x4 GPUs on 32 GPUs: four run at once.
  constexpr int kGangs = 16;
  for (int g = 0; g < kGangs; ++g) {
    Submit({.name = absl::StrCat("g", g), .pods = 2, .gpus = 4, .position = g + 1});
  }
  std::vector<double> takeovers;
  int finished = 0;
  for (int kill = 0; kill < 3; ++kill) {
    if (kill == 0) {
      // Killed in its first round's writes: once the first placement shows.
      ASSERT_TRUE(WaitFor(
          [&] {
            for (const PodState& p : Pods()) {
              if (!p.info.placement.empty()) return true;
            }
            return false;
          },
          absl::Seconds(60)))
          << "the leader admits nothing";
    } else {
      // Killed as it admits the gangs that two finished ones made room for.
      for (int i = 0; i < 2; ++i, ++finished) {
        const std::string gang = absl::StrCat("g", finished);
        ASSERT_TRUE(WaitUntil([&] { return Running(gang); })) << gang << " never runs";
        Finish(gang);
      }
    }
    Replica& dead = replicas_[leader];
    Replica& next = replicas_[1 - leader];
    const absl::Time killed = absl::Now();
    Kill(dead, SIGKILL);
    ASSERT_TRUE(WaitFor([&] { return Leads(next); }, absl::Seconds(60)))
        << next.name << " never took over:\n"
        << Tail(next.log, 20);
    takeovers.push_back(absl::ToDoubleSeconds(absl::Now() - killed));
    ASSERT_NO_FATAL_FAILURE(Start(dead));  // Back, as the standby.
    EXPECT_FALSE(Leads(dead)) << dead.name << " leads beside " << next.name;
    leader = 1 - leader;
  }
  // The last leader admits the rest as gangs finish.
  for (; finished < kGangs; ++finished) {
    const std::string gang = absl::StrCat("g", finished);
    ASSERT_TRUE(WaitUntil([&] { return Running(gang); })) << gang << " never runs";
    Finish(gang);
  }
  std::vector<double> sorted = takeovers;
  std::sort(sorted.begin(), sorted.end());
  std::printf(
      "extender takeover after SIGKILL of the leader: %s s (p50 %.2f s, max %.2f s)\n",
      absl::StrJoin(takeovers, " ", [](std::string* out, double s) { absl::StrAppend(out, s); })
          .c_str(),
      sorted[sorted.size() / 2], sorted.back());
  EXPECT_LT(sorted.back(), 30) << "takeover far slower than the lease allows";
}

}  // namespace
}  // namespace phalanx::e2e
