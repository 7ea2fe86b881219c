// Placements kube-scheduler keeps refusing, and the nodes their work is kept off afterwards.
//
// kube-scheduler may refuse a pinned member for something phalanx does not model (a host port in
// use, inter-pod anti-affinity, a volume bound to another zone). The pin cannot be taken back, so
// without this the gang would hold its nodes for good. A member refused on its planned node
// (preemption::RefusedMembers) for `timeout_ms` is due: the loop has its gang recreated, and its
// work (the phalanx-master job, or the gang of another tool) avoids that node from then on, for
// `memory_ms` after the last refusal, through annotation phalanx.io/avoid-nodes on its gated pods.
// A pod is never made to avoid every node it could use (it then avoids none, and is tried again
// where it was refused), and its annotation goes once the memory of its work does. The clocks are
// the caller's; nothing here reads one. The annotations are the memory's only record: after a
// restart, the first Due takes back what gated pods carry, for memory_ms from then.
#ifndef PHALANX_SCHEDULER_EXTENDER_REFUSALS_H_
#define PHALANX_SCHEDULER_EXTENDER_REFUSALS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"
#include "core/pod.h"
#include "core/snapshot.h"
#include "preemption/stranded.h"

namespace phalanx::extender {

class Refusals {
 public:
  // timeout_ms 0: members are never due.
  Refusals(int64_t timeout_ms, int64_t memory_ms)
      : timeout_ms_(timeout_ms), memory_ms_(memory_ms) {}

  // Starts a clock for each member of `snap` newly refused, drops those of members no longer
  // refused and the avoided nodes whose memory ran out, and returns the first due member of each
  // gang (by gang key). The first call first adopts the avoided nodes of the gated pods in `snap`.
  std::vector<preemption::RefusedMember> Due(const core::ClusterSnapshot& snap, int64_t now_ms);
  // How long `uid` has been refused as of `now_ms` (0 when it is not).
  int64_t RefusedFor(const std::string& uid, int64_t now_ms) const;
  // Keeps the work of `pod` off `node` until memory_ms after now.
  void Avoid(const core::PodInfo& pod, const std::string& node, int64_t now_ms);
  // What to write as phalanx.io/avoid-nodes of `pod`, a gated pod without a placement, when that
  // differs from what it carries: the nodes its work avoids, or nullopt to remove the annotation
  // (its work avoids nothing now, or those nodes are all it could use in `snap`). Nothing for
  // other pods, or when the pod carries the right value.
  struct Write {
    std::optional<std::string> value;
  };
  std::optional<Write> Annotation(const core::PodInfo& pod,
                                  const core::ClusterSnapshot& snap) const;

  // The work a pod belongs to: "namespace/job-id" for phalanx-master's pods, else its gang key.
  static std::string Work(const core::PodInfo& pod);

 private:
  struct Avoided {
    absl::btree_set<std::string> nodes;
    int64_t until_ms = 0;
  };

  // Remembers, until memory_ms after `now_ms`, the nodes that the gated pods of `snap` avoid.
  void Adopt(const core::ClusterSnapshot& snap, int64_t now_ms);

  int64_t timeout_ms_;
  int64_t memory_ms_;
  bool adopted_ = false;
  absl::flat_hash_map<std::string, int64_t> since_;    // Refused pod uid -> first seen refused.
  absl::flat_hash_map<std::string, Avoided> avoided_;  // By Work().
};

}  // namespace phalanx::extender

#endif  // PHALANX_SCHEDULER_EXTENDER_REFUSALS_H_
