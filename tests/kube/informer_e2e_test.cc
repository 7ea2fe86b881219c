// kube::Informer against the real test cluster: the snapshot follows node and pod changes, through
// forced watch restarts and server-side watch timeouts.
#include <functional>
#include <memory>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "kube/client.h"
#include "kube/informer.h"
#include "tests/kube/test_cluster.h"

namespace phalanx::kube {
namespace {

using Snapshot = core::ClusterSnapshot;

// Waits (on the informer's change notifications) until `ok` holds for its snapshot.
bool Eventually(const Informer& informer, const std::function<bool(const Snapshot&)>& ok,
                absl::Duration timeout = absl::Seconds(30)) {
  absl::Time deadline = absl::Now() + timeout;
  while (true) {
    uint64_t seen = informer.version();
    if (ok(*informer.Snapshot())) return true;
    if (absl::Now() > deadline) return false;
    informer.WaitForChange(seen, absl::Seconds(1));
  }
}

class KubeInformerE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<Config> config = testing::TestClusterConfig();
    ASSERT_TRUE(config.ok()) << config.status();
    client_ = std::make_unique<Client>(*std::move(config));
    run_ = testing::UniqueName("run");
    options_.pod_label_selector = absl::StrCat("phalanx-kube-e2e=", run_);
    options_.node_label_selector = options_.pod_label_selector;
    options_.initial_backoff = absl::Milliseconds(50);
  }
  void TearDown() override {
    if (client_ == nullptr) return;
    DeleteOptions now;
    now.grace_period_seconds = 0;
    if (!pod_.empty()) client_->Delete(kPods, "default", pod_, now).IgnoreError();
    if (!node_.empty()) client_->Delete(kNodes, "", node_).IgnoreError();
  }
  std::string Labels() const { return absl::StrCat(R"({"phalanx-kube-e2e":")", run_, R"("})"); }
  void CreateNode() {
    node_ = testing::UniqueName("kube-e2e-node");
    ASSERT_TRUE(
        client_
            ->Create(kNodes, "",
                     absl::StrCat(R"({"metadata":{"name":")", node_, R"(","labels":)", Labels(),
                                  R"(},"spec":{"unschedulable":true,"taints":[{"key":)",
                                  R"("phalanx-kube-e2e","effect":"NoSchedule"}]},)",
                                  R"("status":{"allocatable":{"cpu":"8","nvidia.com/gpu":"4"}}})"))
            .ok());
  }
  std::string CreatePod() {
    pod_ = testing::UniqueName("informed");
    absl::StatusOr<std::string> created = client_->Create(
        kPods, "default",
        absl::StrCat(R"({"metadata":{"name":")", pod_, R"(","labels":)", Labels(),
                     R"(},"spec":{"schedulerName":"phalanx-kube-e2e-none",)",
                     R"("schedulingGates":[{"name":"phalanx.io/admission"}],)",
                     R"("containers":[{"name":"c","image":"x","resources":{"requests":)",
                     R"({"cpu":"2"},"limits":{"nvidia.com/gpu":"1"}}}]}})"));
    EXPECT_TRUE(created.ok()) << created.status();
    const std::string json = created.value_or("{}");
    simdjson::dom::parser parser;
    std::string_view uid;
    EXPECT_EQ(parser.parse(json)["metadata"]["uid"].get(uid), simdjson::SUCCESS);
    return std::string(uid);
  }

  std::unique_ptr<Client> client_;
  std::string run_;
  std::string node_;
  std::string pod_;
  InformerOptions options_;
};

