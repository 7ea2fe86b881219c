// kube::Client against the real test cluster: pod CRUD with every patch type, paging, binding,
// watches, and the error codes the apiserver answers with.
#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kube/client.h"
#include "kube/decode.h"
#include "kube/json.h"
#include "kube/status.h"
#include "tests/kube/test_cluster.h"

namespace phalanx::kube {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

// No scheduler serves this name, so test pods stay where the test puts them.
constexpr absl::string_view kNoScheduler = "phalanx-kube-e2e-none";

std::string PodJson(const std::string& name, const std::string& run, bool gated) {
  return absl::StrCat(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")", name,
                      R"(","labels":{"phalanx-kube-e2e":")", run,
                      R"("}},"spec":{"schedulerName":")", kNoScheduler,
                      R"(","terminationGracePeriodSeconds":0,)",
                      gated ? R"("schedulingGates":[{"name":"phalanx.io/admission"}],)" : "",
                      R"("containers":[{"name":"main","image":"busybox","resources":)",
                      R"({"requests":{"cpu":"500m","memory":"1Gi"}}}]}})");
}

// A cordoned, tainted node that kwok does not manage, so no other test's pod lands on it.
std::string NodeJson(const std::string& name, const std::string& run) {
  return absl::StrCat(
      R"({"apiVersion":"v1","kind":"Node","metadata":{"name":")", name,
      R"(","labels":{"phalanx-kube-e2e":")", run, R"("}},"spec":{"unschedulable":true,)",
      R"("taints":[{"key":"phalanx-kube-e2e","effect":"NoSchedule"}]},)",
      R"("status":{"allocatable":{"cpu":"8","memory":"32Gi","nvidia.com/gpu":"4","pods":"110"}}})");
}

class KubeClientE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<Config> config = testing::TestClusterConfig();
    ASSERT_TRUE(config.ok()) << config.status();
    client_ = std::make_unique<Client>(*std::move(config));
    run_ = testing::UniqueName("run");
  }
  void TearDown() override {
    if (client_ == nullptr) return;
    DeleteOptions now;
    now.grace_period_seconds = 0;
    for (const std::string& pod : pods_) client_->Delete(kPods, "default", pod, now).IgnoreError();
    for (const std::string& node : nodes_) client_->Delete(kNodes, "", node).IgnoreError();
  }

  // Creates a pod (deleted in TearDown) and returns it decoded.
  core::PodInfo CreatePod(const std::string& name, bool gated) {
    absl::StatusOr<std::string> created =
        client_->Create(kPods, "default", PodJson(name, run_, gated));
    EXPECT_TRUE(created.ok()) << created.status();
    pods_.push_back(name);
    return Decode(created.value_or("{}"));
  }
  core::PodInfo Decode(const std::string& json) {
    simdjson::dom::element e;
    EXPECT_EQ(parser_.parse(json).get(e), simdjson::SUCCESS);
    absl::StatusOr<core::PodInfo> pod = DecodePod(e);
    EXPECT_TRUE(pod.ok()) << pod.status();
    return pod.value_or(core::PodInfo());
  }

  std::unique_ptr<Client> client_;
  std::string run_;
  std::vector<std::string> pods_;
  std::vector<std::string> nodes_;
  simdjson::dom::parser parser_;
};

TEST_F(KubeClientE2eTest, PodLifecycleWithEveryPatchType) {
  const std::string name = testing::UniqueName("crud");
  core::PodInfo created = CreatePod(name, /*gated=*/true);
  EXPECT_TRUE(created.gated);
  core::Resources requests(500, 1LL << 30, 0);
  requests.Set(core::kPods, 1);
  EXPECT_EQ(created.requests, requests);

  absl::StatusOr<std::string> got = client_->Get(kPods, "default", name);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(Decode(*got).uid, created.uid);

  ListOptions by_label;
  by_label.label_selector = absl::StrCat("phalanx-kube-e2e=", run_);
  by_label.field_selector = absl::StrCat("metadata.name=", name);
  std::vector<std::string> uids;
  absl::StatusOr<std::string> version =
      client_->ListAll(kPods, "default", by_label, [&](simdjson::dom::element item) {
        absl::StatusOr<core::PodInfo> pod = DecodePod(item);
        if (pod.ok()) uids.push_back(pod->uid);
        return pod.status();
      });
  ASSERT_TRUE(version.ok()) << version.status();
  EXPECT_FALSE(version->empty());
  EXPECT_THAT(uids, ElementsAre(created.uid));

  absl::StatusOr<std::string> merged =
      client_->Patch(kPods, "default", name, PatchType::kMerge,
                     R"({"metadata":{"labels":{"phalanx.io/preempt":"requested"},)"
                     R"("annotations":{"phalanx.io/preempted-by":"default/head"}}})");
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_TRUE(Decode(*merged).preempt_requested);
  EXPECT_EQ(Decode(*merged).preempted_by, "default/head");

  // The admission patch of the contract: placement annotation + hostname pin while gated.
  absl::StatusOr<std::string> strategic =
      client_->Patch(kPods, "default", name, PatchType::kStrategicMerge,
                     R"({"metadata":{"annotations":{"phalanx.io/placement":"node-0"}},)"
                     R"("spec":{"nodeSelector":{"kubernetes.io/hostname":"node-0"}}})");
  ASSERT_TRUE(strategic.ok()) << strategic.status();
  core::PodInfo placed = Decode(*strategic);
  EXPECT_EQ(placed.placement, "node-0");
  EXPECT_THAT(placed.node_selector, ElementsAre(Pair("kubernetes.io/hostname", "node-0")));

  absl::StatusOr<std::string> ungated = client_->Patch(
      kPods, "default", name, PatchType::kJson,
      R"([{"op":"test","path":"/spec/schedulingGates/0/name","value":"phalanx.io/admission"},)"
      R"({"op":"remove","path":"/spec/schedulingGates"}])");
  ASSERT_TRUE(ungated.ok()) << ungated.status();
  EXPECT_FALSE(Decode(*ungated).gated);

  DeleteOptions now;
  now.grace_period_seconds = 0;
  now.uid_precondition = created.uid;
  ASSERT_TRUE(client_->Delete(kPods, "default", name, now).ok());
  absl::Status gone = client_->Get(kPods, "default", name).status();
  EXPECT_EQ(gone.code(), absl::StatusCode::kNotFound) << gone;
  EXPECT_EQ(HttpCode(gone), 404);
}

