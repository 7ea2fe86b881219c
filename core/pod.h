// A pod as the scheduler sees it: requests, priority, gang membership, queue data and state.
#ifndef PHALANX_CORE_POD_H_
#define PHALANX_CORE_POD_H_

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/node.h"
#include "core/resources.h"

namespace phalanx::core {

enum class PodPhase { kPending, kRunning, kSucceeded, kFailed, kUnknown };

// The most preemption times a pod carries; the master keeps the newest.
inline constexpr int kMaxPreemptionHistory = 16;

// Pods without a queue position (or position 0) sort after every positioned pod.
inline constexpr double kNoQueuePosition = std::numeric_limits<double>::infinity();

struct PodInfo {
  std::string uid;
  std::string ns;
  std::string name;
  Resources requests;  // Decoded pods also request one of the node's pods (kube/decode.h).
  int32_t priority = 0;
  std::string gang;       // Gang name within the namespace; empty for a gang of one.
  int32_t gang_size = 1;  // Members the gang expects.
  double queue_position = kNoQueuePosition;
  int64_t creation_ms = 0;
  int64_t start_ms = 0;  // When it started running; 0 when unknown or not started.
  bool preemptible = true;
  bool gated = false;              // Carries the phalanx.io/admission scheduling gate.
  bool preempt_requested = false;  // Labelled phalanx.io/preempt=requested.
  std::string preempted_by;        // Gang key of the preemptor when preempt_requested.
  bool backfilled = false;         // Admitted as backfill behind a blocked head.
  // The head whose held nodes it was backfilled on (phalanx.io/backfilled holds its gang key):
  // that head may take it back whatever their priorities. Empty for other backfill.
  std::string backfilled_behind;
  // When its trial last reported a checkpoint (phalanx.io/checkpointed-at); 0 when never.
  int64_t checkpoint_ms = 0;
  // When its job was preempted before, oldest first (phalanx.io/preempted-at), at most
  // kMaxPreemptionHistory entries.
  std::vector<int64_t> preempted_ms;
  // Work its run is expected to take from its start (phalanx.io/expected-runtime); -1: unknown.
  int64_t expected_runtime_ms = -1;
  std::string job_id;              // phalanx.io/job-id: set on the pods phalanx-master created.
  std::string pool;                // phalanx.io/resource-pool; empty when unlabelled.
  std::string node;                // spec.nodeName once bound.
  std::string placement;           // phalanx.io/placement: the planned node.
  PodPhase phase = PodPhase::kPending;
  std::vector<Toleration> tolerations;
  Labels node_selector;
  // Required node affinity (requiredDuringSchedulingIgnoredDuringExecution): a node must match one
  // of these terms; empty when the pod has none.
  std::vector<NodeSelectorTerm> node_affinity;
  // Nodes it must not be planned on (annotation phalanx.io/avoid-nodes), sorted.
  std::vector<std::string> avoid_nodes;
  // kube-scheduler's message while it reports the pod unschedulable (condition PodScheduled False,
  // reason Unschedulable); empty otherwise.
  std::string refused;
  // Why its phalanx labels or annotations could not be read, if so. Such a pod still counts
  // against its node, is never a victim and is not admitted.
  std::string contract_error;

  // "namespace/gang", or "namespace/name" for a gang of one.
  std::string GangKey() const;
  // Created by phalanx-master.
  bool managed() const { return !job_id.empty(); }
  // The node whose capacity this pod holds: its bound node, else its planned node.
  absl::string_view AssignedNode() const { return node.empty() ? placement : node; }
  bool IsTerminal() const { return phase == PodPhase::kSucceeded || phase == PodPhase::kFailed; }
  bool HoldsCapacity() const { return !IsTerminal() && !AssignedNode().empty(); }
};

// `pod` as the master recreates a pod preempted at `preempted_ms`: gated again, unplaced,
// unmarked, same creation time (so it keeps its place in the queue), that time added to its
// preemption history.
PodInfo Requeued(PodInfo pod, int64_t preempted_ms);

}  // namespace phalanx::core

#endif  // PHALANX_CORE_POD_H_
