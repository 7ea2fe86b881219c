// What the master stores: users, jobs (experiments and tasks), trials and allocations. Plain values
// shared by the store, the job manager and the gRPC adapters.
#ifndef PHALANX_MASTER_STORE_RECORDS_H_
#define PHALANX_MASTER_STORE_RECORDS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "master/spec/task_type.h"

namespace phalanx::master {

// Of a job (experiment or task) and of a trial.
enum class RunState { kActive, kPaused, kCompleted, kCanceled, kError };
// Of an allocation (one gang of pods for one run of a trial or task).
enum class AllocState { kPending, kScheduled, kRunning, kPreempting, kTerminating, kTerminated };

absl::string_view RunStateName(RunState s);
std::optional<RunState> RunStateFromName(absl::string_view name);
absl::string_view AllocStateName(AllocState s);
std::optional<AllocState> AllocStateFromName(absl::string_view name);
bool IsTerminal(RunState s);

struct User {
  int64_t id = 0;
  std::string username;
  bool admin = false;
};

struct JobRecord {
  std::string job_id;  // "exp-12", "cmd-7"
  TaskType type = TaskType::kExperiment;
  std::string name;
  std::string username;
  std::string resource_pool;
  int priority = 50;
  double queue_position = 0;
  int slots = 0;  // Per gang (per trial for experiments).
  RunState state = RunState::kActive;
  std::string config;      // The YAML as submitted.
  std::string entrypoint;  // Tasks: JSON array of the command given at launch.
  int64_t submit_ms = 0;
  int num_trials = 0;  // How many trials it has; counted when read, never written.
};

struct TrialRecord {
  int64_t id = 0;
  std::string job_id;
  std::string hparams;  // JSON object.
  RunState state = RunState::kActive;
  int runs = 0;
  std::string latest_checkpoint;
  int64_t steps_completed = 0;
  std::string error;            // Why it is in ERROR, when known.
  int restarts = 0;             // Runs that failed and were started again (max_restarts).
  std::string restarted_after;  // The run (allocation id) whose failure was counted last.
  // What an adaptive searcher keeps with the trial (search::TrialSearch as JSON); "" for others.
  std::string searcher_state;
};

struct AllocationRecord {
  std::string id;  // The gang and pod-name prefix: "exp-12-trial-3-r2", "cmd-7-r1".
  std::string job_id;
  std::optional<int64_t> trial_id;
  int run = 1;
  AllocState state = AllocState::kPending;
  std::string ns;
  int pods = 1;
  bool preempt_requested = false;
  bool preempt_acked = false;
  std::string token_hash;  // Of the token its pods use for AllocationService.
  int64_t created_ms = 0;
  std::optional<int64_t> preempt_ms;  // When preemption was requested.
  // A pod of the run cannot start a container (start_failures.cc); since when, as stored.
  bool start_failing = false;
  std::optional<int64_t> start_failing_ms;
  // phalanx-extender marked the run as a preemption victim (label phalanx.io/preempt, another
  // gang in phalanx.io/preempted-by) and the master ends it for that: one of its trial's
  // preemptions (Store::GetTrialHistory). Once stored, it stays.
  bool victim = false;
};

// The id of run `run` of a trial ("exp-12-trial-3-r2"), or of a task ("cmd-7-r1").
std::string RunId(const std::string& job_id, std::optional<int64_t> trial_id, int run);

// Whether `user` may change `job` (and read its secrets): its owner or an admin.
bool OwnsOrAdmin(const JobRecord& job, const User& user);

// Trial metrics (Store::AddMetrics).
enum class MetricGroup { kTraining = 1, kValidation = 2 };
struct MetricReport {
  int64_t steps = 0;
  std::vector<std::pair<std::string, double>> metrics;  // By name, each name once.
};

// Filters of ListJobs; empty fields match everything.
struct JobFilter {
  std::vector<TaskType> types;
  std::vector<RunState> states;
  std::string name_substring;
  std::string username;
  std::string resource_pool;
  int offset = 0;
  int limit = 100;
};

}  // namespace phalanx::master

#endif  // PHALANX_MASTER_STORE_RECORDS_H_
