// DecodePodState: the waiting containers of a pod's status (init containers first), which
// evictions are the cluster's doing (disrupted) and which are for the pod's own limits, and the
// node and deletion deadline. KubePodClient against a scripted API server: whether a node is down,
// force deletion, and the merge patches that set one annotation or label.
#include "master/k8s/kube_pod_client.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/kube/scripted_server.h"

namespace phalanx::master {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::FieldsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// A bound pod of allocation exp-1-trial-1-r1 with `status`.
nlohmann::json PodWithStatus(nlohmann::json status) {
  return {{"metadata",
           {{"name", "exp-1-trial-1-r1-0"},
            {"namespace", "gpu-ns"},
            {"uid", "uid-1"},
            {"labels", {{"phalanx.io/gang", "exp-1-trial-1-r1"}}}}},
          {"spec",
           {{"nodeName", "node-1"},
            {"initContainers", {{{"name", "fetch"}}}},
            {"containers", {{{"name", "trial"}}, {{"name", "sidecar"}}, {{"name", "logs"}}}}}},
          {"status", std::move(status)}};
}

absl::StatusOr<PodState> Decode(const nlohmann::json& pod) {
  static simdjson::dom::parser parser;
  simdjson::dom::element e;
  EXPECT_EQ(parser.parse(pod.dump()).get(e), simdjson::SUCCESS);
  return DecodePodState(e);
}

TEST(DecodePodStateTest, WaitingContainersInitContainersFirst) {
  absl::StatusOr<PodState> s = Decode(PodWithStatus(
      {{"phase", "Pending"},
       {"initContainerStatuses",
        {{{"name", "fetch"},
          {"state",
           {{"waiting",
             {{"reason", "CreateContainerConfigError"},
              {"message", "couldn't find key token in Secret gpu-ns/creds"}}}}}}}},
       {"containerStatuses",
        {{{"name", "trial"},
          {"state",
           {{"waiting",
             {{"reason", "ImagePullBackOff"},
              {"message", "Back-off pulling image \"phalanx.invalid/none\""}}}}}},
         {{"name", "sidecar"}, {"state", {{"running", {{"startedAt", "2025-01-01T00:00:00Z"}}}}}},
         {{"name", "logs"}, {"state", {{"waiting", {{"reason", "PodInitializing"}}}}}}}}}));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(s->waiting, ElementsAre(FieldsAre("fetch", "CreateContainerConfigError",
                                                "couldn't find key token in Secret gpu-ns/creds"),
                                      FieldsAre("trial", "ImagePullBackOff",
                                                "Back-off pulling image \"phalanx.invalid/none\""),
                                      FieldsAre("logs", "PodInitializing", "")));

  s = Decode(PodWithStatus({{"phase", "Pending"}}));  // No container status yet: none waits.
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(s->waiting, IsEmpty());
}

// Kubelet's eviction messages for a pod's own local storage limits (kubelet's eviction manager)
// make a pod over its own limit, not disrupted; other evictions and disruptions stay the
// cluster's doing.
TEST(DecodePodStateTest, EvictionsForThePodsOwnLimitsAreNotDisruptions) {
  for (const char* own : {
           "Pod ephemeral local storage usage exceeds the total limit of containers 2Gi. ",
           "Container trial exceeded its local ephemeral storage limit \"1Gi\". ",
           "Usage of EmptyDir volume \"scratch\" exceeds the limit \"10Gi\". ",
       }) {
    absl::StatusOr<PodState> s =
        Decode(PodWithStatus({{"phase", "Failed"}, {"reason", "Evicted"}, {"message", own}}));
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_FALSE(s->disrupted) << own;
    EXPECT_EQ(s->over_own_limit, std::string(own).substr(0, std::string(own).size() - 1)) << own;
  }
  for (const nlohmann::json& status : {
           nlohmann::json{{"phase", "Failed"},
                          {"reason", "Evicted"},
                          {"message", "The node was low on resource: ephemeral-storage. "}},
           nlohmann::json{{"phase", "Failed"}, {"reason", "Evicted"}},
           nlohmann::json{{"phase", "Failed"},
                          {"conditions", {{{"type", "DisruptionTarget"}, {"status", "True"}}}}},
       }) {
    absl::StatusOr<PodState> s = Decode(PodWithStatus(status));
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_TRUE(s->disrupted) << status;
    EXPECT_EQ(s->over_own_limit, "") << status;
  }
  absl::StatusOr<PodState> s = Decode(PodWithStatus(
      {{"phase", "Failed"}, {"message", "Pod ephemeral local storage usage exceeds the total"}}));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->over_own_limit, "") << "not evicted";
}

TEST(DecodePodStateTest, MalformedWaitingReasonNamesTheField) {
  absl::StatusOr<PodState> s = Decode(PodWithStatus(
      {{"containerStatuses", {{{"name", "trial"}, {"state", {{"waiting", {{"reason", 7}}}}}}}}}));
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("status.containerStatuses[0].state.waiting.reason"));
}

TEST(DecodePodStateTest, NodeAndDeletionDeadline) {
  nlohmann::json pod = PodWithStatus({{"phase", "Running"}});
  absl::StatusOr<PodState> s = Decode(pod);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->node, "node-1");
  EXPECT_TRUE(s->bound());
  EXPECT_FALSE(s->deleting());

  pod["metadata"]["deletionTimestamp"] = "2025-01-01T00:00:30Z";
  pod["spec"].erase("nodeName");
  s = Decode(pod);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_FALSE(s->bound());
  EXPECT_TRUE(s->deleting());
  EXPECT_EQ(s->deletion_deadline, absl::FromUnixSeconds(1735689630));

  pod["metadata"]["deletionTimestamp"] = "soon";
  s = Decode(pod);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("metadata.deletionTimestamp"));
}