TEST_F(KubeClientE2eTest, ListPagesWithContinueTokens) {
  std::vector<std::string> names;
  for (int i = 0; i < 3; ++i) {
    names.push_back(absl::StrCat(run_, "-page-", i));
    CreatePod(names.back(), /*gated=*/true);
  }
  ListOptions page;
  page.label_selector = absl::StrCat("phalanx-kube-e2e=", run_);
  page.limit = 1;
  absl::StatusOr<std::string> first = client_->List(kPods, "default", page);
  ASSERT_TRUE(first.ok()) << first.status();
  simdjson::dom::element doc;
  ASSERT_EQ(parser_.parse(*first).get(doc), simdjson::SUCCESS);
  std::string_view token;
  ASSERT_EQ(doc["metadata"]["continue"].get(token), simdjson::SUCCESS);
  EXPECT_FALSE(token.empty());

  std::vector<std::string> seen;
  absl::StatusOr<std::string> version =
      client_->ListAll(kPods, "", page, [&](simdjson::dom::element item) {
        std::string_view name;
        if (item["metadata"]["name"].get(name) == simdjson::SUCCESS) seen.emplace_back(name);
        return absl::OkStatus();
      });
  ASSERT_TRUE(version.ok()) << version.status();
  EXPECT_THAT(seen, UnorderedElementsAre(names[0], names[1], names[2]));
}

// kubeconfig tls-server-name: the apiserver's certificate (for 127.0.0.1 and localhost) is checked
// against that name, while the connection goes to the server's own host.
TEST_F(KubeClientE2eTest, TlsServerNameIsWhatTheCertificateIsCheckedAgainst) {
  absl::StatusOr<Config> config = testing::TestClusterConfig();
  ASSERT_TRUE(config.ok()) << config.status();
  config->tls_server_name = "localhost";
  absl::Status named = Client(*config).Get(kNamespaces, "", "default").status();
  EXPECT_TRUE(named.ok()) << named;
  config->tls_server_name = "kube.invalid";
  absl::Status wrong = Client(*config).Get(kNamespaces, "", "default").status();
  EXPECT_FALSE(wrong.ok());
  EXPECT_THAT(wrong.message(), HasSubstr("certificate subject name")) << wrong;
  EXPECT_THAT(wrong.message(), HasSubstr("kube.invalid")) << wrong;
}

TEST_F(KubeClientE2eTest, ErrorsCarryHttpCodes) {
  absl::Status missing = client_->Get(kPods, "default", testing::UniqueName("missing")).status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound) << missing;
  EXPECT_EQ(HttpCode(missing), 404);

  const std::string name = testing::UniqueName("dup");
  core::PodInfo pod = CreatePod(name, /*gated=*/true);
  absl::Status dup = client_->Create(kPods, "default", PodJson(name, run_, true)).status();
  EXPECT_EQ(dup.code(), absl::StatusCode::kAlreadyExists) << dup;
  EXPECT_EQ(HttpCode(dup), 409);

  absl::Status stale = client_
                           ->Patch(kPods, "default", name, PatchType::kMerge,
                                   R"({"metadata":{"resourceVersion":"1","labels":{"a":"b"}}})")
                           .status();
  EXPECT_EQ(stale.code(), absl::StatusCode::kAborted) << stale;
  EXPECT_EQ(HttpCode(stale), 409);

  DeleteOptions wrong_uid;
  wrong_uid.uid_precondition = "not-" + pod.uid;
  absl::Status precondition = client_->Delete(kPods, "default", name, wrong_uid);
  EXPECT_EQ(HttpCode(precondition), 409) << precondition;

  absl::Status invalid =
      client_
          ->Create(kPods, "default",
                   R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"no-containers"},)"
                   R"("spec":{"containers":[]}})")
          .status();
  EXPECT_EQ(invalid.code(), absl::StatusCode::kInvalidArgument) << invalid;
  EXPECT_EQ(HttpCode(invalid), 422);
}

