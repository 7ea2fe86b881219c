// DecodePodState: the waiting containers of a pod's status (init containers first), and which
// evictions are the cluster's doing (disrupted) and which are for the pod's own limits.
#include "master/kube_pod_client.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace phalanx::master {
namespace {

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

}  // namespace
}  // namespace phalanx::master
