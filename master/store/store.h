// The master's Postgres store (libpqxx): schema migrations on open, then users, tokens, jobs,
// trials, allocations and checkpoints. Every write commits before it returns, so an acknowledged
// request survives a master crash. A broken connection (a database restart) is reopened on the next
// call; a call whose transaction never committed is retried once on the new connection. Thread-safe
// (one connection behind a mutex). libpqxx exceptions never leave this module: errors are
// absl::Status (NotFound, AlreadyExists, Unavailable for connection trouble, Internal otherwise),
// whose messages never carry the database's own text (that goes to stderr).
#ifndef PHALANX_MASTER_STORE_STORE_H_
#define PHALANX_MASTER_STORE_STORE_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "master/config/config.h"
#include "master/store/records.h"

namespace pqxx {
class transaction_base;
}  // namespace pqxx

namespace phalanx::master {

// A trial's next run: the trial with its new run count and state, and the allocation that runs it.
struct StartedRun {
  TrialRecord trial;
  AllocationRecord allocation;
};

// What the pods of a trial's next run carry about its earlier runs (pod_builder.h).
// Training pace measured from checkpoints (Store::MeasurePace): steps per second over the runs
// of the closest source that has two checkpoints in a run.
struct MeasuredPace {
  enum class Source { kTrial, kExperiment, kOwnerHistory };
  Source source = Source::kTrial;
  double steps_per_second = 0;
};

struct TrialHistory {
  int64_t checkpoint_ms = 0;          // When its latest checkpoint was reported; 0 when none.
  std::vector<int64_t> preempted_ms;  // When its runs were preempted, oldest first.
  std::optional<MeasuredPace> pace;   // Store::MeasurePace's; not read by GetTrialHistory.
};

struct StoredUser {
  User user;
  std::string password_hash;
};

// The application_name of the master's database sessions.
inline constexpr char kMasterApplicationName[] = "phalanx-master";

// A libpq connection string ("host='db' port=5432 ...") for `db`, values quoted and escaped, with
// TCP keepalives and timeouts that bound how long a statement can hang (see store.cc).
std::string ConnectionString(const DbConfig& db);

class Store {
 public:
  // `url`: a libpq connection string or URI. Connects and applies pending migrations.
  static absl::StatusOr<std::unique_ptr<Store>> Open(const std::string& url);
  ~Store();

  // Users and tokens (only token hashes are stored).
  absl::StatusOr<User> CreateUser(const std::string& username, const std::string& password_hash,
                                  bool admin);
  // Creates the user unless it exists (an existing user is left alone); true when it created it.
  absl::StatusOr<bool> EnsureUser(const std::string& username, const std::string& password_hash,
                          bool admin);
  absl::StatusOr<StoredUser> FindUser(const std::string& username);
  // Also deletes every expired token.
  absl::Status AddToken(const std::string& token_hash, int64_t user_id, absl::Time expires);
  // Unauthenticated when unknown or expired; an expired token is deleted.
  absl::StatusOr<User> UserForToken(const std::string& token_hash);
  absl::Status DeleteToken(const std::string& token_hash);
  // Stores the user's new password hash and deletes their tokens but `keep_token_hash`, in one
  // transaction; NotFound for an unknown user.
  absl::StatusOr<User> SetPassword(const std::string& username, const std::string& password_hash,
                                   const std::string& keep_token_hash);

  // Jobs. Ids are numbered by the master (one master per database, as Determined's): LastJobIds
  // says where numbering continues. A submission stores the job, its trials and the allocations of
  // their first runs as one request with one commit; AlreadyExists when an id is taken (then
  // nothing is stored). Submissions that arrive while one commits are committed together after it
  // (group commit: one disk flush for all of them).
  struct LastIds {
    int64_t experiment = 0;  // Number of the newest experiment (exp-N), 0 when none.
    int64_t task = 0;        // Of the newest command, notebook, shell or tensorboard.
    int64_t trial = 0;       // Highest trial id.
  };
  absl::StatusOr<LastIds> LastJobIds();
  absl::Status InsertJob(const JobRecord& job, const std::vector<TrialRecord>& trials,
                         const std::vector<AllocationRecord>& allocations = {});
  absl::StatusOr<JobRecord> GetJob(const std::string& job_id);
  // Newest first; the second member is the count before paging.
  absl::StatusOr<std::pair<std::vector<JobRecord>, int>> ListJobs(const JobFilter& filter);
  // Writes name, resource_pool, priority, queue_position and state.
  absl::Status UpdateJob(const JobRecord& job);

  absl::StatusOr<std::vector<TrialRecord>> ListTrials(const std::string& job_id);
  absl::StatusOr<TrialRecord> GetTrial(int64_t id);
  // Writes state, runs, latest_checkpoint, steps_completed, error and restarts.
  absl::Status UpdateTrial(const TrialRecord& trial);
  // Counts one restart of the trial for the failure of run `allocation_id`, once: counting the same
  // run again (a retry after a write whose answer was lost) changes nothing.
  absl::Status CountRestart(int64_t trial_id, const std::string& allocation_id);
  // Records the checkpoint and makes it the trial's latest, in one transaction; answers when the
  // trial's latest checkpoint was reported (ms since the epoch, the database's clock): this one's
  // time, or, when it is reported again (same uuid, allocation and steps: then nothing changes),
  // the time of the latest. Its uuid with other values is AlreadyExists.
  absl::StatusOr<int64_t> AddCheckpoint(const std::string& allocation_id, int64_t trial_id,
                                        const std::string& uuid, int64_t steps_completed);
  // When the trial's latest checkpoint was reported, and when its newest `max_preemptions` runs
  // that were preemption victims (AllocationRecord::victim) were stored as such, oldest first.
  absl::StatusOr<TrialHistory> GetTrialHistory(int64_t trial_id, int max_preemptions);

