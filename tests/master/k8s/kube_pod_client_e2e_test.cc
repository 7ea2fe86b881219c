// KubePodClient against the real test cluster's kube-apiserver (tests/cluster, fixture
// test_cluster): SetPodAnnotation sets one annotation of a pod, leaving its others and its labels
// as they were, in a form kube::DecodePod reads back as phalanx-extender does; a run's Service
// (rendezvous.h) is valid to the API server, and is created once, listed and deleted.
#include <memory>
#include <string>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "kube/client.h"
#include "kube/decode.h"
#include "master/k8s/kube_pod_client.h"
#include "master/pods/pod_builder.h"
#include "master/pods/rendezvous.h"
#include "nlohmann/json.hpp"
#include "simdjson.h"
#include "tests/kube/test_cluster.h"

namespace phalanx::master {
namespace {

constexpr char kNamespace[] = "default";

// A pod no scheduler serves (so it stays where it is), with a label and an annotation of its own.
nlohmann::json TestPod(const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", name},
            {"namespace", kNamespace},
            {"labels", {{"phalanx-master-e2e", name}}},
            {"annotations", {{"note", "kept"}}}}},
          {"spec",
           {{"schedulerName", "phalanx-master-e2e-none"},
            {"terminationGracePeriodSeconds", 0},
            {"containers", {{{"name", "main"}, {"image", "busybox"}}}}}}};
}

class KubePodClientE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<kube::Config> config = phalanx::testing::TestClusterConfig();
    ASSERT_TRUE(config.ok()) << config.status();
    client_ = std::make_unique<kube::Client>(*std::move(config));
    pods_ = std::make_unique<KubePodClient>(*client_);
    name_ = phalanx::testing::UniqueName("annotated");
  }
  void TearDown() override {
    if (pods_ != nullptr) {
      EXPECT_TRUE(pods_->ForceDeletePod(kNamespace, name_).ok());
    }
  }

  // The pod as the API server stores it, decoded as the extender decodes it.
  core::PodInfo Stored(nlohmann::json* annotations) {
    absl::StatusOr<std::string> body = client_->Get(kube::kPods, kNamespace, name_);
    EXPECT_TRUE(body.ok()) << body.status();
    if (!body.ok()) return {};
    *annotations = nlohmann::json::parse(*body)["metadata"]["annotations"];
    simdjson::dom::element e;
    EXPECT_EQ(parser_.parse(*body).get(e), simdjson::SUCCESS);
    absl::StatusOr<core::PodInfo> info = kube::DecodePod(e);
    EXPECT_TRUE(info.ok()) << info.status();
    return info.ok() ? *info : core::PodInfo{};
  }

  std::unique_ptr<kube::Client> client_;
  std::unique_ptr<KubePodClient> pods_;
  std::string name_;
  simdjson::dom::parser parser_;
};

TEST_F(KubePodClientE2eTest, SetPodAnnotationSetsThatAnnotationAlone) {
  ASSERT_TRUE(pods_->CreatePod(TestPod(name_)).ok());
  const std::string key(kube::kCheckpointedAtAnnotation);
  for (const int64_t ms : {int64_t{1764385475123}, int64_t{1764385535456}}) {
    ASSERT_TRUE(pods_->SetPodAnnotation(kNamespace, name_, key, FormatPodTime(ms)).ok());
    nlohmann::json annotations;
    const core::PodInfo stored = Stored(&annotations);
    EXPECT_EQ(annotations, nlohmann::json({{"note", "kept"}, {key, FormatPodTime(ms)}}));
    EXPECT_EQ(stored.checkpoint_ms, ms);
    EXPECT_EQ(stored.contract_error, "");
  }
  ASSERT_TRUE(pods_->SetPodLabel(kNamespace, name_, "phalanx-master-e2e", "relabelled").ok());
  nlohmann::json annotations;
  EXPECT_EQ(Stored(&annotations).checkpoint_ms, 1764385535456) << "a label patch leaves it";

  const absl::Status gone = pods_->SetPodAnnotation(kNamespace, name_ + "-gone", key, "x");
  EXPECT_TRUE(absl::IsNotFound(gone)) << gone;
}

TEST_F(KubePodClientE2eTest, ARunsServiceIsCreatedOnceListedAndDeleted) {
  const nlohmann::json service = RunService(kNamespace, name_, "exp-1");
  ASSERT_TRUE(pods_->CreateService(service).ok());
  const absl::Status again = pods_->CreateService(service);
  EXPECT_TRUE(absl::IsAlreadyExists(again)) << again;
  absl::StatusOr<std::vector<std::string>> listed = pods_->ListServices(kNamespace);
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_TRUE(absl::c_linear_search(*listed, name_));
  absl::StatusOr<std::string> stored = client_->Get(kube::kServices, kNamespace, name_);
  ASSERT_TRUE(stored.ok()) << stored.status();
  const nlohmann::json spec = nlohmann::json::parse(*stored)["spec"];
  EXPECT_EQ(spec["clusterIP"], "None");
  EXPECT_EQ(spec["selector"], service["spec"]["selector"]);
  EXPECT_EQ(spec["publishNotReadyAddresses"], true);

  ASSERT_TRUE(pods_->DeleteService(kNamespace, name_).ok());
  EXPECT_TRUE(pods_->DeleteService(kNamespace, name_).ok()) << "already gone is done";
  listed = pods_->ListServices(kNamespace);
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_FALSE(absl::c_linear_search(*listed, name_));
}

}  // namespace
}  // namespace phalanx::master
