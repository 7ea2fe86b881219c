// The fixture of the extender e2e tests: each test gets its own namespace and node pool on the
// shared test cluster (tests/cluster), runs the real phalanx-extender on PHALANX_EXTENDER_URL, and
// plays phalanx-master's part of the pod contract (DESIGN.md): it creates gated gangs, finishes
// them by deleting their pods, and requeues victims marked phalanx.io/preempt=requested. A Watcher
// checks the contract's invariants on every pod event of the namespace; TearDown fails the test on
// any violation and on a gang that ends partly bound.
#ifndef PHALANX_TESTS_EXTENDER_E2E_HARNESS_H_
#define PHALANX_TESTS_EXTENDER_E2E_HARNESS_H_

#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "kube/client.h"
#include "kube/placement_key.h"
#include "tests/extender_e2e/watcher.h"

namespace phalanx::e2e {

// One gang as the master would submit it: `pods` gated pods of `gpus` GPUs each.
struct GangSpec {
  std::string name;
  int pods = 1;
  int64_t gpus = 1;
  int priority = 50;  // PriorityClass phalanx-e2e-p<priority>, preemptionPolicy Never.
  int position = 0;   // phalanx.io/queue-position; 0 leaves the label out.
  bool preemptible = true;
  std::string task = "experiment";
  // Non-empty: required node affinity kubernetes.io/hostname In [affinity_host].
  std::string affinity_host;
  bool managed = true;  // False: no phalanx.io/job-id, a gang some other tool created gated.
  // > 0: deleted pods stay terminating this long (their grace period; kwok's pod-delete-graceful).
  int exit_seconds = 0;
  int host_port = 0;  // > 0: the container asks for this host port (TCP).
  std::map<std::string, std::string> annotations;  // Written on each pod as given.
  // Non-empty: spec.schedulingGroup.podGroupName (Kubernetes' workload-aware scheduling).
  std::string pod_group;
};

// One gang's entry in the extender's /debug/queue.
struct QueueEntry {
  std::string state;  // ADMIT, BACKFILL, PREEMPT, WAIT, INFEASIBLE; empty when not queued.
  std::string reason;
  std::vector<std::string> nodes;  // Planned or reserved nodes.
  std::vector<std::string> victims;
};

// The seed of a randomized test: $PHALANX_E2E_SEED when set, to replay a run, else a random one;
// printed either way.
unsigned E2eSeed();

class ExtenderE2eTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  // Adds nodes "<pool>-<suffix>-0".. with `gpus` GPUs and room for `max_pods` pods (allocatable
  // "pods"), labelled and tainted for this test only.
  void AddNodes(const std::string& suffix, int count, int64_t gpus, int max_pods = 110);
  std::string NodeName(const std::string& suffix, int i) const;
  // Adds node "<pool>-<suffix>-0" as AddNodes does, Ready, but kwok does not manage it: no kubelet
  // plays its pods (SetPodRunning does) or ends the ones deleted. Returns its name.
  std::string AddUnmanagedNode(const std::string& suffix, int64_t gpus);
  // Takes an unmanaged node down as the node lifecycle controller sees a node that stopped
  // reporting: Ready Unknown, and the unreachable taints (NoSchedule, NoExecute).
  void LoseNode(const std::string& node);
  // Plays the kubelet of an unmanaged node: the pod's phase becomes Running.
  void SetPodRunning(const std::string& pod);
  // `flags` go to phalanx-extender after the harness's own.
  void StartExtender(int max_slots_per_pod, const std::vector<std::string>& flags = {});
  // Sends `signal` and reaps the process (SIGTERM falls back to SIGKILL after 10 s).
  void StopExtender(int signal);
  // Ensures PriorityClass phalanx-e2e-p<value>[-preempting] exists; returns its name.
  std::string PriorityClass(int value, bool preempt_lower_priority = false);
  void EnsurePriorityClass(const std::string& name, int value, bool preempt_lower_priority);