TEST_F(KubeClientE2eTest, BindPodToNodeCreatedThroughTheApi) {
  const std::string node = testing::UniqueName("kube-e2e-node");
  ASSERT_TRUE(client_->Create(kNodes, "", NodeJson(node, run_)).ok());
  nodes_.push_back(node);
  const std::string name = testing::UniqueName("bind");
  core::PodInfo pod = CreatePod(name, /*gated=*/false);

  absl::Status wrong_uid = client_->Bind("default", name, node, "not-" + pod.uid);
  EXPECT_EQ(HttpCode(wrong_uid), 409) << wrong_uid;
  ASSERT_TRUE(client_->Bind("default", name, node, pod.uid).ok());
  absl::StatusOr<std::string> got = client_->Get(kPods, "default", name);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(Decode(*got).node, node);
  // Bound to that node already (as when a resent request arrives second): success.
  EXPECT_TRUE(client_->Bind("default", name, node).ok());
  EXPECT_TRUE(client_->Bind("default", name, node, pod.uid).ok());
  absl::Status elsewhere = client_->Bind("default", name, node + "-other");
  EXPECT_EQ(elsewhere.code(), absl::StatusCode::kAborted) << elsewhere;
  absl::Status other_pod = client_->Bind("default", name, node, "not-" + pod.uid);
  EXPECT_EQ(HttpCode(other_pod), 409) << other_pod;
}

TEST_F(KubeClientE2eTest, WatchSeesAddedModifiedDeleted) {
  ListOptions mine;
  mine.label_selector = absl::StrCat("phalanx-kube-e2e=", run_);
  absl::StatusOr<std::string> version = client_->ListAll(
      kPods, "default", mine, [](simdjson::dom::element) { return absl::OkStatus(); });
  ASSERT_TRUE(version.ok()) << version.status();

  std::atomic<bool> stop{false};
  std::vector<std::pair<EventType, std::string>> events;
  WatchResult result;
  std::thread watcher([&] {
    WatchOptions options;
    options.label_selector = mine.label_selector;
    options.resource_version = *version;
    options.stop = &stop;
    result = client_->Watch(kPods, "default", options,
                            [&](EventType type, simdjson::dom::element object) {
                              std::string_view name;
                              EXPECT_EQ(object["metadata"]["name"].get(name), simdjson::SUCCESS);
                              events.emplace_back(type, std::string(name));
                              return type != EventType::kDeleted;
                            });
  });
  const std::string name = testing::UniqueName("watched");
  CreatePod(name, /*gated=*/true);
  ASSERT_TRUE(client_
                  ->Patch(kPods, "default", name, PatchType::kMerge,
                          R"({"metadata":{"annotations":{"x":"y"}}})")
                  .ok());
  DeleteOptions now;
  now.grace_period_seconds = 0;
  ASSERT_TRUE(client_->Delete(kPods, "default", name, now).ok());
  std::thread guard([&] {
    for (int i = 0; i < 300 && !stop; ++i) absl::SleepFor(absl::Milliseconds(100));
    stop = true;
  });
  watcher.join();
  stop = true;
  guard.join();
  EXPECT_TRUE(result.status.ok()) << result.status;
  EXPECT_FALSE(result.resource_version.empty());
  // Deleting produces one more MODIFIED (deletionTimestamp) before DELETED.
  events.erase(std::unique(events.begin(), events.end()), events.end());
  EXPECT_THAT(events, ElementsAre(Pair(EventType::kAdded, name), Pair(EventType::kModified, name),
                                  Pair(EventType::kDeleted, name)));
}

TEST_F(KubeClientE2eTest, WatchEndsOnServerTimeoutAndOnStop) {
  WatchOptions options;
  options.label_selector = absl::StrCat("phalanx-kube-e2e=", run_);
  options.timeout_seconds = 1;
  auto never = [](EventType, simdjson::dom::element) { return true; };
  absl::Time start = absl::Now();
  WatchResult timed_out = client_->Watch(kPods, "", options, never);
  EXPECT_TRUE(timed_out.status.ok()) << timed_out.status;
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));

  std::atomic<bool> stop{false};
  options.timeout_seconds = 60;
  options.stop = &stop;
  std::thread stopper([&] {
    absl::SleepFor(absl::Milliseconds(300));
    stop = true;
  });
  start = absl::Now();
  WatchResult stopped = client_->Watch(kPods, "", options, never);
  stopper.join();
  EXPECT_TRUE(stopped.status.ok()) << stopped.status;
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

}  // namespace
}  // namespace phalanx::kube
