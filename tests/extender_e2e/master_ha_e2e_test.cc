// phalanx-master with a standby (master/store/leader_lock.h): two masters on one database. The
// active one is SIGKILLed while 100 experiments are submitted through one channel to both
// addresses (as the chart's Service routes to whichever is active), three times, each time brought
// back as the new standby. The standby takes over: every acknowledged submission is stored,
// experiments and trials are numbered without gaps or repeats, and no trial has live pods of two
// allocations at once (the Watcher checks that at every pod event). Masters started with POD_NAME
// label stand-in pods phalanx.io/master-role standby, then active. The time from each kill to the
// first call the new active master answers is printed for bench/RESULTS.md.
#include <signal.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "simdjson.h"
#include "tests/extender_e2e/master_harness.h"
#include "tests/extender_e2e/process.h"

namespace phalanx::e2e {
namespace {

constexpr int kSubmissions = 100;

// One master process of the pair.
struct Master {
  std::string name;  // Its stand-in pod.
  std::string address;
  std::string log;
  pid_t pid = -1;
};

class MasterHaE2e : public MasterE2eTest {
 protected:
  void TearDown() override {
    MasterE2eTest::TearDown();
    if (!ctl_ns_.empty()) client_->Delete(kube::kNamespaces, "", ctl_ns_).IgnoreError();
  }

  // A namespace with a pending pod per master, standing in for the masters' own pods.
  void MakeStandIns() {
    ctl_ns_ = ns_ + "-ctl";
    ASSERT_TRUE(client_
                    ->Create(kube::kNamespaces, "",
                             absl::StrCat(R"({"metadata":{"name":")", ctl_ns_, R"("}})"))
                    .ok());
    for (const Master& m : masters_) {
      ASSERT_TRUE(client_
                      ->Create(kube::kPods, ctl_ns_,
                               absl::StrCat(R"({"metadata":{"name":")", m.name,
                                            R"("},"spec":{"schedulerName":"nobody",)",
                                            R"("containers":[{"name":"m","image":"master"}]}})"))
                      .ok());
    }
  }

  std::string Role(const Master& m) {
    absl::StatusOr<std::string> pod = client_->Get(kube::kPods, ctl_ns_, m.name);
    if (!pod.ok()) return "";
    simdjson::dom::parser parser;
    simdjson::dom::element root;
    if (parser.parse(*pod).get(root) != simdjson::SUCCESS) return "";
    std::string_view role;
    if (root["metadata"]["labels"]["phalanx.io/master-role"].get(role) != simdjson::SUCCESS) {
      return "";
    }
    return std::string(role);
  }

  // When `m` last logged that it serves; the infinite past when it has not.
  absl::Time ServedAt(const Master& m) {
    std::ifstream in(m.log);
    absl::Time at = absl::InfinitePast();
    for (std::string line; std::getline(in, line);) {
      const size_t serving = line.find(" serving on port ");
      absl::Time t;
      if (serving != std::string::npos &&
          absl::ParseTime("%Y-%m-%dT%H:%M:%E3SZ", line.substr(16, serving - 16), &t, nullptr)) {
        at = t;
      }
    }
    return at;
  }

  void Spawn(Master& m) {
    m.pid = SpawnReplica(m.address, "127.0.0.1:0", m.log,
                         {"POD_NAME=" + m.name, "POD_NAMESPACE=" + ctl_ns_});
    ASSERT_GT(m.pid, 0);
    ASSERT_TRUE(WaitUntil([&] { return Role(m) == "standby"; }, absl::Seconds(60)))
        << m.name << " never labelled itself standby:\n"
        << Tail(m.log, 20);
  }

  std::string ctl_ns_;
  std::array<Master, 2> masters_{Master{.name = "master-a"}, Master{.name = "master-b"}};
};