TEST_F(KubeInformerE2eTest, SnapshotFollowsNodesAndPodsThroughForcedWatchRestart) {
  Informer informer(*client_, options_);
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(absl::Seconds(30)));
  EXPECT_TRUE(informer.HasSynced());
  EXPECT_EQ(informer.Snapshot()->node_count(), 0);

  CreateNode();
  ASSERT_TRUE(Eventually(informer, [&](const Snapshot& s) {
    std::optional<int> i = s.NodeIndex(node_);
    return i && s.node(*i).unschedulable && s.node(*i).taints.size() == 1 &&
           s.node(*i).allocatable == core::Resources(8000, 0, 4);
  }));

  const std::string uid = CreatePod();
  core::Resources requests(2000, 0, 1);
  requests.Set(core::kPods, 1);
  ASSERT_TRUE(Eventually(informer, [&](const Snapshot& s) {
    const core::PodInfo* p = s.FindPod(uid);
    return p != nullptr && p->gated && p->requests == requests;
  }));

  // Remove the gate, then bind: the node's used capacity follows.
  ASSERT_TRUE(client_
                  ->Patch(kPods, "default", pod_, PatchType::kJson,
                          R"([{"op":"remove","path":"/spec/schedulingGates"}])")
                  .ok());
  ASSERT_TRUE(client_->Bind("default", pod_, node_).ok());
  ASSERT_TRUE(Eventually(informer, [&](const Snapshot& s) {
    std::optional<int> i = s.NodeIndex(node_);
    return i && s.used(*i) == requests && s.PodsOnNode(*i).size() == 1;
  }));

  int64_t restarts = informer.counters().watch_restarts;
  informer.RestartWatches();
  ASSERT_TRUE(Eventually(informer, [&](const Snapshot&) {
    return informer.counters().watch_restarts >= restarts + 2;  // Both watches reopened.
  }));
  ASSERT_TRUE(client_
                  ->Patch(kNodes, "", node_, PatchType::kStrategicMerge,
                          R"({"spec":{"unschedulable":false,"taints":[]}})")
                  .ok());
  absl::StatusOr<std::string> marked =
      client_->Patch(kPods, "default", pod_, PatchType::kMerge,
                     R"({"metadata":{"labels":{"phalanx.io/preempt":"requested"}}})");
  ASSERT_TRUE(marked.ok()) << marked.status();
  ASSERT_TRUE(Eventually(informer, [&](const Snapshot& s) {
    std::optional<int> i = s.NodeIndex(node_);
    const core::PodInfo* p = s.FindPod(uid);
    return i && !s.node(*i).unschedulable && s.node(*i).taints.empty() && p != nullptr &&
           p->preempt_requested;
  }));
  // The cache's pods resourceVersion is at least the mark's.
  simdjson::dom::parser parser;
  std::string_view mark_version;
  ASSERT_EQ(parser.parse(*marked)["metadata"]["resourceVersion"].get(mark_version),
            simdjson::SUCCESS);
  uint64_t mark = 0, seen = 0;
  ASSERT_TRUE(absl::SimpleAtoi(std::string(mark_version), &mark)) << mark_version;
  ASSERT_TRUE(absl::SimpleAtoi(informer.pods_resource_version(), &seen))
      << informer.pods_resource_version();
  EXPECT_GE(seen, mark);

  DeleteOptions now;
  now.grace_period_seconds = 0;
  ASSERT_TRUE(client_->Delete(kPods, "default", pod_, now).ok());
  ASSERT_TRUE(Eventually(informer, [&](const Snapshot& s) {
    std::optional<int> i = s.NodeIndex(node_);
    return s.FindPod(uid) == nullptr && i && s.used(*i).IsZero();
  }));
  ASSERT_TRUE(client_->Delete(kNodes, "", node_).ok());
  ASSERT_TRUE(Eventually(informer, [&](const Snapshot& s) { return s.node_count() == 0; }));

  InformerCounters c = informer.counters();
  EXPECT_EQ(c.nodes, 0);
  EXPECT_EQ(c.pods, 0);
  EXPECT_GE(c.events, 8);
  EXPECT_EQ(c.decode_errors, 0);
  EXPECT_EQ(c.relists, 0);
  informer.Stop();
}

TEST_F(KubeInformerE2eTest, ResumesAfterServerSideWatchTimeouts) {
  options_.watch_timeout_seconds = 1;
  Informer informer(*client_, options_);
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(absl::Seconds(30)));
  ASSERT_TRUE(Eventually(informer,
                         [&](const Snapshot&) { return informer.counters().watch_restarts >= 4; }));
  const std::string uid = CreatePod();
  ASSERT_TRUE(Eventually(informer, [&](const Snapshot& s) { return s.FindPod(uid) != nullptr; }));
  EXPECT_EQ(informer.counters().errors, 0) << informer.counters().last_error;
}

}  // namespace
}  // namespace phalanx::kube
