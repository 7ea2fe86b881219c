// Gangs whose pods name a Kubernetes PodGroup (spec.schedulingGroup), on the test cluster with
// workload-aware scheduling on (label e2e_workload_api; tests/cluster: test_cluster_workload).
// There kube-scheduler schedules a group's pods together once all are ungated: it calls the
// extender's filter for each member with the earlier ones only assumed, and binds only when the
// group's minCount fits. phalanx plans and ungates the whole gang, so the group cycle finds each
// member's planned node and binds them all; preemption for a higher-priority group goes through
// phalanx's marks, and nothing is double-booked or partly bound (the Watcher and TearDown check).
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kube/client.h"
#include "simdjson.h"
#include "tests/extender_e2e/harness.h"

namespace phalanx::e2e {
namespace {

constexpr kube::Resource kPodGroups{"/apis/scheduling.k8s.io/v1beta1", "podgroups", true};

class WorkloadApiE2e : public ExtenderE2eTest {
 protected:
  // A PodGroup of `min_count` pods at the harness's priority class for `priority` (a group's
  // priority must equal its pods').
  void CreatePodGroup(const std::string& name, int min_count, int priority) {
    ASSERT_TRUE(CreateInNamespace(
        kPodGroups,
        absl::StrCat(R"({"apiVersion":"scheduling.k8s.io/v1beta1","kind":"PodGroup",)",
                     R"("metadata":{"name":")", name, R"("},"spec":{"priorityClassName":")",
                     PriorityClass(priority), R"(","schedulingPolicy":{"gang":{"minCount":)",
                     min_count, "}}}}")));
  }

  // Whether kube-scheduler's group cycle scheduled the group (its status condition
  // PodGroupInitiallyScheduled is True), which only that cycle writes.
  bool GroupScheduled(const std::string& name) {
    absl::StatusOr<std::string> group = client_->Get(kPodGroups, ns_, name);
    if (!group.ok()) return false;
    simdjson::dom::parser parser;
    simdjson::dom::element root;
    simdjson::dom::array conditions;
    if (parser.parse(*group).get(root) != simdjson::SUCCESS ||
        root["status"]["conditions"].get(conditions) != simdjson::SUCCESS) {
      return false;
    }
    for (simdjson::dom::element c : conditions) {
      std::string_view type, status;
      if (c["type"].get(type) == simdjson::SUCCESS && type == "PodGroupInitiallyScheduled" &&
          c["status"].get(status) == simdjson::SUCCESS) {
        return status == "True";
      }
    }
    return false;
  }
};

TEST_F(WorkloadApiE2e, AGangInAPodGroupRunsWhole) {
  AddNodes("n", 3, 8);
  StartExtender(8);
  ASSERT_NO_FATAL_FAILURE(CreatePodGroup("pg", 3, 50));
  Submit({.name = "g", .pods = 3, .gpus = 8, .position = 1, .pod_group = "pg"});
  Submit({.name = "plain", .gpus = 8, .position = 2});
  ASSERT_TRUE(WaitUntil([&] { return Running("g"); })) << "the group never runs";
  EXPECT_EQ(BoundNodes("g").size(), 3u);
  EXPECT_TRUE(WaitUntil([&] { return GroupScheduled("pg"); }))
      << "kube-scheduler did not schedule the pods as a group";
  EXPECT_FALSE(Running("plain"));
  Finish("g");
  ASSERT_TRUE(WaitUntil([&] { return Running("plain"); })) << "the gang behind never runs";
}

TEST_F(WorkloadApiE2e, AHigherPriorityGroupPreemptsThroughPhalanx) {
  AddNodes("n", 2, 8);
  StartExtender(8);
  ASSERT_NO_FATAL_FAILURE(CreatePodGroup("low", 2, 50));
  ASSERT_NO_FATAL_FAILURE(CreatePodGroup("high", 2, 90));
  Submit({.name = "low", .pods = 2, .gpus = 8, .priority = 50, .pod_group = "low"});
  ASSERT_TRUE(WaitUntil([&] { return Running("low"); })) << "the low group never runs";
  Submit({.name = "high", .pods = 2, .gpus = 8, .priority = 90, .pod_group = "high"});
  ASSERT_TRUE(WaitUntil([&] { return Marked("low"); })) << "the low group is never marked";
  EXPECT_EQ(RequeueVictims(), std::vector<std::string>{"low"});
  ASSERT_TRUE(WaitUntil([&] { return Running("high"); })) << "the high group never runs";
  EXPECT_TRUE(WaitUntil([&] { return GroupScheduled("high"); }));
  EXPECT_TRUE(Gated("low"));
  Finish("high");
  ASSERT_TRUE(WaitUntil([&] { return Running("low"); })) << "the requeued group never runs again";
}

}  // namespace
}  // namespace phalanx::e2e
