// The `greedy` baseline: pods placed one by one like the default kube-scheduler without gangs.
//
// Algorithm, per pass over a snapshot whose pending pods carry no gang label (each pod is a gang of
// one for the engine): pods are taken in the engine's queue order (preemption/queue.h: priority
// desc, then creation, then key) and each one is placed by the engine's GangPlanner (best fit) on
// the capacity left by the pods placed before it in the pass; a pod that does not fit is skipped
// and the pass goes on. Nothing is preempted or reserved. A job runs only when all its pods are
// placed; its placed pods hold their GPUs meanwhile (the simulator does that bookkeeping, and
// detects and resolves the deadlocks it causes: simulator.h).
#ifndef PHALANX_BENCH_REPLAY_GREEDY_H_
#define PHALANX_BENCH_REPLAY_GREEDY_H_

#include <string>
#include <vector>

#include "core/snapshot.h"
#include "gang/slots.h"

namespace phalanx::replay {

struct GreedyPass {
  struct Placement {
    std::string pod_uid;
    std::string node;
  };
  std::vector<Placement> placed;  // In queue order.
  // The first pending pod in queue order left unplaced, empty when every pod was placed.
  std::string blocked_head;
};

GreedyPass RunGreedyPass(const core::ClusterSnapshot& snapshot, const gang::SlotPolicy& slots);

}  // namespace phalanx::replay

#endif  // PHALANX_BENCH_REPLAY_GREEDY_H_
