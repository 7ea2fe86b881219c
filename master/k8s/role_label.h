// The label phalanx.io/master-role (standby or active) a master keeps on its own pod, which the
// chart's master Service selects (=active). Set() records the role; a thread of its own patches it
// onto the pod, trying again every 2 s while the patch fails, so neither taking the lock nor the
// job manager's ticks wait on the API server. Outside a pod (no pod named) it does nothing.
#ifndef PHALANX_MASTER_K8S_ROLE_LABEL_H_
#define PHALANX_MASTER_K8S_ROLE_LABEL_H_

#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "master/k8s/kube_pod_client.h"

namespace phalanx::master {

inline constexpr char kRoleLabel[] = "phalanx.io/master-role";

class PodRoleLabel {
 public:
  // The pod `ns`/`name` (POD_NAMESPACE and POD_NAME of the downward API); either empty: none.
  PodRoleLabel(KubePodClient& pods, std::string ns, std::string name);
  ~PodRoleLabel();  // Stops the thread.

  void Set(const std::string& role) ABSL_LOCKS_EXCLUDED(mu_);
  // Waits up to `timeout` until the pod carries the role last Set; true when it does (or there is
  // no pod).
  bool WaitApplied(absl::Duration timeout) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Run();

  KubePodClient& pods_;
  const std::string ns_, name_;
  absl::Mutex mu_;
  std::string wanted_ ABSL_GUARDED_BY(mu_);
  std::string applied_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace phalanx::master

#endif  // PHALANX_MASTER_K8S_ROLE_LABEL_H_
