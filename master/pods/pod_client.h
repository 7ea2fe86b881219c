// The master's seam to Kubernetes: create, delete, label and annotate pods, and what it needs to
// know about a pod (PodState); create, delete and list its runs' Services. KubePodClient
// (kube_pod_client.h) is the real one; tests use a fake.
#ifndef PHALANX_MASTER_PODS_POD_CLIENT_H_
#define PHALANX_MASTER_PODS_POD_CLIENT_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/pod.h"
#include "nlohmann/json.hpp"

namespace phalanx::master {

// A container whose status is state.waiting: kubelet has not started it (yet).
struct ContainerWaiting {
  std::string container;
  std::string reason;   // ContainerCreating, ErrImagePull, CreateContainerConfigError, ...
  std::string message;  // Kubelet's, often empty.
};

inline constexpr size_t kMaxOutlookText = 8192;

// One pod the master created, as last observed.
struct PodState {
  std::string ns;
  std::string name;
  std::string allocation_id;  // Label phalanx.io/gang.
  core::PodPhase phase = core::PodPhase::kPending;
  std::string node;                // spec.nodeName; empty until the pod is bound.
  bool gated = false;              // Still carries phalanx.io/admission.
  bool preempt_requested = false;  // Label phalanx.io/preempt=requested.
  // Annotation phalanx.io/preempted-by while marked: the preemptor's gang key, or the pod's own
  // ("namespace/allocation") when the extender only re-plans its gang.
  std::string preempted_by;
  bool backfilled = false;  // Annotation phalanx.io/backfilled=true.
  // spec.priority, which the API server sets from the pod's class: what kube-scheduler and the
  // extender rank the pod by. Pods keep it for life.
  int32_t priority = 0;
  // metadata.deletionTimestamp: when the kubelet is to have stopped the pod's containers (the
  // deletion's time plus its grace period); InfiniteFuture while the pod is not being deleted.
  absl::Time deletion_deadline = absl::InfiniteFuture();
  std::string pending_reason;  // Annotation phalanx.io/pending-reason.
  // The extender's forecast (phalanx.io/eta, phalanx.io/what-if) and the basis of the run's
  // expected runtime (phalanx.io/expected-runtime-basis), each at most kMaxOutlookText bytes.
  std::string eta;
  std::string what_if;
  std::string expected_runtime_basis;
  // status.reason Evicted (node pressure) or condition DisruptionTarget=True (a drain, a taint,
  // a node shutdown, a preemption): the cluster, not its program, ends it.
  bool disrupted = false;
  // Kubelet's message when it evicted the pod for going over the pod's own local storage limits
  // (a container's or the pod's ephemeral-storage limit, an emptyDir's sizeLimit): its program's
  // doing, so not `disrupted`. Empty otherwise.
  std::string over_own_limit;
  // status.initContainerStatuses, then status.containerStatuses, that are waiting.
  std::vector<ContainerWaiting> waiting;

  bool bound() const { return !node.empty(); }
  bool deleting() const { return deletion_deadline != absl::InfiniteFuture(); }
};

// How to read a pod's log (PodClient::StreamLog).
struct LogOptions {
  bool follow = false;      // Go on as the container writes, until it ends or `stop`.
  bool previous = false;    // The container's previous instance (it restarted).
  int64_t tail_lines = 0;   // Only the last lines; 0: all.
  int64_t limit_bytes = 0;  // At most this much; 0: no bound.
  absl::Duration timeout = absl::Minutes(5);
  const std::atomic<bool>* stop = nullptr;  // Ends a read within about a second when true.
};

// Called from several threads at once (the pods of a submission are created side by side).
class PodClient {
 public:
  virtual ~PodClient() = default;
  // AlreadyExists when a pod of that name exists.
  virtual absl::Status CreatePod(const nlohmann::json& pod) = 0;
  // OK when the pod is already gone.
  virtual absl::Status DeletePod(const std::string& ns, const std::string& name) = 0;
  // Deletes the pod's API object at once (grace period 0), without waiting for its kubelet to
  // confirm that its containers stopped. OK when the pod is already gone.
  virtual absl::Status ForceDeletePod(const std::string& ns, const std::string& name) = 0;
  // True when node `name` is gone, or its Ready condition is not True (Unknown: its kubelet stopped
  // reporting; False: it reports the node not ready).
  virtual absl::StatusOr<bool> NodeDown(const std::string& name) = 0;
  // Sets one label, or one annotation, of the pod (a merge patch of that key alone); NotFound when
  // the pod is gone.
  virtual absl::Status SetPodLabel(const std::string& ns, const std::string& name,
                                   const std::string& key, const std::string& value) = 0;
  virtual absl::Status SetPodAnnotation(const std::string& ns, const std::string& name,
                                        const std::string& key, const std::string& value) = 0;
  // Every pod the master manages (label app.kubernetes.io/managed-by=phalanx-master) in `ns`.
  virtual absl::StatusOr<std::vector<PodState>> ListPods(const std::string& ns) = 0;
  // A run's headless Service (rendezvous.h): AlreadyExists when one of that name exists; OK when
  // it is already gone; the names of those the master manages in `ns`.
  virtual absl::Status CreateService(const nlohmann::json& service) = 0;
  virtual absl::Status DeleteService(const std::string& ns, const std::string& name) = 0;
  virtual absl::StatusOr<std::vector<std::string>> ListServices(const std::string& ns) = 0;
  // The log of the pod's task container, chunk by chunk to `sink` (false stops); NotFound when
  // the pod is gone.
  virtual absl::Status StreamLog(const std::string& ns, const std::string& name,
                                 const LogOptions& options,
                                 const std::function<bool(absl::string_view)>& sink) = 0;
};

}  // namespace phalanx::master

#endif  // PHALANX_MASTER_PODS_POD_CLIENT_H_
