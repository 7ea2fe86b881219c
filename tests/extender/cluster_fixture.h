// A small cluster shared by the extender tests: three 8-GPU nodes; gpu-node-02 holds the
// preemptible two-pod gang "low-a" (6 + 1 GPUs, priority 10); gpu-node-03 holds the
// non-preemptible pod "pinned-0" (2 GPUs, priority 10); gpu-node-01 is empty.
#ifndef PHALANX_TESTS_EXTENDER_CLUSTER_FIXTURE_H_
#define PHALANX_TESTS_EXTENDER_CLUSTER_FIXTURE_H_

#include <memory>
#include <string>

#include "core/snapshot.h"
#include "tests/testing/fixtures.h"

namespace phalanx::extender {

inline core::PodInfo RunningPod(std::string uid, std::string gang, int size, std::string node,
                                int64_t gpus, bool preemptible) {
  core::PodInfo p;
  p.uid = uid;
  p.ns = "ml";
  p.name = uid;
  p.gang = std::move(gang);
  p.gang_size = size;
  p.node = std::move(node);
  p.phase = core::PodPhase::kRunning;
  p.priority = 10;
  p.preemptible = preemptible;
  p.requests = testing::PodRequests(1000, 1 << 30, gpus);
  return p;
}

inline std::shared_ptr<const core::ClusterSnapshot> ExtenderTestCluster() {
  core::SnapshotBuilder b;
  for (const char* n : {"gpu-node-01", "gpu-node-02", "gpu-node-03"}) {
    b.UpsertNode(testing::GpuNode(n, 8));
  }
  b.UpsertPod(RunningPod("low-a-0", "low-a", 2, "gpu-node-02", 6, true));
  b.UpsertPod(RunningPod("low-a-1", "low-a", 2, "gpu-node-02", 1, true));
  b.UpsertPod(RunningPod("pinned-0", "", 1, "gpu-node-03", 2, false));
  return b.Build();
}

}  // namespace phalanx::extender

#endif  // PHALANX_TESTS_EXTENDER_CLUSTER_FIXTURE_H_
