// Stranded gangs: gangs with a member planned on a node that can no longer take it. Once ungated,
// such a member can never bind (its kubernetes.io/hostname pin cannot be changed), and the gang
// must be recreated to be planned again.
//
// A member planned on a node and not bound there yet is stranded when the node has left the
// cluster, when the node no longer admits it (cordoned, or a NoSchedule/NoExecute taint it does
// not tolerate), when the node's labels no longer match the member's node selector (its
// kubernetes.io/hostname pin aside) or required node affinity, when the node's
// kubernetes.io/hostname label no longer names what the member's pin does, or when the node lacks
// the capacity: on a node whose planned members no longer all fit beside its bound pods (what
// kube-scheduler and the kubelet hold to), planned members are kept gang by gang in queue order
// (queue.h; within a gang, by pod name) while they fit, and the rest are stranded. Gangs already
// marked for preemption are left out, and so are, on such a node, the members of gangs stranded for
// another reason: they are being recreated.
#ifndef PHALANX_PREEMPTION_STRANDED_H_
#define PHALANX_PREEMPTION_STRANDED_H_

#include <string>
#include <vector>

#include "core/snapshot.h"

namespace phalanx::preemption {

struct StrandedGang {
  std::string gang;
  std::string reason;  // For the first stranded member, e.g. "node n3 is gone".
};

// The stranded gangs of `snap`, sorted by key.
std::vector<StrandedGang> StrandedGangs(const core::ClusterSnapshot& snap);

// A member kube-scheduler reports unschedulable although it is ungated and planned on a node that,
// by every rule modelled here, takes it (not stranded, and the node not overbooked): kube-scheduler
// holds it to something phalanx does not model (host ports, inter-pod affinity, volumes), or has
// not yet seen the room. Gangs marked for preemption are left out.
struct RefusedMember {
  std::string gang;
  std::string pod_uid;
  std::string pod_name;
  std::string node;
  std::string message;  // kube-scheduler's.
};

// The refused members of `snap`, by gang key, then pod name.
std::vector<RefusedMember> RefusedMembers(const core::ClusterSnapshot& snap);

}  // namespace phalanx::preemption

#endif  // PHALANX_PREEMPTION_STRANDED_H_
