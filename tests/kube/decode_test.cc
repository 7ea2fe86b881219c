// DecodePod / DecodeNode on golden fixtures (testdata/) and on every malformed field.
#include "kube/decode.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kube/config.h"

namespace phalanx::kube {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

simdjson::dom::element Parse(simdjson::dom::parser& parser, const std::string& json) {
  simdjson::dom::element e;
  EXPECT_EQ(parser.parse(json).get(e), simdjson::SUCCESS) << json;
  return e;
}

std::string Fixture(const std::string& name) {
  absl::StatusOr<std::string> text = ReadFile(absl::StrCat(PHALANX_KUBE_TESTDATA, "/", name));
  EXPECT_TRUE(text.ok()) << text.status();
  return text.value_or("");
}

TEST(KubeDecodePodTest, DeterminedStylePodWithEveryContractField) {
  simdjson::dom::parser parser;
  absl::StatusOr<core::PodInfo> pod = DecodePod(Parse(parser, Fixture("determined_pod.json")));
  ASSERT_TRUE(pod.ok()) << pod.status();
  EXPECT_EQ(pod->uid, "5f0c4c5e-1d2a-4f7e-9a51-1c2b3d4e5f60");
  EXPECT_EQ(pod->ns, "determined");
  EXPECT_EQ(pod->name, "exp-12-trial-34-0-x7k2p");
  EXPECT_EQ(pod->creation_ms, 1714979289000);
  EXPECT_EQ(pod->start_ms, 0);
  EXPECT_EQ(pod->priority, 50);
  EXPECT_EQ(pod->phase, core::PodPhase::kPending);
  EXPECT_TRUE(pod->gated);
  EXPECT_EQ(pod->node, "");
  // Containers + sidecar: 4100m / 32Gi+64Mi; the init container runs beside the sidecar started
  // before it: 6100m / 1Gi+64Mi. The max of both, plus overhead 250m / 120Mi, and one pod.
  core::Resources want(6350, 34359738368 + 67108864 + 125829120, 4);
  want.Set("ephemeral-storage", 10737418240);  // From limits only.
  want.Set(core::kPods, 1);
  EXPECT_EQ(pod->requests, want) << pod->requests.ToString();
  // phalanx.io/gang wins over the pod-group labels.
  EXPECT_EQ(pod->gang, "exp-12-trial-34");
  EXPECT_EQ(pod->gang_size, 2);
  EXPECT_EQ(pod->GangKey(), "determined/exp-12-trial-34");
  EXPECT_DOUBLE_EQ(pod->queue_position, 1714979289.25);
  EXPECT_TRUE(pod->managed());
  EXPECT_EQ(pod->pool, "a100");
  EXPECT_TRUE(pod->preemptible);
  EXPECT_TRUE(pod->preempt_requested);
  EXPECT_EQ(pod->preempted_by, "research/exp-40-trial-1");
  EXPECT_EQ(pod->placement, "gpu-node-3");
  EXPECT_TRUE(pod->backfilled);
  EXPECT_EQ(pod->backfilled_behind, "research/exp-39-trial-2");
  EXPECT_EQ(pod->checkpoint_ms, 1714979400500);
  EXPECT_EQ(pod->expected_runtime_ms, 5'400'000);
  EXPECT_THAT(pod->preempted_ms, ElementsAre(1714971600000, 1714975200000));
  EXPECT_THAT(pod->node_selector, ElementsAre(Pair("accelerator", "a100"),
                                              Pair("kubernetes.io/hostname", "gpu-node-3")));
  ASSERT_EQ(pod->tolerations.size(), 4u);
  using Op = core::Toleration::Operator;
  EXPECT_EQ(pod->tolerations[0].key, "nvidia.com/gpu");
  EXPECT_EQ(pod->tolerations[0].op, Op::kExists);
  EXPECT_FALSE(pod->tolerations[0].any_effect);
  EXPECT_EQ(pod->tolerations[0].effect, core::TaintEffect::kNoSchedule);
  EXPECT_EQ(pod->tolerations[1].effect, core::TaintEffect::kNoExecute);
  EXPECT_EQ(pod->tolerations[2].op, Op::kEqual);
  EXPECT_EQ(pod->tolerations[2].value, "ml");
  EXPECT_TRUE(pod->tolerations[2].any_effect);
  EXPECT_EQ(pod->tolerations[3].key, "");
  EXPECT_TRUE(
      pod->tolerations[3].Tolerates(core::Taint{"anything", "x", core::TaintEffect::kNoExecute}));
}

TEST(KubeDecodePodTest, PodGroupLabelledRunningPod) {
  simdjson::dom::parser parser;
  absl::StatusOr<core::PodInfo> pod = DecodePod(Parse(parser, Fixture("podgroup_pod.json")));
  ASSERT_TRUE(pod.ok()) << pod.status();
  EXPECT_EQ(pod->gang, "exp1trial1");
  EXPECT_EQ(pod->gang_size, 4);
  EXPECT_EQ(pod->priority, 42);
  EXPECT_EQ(pod->node, "node-7");
  EXPECT_EQ(pod->phase, core::PodPhase::kRunning);
  EXPECT_EQ(pod->creation_ms, 1700000000500);
  EXPECT_EQ(pod->start_ms, 1700000005000);
  EXPECT_FALSE(pod->gated);
  // Not phalanx-master's (no phalanx.io/job-id) and no phalanx.io/preemptible: never a victim.
  EXPECT_FALSE(pod->managed());
  EXPECT_FALSE(pod->preemptible);
  EXPECT_FALSE(pod->preempt_requested);
  EXPECT_FALSE(pod->backfilled);
  EXPECT_EQ(pod->queue_position, core::kNoQueuePosition);  // Only phalanx.io/queue-position counts.
  core::Resources want(2000, 8000000000 + 536870912, 2);   // The metrics container: limits only.
  want.Set("example.com/fpga", 1);
  want.Set(core::kPods, 1);
  EXPECT_EQ(pod->requests, want) << pod->requests.ToString();
}

// A minimal pod with extra metadata / spec / status members spliced in.
std::string MiniPod(const std::string& meta, const std::string& spec,
                    const std::string& status = "") {
  return absl::StrCat(R"({"metadata":{"name":"x","namespace":"default","uid":"u1")",
                      meta.empty() ? "" : ",", meta, R"(},"spec":{)", spec, R"(},"status":{)",
                      status, "}}");
}

TEST(KubeDecodePodTest, SchedulingXK8sPodGroupSizeFromAnnotation) {
  simdjson::dom::parser parser;
  absl::StatusOr<core::PodInfo> pod =
      DecodePod(Parse(parser, MiniPod(R"("labels":{"scheduling.x-k8s.io/pod-group":"pg"},)"
                                      R"("annotations":{"phalanx.io/gang-size":"3"})",
                                      R"("containers":[])")));
  ASSERT_TRUE(pod.ok()) << pod.status();
  EXPECT_EQ(pod->gang, "pg");
  EXPECT_EQ(pod->gang_size, 3);
}

TEST(KubeDecodePodTest, PodsOfTheMasterArePreemptibleUnlessLabelledOtherwise) {
  simdjson::dom::parser parser;
  for (const auto& [labels, want] : std::vector<std::pair<std::string, bool>>{
           {R"("phalanx.io/job-id":"exp-1")", true},
           {R"("phalanx.io/job-id":"cmd-1","phalanx.io/preemptible":"false")", false},
           {R"("app":"other")", false},
           {R"("app":"other","phalanx.io/preemptible":"true")", true}}) {
    absl::StatusOr<core::PodInfo> pod =
        DecodePod(Parse(parser, MiniPod(absl::StrCat(R"("labels":{)", labels, "}"), "")));
    ASSERT_TRUE(pod.ok()) << pod.status();
    EXPECT_EQ(pod->preemptible, want) << labels;
  }
}

TEST(KubeDecodePodTest, BarePodIsAGangOfOne) {
  simdjson::dom::parser parser;
  absl::StatusOr<core::PodInfo> pod = DecodePod(Parse(
      parser,
      MiniPod(R"("labels":{"phalanx.io/queue-position":"0","phalanx.io/preemptible":"false"})",
              R"("containers":[{"name":"c"}])", R"("phase":"Succeeded")")));
  ASSERT_TRUE(pod.ok()) << pod.status();
  EXPECT_EQ(pod->gang, "");
  EXPECT_EQ(pod->gang_size, 1);
  EXPECT_EQ(pod->GangKey(), "default/x");
  EXPECT_EQ(pod->pool, "");
  EXPECT_EQ(pod->queue_position, core::kNoQueuePosition);
  EXPECT_FALSE(pod->preemptible);
  EXPECT_EQ(pod->phase, core::PodPhase::kSucceeded);
}

// kube-scheduler's NodeResourcesFit counts every pod against its node's allocatable "pods", one
// each, whatever (or whether) it requests; a "pods" entry in the pod's own lists does not count.
TEST(KubeDecodePodTest, EveryPodRequestsOneOfItsNodesPods) {
  simdjson::dom::parser parser;
  core::Resources one_pod;
  one_pod.Set(core::kPods, 1);
  absl::StatusOr<core::PodInfo> bare =
      DecodePod(Parse(parser, MiniPod("", R"("containers":[{}])")));
  ASSERT_TRUE(bare.ok()) << bare.status();
  EXPECT_EQ(bare->requests, one_pod) << bare->requests.ToString();
  absl::StatusOr<core::PodInfo> listed = DecodePod(
      Parse(parser, MiniPod("", R"("containers":[{"resources":{"requests":{"pods":"3"}}}],)"
                                R"("overhead":{"pods":"2"})")));
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_EQ(listed->requests, one_pod) << listed->requests.ToString();
}

TEST(KubeDecodePodTest, PodLevelRequestsOverrideContainers) {
  simdjson::dom::parser parser;
  absl::StatusOr<core::PodInfo> pod = DecodePod(Parse(
      parser,
      MiniPod("", R"("resources":{"requests":{"cpu":"3"}},)"
                  R"("containers":[{"resources":{"requests":{"cpu":"1","memory":"1Ki"}}}])")));
  ASSERT_TRUE(pod.ok()) << pod.status();
  core::Resources want(3000, 1024, 0);
  want.Set(core::kPods, 1);
  EXPECT_EQ(pod->requests, want);
}

TEST(KubeDecodePodTest, RequiredNodeAffinity) {
  simdjson::dom::parser parser;
  absl::StatusOr<core::PodInfo> pod = DecodePod(Parse(
      parser,
      MiniPod("", R"("affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":)"
                  R"({"nodeSelectorTerms":[)"
                  R"({"matchExpressions":[{"key":"topology.kubernetes.io/zone","operator":"In",)"
                  R"("values":["antarctica-west1","antarctica-east1"]}]},)"
                  R"({"matchExpressions":[{"key":"gpus","operator":"Gt","values":["4"]}],)"
                  R"("matchFields":[{"key":"metadata.name","operator":"NotIn","values":["n9"]}]})"
                  R"(]},"preferredDuringSchedulingIgnoredDuringExecution":[]}})")));
  ASSERT_TRUE(pod.ok()) << pod.status();
  ASSERT_EQ(pod->node_affinity.size(), 2u);
  using Op = core::NodeRequirement::Operator;
  const core::NodeRequirement& zone = pod->node_affinity[0].requirements.at(0);
  EXPECT_EQ(zone.key, "topology.kubernetes.io/zone");
  EXPECT_EQ(zone.op, Op::kIn);
  EXPECT_THAT(zone.values, ElementsAre("antarctica-east1", "antarctica-west1"));  // Sorted.
  EXPECT_FALSE(zone.on_name);
  ASSERT_EQ(pod->node_affinity[1].requirements.size(), 2u);
  EXPECT_EQ(pod->node_affinity[1].requirements[0].op, Op::kGt);
  const core::NodeRequirement& name = pod->node_affinity[1].requirements[1];
  EXPECT_TRUE(name.on_name);
  EXPECT_EQ(name.op, Op::kNotIn);
  EXPECT_THAT(name.values, ElementsAre("n9"));
}

// phalanx.io/avoid-nodes lists nodes (sorted, blanks dropped); kube-scheduler's refusal is read
// from condition PodScheduled only while it is False for reason Unschedulable.
TEST(KubeDecodePodTest, AvoidedNodesAndKubeSchedulersRefusal) {
  simdjson::dom::parser parser;
  absl::StatusOr<core::PodInfo> pod = DecodePod(
      Parse(parser,
            MiniPod(R"("annotations":{"phalanx.io/avoid-nodes":"n2, n1,,"})", "",
                    R"("conditions":[{"type":"Ready","status":"False","reason":"x"},)"
                    R"({"type":"PodScheduled","status":"False","reason":"Unschedulable",)"
                    R"("message":"0/2 nodes are available: 1 node(s) didn't have free ports"}])")));
  ASSERT_TRUE(pod.ok()) << pod.status();
  EXPECT_THAT(pod->avoid_nodes, ElementsAre("n1", "n2"));
  EXPECT_EQ(pod->refused, "0/2 nodes are available: 1 node(s) didn't have free ports");

  for (const char* condition :
       {R"({"type":"PodScheduled","status":"True"})",
        R"({"type":"PodScheduled","status":"False","reason":"SchedulingGated"})"}) {
    pod = DecodePod(
        Parse(parser, MiniPod("", "", absl::StrCat(R"("conditions":[)", condition, "]"))));
    ASSERT_TRUE(pod.ok()) << pod.status();
    EXPECT_EQ(pod->refused, "") << condition;
    EXPECT_TRUE(pod->avoid_nodes.empty());
  }
}
struct Malformed {
  std::string meta;
  std::string spec;
  std::string status;
  std::string error;
};

TEST(KubeDecodePodTest, MalformedFieldErrorsNameObjectAndField) {
  const Malformed cases[] = {
      Malformed{"", R"("containers":[{"resources":{"requests":{"cpu":"abc"}}}])", "",
                R"(spec.containers[0].resources.requests.cpu: invalid quantity "abc")"},
      Malformed{"", R"("containers":[{"resources":{"limits":{"memory":"1Q"}}}])", "",
                R"(spec.containers[0].resources.limits.memory: invalid quantity "1Q")"},
      Malformed{"", R"("initContainers":[{},{"resources":{"requests":{"memory":"-1Gi"}}}])", "",
                R"(spec.initContainers[1].resources.requests.memory: negative quantity "-1Gi")"},
      Malformed{"", R"("overhead":{"cpu":"1x"})", "", R"(spec.overhead.cpu: invalid quantity)"},
      Malformed{"", R"("resources":{"requests":{"memory":"lots"}})", "",
                R"(spec.resources.requests.memory: invalid quantity "lots")"},
      Malformed{"", R"("containers":[{"resources":{"requests":{"cpu":2}}}])", "",
                R"(spec.containers[0].resources.requests["cpu"]: expected a string)"},
      Malformed{"", R"("containers":{})", "", "spec.containers: expected an array"},
      Malformed{"", R"("containers":[7])", "", "spec.containers[0]: expected an object"},
      Malformed{"", R"("containers":[{"resources":[]}])", "",
                "spec.containers[0].resources: expected an object"},
      Malformed{"", R"("priority":"high")", "", "spec.priority: expected an integer"},
      Malformed{"", R"("priority":9999999999)", "", "spec.priority: out of range"},
      Malformed{"", R"("nodeName":5)", "", "spec.nodeName: expected a string"},
      Malformed{"", R"("schedulingGates":[{"name":1}])", "",
                "spec.schedulingGates[0].name: expected a string"},
      Malformed{"", R"("tolerations":[{"key":"a","operator":"Lt","value":"3"}])", "",
                R"(spec.tolerations[0].operator: unknown operator "Lt")"},
      Malformed{"", R"("tolerations":[{},{"key":"a","effect":"Sometimes"}])", "",
                R"(spec.tolerations[1].effect: unknown effect "Sometimes")"},
      Malformed{"", R"("nodeSelector":{"zone":1})", "",
                R"(spec.nodeSelector["zone"]: expected a string)"},
      Malformed{"",
                R"("affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":)"
                R"({"nodeSelectorTerms":[{"matchExpressions":[{"key":"z","operator":"Near"}]}]}}})",
                "",
                "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
                R"(nodeSelectorTerms[0].matchExpressions[0].operator: unknown operator "Near")"},
      Malformed{"",
                R"("affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":)"
                R"({"nodeSelectorTerms":[{"matchFields":[{"key":"k","operator":"In",)"
                R"("values":[1]}]}]}}})",
                "",
                "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
                "nodeSelectorTerms[0].matchFields[0].values[0]: expected a string"},
      Malformed{"", "", R"("phase":"Dancing")", R"(status.phase: unknown phase "Dancing")"},
      Malformed{"", "", R"("startTime":"soon")",
                R"(status.startTime: invalid RFC 3339 time "soon")"},
      Malformed{R"("creationTimestamp":"2024-13-01T00:00:00Z")", "", "",
                "metadata.creationTimestamp: invalid RFC 3339 time"},
      Malformed{R"("labels":["a"])", "", "", "metadata.labels: expected an object"}};
  simdjson::dom::parser parser;
  for (const Malformed& m : cases) {
    SCOPED_TRACE(m.error);
    absl::StatusOr<core::PodInfo> pod = DecodePod(Parse(parser, MiniPod(m.meta, m.spec, m.status)));
    ASSERT_FALSE(pod.ok());
    EXPECT_EQ(pod.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(pod.status().message(), HasSubstr(absl::StrCat("pod default/x: ", m.error)));
  }
}

// Labels and annotations are free text: a pod whose phalanx ones do not parse stays in the cache
// (its capacity counts), never a victim, with the error for the reason its gang is not admitted.
TEST(KubeDecodePodTest, UnreadableContractLabelsKeepThePodWithTheError) {
  const Malformed cases[] = {
      Malformed{R"("labels":{"phalanx.io/gang":"g","phalanx.io/gang-size":"two"})", "", "",
                R"(metadata.labels["phalanx.io/gang-size"]: invalid gang size "two")"},
      Malformed{
          R"("labels":{"pod-group.scheduling.sigs.k8s.io/name":"g",)"
          R"("pod-group.scheduling.sigs.k8s.io/min-available":"-1"})",
          "", "",
          R"(metadata.labels["pod-group.scheduling.sigs.k8s.io/min-available"]: invalid gang size "-1")"},
      Malformed{R"("labels":{"scheduling.x-k8s.io/pod-group":"g"},)"
                R"("annotations":{"phalanx.io/gang-size":"1.5"})",
                "", "", R"(metadata.annotations["phalanx.io/gang-size"]: invalid gang size "1.5")"},
      Malformed{R"("labels":{"phalanx.io/queue-position":"first"})", "", "",
                R"(metadata.labels["phalanx.io/queue-position"]: invalid decimal "first")"},
      Malformed{R"("labels":{"phalanx.io/queue-position":"inf"})", "", "",
                R"(metadata.labels["phalanx.io/queue-position"]: invalid decimal "inf")"},
      Malformed{R"("labels":{"phalanx.io/preemptible":"nope"})", "", "",
                R"(metadata.labels["phalanx.io/preemptible"]: expected "true" or "false")"},
      Malformed{R"("annotations":{"phalanx.io/backfilled":"yes"})", "", "",
                R"(metadata.annotations["phalanx.io/backfilled"]: expected "true", "false" or a )"
                R"(gang key namespace/name, got "yes")"},
      Malformed{R"("annotations":{"phalanx.io/backfilled":"a/b/c"})", "", "",
                R"(metadata.annotations["phalanx.io/backfilled"]: expected "true")"},
      Malformed{R"("annotations":{"phalanx.io/checkpointed-at":"yesterday"})", "", "",
                R"(metadata.annotations["phalanx.io/checkpointed-at"]: invalid RFC 3339 time )"
                R"("yesterday")"},
      Malformed{R"("annotations":{"phalanx.io/preempted-at":"2024-05-06T05:00:00Z,,"})", "", "",
                R"(metadata.annotations["phalanx.io/preempted-at"]: invalid RFC 3339 time "")"},
      Malformed{R"("annotations":{"phalanx.io/preempted-at":)"
                R"("2024-05-06T06:00:00Z,2024-05-06T05:00:00Z"})",
                "", "",
                R"(metadata.annotations["phalanx.io/preempted-at"]: times are not oldest first)"},
      Malformed{
          absl::StrCat(R"("annotations":{"phalanx.io/preempted-at":")",
                       absl::StrJoin(std::vector<std::string>(17, "2024-05-06T05:00:00Z"), ","),
                       R"("})"),
          "", "", R"(metadata.annotations["phalanx.io/preempted-at"]: more than 16 times)"}};
  simdjson::dom::parser parser;
  for (const Malformed& m : cases) {
    SCOPED_TRACE(m.error);
    absl::StatusOr<core::PodInfo> pod =
        DecodePod(Parse(parser, MiniPod(m.meta, R"("nodeName":"n1")", m.status)));
    ASSERT_TRUE(pod.ok()) << pod.status();
    EXPECT_THAT(pod->contract_error, HasSubstr(m.error));
    EXPECT_FALSE(pod->preemptible);
    EXPECT_EQ(pod->node, "n1");
  }
}

// phalanx.io/expected-runtime is advisory: a value that does not read is unknown (-1), and the
// pod is decoded as usual (no contract error: a bad hint never blocks scheduling).
TEST(KubeDecodePodTest, ExpectedRuntimeReadsWholeSecondsOrUnknown) {
  const std::vector<std::pair<std::string, int64_t>> cases = {{"0", 0},
                                                              {"90", 90'000},
                                                              {"316224000", 316'224'000'000},
                                                              {"-5", -1},
                                                              {"1.5", -1},
                                                              {"", -1},
                                                              {"1e9", -1},
                                                              {" 90", -1},
                                                              {"316224001", -1},
                                                              {"99999999999999999999", -1}};
  for (const auto& [text, want] : cases) {
    simdjson::dom::parser parser;
    const std::string json = absl::StrCat(
        R"({"metadata":{"name":"p","namespace":"n","uid":"u","annotations":{"phalanx.io/expected-runtime":")",
        text, R"("}},"spec":{},"status":{}})");
    absl::StatusOr<core::PodInfo> pod = DecodePod(Parse(parser, json));
    ASSERT_TRUE(pod.ok()) << pod.status();
    EXPECT_EQ(pod->expected_runtime_ms, want) << text;
    EXPECT_TRUE(pod->contract_error.empty()) << text;
  }
}

TEST(KubeDecodePodTest, MissingNameAndNonObjectSections) {
  simdjson::dom::parser parser;
  absl::StatusOr<core::PodInfo> pod =
      DecodePod(Parse(parser, R"({"metadata":{"namespace":"ns","uid":"u"}})"));
  EXPECT_THAT(pod.status().message(), HasSubstr("pod ns/<unnamed>: metadata.name: missing"));
  pod =
      DecodePod(Parse(parser, R"({"metadata":{"name":"p","namespace":"ns","uid":"u"},"spec":3})"));
  EXPECT_THAT(pod.status().message(), HasSubstr("pod ns/p: spec: expected an object"));
  pod = DecodePod(Parse(parser, R"({"metadata":{"name":"p","namespace":"ns"}})"));
  EXPECT_THAT(pod.status().message(), HasSubstr("pod ns/p: metadata.uid: missing"));
}

TEST(KubeDecodeNodeTest, TaintedCordonedNode) {
  simdjson::dom::parser parser;
  absl::StatusOr<core::Node> node = DecodeNode(Parse(parser, Fixture("tainted_node.json")));
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ(node->name, "gpu-node-3");
  EXPECT_TRUE(node->unschedulable);
  core::Resources want(95500, 1079851020288, 8);
  want.Set("pods", 110);
  want.Set("ephemeral-storage", 966367641600);
  EXPECT_EQ(node->allocatable, want) << node->allocatable.ToString();
  EXPECT_THAT(node->labels,
              ElementsAre(Pair("accelerator", "a100"), Pair("kubernetes.io/arch", "amd64"),
                          Pair("kubernetes.io/hostname", "gpu-node-3"),
                          Pair("topology.kubernetes.io/zone", "us-east-1b")));
  ASSERT_EQ(node->taints.size(), 4u);
  EXPECT_EQ(node->taints[0].key, "nvidia.com/gpu");
  EXPECT_EQ(node->taints[0].value, "present");
  EXPECT_EQ(node->taints[0].effect, core::TaintEffect::kNoSchedule);
  EXPECT_EQ(node->taints[1].value, "");
  EXPECT_EQ(node->taints[2].effect, core::TaintEffect::kPreferNoSchedule);
  EXPECT_EQ(node->taints[3].effect, core::TaintEffect::kNoExecute);
}

// A node's allocatable "pods" bounds the pods on it; a node that lists none takes no pod at all
// (kube-scheduler's AllowedPodNumber is then 0: "Too many pods" for every pod).
TEST(KubeDecodeNodeTest, AllocatablePodsBoundThePodsANodeTakes) {
  simdjson::dom::parser parser;
  absl::StatusOr<core::PodInfo> pod = DecodePod(Parse(parser, MiniPod("", R"("containers":[{}])")));
  ASSERT_TRUE(pod.ok()) << pod.status();
  absl::StatusOr<core::Node> listed = DecodeNode(Parse(parser, Fixture("tainted_node.json")));
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_EQ(listed->allocatable.Get(core::kPods), 110);
  EXPECT_EQ(pod->requests.CopiesThatFit(listed->allocatable), 110);
  absl::StatusOr<core::Node> none = DecodeNode(Parse(
      parser, R"({"metadata":{"name":"n1"},"status":{"allocatable":{"cpu":"8","memory":"1Gi"}}})"));
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->allocatable.Get(core::kPods), 0);
  EXPECT_FALSE(pod->requests.FitsIn(none->allocatable));
}

