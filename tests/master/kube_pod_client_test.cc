// DecodePodState: the waiting containers of a pod's status (init containers first).
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

TEST(DecodePodStateTest, MalformedWaitingReasonNamesTheField) {
  absl::StatusOr<PodState> s = Decode(PodWithStatus(
      {{"containerStatuses", {{{"name", "trial"}, {"state", {{"waiting", {{"reason", 7}}}}}}}}}));
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("status.containerStatuses[0].state.waiting.reason"));
}

}  // namespace
}  // namespace phalanx::master
