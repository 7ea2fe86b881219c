// A PodClient that keeps pods in memory and records every call; tests play the cluster by turning
// its pods into PodStates for JobManager::OnPod.
#ifndef PHALANX_TESTS_MASTER_TESTING_FAKE_POD_CLIENT_H_
#define PHALANX_TESTS_MASTER_TESTING_FAKE_POD_CLIENT_H_

#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "master/pods/pod_client.h"

namespace phalanx::master::testing {

class FakePodClient final : public PodClient {
 public:
  absl::Status CreatePod(const nlohmann::json& pod) override;
  absl::Status DeletePod(const std::string& ns, const std::string& name) override;
  // Removes the pod and records its name in force_deleted() (not in deleted()).
  absl::Status ForceDeletePod(const std::string& ns, const std::string& name) override;
  // Whether SetNodeDown marked the node down (nodes are up by default); recorded in node_reads().
  absl::StatusOr<bool> NodeDown(const std::string& name) override;
  absl::Status SetPodLabel(const std::string& ns, const std::string& name, const std::string& key,
                           const std::string& value) override;
  absl::Status SetPodAnnotation(const std::string& ns, const std::string& name,
                                const std::string& key, const std::string& value) override;
  absl::StatusOr<std::vector<PodState>> ListPods(const std::string& ns) override;
  // Fails with `service_error` while it is not OK (FailServices).
  absl::Status CreateService(const nlohmann::json& service) override;
  absl::Status DeleteService(const std::string& ns, const std::string& name) override;
  absl::StatusOr<std::vector<std::string>> ListServices(const std::string& ns) override;
  // A stored pod's log: "<name> line 1\n<name> line 2\n" (previous: "<name> before\n"), sent in
  // two chunks that split a line; its last `tail_lines`; followed, it then waits for `stop`.
  // NotFound for a pod not stored.
  absl::Status StreamLog(const std::string& ns, const std::string& name, const LogOptions& options,
                         const std::function<bool(absl::string_view)>& sink) override;

  // Pods (JSON) by "namespace/name".
  std::map<std::string, nlohmann::json> pods();
  // Services (JSON) by "namespace/name", and how many were created.
  std::map<std::string, nlohmann::json> services();
  int service_creates();
  // CreateService and DeleteService answer `error` while it is not OK.
  void FailServices(absl::Status error);
  int creates();
  std::vector<std::string> deleted();
  std::vector<std::string> force_deleted();
  std::vector<std::string> node_reads();
  void SetNodeDown(const std::string& name, bool down);
  // NodeDown answers `error` while it is not OK.
  void FailNodeReads(absl::Status error);
  // The PodState of a stored pod, with the given phase and binding, and the priority of its class.
  static PodState StateOf(const nlohmann::json& pod, core::PodPhase phase, bool bound);
  // Runs `hook` at the start of every CreatePod, without the fake's lock; an error from it fails
  // the creation.
  void OnCreate(std::function<absl::Status(const nlohmann::json& pod)> hook);
  // Runs `hook` at the start of every DeletePod, without the fake's lock; an error from it fails
  // the deletion.
  void OnDelete(std::function<absl::Status(const std::string& name)> hook);
  // The same for SetPodLabel, and for SetPodAnnotation.
  void OnLabel(std::function<absl::Status(const std::string& name)> hook);
  void OnAnnotate(std::function<absl::Status(const std::string& name)> hook);
  // Runs `hook` on each PodState ListPods answers (gated and Pending unless it changes them), with
  // the fake's lock held.
  void OnList(std::function<void(PodState& listed)> hook);

 private:
  // Runs the hook in member `hook` (if set) without the fake's lock.
  absl::Status RunHook(const std::function<absl::Status(const std::string&)> FakePodClient::*hook,
                       const std::string& name);

  std::mutex mu_;
  std::map<std::string, nlohmann::json> pods_;
  int creates_ = 0;
  std::map<std::string, nlohmann::json> services_;
  int service_creates_ = 0;
  absl::Status service_error_;
  std::vector<std::string> deleted_;
  std::vector<std::string> force_deleted_;
  std::vector<std::string> node_reads_;
  std::set<std::string> down_nodes_;
  absl::Status node_error_;
  std::function<absl::Status(const nlohmann::json&)> on_create_;
  std::function<absl::Status(const std::string&)> on_delete_;
  std::function<absl::Status(const std::string&)> on_label_;
  std::function<absl::Status(const std::string&)> on_annotate_;
  std::function<void(PodState&)> on_list_;
};

}  // namespace phalanx::master::testing

#endif  // PHALANX_TESTS_MASTER_TESTING_FAKE_POD_CLIENT_H_
