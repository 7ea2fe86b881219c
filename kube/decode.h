// Kubernetes Pod and Node JSON (simdjson DOM) decoded into core::PodInfo and core::Node, following
// the pod contract of DESIGN.md. Errors name the object and the field, e.g.
//   pod default/x: spec.containers[0].resources.requests.cpu: invalid quantity "abc": ...
#ifndef PHALANX_KUBE_DECODE_H_
#define PHALANX_KUBE_DECODE_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/node.h"
#include "core/pod.h"
#include "kube/json.h"
#include "kube/placement_key.h"
#include "simdjson.h"

namespace phalanx::kube {

// The pod contract (DESIGN.md).
inline constexpr absl::string_view kGangLabel = "phalanx.io/gang";
// On every pod phalanx-master creates: it tears such pods down itself when they are marked.
inline constexpr absl::string_view kJobIdLabel = "phalanx.io/job-id";
// The resource pool whose maxSlotsPerPod applies (phalanx-master writes it on every pod).
inline constexpr absl::string_view kResourcePoolLabel = "phalanx.io/resource-pool";
inline constexpr absl::string_view kGangSizeLabel = "phalanx.io/gang-size";
inline constexpr absl::string_view kPodGroupNameLabel = "pod-group.scheduling.sigs.k8s.io/name";
inline constexpr absl::string_view kPodGroupMinAvailableLabel =
    "pod-group.scheduling.sigs.k8s.io/min-available";
inline constexpr absl::string_view kXPodGroupLabel = "scheduling.x-k8s.io/pod-group";
inline constexpr absl::string_view kQueuePositionLabel = "phalanx.io/queue-position";
inline constexpr absl::string_view kPreemptibleLabel = "phalanx.io/preemptible";
inline constexpr absl::string_view kPreemptLabel = "phalanx.io/preempt";
inline constexpr absl::string_view kPreemptRequested = "requested";
inline constexpr absl::string_view kPreemptedByAnnotation = "phalanx.io/preempted-by";
inline constexpr absl::string_view kPlacementAnnotation = "phalanx.io/placement";
// phalanx-extender's signatures of the placement and of the preemption mark (placement_key.h).
inline constexpr absl::string_view kPlacementSignatureAnnotation = "phalanx.io/placement-signature";
inline constexpr absl::string_view kPreemptSignatureAnnotation = "phalanx.io/preempt-signature";
// "true", or the gang key of the head whose held nodes the pod was backfilled on (provisional).
inline constexpr absl::string_view kBackfilledAnnotation = "phalanx.io/backfilled";
// Written by phalanx-master: when the trial last checkpointed (RFC 3339), and when the job was
// preempted before (RFC 3339 times, comma-separated, oldest first, at most
// core::kMaxPreemptionHistory).
inline constexpr absl::string_view kCheckpointedAtAnnotation = "phalanx.io/checkpointed-at";
inline constexpr absl::string_view kPreemptedAtAnnotation = "phalanx.io/preempted-at";
inline constexpr absl::string_view kPendingReasonAnnotation = "phalanx.io/pending-reason";
// Written by phalanx-master: the seconds of work the pod's run is expected to take from its start
// (a whole number); the forecast's runtime. Advisory: a value that does not read counts as unknown.
inline constexpr absl::string_view kExpectedRuntimeAnnotation = "phalanx.io/expected-runtime";
// Where that figure comes from, for people (the master shows it beside the estimate).
inline constexpr absl::string_view kExpectedRuntimeBasisAnnotation =
    "phalanx.io/expected-runtime-basis";
// Written by phalanx-extender on gated pods: the forecast start (RFC 3339), or "none: <why>"; and
// what would start the gang now (JSON, forecast/what_if.h).
inline constexpr absl::string_view kEtaAnnotation = "phalanx.io/eta";
inline constexpr absl::string_view kWhatIfAnnotation = "phalanx.io/what-if";
// Nodes the extender keeps a pod off, comma-separated: where kube-scheduler refused its work.
inline constexpr absl::string_view kAvoidNodesAnnotation = "phalanx.io/avoid-nodes";
inline constexpr absl::string_view kAdmissionGate = "phalanx.io/admission";

// A v1 Pod. Requests are the pod's effective requests as kube-scheduler computes them:
// max(sum of containers and sidecars, each init container plus the sidecars started before it),
// pod-level spec.resources.requests where set, plus spec.overhead. A container's limits stand in
// for requests it leaves out. They also hold "pods": 1, whatever the pod requests, so a node's
// allocatable "pods" bounds the pods holding capacity there as kube-scheduler's NodeResourcesFit
// bounds them ("Too many pods" when len(nodeInfo.Pods)+1 > allocatable pods; its nodeInfo.Pods are
// the bound pods its informer sees, which leaves out Succeeded and Failed ones, as
// PodInfo::HoldsCapacity does). Gang: phalanx.io/gang + gang-size labels, else the
// pod-group.scheduling .sigs.k8s.io name + min-available labels, else scheduling.x-k8s.io/pod-group
// (size from a phalanx.io/gang-size label or annotation, else 1). Preemptible: the
// phalanx.io/preemptible label, else only pods phalanx-master created (phalanx.io/job-id): other
// pods opt in. Contract labels and annotations that do not parse leave the pod in, with
// `contract_error` set (core/pod.h). With `key` (phalanx-extender's), a placement or a preemption
// mark (phalanx.io/preempt and preempted-by) that is not signed with it is left out: the pod is
// unplaced, unmarked. Without a key both are taken as written (readers that only observe).
absl::StatusOr<core::PodInfo> DecodePod(simdjson::dom::element pod,
                                        const PlacementKey* key = nullptr);

// Milliseconds since the epoch of the RFC 3339 time at `key` of `obj`; 0 when it is absent.
absl::StatusOr<int64_t> TimeMs(const JsonObject& obj, std::string_view key);

// A v1 Node: name, status.allocatable, labels, spec.taints, spec.unschedulable. A node whose
// allocatable lists no "pods" has room for none, as in kube-scheduler (AllowedPodNumber 0).
absl::StatusOr<core::Node> DecodeNode(simdjson::dom::element node);

}  // namespace phalanx::kube

#endif  // PHALANX_KUBE_DECODE_H_
