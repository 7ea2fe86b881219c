// Watches the pods of one namespace and checks the pod contract's invariants at every event:
//  - when a pod of a gang is bound (gets spec.nodeName), it is bound to its phalanx.io/placement
//  and
//    every live member of its gang, all phalanx.io/gang-size of them, already carries a placement;
//  - no node is double-booked: the GPUs of the pods holding its capacity as the engine counts them
//    (core::PodInfo::HoldsCapacity: bound to or placed on it and not finished, terminating ones
//    included) fit its allocatable;
//  - no trial of phalanx-master has live pods of two allocations at once.
// Live means neither terminating (deletionTimestamp) nor finished. Stop checks that the watch saw
// every change up to then.
#ifndef PHALANX_TESTS_EXTENDER_E2E_WATCHER_H_
#define PHALANX_TESTS_EXTENDER_E2E_WATCHER_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/pod.h"
#include "kube/client.h"
#include "kube/placement_key.h"
#include "simdjson.h"

namespace phalanx::e2e {

// A pod as the tests read it.
struct PodState {
  core::PodInfo info;
  bool deleting = false;  // Has a deletionTimestamp.
  std::string pending_reason;
  std::string resource_version;
  bool Live() const { return !deleting && !info.IsTerminal(); }
  // Holds its node's capacity as the engine counts it: bound or placed, not finished, terminating
  // or not. Restates core::PodInfo::HoldsCapacity, so that a change there cannot hide from checks.
  bool HoldsCapacity() const { return !info.IsTerminal() && !info.AssignedNode().empty(); }
};

// Decoded as phalanx-extender decodes it with `key` (kube::DecodePod).
absl::StatusOr<PodState> ParsePod(simdjson::dom::element pod, const kube::PlacementKey* key);

// The trial of a phalanx-master allocation's pod: "<job>-trial-<id>" of gang
// "<job>-trial-<id>-r<run>", "<job>" of a task's "<job>-r<run>"; "" for other pods.
std::string TrialOf(const PodState& pod);

// A known node's allocatable GPUs and pods.
struct NodeRoom {
  int64_t gpus = 0;
  int64_t pods = 0;
};

// Violations found in `pods` (one namespace): gangs with bound members that are only partly bound
// or not all placed, and over-booked nodes (more GPUs or pods holding capacity than `nodes` allow).
std::vector<std::string> CheckFinalState(const std::vector<PodState>& pods,
                                         const std::map<std::string, NodeRoom>& nodes);

class Watcher {
 public:
  // Pods are decoded with `key`, the extender's (ParsePod); it must outlive the watcher.
  Watcher(kube::Client* client, std::string ns, const kube::PlacementKey* key)
      : client_(client), ns_(std::move(ns)), key_(key) {}
  ~Watcher() { Halt(); }

  // Lists the namespace and watches from there in a thread.
  absl::Status Start();
  // Waits until the watch has delivered every change a list of the namespace shows (a violation
  // after 15 s: events may have gone unchecked), then stops watching.
  void Stop();
  void AddNode(const std::string& node, NodeRoom room);

  std::vector<std::string> violations();
  std::map<std::string, NodeRoom> nodes();
  int64_t bindings();    // Pods seen getting spec.nodeName.
  int64_t placements();  // Pods seen getting phalanx.io/placement.
  absl::Time last_event();
  // The highest resourceVersion of the pod events seen (0 before the first).
  uint64_t last_version();

 private:
  void Run(std::string resource_version);
  void Halt();
  // "" once the watch has delivered all that a list of the namespace shows, tried for `timeout`;
  // else what it has not.
  std::string CatchUp(absl::Duration timeout);
  // What a list of the namespace shows that the watch has not delivered; "" when nothing.
  absl::StatusOr<std::string> Unseen();
  void Apply(bool deleted, const PodState& pod) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CheckBinding(const PodState& pod) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CheckNode(const std::string& node) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CheckTrial(const PodState& pod) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  kube::Client* client_;
  std::string ns_;
  const kube::PlacementKey* key_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  absl::Mutex mu_;
  std::map<std::string, PodState> pods_ ABSL_GUARDED_BY(mu_);  // By uid.
  std::map<std::string, NodeRoom> nodes_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> violations_ ABSL_GUARDED_BY(mu_);
  int64_t bindings_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t placements_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time last_event_ ABSL_GUARDED_BY(mu_) = absl::Now();
  uint64_t last_version_ ABSL_GUARDED_BY(mu_) = 0;
  std::string watch_error_ ABSL_GUARDED_BY(mu_) = "none";  // The last failed watch's.
};

}  // namespace phalanx::e2e

#endif  // PHALANX_TESTS_EXTENDER_E2E_WATCHER_H_
