// The fixture of the master e2e tests: ExtenderE2eTest's namespace, node pool, phalanx-extender and
// invariant Watcher, plus the real phalanx-master on a fresh Postgres database (fixture `postgres`)
// with one resource pool mapped to the test namespace, reached over gRPC. The test plays the trial
// processes through AllocationService with each allocation's own token (read from its pod), and
// plays their containers' exit by annotating the pods phalanx.io/sim-duration=0, which kwok turns
// into phase Succeeded.
#ifndef PHALANX_TESTS_EXTENDER_E2E_MASTER_HARNESS_H_
#define PHALANX_TESTS_EXTENDER_E2E_MASTER_HARNESS_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "grpcpp/grpcpp.h"
#include "phalanx/v1/allocation.grpc.pb.h"
#include "phalanx/v1/auth.grpc.pb.h"
#include "phalanx/v1/experiment.grpc.pb.h"
#include "phalanx/v1/job.grpc.pb.h"
#include "phalanx/v1/task.grpc.pb.h"
#include "tests/extender_e2e/harness.h"

namespace phalanx::e2e {

class MasterE2eTest : public ExtenderE2eTest {
 protected:
  void SetUp() override;
  void TearDown() override;

  // Writes master.yaml (max_slots_per_pod, a 5 min preemption timeout, then `more_yaml`) and starts
  // phalanx-master; returns once it accepts a login. A restart keeps the first start's master.yaml.
  void StartMaster(int max_slots_per_pod, const std::string& more_yaml = "");
  void StopMaster(int signal);
  // Another phalanx-master on the same database and master.yaml (StartMaster first) listening on
  // `listen`, with `env` ("NAME=value") added to its environment; a standby while another master
  // is active. Not waited for; stopped by TearDown unless StopReplica stopped it.
  pid_t SpawnReplica(const std::string& listen, const std::string& metrics_listen,
                     const std::string& log, const std::vector<std::string>& env = {});
  void StopReplica(pid_t pid, int signal);
  // Where the master listens (the same across restarts).
  const std::string& master_address() const { return master_address_; }
  // Logs in as admin on `channel`; "" when the master does not answer.
  static std::string Login(const std::shared_ptr<grpc::Channel>& channel);
  // Submits experiment `name` (one trial of one slot) on `channel` until the master acknowledges
  // it, for up to 120 s, as a user would after an error: logs in again when `token` is empty, and
  // counts each unacknowledged try in `retries`. Returns its id; -1 when it was never acknowledged.
  static int64_t SubmitUntilAcknowledged(const std::shared_ptr<grpc::Channel>& channel,
                                         std::string& token, const std::string& name, int& retries);

  // The admin's token.
  const std::string& token() const { return token_; }
  // A client context with the admin's token, `deadline` from now.
  std::unique_ptr<grpc::ClientContext> Ctx(absl::Duration deadline = absl::Seconds(30));
  grpc::Status CreateExperiment(const std::string& yaml, v1::Experiment* out);
  // ASSERTs success; returns the experiment.
  v1::Experiment MustCreateExperiment(const std::string& yaml);
  v1::GetExperimentResponse GetExperiment(int64_t id);
  void SetExperimentPriority(int64_t id, int priority);
  v1::Task LaunchTask(v1::TaskType type, const std::string& yaml);
  void KillTask(const std::string& id);
  std::vector<v1::Job> Jobs();
  // Prints the master's job queue and where each gang runs, under `title`.
  void ShowQueue(const std::string& title);

  // Live allocations (gangs) whose id starts with `job_id` + "-", sorted.
  std::vector<std::string> Allocations(const std::string& job_id);
  std::vector<std::string> RunningAllocations(const std::string& job_id);
  // The trial process's side, with the allocation's token from its pod's environment.
  // Env var `name` of the task container of the allocation's pod `rank`; "" when unset.
  std::string PodEnv(const std::string& allocation, const std::string& name, int rank = 0);
  bool PreemptionSignalled(const std::string& allocation);
  void CheckpointAndAck(const std::string& allocation, const std::string& uuid);
  // Waits until `expected` allocations of the job are marked for preemption; each, signalled by
  // the master, checkpoints and acknowledges while its pods still exist; then they go. Returns
  // them.
  std::vector<std::string> CheckpointVictims(const std::string& job_id, size_t expected);
  // The trial reports success and its containers exit.
  void Complete(const std::string& allocation);
  v1::ExperimentService::Stub& experiments() { return *experiments_; }

 private:
  std::unique_ptr<grpc::ClientContext> AllocationCtx(const std::string& allocation);

  std::string db_url_;
  std::string config_path_;
  std::vector<pid_t> replicas_;
  std::string master_log_;
  std::string master_address_;
  pid_t master_ = -1;
  std::string token_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::ExperimentService::Stub> experiments_;
  std::unique_ptr<v1::TaskService::Stub> tasks_;
  std::unique_ptr<v1::JobService::Stub> jobs_;
  std::unique_ptr<v1::AllocationService::Stub> allocations_;
};

}  // namespace phalanx::e2e

#endif  // PHALANX_TESTS_EXTENDER_E2E_MASTER_HARNESS_H_
