// Test helpers: build nodes, pods and gangs tersely, and apply admission decisions the way the
// extender and master would (ungate admitted gangs, delete victims), so scenarios read as stories.
#ifndef PHALANX_TESTS_TESTING_FIXTURES_H_
#define PHALANX_TESTS_TESTING_FIXTURES_H_

#include <memory>
#include <string>
#include <vector>

#include "core/snapshot.h"
#include "preemption/admission.h"

namespace phalanx::testing {

// A node with `gpus` GPUs, 64 CPUs, 512 GiB and room for 110 pods (the kubelet's default).
core::Node GpuNode(std::string name, int64_t gpus);

// A pod's requests as kube/decode.h gives them: these amounts and one of the node's pods.
core::Resources PodRequests(int64_t milli_cpu, int64_t memory, int64_t gpus);

struct GangSpec {
  std::string name;
  int pods = 1;
  int64_t gpus_per_pod = 1;
  int32_t priority = 50;
  int64_t created_ms = 0;
  bool preemptible = true;
  std::string ns = "default";
  // Set on every pod: a pool's pods are created by phalanx-master (a job id) and carry its
  // nodeSelector.
  std::string pool;
  core::Labels node_selector;
};

// Gated pods "<name>-0".. of one gang, uids "<ns>/<name>-<i>".
std::vector<core::PodInfo> GatedGang(const GangSpec& spec);

// A mutable cluster for scenario tests.
class Cluster {
 public:
  void AddNode(core::Node node);
  void Submit(const GangSpec& spec);
  // Runs one admission round and applies it: admitted/backfilled gangs start on their plan
  // (bound and Running, start time = now), victims are marked preempt_requested.
  preemption::RoundResult Step(const preemption::AdmissionOptions& options);
  // Removes every pod of the gang (it completed, was killed, or its preemption finished).
  void Finish(const std::string& gang_key);
  // Removes the gang's pods on `node` only (one pod of a gang exits before the others).
  void ExitPodOn(const std::string& gang_key, const std::string& node);
  // Does what the master does with victims: their pods go and come back gated (same creation
  // time, so they keep their place in the queue). Returns their gang keys (sorted).
  std::vector<std::string> RequeueMarkedVictims();

  std::shared_ptr<const core::ClusterSnapshot> snapshot() { return builder_.Build(); }
  // Node names of running pods of the gang, one per pod (sorted), empty when not running.
  std::vector<std::string> NodesOf(const std::string& gang_key);
  bool Running(const std::string& gang_key);
  int64_t now_ms = 1'000'000;

 private:
  core::SnapshotBuilder builder_;
};

const preemption::GangDecision* FindDecision(const preemption::RoundResult& r,
                                             const std::string& gang_key);

}  // namespace phalanx::testing

#endif  // PHALANX_TESTS_TESTING_FIXTURES_H_