// A node is down when it is gone or its Ready condition is anything but True.
TEST(KubePodClientTest, NodeDownReadsTheReadyCondition) {
  auto node = [](const char* ready) {
    nlohmann::json conditions =
        nlohmann::json::array({{{"type", "MemoryPressure"}, {"status", "False"}}});
    if (ready != nullptr) conditions.push_back({{"type", "Ready"}, {"status", ready}});
    return nlohmann::json{{"kind", "Node"}, {"status", {{"conditions", conditions}}}}.dump();
  };
  const std::map<std::string, phalanx::testing::ScriptedResponse> answers = {
      {"/api/v1/nodes/up", {200, {node("True")}}},
      {"/api/v1/nodes/unreachable", {200, {node("Unknown")}}},
      {"/api/v1/nodes/not-ready", {200, {node("False")}}},
      {"/api/v1/nodes/new", {200, {node(nullptr)}}},
      {"/api/v1/nodes/gone", {404, {R"({"kind":"Status","reason":"NotFound","code":404})"}}},
      {"/api/v1/nodes/broken", {500, {R"({"kind":"Status","message":"etcd down","code":500})"}}},
  };
  phalanx::testing::ScriptedServer server([&](const phalanx::testing::ScriptedRequest& r) {
    auto it = answers.find(r.target);
    return it == answers.end() ? phalanx::testing::ScriptedResponse{400, {"{}"}} : it->second;
  });
  kube::Client client(kube::Config{.server = server.url()});
  KubePodClient pods(client);
  for (const auto& [name, down] : std::map<std::string, bool>{{"up", false},
                                                              {"unreachable", true},
                                                              {"not-ready", true},
                                                              {"new", true},
                                                              {"gone", true}}) {
    absl::StatusOr<bool> got = pods.NodeDown(name);
    ASSERT_TRUE(got.ok()) << name << ": " << got.status();
    EXPECT_EQ(*got, down) << name;
  }
  absl::StatusOr<bool> broken = pods.NodeDown("broken");
  ASSERT_FALSE(broken.ok());
  EXPECT_THAT(broken.status().message(), HasSubstr("etcd down"));
}

// The API server with every pod but gpu-ns/gone.
phalanx::testing::ScriptedResponse NotFoundForGone(const phalanx::testing::ScriptedRequest& r) {
  if (r.target == "/api/v1/namespaces/gpu-ns/pods/gone") {
    return {404, {R"({"kind":"Status","reason":"NotFound","code":404})"}};
  }
  return {200, {R"({"kind":"Pod"})"}};
}

// Force deletion asks for grace period 0; a pod already gone is no error.
TEST(KubePodClientTest, ForceDeleteAsksForGracePeriodZero) {
  phalanx::testing::ScriptedServer server(NotFoundForGone);
  kube::Client client(kube::Config{.server = server.url()});
  KubePodClient pods(client);
  EXPECT_TRUE(pods.ForceDeletePod("gpu-ns", "stuck-0").ok());
  EXPECT_TRUE(pods.ForceDeletePod("gpu-ns", "gone").ok());
  const std::vector<phalanx::testing::ScriptedRequest> sent = server.requests();
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[0].method, "DELETE");
  EXPECT_EQ(sent[0].target, "/api/v1/namespaces/gpu-ns/pods/stuck-0");
  EXPECT_THAT(sent[0].body, HasSubstr("\"gracePeriodSeconds\":0"));
}

// An annotation (or a label) is set by a JSON merge patch of that one key, which leaves the pod's
// other annotations as they are; a pod that is gone is NotFound.
TEST(KubePodClientTest, AnnotationIsAMergePatchOfThatKeyAlone) {
  phalanx::testing::ScriptedServer server(NotFoundForGone);
  kube::Client client(kube::Config{.server = server.url()});
  KubePodClient pods(client);
  const std::string at = "2026-11-29T03:04:35.123+00:00";
  EXPECT_TRUE(pods.SetPodAnnotation("gpu-ns", "run-0", "phalanx.io/checkpointed-at", at).ok());
  EXPECT_TRUE(pods.SetPodLabel("gpu-ns", "run-0", "phalanx.io/queue-position", "1.5").ok());
  absl::Status gone = pods.SetPodAnnotation("gpu-ns", "gone", "phalanx.io/checkpointed-at", at);
  EXPECT_TRUE(absl::IsNotFound(gone)) << gone;
  const std::vector<phalanx::testing::ScriptedRequest> sent = server.requests();
  ASSERT_EQ(sent.size(), 3u);
  EXPECT_EQ(sent[0].method, "PATCH");
  EXPECT_EQ(sent[0].target, "/api/v1/namespaces/gpu-ns/pods/run-0");
  EXPECT_THAT(sent[0].headers, Contains("Content-Type: application/merge-patch+json"));
  EXPECT_EQ(
      nlohmann::json::parse(sent[0].body),
      nlohmann::json({{"metadata", {{"annotations", {{"phalanx.io/checkpointed-at", at}}}}}}));
  EXPECT_EQ(nlohmann::json::parse(sent[1].body),
            nlohmann::json({{"metadata", {{"labels", {{"phalanx.io/queue-position", "1.5"}}}}}}));
}

}  // namespace
}  // namespace phalanx::master
