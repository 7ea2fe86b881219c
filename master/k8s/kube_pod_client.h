// Kubernetes side of the master through kube::Client: KubePodClient (create, delete, label,
// annotate and list the master's pods, create, delete and list its runs' Services, and read
// whether a node is down; creates the phalanx-priority-<value> class a pod names before its first
// pod) and PodWatcher (list + watch of those pods in each pool namespace, feeding the JobManager;
// relists after 410 Gone or errors, and reports pods that vanished meanwhile).
#ifndef PHALANX_MASTER_K8S_KUBE_POD_CLIENT_H_
#define PHALANX_MASTER_K8S_KUBE_POD_CLIENT_H_

#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "kube/client.h"
#include "master/jobs/job_manager.h"
#include "master/pods/pod_client.h"
#include "simdjson.h"

namespace phalanx::master {

// "app.kubernetes.io/managed-by=phalanx-master".
std::string ManagedPodSelector();

// The PodState of a v1 Pod object.
absl::StatusOr<PodState> DecodePodState(simdjson::dom::element pod);

class KubePodClient final : public PodClient {
 public:
  explicit KubePodClient(kube::Client& client) : client_(client) {}
  absl::Status CreatePod(const nlohmann::json& pod) override;
  absl::Status DeletePod(const std::string& ns, const std::string& name) override;
  absl::Status ForceDeletePod(const std::string& ns, const std::string& name) override;
  absl::StatusOr<bool> NodeDown(const std::string& name) override;
  absl::Status SetPodLabel(const std::string& ns, const std::string& name, const std::string& key,
                           const std::string& value) override;
  absl::Status SetPodAnnotation(const std::string& ns, const std::string& name,
                                const std::string& key, const std::string& value) override;
  absl::StatusOr<std::vector<PodState>> ListPods(const std::string& ns) override;
  absl::Status CreateService(const nlohmann::json& service) override;
  absl::Status DeleteService(const std::string& ns, const std::string& name) override;
  absl::StatusOr<std::vector<std::string>> ListServices(const std::string& ns) override;
  absl::Status StreamLog(const std::string& ns, const std::string& name, const LogOptions& options,
                         const std::function<bool(absl::string_view)>& sink) override;

 private:
  // Creates class `name` if it is one of the master's per-value classes not known to exist; true
  // when it was not known before this call (created now, here or by a call at the same time), so
  // the API server's admission may not see it yet.
  absl::StatusOr<bool> EnsurePriorityClass(const std::string& name);
  // Sets key `key` of the pod's metadata map `map` ("labels" or "annotations") by a JSON merge
  // patch, which leaves every other key as it is.
  absl::Status SetPodMetadata(const std::string& ns, const std::string& name, const char* map,
                              const std::string& key, const std::string& value);

  kube::Client& client_;
  absl::Mutex mu_;
  std::set<std::string> classes_ ABSL_GUARDED_BY(mu_);  // Known to exist.
};

class PodWatcher {
 public:
  // `client` and `jobs` must outlive the watcher.
  PodWatcher(kube::Client& client, JobManager& jobs, std::vector<std::string> namespaces);
  ~PodWatcher();  // Stops.
  void Start();
  void Stop();

 private:
  void Run(const std::string& ns);

  kube::Client& client_;
  JobManager& jobs_;
  const std::vector<std::string> namespaces_;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

}  // namespace phalanx::master

#endif  // PHALANX_MASTER_K8S_KUBE_POD_CLIENT_H_
