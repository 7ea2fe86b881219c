// Strategic merge of pod specs (master/policy/strategic_merge.h): lists merged by their keys,
// nulls, and patch directives.
#include "master/policy/strategic_merge.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace phalanx::master {
namespace {

using nlohmann::json;

TEST(StrategicMergeTest, MergesListsByTheirKeys) {
  json base = json::parse(R"({"spec": {
    "containers": [{"name": "a", "image": "x", "env": [{"name": "A", "value": "1"}],
                    "volumeMounts": [{"name": "v", "mountPath": "/m"}]},
                   {"name": "side", "image": "s"}],
    "tolerations": [{"key": "t1"}],
    "volumes": [{"name": "v", "hostPath": {"path": "/data"}}],
    "nodeSelector": {"a": "1", "b": "2"}}})");
  json patch = json::parse(R"({"spec": {
    "containers": [{"name": "a", "env": [{"name": "A", "value": "2"}, {"name": "B", "value": "3"}],
                    "volumeMounts": [{"name": "w", "mountPath": "/m"}]},
                   {"name": "new", "image": "n"}],
    "tolerations": [{"key": "t2"}],
    "volumes": [{"name": "v", "emptyDir": {}}],
    "nodeSelector": {"b": null, "c": "3"}}})");
  json want = json::parse(R"({"spec": {
    "containers": [{"name": "a", "image": "x",
                    "env": [{"name": "A", "value": "2"}, {"name": "B", "value": "3"}],
                    "volumeMounts": [{"name": "w", "mountPath": "/m"}]},
                   {"name": "side", "image": "s"}, {"name": "new", "image": "n"}],
    "tolerations": [{"key": "t2"}],
    "volumes": [{"name": "v", "emptyDir": {}}],
    "nodeSelector": {"a": "1", "c": "3"}}})");
  EXPECT_EQ(StrategicMergePod(base, patch), want);
}

TEST(StrategicMergeTest, InitContainersMergeByNameAndNullSidesPassThrough) {
  json base = json::parse(R"({"spec": {"initContainers": [{"name": "i", "image": "a",
      "ports": [{"containerPort": 80, "name": "http"}]}]}})");
  json patch = json::parse(R"({"spec": {"initContainers": [{"name": "i",
      "ports": [{"containerPort": 80, "protocol": "TCP"}]}]}})");
  EXPECT_EQ(StrategicMergePod(base, patch)["spec"]["initContainers"][0]["ports"],
            json::parse(R"([{"containerPort": 80, "name": "http", "protocol": "TCP"}])"));
  EXPECT_EQ(StrategicMergePod(nullptr, patch), patch);
  EXPECT_EQ(StrategicMergePod(base, nullptr), base);
}

// A null deletes what the default spec holds under its key; with nothing there it is dropped, at
// any depth (Kubernetes' IgnoreUnmatchedNulls); nulls in the default spec mean unset.
TEST(StrategicMergeTest, NullsWithNothingToDeleteAreDropped) {
  json base = json::parse(R"({"metadata": {"labels": {"a": "1", "gone": null}}})");
  json patch = json::parse(R"({"metadata": {"labels": {"a": null, "b": null, "c": "3"}},
    "spec": {"priorityClassName": null, "nodeSelector": {"x": null, "y": "2"},
             "containers": [{"name": "c", "image": null, "env": [{"name": "E", "value": null}]}]}})");
  json want = json::parse(R"({"metadata": {"labels": {"c": "3"}},
    "spec": {"nodeSelector": {"y": "2"},
             "containers": [{"name": "c", "env": [{"name": "E"}]}]}})");
  EXPECT_EQ(StrategicMergePod(base, patch), want);
  EXPECT_EQ(StrategicMergePod(nullptr, patch)["spec"], want["spec"]);
  EXPECT_EQ(StrategicMergePod(base, nullptr),
            json::parse(R"({"metadata": {"labels": {"a": "1"}}})"));
}

// `$patch: replace` and `$patch: delete` as Kubernetes applies them: in a mapping (replace: the
// patch's mapping alone; delete: an empty mapping) and in an item of a list merged by key (delete:
// the base item of that key goes; replace: the list is the patch's other items).
TEST(StrategicMergeTest, PatchDirectivesReplaceAndDelete) {
  json base = json::parse(R"({"spec": {
    "nodeSelector": {"a": "1", "b": "2"},
    "affinity": {"nodeAffinity": {"x": 1}},
    "containers": [{"name": "phalanx-container", "image": "x", "env": [{"name": "A"}]},
                   {"name": "side", "image": "s"}],
    "volumes": [{"name": "v", "emptyDir": {}}, {"name": "w", "emptyDir": {}}]}})");
  json patch = json::parse(R"({"spec": {
    "nodeSelector": {"$patch": "replace", "c": "3"},
    "affinity": {"$patch": "delete"},
    "containers": [{"name": "side", "$patch": "delete"},
                   {"name": "phalanx-container", "env": [{"$patch": "replace"}, {"name": "B"}]}],
    "volumes": [{"$patch": "replace"}, {"name": "n", "nfs": {"server": "s", "path": "/p"}}]}})");
  json want = json::parse(R"({"spec": {
    "nodeSelector": {"c": "3"},
    "affinity": {},
    "containers": [{"name": "phalanx-container", "image": "x", "env": [{"name": "B"}]}],
    "volumes": [{"name": "n", "nfs": {"server": "s", "path": "/p"}}]}})");
  EXPECT_EQ(StrategicMergePod(base, patch), want);
}

}  // namespace
}  // namespace phalanx::master
