// Pod and Node decoding: effective requests, the phalanx pod contract, taints, tolerations and
// required node affinity.
#include "kube/decode.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "core/resources.h"
#include "kube/json.h"

namespace phalanx::kube {
namespace {

absl::Status Invalid(absl::string_view field, absl::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", problem));
}

std::string MetaPath(absl::string_view map, absl::string_view key) {
  return absl::StrCat("metadata.", map, "[\"", key, "\"]");
}

// A resource list (requests, limits, allocatable, overhead); errors name the resource's field.
absl::StatusOr<core::Resources> Quantities(const JsonObject& parent, std::string_view key,
                                           core::Labels* names = nullptr) {
  KUBE_ASSIGN_OR_RETURN(core::Labels list, parent.StringMap(key));
  core::Resources total;
  for (const auto& entry : list) {
    absl::StatusOr<core::Resources> r = core::Resources::FromQuantities({entry});
    if (!r.ok()) {
      return Invalid(
          absl::StrCat(parent.FieldPath(key), ".", entry.first),
          absl::StripPrefix(r.status().message(), absl::StrCat("resource ", entry.first, ": ")));
    }
    total += *r;
  }
  if (names != nullptr) *names = std::move(list);
  return total;
}

// Elementwise max(a, b).
core::Resources Max(const core::Resources& a, const core::Resources& b) {
  return a + b - core::Resources::Min(a, b);
}

// A container's requests; its limits stand in for resources it does not request (API defaulting).
absl::StatusOr<core::Resources> ContainerRequests(const JsonObject& container) {
  KUBE_ASSIGN_OR_RETURN(JsonObject resources, container.Object("resources"));
  core::Labels requested;
  core::Labels limited;
  KUBE_ASSIGN_OR_RETURN(core::Resources requests, Quantities(resources, "requests", &requested));
  KUBE_ASSIGN_OR_RETURN(core::Resources limits, Quantities(resources, "limits", &limited));
  for (const auto& [name, value] : limited) {
    if (core::FindLabel(requested, name) == nullptr) requests.Set(name, limits.Get(name));
  }
  return requests;
}

absl::StatusOr<core::Resources> EffectiveRequests(const JsonObject& spec) {
  KUBE_ASSIGN_OR_RETURN(std::vector<JsonObject> containers, spec.ObjectArray("containers"));
  KUBE_ASSIGN_OR_RETURN(std::vector<JsonObject> inits, spec.ObjectArray("initContainers"));
  core::Resources sum;
  for (const JsonObject& c : containers) {
    KUBE_ASSIGN_OR_RETURN(core::Resources r, ContainerRequests(c));
    sum += r;
  }
  core::Resources sidecars;  // Restartable init containers started so far.
  core::Resources init_peak;
  for (const JsonObject& c : inits) {
    KUBE_ASSIGN_OR_RETURN(core::Resources r, ContainerRequests(c));
    KUBE_ASSIGN_OR_RETURN(std::string_view restart, c.String("restartPolicy"));
    if (restart == "Always") {
      sum += r;
      sidecars += r;
      init_peak = Max(init_peak, sidecars);
    } else {
      init_peak = Max(init_peak, r + sidecars);
    }
  }
  core::Resources total = Max(sum, init_peak);
  KUBE_ASSIGN_OR_RETURN(JsonObject pod_level, spec.Object("resources"));
  core::Labels pod_level_names;
  KUBE_ASSIGN_OR_RETURN(core::Resources pod_requests,
                        Quantities(pod_level, "requests", &pod_level_names));
  for (const auto& [name, value] : pod_level_names) total.Set(name, pod_requests.Get(name));
  KUBE_ASSIGN_OR_RETURN(core::Resources overhead, Quantities(spec, "overhead"));
  core::Resources requests = total + overhead;
  // One of the node's pods, as NodeResourcesFit counts it; a "pods" the spec lists is ignored.
  requests.Set(core::kPods, 1);
  return requests;
}

absl::StatusOr<core::PodPhase> Phase(std::string_view text) {
  if (text.empty() || text == "Pending") return core::PodPhase::kPending;
  if (text == "Running") return core::PodPhase::kRunning;
  if (text == "Succeeded") return core::PodPhase::kSucceeded;
  if (text == "Failed") return core::PodPhase::kFailed;
  if (text == "Unknown") return core::PodPhase::kUnknown;
  return Invalid("status.phase", absl::StrCat("unknown phase \"", Sv(text), "\""));
}

absl::StatusOr<core::TaintEffect> Effect(std::string_view text, const std::string& field) {
  if (text == "NoSchedule") return core::TaintEffect::kNoSchedule;
  if (text == "PreferNoSchedule") return core::TaintEffect::kPreferNoSchedule;
  if (text == "NoExecute") return core::TaintEffect::kNoExecute;
  return Invalid(field, absl::StrCat("unknown effect \"", Sv(text), "\""));
}

absl::StatusOr<core::Toleration> DecodeToleration(const JsonObject& t) {
  core::Toleration out;
  KUBE_ASSIGN_OR_RETURN(std::string_view key, t.String("key"));
  KUBE_ASSIGN_OR_RETURN(std::string_view op, t.String("operator"));
  KUBE_ASSIGN_OR_RETURN(std::string_view value, t.String("value"));
  KUBE_ASSIGN_OR_RETURN(std::string_view effect, t.String("effect"));
  out.key = std::string(key);
  out.value = std::string(value);
  if (op == "Exists") {
    out.op = core::Toleration::Operator::kExists;
  } else if (!op.empty() && op != "Equal") {
    return Invalid(t.FieldPath("operator"), absl::StrCat("unknown operator \"", Sv(op), "\""));
  }
  if (!effect.empty()) {
    out.any_effect = false;
    KUBE_ASSIGN_OR_RETURN(out.effect, Effect(effect, t.FieldPath("effect")));
  }
  return out;
}

absl::StatusOr<core::NodeRequirement> DecodeRequirement(const JsonObject& r, bool on_name) {
  using Op = core::NodeRequirement::Operator;
  static constexpr std::pair<std::string_view, Op> kOps[] = {
      {"In", Op::kIn},         {"NotIn", Op::kNotIn},
      {"Exists", Op::kExists}, {"DoesNotExist", Op::kDoesNotExist},
      {"Gt", Op::kGt},         {"Lt", Op::kLt}};
  core::NodeRequirement out{.on_name = on_name};
  KUBE_ASSIGN_OR_RETURN(std::string_view key, r.String("key"));
  KUBE_ASSIGN_OR_RETURN(std::string_view op, r.String("operator"));
  KUBE_ASSIGN_OR_RETURN(out.values, r.StringArray("values"));
  std::sort(out.values.begin(), out.values.end());
  out.key = std::string(key);
  const auto* found =
      std::find_if(std::begin(kOps), std::end(kOps), [&](const auto& o) { return o.first == op; });
  if (found == std::end(kOps)) {
    return Invalid(r.FieldPath("operator"), absl::StrCat("unknown operator \"", Sv(op), "\""));
  }
  out.op = found->second;
  return out;
}

// spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms.
absl::StatusOr<std::vector<core::NodeSelectorTerm>> DecodeNodeAffinity(const JsonObject& spec) {
  KUBE_ASSIGN_OR_RETURN(JsonObject affinity, spec.Object("affinity"));
  KUBE_ASSIGN_OR_RETURN(JsonObject node, affinity.Object("nodeAffinity"));
  KUBE_ASSIGN_OR_RETURN(JsonObject required,
                        node.Object("requiredDuringSchedulingIgnoredDuringExecution"));
  KUBE_ASSIGN_OR_RETURN(std::vector<JsonObject> terms, required.ObjectArray("nodeSelectorTerms"));
  std::vector<core::NodeSelectorTerm> out;
  for (const JsonObject& t : terms) {
    core::NodeSelectorTerm& term = out.emplace_back();
    for (const auto& [list, on_name] :
         {std::pair{"matchExpressions", false}, {"matchFields", true}}) {
      KUBE_ASSIGN_OR_RETURN(std::vector<JsonObject> requirements, t.ObjectArray(list));
      for (const JsonObject& r : requirements) {
        KUBE_ASSIGN_OR_RETURN(core::NodeRequirement req, DecodeRequirement(r, on_name));
        term.requirements.push_back(std::move(req));
      }
    }
  }
  return out;
}

// A gang size label or annotation; 0 (min-available of CPU tasks in Determined) means 1.
absl::StatusOr<int32_t> GangSize(const std::string* text, const std::string& field) {
  if (text == nullptr) return 1;
  int32_t size = 0;
  if (!absl::SimpleAtoi(*text, &size) || size < 0) {
    return Invalid(field, absl::StrCat("invalid gang size \"", *text, "\""));
  }
  return std::max(size, 1);
}

// "true" / "false" / absent (`absent`); anything else is an error.
absl::StatusOr<bool> Flag(const std::string* text, bool absent, const std::string& field) {
  if (text == nullptr) return absent;
  if (*text == "true") return true;
  if (*text == "false") return false;
  return Invalid(field, absl::StrCat("expected \"true\" or \"false\", got \"", *text, "\""));
}

// "true", "false", or the key "namespace/name" of the gang it was backfilled behind.
absl::Status Backfilled(const std::string* text, core::PodInfo& pod) {
  if (text == nullptr || *text == "false") return absl::OkStatus();
  pod.backfilled = true;
  if (*text == "true") return absl::OkStatus();
  std::vector<absl::string_view> parts = absl::StrSplit(*text, '/');
  if (parts.size() != 2 || parts[0].empty() || parts[1].empty()) {
    return Invalid(MetaPath("annotations", kBackfilledAnnotation),
                   absl::StrCat("expected \"true\", \"false\" or a gang key namespace/name, got \"",
                                *text, "\""));
  }
  pod.backfilled_behind = *text;
  return absl::OkStatus();
}

absl::StatusOr<int64_t> Rfc3339Ms(absl::string_view text, const std::string& field) {
  absl::Time t;
  std::string err;
  if (!absl::ParseTime(absl::RFC3339_full, text, &t, &err)) {
    return Invalid(field, absl::StrCat("invalid RFC 3339 time \"", text, "\""));
  }
  return absl::ToUnixMillis(t);
}

// At most core::kMaxPreemptionHistory comma-separated RFC 3339 times, oldest first.
absl::StatusOr<std::vector<int64_t>> PreemptionTimes(absl::string_view text) {
  const std::string field = MetaPath("annotations", kPreemptedAtAnnotation);
  std::vector<absl::string_view> parts = absl::StrSplit(text, ',');
  if (parts.size() > core::kMaxPreemptionHistory) {
    return Invalid(field, absl::StrCat("more than ", core::kMaxPreemptionHistory, " times"));
  }
  std::vector<int64_t> times;
  for (absl::string_view part : parts) {
    KUBE_ASSIGN_OR_RETURN(int64_t ms, Rfc3339Ms(absl::StripAsciiWhitespace(part), field));
    if (!times.empty() && ms < times.back()) return Invalid(field, "times are not oldest first");
    times.push_back(ms);
  }
  return times;
}

// Whole seconds from 0 to ten years, in ms; -1 (unknown) for anything else or no annotation.
int64_t ExpectedRuntimeMs(const std::string* text) {
  constexpr int64_t kMaxSeconds = int64_t{10} * 366 * 24 * 3600;
  int64_t seconds = 0;
  if (text == nullptr || text->empty() || text->size() > 12 ||
      !std::all_of(text->begin(), text->end(), absl::ascii_isdigit) ||
      !absl::SimpleAtoi(*text, &seconds) || seconds > kMaxSeconds) {
    return -1;
  }
  return seconds * 1000;
}

// With `key`, the placement and the preemption mark stand only when signed with it (see
// placement_key.h): what phalanx-extender did not write is as if absent.
template <typename Annotation>
void DropUnsigned(const PlacementKey& key, const Annotation& annotation, core::PodInfo& pod) {
  const std::string* signature = annotation(kPlacementSignatureAnnotation);
  if (!pod.placement.empty() &&
      (signature == nullptr || !key.VerifyPlacement(pod.uid, pod.placement, *signature))) {
    pod.placement.clear();
  }
  signature = annotation(kPreemptSignatureAnnotation);
  if (pod.preempt_requested &&
      (signature == nullptr || !key.VerifyMark(pod.uid, pod.preempted_by, *signature))) {
    pod.preempt_requested = false;
  }
  if (!pod.preempt_requested) pod.preempted_by.clear();
}

absl::Status DecodeContract(const core::Labels& labels, const core::Labels& annotations,
                            const PlacementKey* key, core::PodInfo& pod) {
  auto label = [&](absl::string_view key) {
    const std::string* v = core::FindLabel(labels, key);
    return v != nullptr && !v->empty() ? v : nullptr;
  };
  auto annotation = [&](absl::string_view key) {
    const std::string* v = core::FindLabel(annotations, key);
    return v != nullptr && !v->empty() ? v : nullptr;
  };
  if (const std::string* job = label(kJobIdLabel)) pod.job_id = *job;
  if (const std::string* pool = label(kResourcePoolLabel)) pod.pool = *pool;
  if (const std::string* gang = label(kGangLabel)) {
    pod.gang = *gang;
    KUBE_ASSIGN_OR_RETURN(pod.gang_size,
                          GangSize(label(kGangSizeLabel), MetaPath("labels", kGangSizeLabel)));
  } else if (const std::string* group = label(kPodGroupNameLabel)) {
    pod.gang = *group;
    KUBE_ASSIGN_OR_RETURN(pod.gang_size, GangSize(label(kPodGroupMinAvailableLabel),
                                                  MetaPath("labels", kPodGroupMinAvailableLabel)));
  } else if (const std::string* x_group = label(kXPodGroupLabel)) {
    pod.gang = *x_group;
    bool labelled = label(kGangSizeLabel) != nullptr;
    KUBE_ASSIGN_OR_RETURN(pod.gang_size,
                          GangSize(labelled ? label(kGangSizeLabel) : annotation(kGangSizeLabel),
                                   MetaPath(labelled ? "labels" : "annotations", kGangSizeLabel)));
  }
  if (const std::string* position = label(kQueuePositionLabel)) {
    double v = 0;
    if (!absl::SimpleAtod(*position, &v) || !std::isfinite(v)) {
      return Invalid(MetaPath("labels", kQueuePositionLabel),
                     absl::StrCat("invalid decimal \"", *position, "\""));
    }
    pod.queue_position = v == 0 ? core::kNoQueuePosition : v;
  }
  KUBE_ASSIGN_OR_RETURN(pod.preemptible, Flag(label(kPreemptibleLabel), pod.managed(),
                                              MetaPath("labels", kPreemptibleLabel)));
  const std::string* preempt = label(kPreemptLabel);
  pod.preempt_requested = preempt != nullptr && *preempt == kPreemptRequested;
  if (const std::string* by = annotation(kPreemptedByAnnotation)) pod.preempted_by = *by;
  if (const std::string* placement = annotation(kPlacementAnnotation)) pod.placement = *placement;
  if (key != nullptr) DropUnsigned(*key, annotation, pod);
  if (const std::string* avoid = annotation(kAvoidNodesAnnotation)) {
    pod.avoid_nodes = absl::StrSplit(*avoid, ',', absl::SkipWhitespace());
    for (std::string& n : pod.avoid_nodes) n = std::string(absl::StripAsciiWhitespace(n));
    std::sort(pod.avoid_nodes.begin(), pod.avoid_nodes.end());
  }
  KUBE_RETURN_IF_ERROR(Backfilled(annotation(kBackfilledAnnotation), pod));
  if (const std::string* at = annotation(kCheckpointedAtAnnotation)) {
    KUBE_ASSIGN_OR_RETURN(pod.checkpoint_ms,
                          Rfc3339Ms(*at, MetaPath("annotations", kCheckpointedAtAnnotation)));
  }
  if (const std::string* at = annotation(kPreemptedAtAnnotation)) {
    KUBE_ASSIGN_OR_RETURN(pod.preempted_ms, PreemptionTimes(*at));
  }
  pod.expected_runtime_ms = ExpectedRuntimeMs(annotation(kExpectedRuntimeAnnotation));
  return absl::OkStatus();
}

// kube-scheduler's message while condition PodScheduled is False for reason Unschedulable.
absl::StatusOr<std::string> RefusedMessage(const JsonObject& status) {
  KUBE_ASSIGN_OR_RETURN(std::vector<JsonObject> conditions, status.ObjectArray("conditions"));
  for (const JsonObject& c : conditions) {
    KUBE_ASSIGN_OR_RETURN(std::string_view type, c.String("type"));
    if (type != "PodScheduled") continue;
    KUBE_ASSIGN_OR_RETURN(std::string_view value, c.String("status"));
    KUBE_ASSIGN_OR_RETURN(std::string_view reason, c.String("reason"));
    if (value != "False" || reason != "Unschedulable") return std::string();
    KUBE_ASSIGN_OR_RETURN(std::string_view message, c.String("message"));
    return message.empty() ? std::string("unschedulable") : std::string(message);
  }
  return std::string();
}

absl::StatusOr<core::PodInfo> DecodePodFields(const JsonObject& root, const PlacementKey* key) {
  core::PodInfo pod;
  KUBE_ASSIGN_OR_RETURN(JsonObject meta, root.Object("metadata"));
  KUBE_ASSIGN_OR_RETURN(JsonObject spec, root.Object("spec"));
  KUBE_ASSIGN_OR_RETURN(JsonObject status, root.Object("status"));
  KUBE_ASSIGN_OR_RETURN(std::string_view uid, meta.String("uid"));
  if (uid.empty()) return Invalid("metadata.uid", "missing");
  pod.uid = std::string(uid);
  KUBE_ASSIGN_OR_RETURN(pod.creation_ms, TimeMs(meta, "creationTimestamp"));
  KUBE_ASSIGN_OR_RETURN(pod.start_ms, TimeMs(status, "startTime"));
  KUBE_ASSIGN_OR_RETURN(int64_t priority, spec.Int("priority"));
  if (priority < INT32_MIN || priority > INT32_MAX) return Invalid("spec.priority", "out of range");
  pod.priority = static_cast<int32_t>(priority);
  KUBE_ASSIGN_OR_RETURN(std::string_view node, spec.String("nodeName"));
  pod.node = std::string(node);
  KUBE_ASSIGN_OR_RETURN(std::string_view phase, status.String("phase"));
  KUBE_ASSIGN_OR_RETURN(pod.phase, Phase(phase));
  KUBE_ASSIGN_OR_RETURN(std::vector<JsonObject> gates, spec.ObjectArray("schedulingGates"));
  for (const JsonObject& gate : gates) {
    KUBE_ASSIGN_OR_RETURN(std::string_view name, gate.String("name"));
    if (name == Sv(kAdmissionGate)) pod.gated = true;
  }
  KUBE_ASSIGN_OR_RETURN(pod.refused, RefusedMessage(status));
  KUBE_ASSIGN_OR_RETURN(pod.requests, EffectiveRequests(spec));
  KUBE_ASSIGN_OR_RETURN(std::vector<JsonObject> tolerations, spec.ObjectArray("tolerations"));
  for (const JsonObject& t : tolerations) {
    KUBE_ASSIGN_OR_RETURN(core::Toleration toleration, DecodeToleration(t));
    pod.tolerations.push_back(std::move(toleration));
  }
  KUBE_ASSIGN_OR_RETURN(pod.node_selector, spec.StringMap("nodeSelector"));
  KUBE_ASSIGN_OR_RETURN(pod.node_affinity, DecodeNodeAffinity(spec));
  KUBE_ASSIGN_OR_RETURN(core::Labels labels, meta.StringMap("labels"));
  KUBE_ASSIGN_OR_RETURN(core::Labels annotations, meta.StringMap("annotations"));
  if (absl::Status contract = DecodeContract(labels, annotations, key, pod); !contract.ok()) {
    pod.contract_error = std::string(contract.message());
    pod.preemptible = false;  // Its labels may have meant "false".
  }
  return pod;
}

absl::StatusOr<core::Node> DecodeNodeFields(const JsonObject& root, std::string name) {
  core::Node node;
  node.name = std::move(name);
  KUBE_ASSIGN_OR_RETURN(JsonObject meta, root.Object("metadata"));
  KUBE_ASSIGN_OR_RETURN(JsonObject spec, root.Object("spec"));
  KUBE_ASSIGN_OR_RETURN(JsonObject status, root.Object("status"));
  KUBE_ASSIGN_OR_RETURN(node.allocatable, Quantities(status, "allocatable"));
  KUBE_ASSIGN_OR_RETURN(node.labels, meta.StringMap("labels"));
  KUBE_ASSIGN_OR_RETURN(node.unschedulable, spec.Bool("unschedulable"));
  KUBE_ASSIGN_OR_RETURN(std::vector<JsonObject> taints, spec.ObjectArray("taints"));
  for (const JsonObject& t : taints) {
    core::Taint taint;
    KUBE_ASSIGN_OR_RETURN(std::string_view key, t.String("key"));
    KUBE_ASSIGN_OR_RETURN(std::string_view value, t.String("value"));
    KUBE_ASSIGN_OR_RETURN(std::string_view effect, t.String("effect"));
    if (key.empty()) return Invalid(t.FieldPath("key"), "missing");
    taint.key = std::string(key);
    taint.value = std::string(value);
    KUBE_ASSIGN_OR_RETURN(taint.effect, Effect(effect, t.FieldPath("effect")));
    node.taints.push_back(std::move(taint));
  }
  return node;
}

// The metadata string at `key`, or "" when the document is too malformed to say.
std::string MetaString(simdjson::dom::element obj, std::string_view key) {
  std::string_view s;
  if (obj["metadata"][key].get(s) != simdjson::SUCCESS) return "";
  return std::string(s);
}

absl::Status InObject(absl::string_view object, const absl::Status& status) {
  return absl::InvalidArgumentError(absl::StrCat(object, ": ", status.message()));
}

}  // namespace

absl::StatusOr<int64_t> TimeMs(const JsonObject& obj, std::string_view key) {
  KUBE_ASSIGN_OR_RETURN(std::string_view text, obj.String(key));
  if (text.empty()) return 0;
  return Rfc3339Ms(Sv(text), obj.FieldPath(key));
}

absl::StatusOr<core::PodInfo> DecodePod(simdjson::dom::element pod, const PlacementKey* key) {
  std::string ns = MetaString(pod, "namespace");
  std::string name = MetaString(pod, "name");
  std::string object = absl::StrCat("pod ", ns, "/", name.empty() ? "<unnamed>" : name);
  if (name.empty()) return InObject(object, Invalid("metadata.name", "missing"));
  absl::StatusOr<JsonObject> root = JsonObject::Of(pod, "");
  if (!root.ok()) return InObject(object, root.status());
  absl::StatusOr<core::PodInfo> info = DecodePodFields(*root, key);
  if (!info.ok()) return InObject(object, info.status());
  info->ns = std::move(ns);
  info->name = std::move(name);
  return info;
}

absl::StatusOr<core::Node> DecodeNode(simdjson::dom::element node) {
  std::string name = MetaString(node, "name");
  std::string object = absl::StrCat("node ", name.empty() ? "<unnamed>" : name);
  if (name.empty()) return InObject(object, Invalid("metadata.name", "missing"));
  absl::StatusOr<JsonObject> root = JsonObject::Of(node, "");
  if (!root.ok()) return InObject(object, root.status());
  absl::StatusOr<core::Node> info = DecodeNodeFields(*root, name);
  if (!info.ok()) return InObject(object, info.status());
  return info;
}

}  // namespace phalanx::kube