TEST(KubeDecodeNodeTest, MalformedFields) {
  simdjson::dom::parser parser;
  auto error = [&](const std::string& json) {
    return std::string(DecodeNode(Parse(parser, json)).status().message());
  };
  EXPECT_THAT(error(R"({"metadata":{"name":"n1"},"status":{"allocatable":{"cpu":"many"}}})"),
              HasSubstr(R"(node n1: status.allocatable.cpu: invalid quantity "many")"));
  EXPECT_THAT(
      error(R"({"metadata":{"name":"n1"},"spec":{"taints":[{"key":"k","effect":"Maybe"}]}})"),
      HasSubstr(R"(node n1: spec.taints[0].effect: unknown effect "Maybe")"));
  EXPECT_THAT(error(R"({"metadata":{"name":"n1"},"spec":{"taints":[{"effect":"NoSchedule"}]}})"),
              HasSubstr("node n1: spec.taints[0].key: missing"));
  EXPECT_THAT(error(R"({"metadata":{"name":"n1"},"spec":{"unschedulable":"yes"}})"),
              HasSubstr("node n1: spec.unschedulable: expected a boolean"));
  EXPECT_THAT(error(R"({"metadata":{"name":"n1","labels":{"a":null}}})"),
              HasSubstr(R"(node n1: metadata.labels["a"]: expected a string)"));
  EXPECT_THAT(error(R"({"metadata":{}})"), HasSubstr("node <unnamed>: metadata.name: missing"));
}

}  // namespace
}  // namespace phalanx::kube