  // Creates the gang's pods gated, named "<gang>-r<run>-<i>" (run counts submissions).
  void Submit(const GangSpec& gang);
  // An ungated single pod, not phalanx-master's (no phalanx.io/job-id), that kube-scheduler may
  // place and preempt for on its own; `preemptible` labels it phalanx.io/preemptible=true.
  void SubmitUngated(const std::string& name, int64_t gpus, const std::string& priority_class,
                     bool preemptible = false);
  // Writes phalanx.io/placement (signed with the extender's key) and the kubernetes.io/hostname
  // pin on gated pod `pod`, as the extender does before it lifts a gang's gates.
  void Pin(const std::string& pod, const std::string& node);
  // Deletes every pod of the gang (or the pod of that name) and waits until they are gone.
  void Finish(const std::string& gang);
  // The master's part of preemption: deletes marked gangs and submits them again, gated, with the
  // same spec and queue position. Returns their names, sorted.
  std::vector<std::string> RequeueVictims();

  std::vector<PodState> Pods();
  // Live (not terminating, not finished) pods of the gang, by name.
  std::vector<PodState> GangPods(const std::string& gang);
  // Nodes of the gang's bound pods, sorted, one per pod.
  std::vector<std::string> BoundNodes(const std::string& gang);
  bool Running(const std::string& gang);  // Every member of the full gang is bound.
  bool Gated(const std::string& gang);    // It has members and all of them are gated.
  bool Marked(const std::string& gang);   // Every member carries phalanx.io/preempt=requested.
  std::string PendingReason(const std::string& gang);  // Of its first member.
  // Waits until the gang's pending reason is `reason`; a failure shows the last one seen.
  void ExpectReason(const std::string& gang, const std::string& reason);
  std::string PreemptedBy(const std::string& gang);
  std::string Key(const std::string& gang) const { return ns_ + "/" + gang; }

  // Polls Pods() until `pred` holds; false after `timeout`.
  bool WaitUntil(const std::function<bool()>& pred, absl::Duration timeout = absl::Seconds(90));
  // Waits until the extender's decisions have landed: no pod is ungated and unbound, every gated
  // pod has a pending reason and no placement, no pod of the namespace changed for 3 s, and the
  // leading extender's last round saw every change the test saw (a stalled round or a lagging
  // cache cannot pass for a settled cluster).
  void Settle();
  // Whether the running extender's last round saw pod changes up to `version`; true when none
  // runs here or it follows.
  bool ExtenderSaw(uint64_t version);
  // Fails the test if `pred` stops holding within `period`.
  void Holds(const std::string& what, const std::function<bool()>& pred, absl::Duration period);
  QueueEntry Queued(const std::string& gang);

  const std::string& kubeconfig() const { return kubeconfig_; }
  const std::string& cluster_dir() const { return cluster_dir_; }
  const std::string& key_path() const { return key_path_; }
  static constexpr char kPoolKey[] = "e2e.phalanx.io/pool";  // Label and taint of the node pool.

  std::unique_ptr<kube::Client> client_;
  std::string ns_;
  std::unique_ptr<Watcher> watcher_;
  std::optional<kube::PlacementKey> placement_key_;  // What key_path_ holds.
  std::string scheduler_name_ = "phalanx";           // spec.schedulerName of the pods created.

  // A GET of the extender's; `code` receives the HTTP status.
  std::string ExtenderGet(const std::string& path, long* code);
  // Creates `json` as a `resource` in the test namespace, retrying while the PriorityClass it
  // names is not yet seen by admission; a failure is added to the test.
  bool CreateInNamespace(const kube::Resource& resource, const std::string& json);

 private:
  // Starts phalanx-extender with `args`; sets extender_ once it is ready, else `status` if it
  // exited.
  void RunExtender(const std::vector<std::string>& args, int* status);
  std::string cluster_dir_;
  std::string extender_url_;
  std::string kubeconfig_;
  std::string log_path_;
  std::string key_path_;  // The extender's placement_key_file.
  pid_t extender_ = -1;
  std::vector<std::string> nodes_;
  std::map<std::string, GangSpec> specs_;  // By gang name, for requeues.
  std::map<std::string, int> runs_;
};

}  // namespace phalanx::e2e

#endif  // PHALANX_TESTS_EXTENDER_E2E_HARNESS_H_