  // The pace of trial `trial_id`'s runs; else of the other trials of `job`; else of the trials of
  // its owner's latest 20 other jobs of its type and name. Read from the newest 20 checkpoints of
  // each of the newest 20 trials of those jobs; nullopt when no run of them has two.
  absl::StatusOr<std::optional<MeasuredPace>> MeasurePace(int64_t trial_id, const JobRecord& job);

  // Stores the trial's new run count and state and inserts the run's allocation, in one
  // transaction.
  absl::Status StartRun(const StartedRun& run);
  absl::StatusOr<AllocationRecord> GetAllocation(const std::string& id);
  // Writes state, preempt_requested, preempt_acked, the preempt time (set when preempt_requested
  // first is, cleared with it), the start-failing time (the same for start_failing) and the
  // victim time (set when victim first is, never cleared).
  absl::Status UpdateAllocation(const AllocationRecord& allocation);
  // Allocations not TERMINATED, oldest first.
  absl::StatusOr<std::vector<AllocationRecord>> ListOpenAllocations();

  // Trial metrics (store_metrics.cc). Stores `reports` of run `allocation_id` of the trial in one
  // transaction, a value of steps and name already stored replaced; ResourceExhausted (and nothing
  // stored) when the trial would then hold more than `max_values` values in the group.
  absl::Status AddMetrics(int64_t trial_id, const std::string& allocation_id, MetricGroup group,
                          const std::vector<MetricReport>& reports, int64_t max_values);
  // The trial's searcher_state alone (an adaptive searcher's, master/search/asha.h).
  absl::Status SetSearcherState(int64_t trial_id, const std::string& state);
  // Every trial of `ids` that is not COMPLETED, CANCELED or ERROR becomes COMPLETED, in one
  // statement.
  absl::Status CompleteTrials(const std::vector<int64_t>& ids);
  // The trial's reports in the group of more than `after_steps` steps, in steps order: at most
  // `limit` reports, none begun once `max_values` values are in (a page's size stays bounded);
  // `more` says whether reports of more steps follow.
  absl::StatusOr<std::vector<MetricReport>> GetMetrics(int64_t trial_id, MetricGroup group,
                                                       int64_t after_steps, int limit,
                                                       size_t max_values, bool* more);
  // For each trial of the job that reported a finite validation value of `metric`: its best, the
  // smallest (or the largest when !smaller_is_better).
  absl::StatusOr<std::map<int64_t, double>> BestValidation(const std::string& job_id,
                                                           const std::string& metric,
                                                           bool smaller_is_better);

 private:
  explicit Store(std::string url);

  // Runs `fn` in a transaction and commits when it returns OK (see the class comment for retries).
  absl::Status Transact(const std::function<absl::Status(pqxx::transaction_base&)>& fn);
  // Runs `fn` without a transaction (each statement sees its own snapshot): one round trip a
  // statement, for reads.
  absl::Status Read(const std::function<absl::Status(pqxx::transaction_base&)>& fn);
  absl::Status Run(const std::function<absl::Status(pqxx::transaction_base&)>& fn, bool write);
  // Runs `write` (one statement, so one transaction) outside a transaction block. When the
  // connection breaks before the answer, `committed` (true exactly when that statement committed)
  // decides on a new connection whether to run it once more; `check_first` asks it before the
  // first run too.
  absl::Status WriteAtomically(const std::function<void(pqxx::transaction_base&)>& write,
                               const std::function<bool(pqxx::transaction_base&)>& committed,
                               bool check_first = false);
  // A submission waiting in InsertJob (store_jobs.cc).
  struct PendingInsert;
  // Stores `batch` in one statement; `check_first` as for WriteAtomically.
  absl::Status InsertJobs(const std::vector<PendingInsert*>& batch, bool check_first);
  // Stores `batch` together; when that fails, each alone.
  void CommitInserts(const std::vector<PendingInsert*>& batch);
  absl::Status Migrate();

  struct Connection;  // A pqxx::connection (a typedef, so not forward-declarable).
  // Runs `body` on the connection (opened or reopened as needed) under the mutex; a second attempt
  // follows a broken connection (see the class comment).
  absl::Status WithConnection(const std::function<absl::Status(Connection&, int attempt)>& body);

  const std::string url_;
  std::mutex mu_;
  std::unique_ptr<Connection> conn_;  // Guarded by mu_; null when broken.
  // Group commit of submissions (InsertJob).
  std::mutex group_mu_;
  std::condition_variable group_cv_;
  std::vector<PendingInsert*> waiting_;  // Guarded by group_mu_: not yet taken into a batch.
  bool committing_ = false;              // Guarded by group_mu_: a caller is storing a batch.
};

}  // namespace phalanx::master

#endif  // PHALANX_MASTER_STORE_STORE_H_