TEST_F(MasterHaE2e, TheStandbyTakesOverWhenTheActiveMasterIsKilled) {
  AddNodes("n", 2, 8);
  StartExtender(8);
  ASSERT_NO_FATAL_FAILURE(MakeStandIns());
  // master-a starts as the harness's master (active, unlabelled); master-b is its standby.
  StartMaster(8);
  masters_[0].address = master_address();
  masters_[0].log = absl::StrCat(cluster_dir(), "/logs/master-", ns_, "-a.log");
  masters_[1].address = absl::StrCat("127.0.0.1:", FreePort());
  masters_[1].log = absl::StrCat(cluster_dir(), "/logs/master-", ns_, "-b.log");
  ASSERT_NO_FATAL_FAILURE(Spawn(masters_[1]));

  grpc::ChannelArguments args;
  // Clients that try to reconnect often (gRPC's defaults wait up to 20 s on loopback).
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 500);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 500);
  // Each channel its own connections, as in separate client processes.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  const std::string both = absl::StrCat("ipv4:", masters_[0].address, ",", masters_[1].address);
  absl::Mutex mu;
  std::map<int64_t, std::string> acked;  // Experiment id -> name, once CreateExperiment answered.
  std::atomic<int> submitted{0};
  std::atomic<bool> abandon{false};
  std::thread submitter([&] {
    auto channel = grpc::CreateCustomChannel(both, grpc::InsecureChannelCredentials(), args);
    std::string token;
    int retries = 0;
    for (int i = 0; i < kSubmissions && !abandon; ++i) {
      const std::string name = absl::StrCat("sub-", i);
      const int64_t id = SubmitUntilAcknowledged(channel, token, name, retries);
      if (id > 0) {
        absl::MutexLock lock(&mu);
        acked[id] = name;
      }
      submitted = i + 1;
      absl::SleepFor(absl::Milliseconds(50));  // So that every kill falls among the submissions.
    }
  });

  std::vector<double> takeovers;  // Until a client's call is answered.
  std::vector<double> serves;     // Until the new active master serves, by its log.
  int active = 0;
  for (int kill = 1; kill <= 3 && !HasFatalFailure(); ++kill) {
    while (submitted < kill * 25 && submitted < kSubmissions) absl::SleepFor(absl::Milliseconds(1));
    Master& dead = masters_[active];
    Master& next = masters_[1 - active];
    const absl::Time killed = absl::Now();
    if (dead.pid > 0) {
      StopReplica(dead.pid, SIGKILL);
    } else {
      StopMaster(SIGKILL);
    }
    dead.pid = -1;
    auto to_next =
        grpc::CreateCustomChannel(next.address, grpc::InsecureChannelCredentials(), args);
    while (Login(to_next).empty() && absl::Now() - killed < absl::Seconds(60)) {
      absl::SleepFor(absl::Milliseconds(20));
    }
    takeovers.push_back(absl::ToDoubleSeconds(absl::Now() - killed));
    serves.push_back(absl::ToDoubleSeconds(ServedAt(next) - killed));
    ASSERT_LT(takeovers.back(), 60) << next.name << " never took over:\n" << Tail(next.log, 30);
    EXPECT_TRUE(WaitUntil([&] { return Role(next) == "active"; }, absl::Seconds(30)))
        << next.name << " is not labelled active";
    std::printf("kill %d after %d submissions: %s active after %.2f s\n", kill, submitted.load(),
                next.name.c_str(), takeovers.back());
    ASSERT_NO_FATAL_FAILURE(Spawn(dead));  // Back, as the standby.
    active = 1 - active;
  }
  abandon = HasFatalFailure();
  submitter.join();
  ASSERT_EQ(submitted, kSubmissions);

  auto channel = grpc::CreateCustomChannel(both, grpc::InsecureChannelCredentials(), args);
  const std::string token = Login(channel);
  ASSERT_FALSE(token.empty());
  auto stub = v1::ExperimentService::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.AddMetadata("authorization", "Bearer " + token);
  v1::ListExperimentsRequest list;
  list.set_limit(1000);
  v1::ListExperimentsResponse all;
  ASSERT_TRUE(stub->ListExperiments(&ctx, list, &all).ok());
  std::set<int64_t> ids;
  for (const v1::Experiment& e : all.experiments()) {
    EXPECT_TRUE(ids.insert(e.id()).second) << "experiment id " << e.id() << " twice";
  }
  absl::MutexLock lock(&mu);
  EXPECT_EQ(acked.size(), static_cast<size_t>(kSubmissions));
  for (const auto& [id, name] : acked) {
    EXPECT_TRUE(ids.contains(id)) << "acknowledged experiment " << id << " (" << name << ") lost";
  }
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(*ids.begin(), 1);
  EXPECT_EQ(*ids.rbegin(), static_cast<int64_t>(ids.size())) << "experiment numbers have gaps";
  std::set<int64_t> trials;
  for (int64_t id : ids) {
    grpc::ClientContext c;
    c.AddMetadata("authorization", "Bearer " + token);
    v1::GetExperimentRequest req;
    req.set_id(id);
    v1::GetExperimentResponse resp;
    ASSERT_TRUE(stub->GetExperiment(&c, req, &resp).ok()) << id;
    for (const v1::Trial& t : resp.trials()) EXPECT_TRUE(trials.insert(t.id()).second) << t.id();
  }
  EXPECT_EQ(trials.size(), ids.size()) << "one trial each";
  EXPECT_EQ(*trials.rbegin(), static_cast<int64_t>(trials.size())) << "trial numbers have gaps";
  std::sort(takeovers.begin(), takeovers.end());
  std::sort(serves.begin(), serves.end());
  std::printf(
      "master takeover after SIGKILL of the active one: serving after p50 %.2f s, max %.2f s; "
      "a client's call answered after p50 %.2f s, max %.2f s; %zu stored for %d submissions (%zu "
      "submitted again after a lost answer were stored twice)\n",
      serves[serves.size() / 2], serves.back(), takeovers[takeovers.size() / 2], takeovers.back(),
      ids.size(), kSubmissions, ids.size() - acked.size());
  Settle();
}

}  // namespace
}  // namespace phalanx::e2e
