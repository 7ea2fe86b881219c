// Store: jobs, trials, checkpoints and allocations (see store.h).
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "master/store/store.h"
#include "nlohmann/json.hpp"
#include "pqxx/pqxx"

namespace phalanx::master {
namespace {

constexpr char kJobColumns[] =
    "job_id, type, name, username, resource_pool, priority, queue_position, slots, state, config, "
    "entrypoint, (extract(epoch FROM submitted_at) * 1000)::BIGINT AS submit_ms, "
    "(SELECT count(*) FROM trials WHERE trials.job_id = jobs.job_id)::INTEGER AS num_trials";
constexpr char kTrialColumns[] =
    "id, job_id, hparams, state, runs, latest_checkpoint, steps_completed, error, restarts, "
    "restarted_after, searcher_state";
constexpr char kAllocationColumns[] =
    "id, job_id, trial_id, run, state, namespace, pods, preempt_requested, preempt_acked, "
    "token_hash, (extract(epoch FROM created_at) * 1000)::BIGINT AS created_ms, "
    "(extract(epoch FROM preempt_at) * 1000)::BIGINT AS preempt_ms, "
    "(extract(epoch FROM start_failing_at) * 1000)::BIGINT AS start_failing_ms, "
    "victim_at IS NOT NULL AS victim";
// When trial $1's latest checkpoint was reported (ms); no row when it has none.
constexpr char kLatestCheckpointMs[] =
    "SELECT (extract(epoch FROM c.reported_at) * 1000)::BIGINT FROM trials t "
    "JOIN checkpoints c ON c.uuid = t.latest_checkpoint WHERE t.id = $1";
// When trial $1's newest $2 victim runs were stored as such (ms), oldest first.
constexpr char kPreemptedMs[] =
    "SELECT ms FROM (SELECT (extract(epoch FROM victim_at) * 1000)::BIGINT AS ms FROM allocations "
    "WHERE trial_id = $1 AND victim_at IS NOT NULL ORDER BY victim_at DESC LIMIT $2) newest "
    "ORDER BY ms";

// Submissions in one statement (so one round trip, and atomic without a transaction block): the
// jobs, then their trials and allocations, each from a JSON array ($1, $2, $3). Foreign keys are
// checked at the end of the statement, when all three exist.
constexpr char kInsertJobs[] = R"sql(
WITH job AS (
  INSERT INTO jobs (job_id, type, name, username, resource_pool, priority, queue_position, slots,
                    state, config, entrypoint, submitted_at)
  SELECT job_id, type, name, username, resource_pool, priority, queue_position, slots, state,
         config, entrypoint, to_timestamp(submit_ms / 1000.0)
  FROM json_to_recordset($1::JSON) AS x(job_id TEXT, type TEXT, name TEXT, username TEXT,
                                        resource_pool TEXT, priority INTEGER,
                                        queue_position DOUBLE PRECISION, slots INTEGER, state TEXT,
                                        config TEXT, entrypoint TEXT, submit_ms BIGINT)),
trial AS (
  INSERT INTO trials (id, job_id, hparams, state, runs, latest_checkpoint, steps_completed,
                      searcher_state)
  SELECT id, job_id, hparams, state, runs, latest_checkpoint, steps_completed, searcher_state
  FROM json_to_recordset($2::JSON) AS x(id BIGINT, job_id TEXT, hparams TEXT, state TEXT,
                                        runs INTEGER, latest_checkpoint TEXT,
                                        steps_completed BIGINT, searcher_state TEXT))
INSERT INTO allocations (id, job_id, trial_id, run, state, namespace, pods, token_hash)
SELECT id, job_id, trial_id, run, state, namespace, pods, token_hash
FROM json_to_recordset($3::JSON) AS x(id TEXT, job_id TEXT, trial_id BIGINT, run INTEGER,
                                      state TEXT, namespace TEXT, pods INTEGER, token_hash TEXT)
)sql";

JobRecord JobFromRow(const pqxx::row& row) {
  return JobRecord{
      .job_id = row["job_id"].as<std::string>(),
      .type = TaskTypeFromName(row["type"].as<std::string>()).value_or(TaskType::kCommand),
      .name = row["name"].as<std::string>(),
      .username = row["username"].as<std::string>(),
      .resource_pool = row["resource_pool"].as<std::string>(),
      .priority = row["priority"].as<int>(),
      .queue_position = row["queue_position"].as<double>(),
      .slots = row["slots"].as<int>(),
      .state = RunStateFromName(row["state"].as<std::string>()).value_or(RunState::kError),
      .config = row["config"].as<std::string>(),
      .entrypoint = row["entrypoint"].as<std::string>(),
      .submit_ms = row["submit_ms"].as<int64_t>(),
      .num_trials = row["num_trials"].as<int>(),
  };
}

TrialRecord TrialFromRow(const pqxx::row& row) {
  return TrialRecord{
      .id = row["id"].as<int64_t>(),
      .job_id = row["job_id"].as<std::string>(),
      .hparams = row["hparams"].as<std::string>(),
      .state = RunStateFromName(row["state"].as<std::string>()).value_or(RunState::kError),
      .runs = row["runs"].as<int>(),
      .latest_checkpoint = row["latest_checkpoint"].as<std::string>(),
      .steps_completed = row["steps_completed"].as<int64_t>(),
      .error = row["error"].as<std::string>(),
      .restarts = row["restarts"].as<int>(),
      .restarted_after = row["restarted_after"].as<std::string>(),
      .searcher_state = row["searcher_state"].as<std::string>(),
  };
}

AllocationRecord AllocationFromRow(const pqxx::row& row) {
  AllocationRecord a{
      .id = row["id"].as<std::string>(),
      .job_id = row["job_id"].as<std::string>(),
      .run = row["run"].as<int>(),
      .state = AllocStateFromName(row["state"].as<std::string>()).value_or(AllocState::kTerminated),
      .ns = row["namespace"].as<std::string>(),
      .pods = row["pods"].as<int>(),
      .preempt_requested = row["preempt_requested"].as<bool>(),
      .preempt_acked = row["preempt_acked"].as<bool>(),
      .token_hash = row["token_hash"].as<std::string>(),
      .created_ms = row["created_ms"].as<int64_t>(),
  };
  if (!row["trial_id"].is_null()) a.trial_id = row["trial_id"].as<int64_t>();
  if (!row["preempt_ms"].is_null()) a.preempt_ms = row["preempt_ms"].as<int64_t>();
  if (!row["start_failing_ms"].is_null()) {
    a.start_failing = true;
    a.start_failing_ms = row["start_failing_ms"].as<int64_t>();
  }
  a.victim = row["victim"].as<bool>();
  return a;
}

void WriteTrial(pqxx::transaction_base& tx, const TrialRecord& t) {
  tx.exec_params(
      "UPDATE trials SET state = $2, runs = $3, latest_checkpoint = $4, steps_completed = $5, "
      "error = $6, restarts = $7, searcher_state = $8 WHERE id = $1",
      t.id, std::string(RunStateName(t.state)), t.runs, t.latest_checkpoint, t.steps_completed,
      t.error, t.restarts, t.searcher_state);
}

void WriteAllocation(pqxx::transaction_base& tx, const AllocationRecord& a) {
  tx.exec_params(
      "INSERT INTO allocations (id, job_id, trial_id, run, state, namespace, pods, token_hash) "
      "VALUES ($1, $2, NULLIF($3, 0), $4, $5, $6, $7, $8)",
      a.id, a.job_id, a.trial_id.value_or(0), a.run, std::string(AllocStateName(a.state)), a.ns,
      a.pods, a.token_hash);
}

// The latest checkpoint time of `trial_id` as `tx` sees it; 0 when it has none.
int64_t LatestCheckpointMs(pqxx::transaction_base& tx, int64_t trial_id) {
  const pqxx::result r = tx.exec_params(kLatestCheckpointMs, trial_id);
  return r.empty() ? 0 : r[0][0].as<int64_t>();
}

// WHERE clause (with $n parameters appended to `params`) for `filter`.
std::string JobWhere(const JobFilter& f, std::vector<std::string>& params) {
  std::vector<std::string> clauses = {"true"};
  auto param = [&](std::string v) {
    params.push_back(std::move(v));
    return absl::StrCat("$", params.size());
  };
  if (!f.types.empty()) {
    std::vector<std::string> names;
    for (TaskType t : f.types) names.push_back(param(std::string(TaskTypeName(t))));
    clauses.push_back(absl::StrCat("type IN (", absl::StrJoin(names, ", "), ")"));
  }
  if (!f.states.empty()) {
    std::vector<std::string> names;
    for (RunState s : f.states) names.push_back(param(std::string(RunStateName(s))));
    clauses.push_back(absl::StrCat("state IN (", absl::StrJoin(names, ", "), ")"));
  }
  if (!f.name_substring.empty()) {
    clauses.push_back(absl::StrCat("strpos(name, ", param(f.name_substring), ") > 0"));
  }
  if (!f.username.empty()) clauses.push_back(absl::StrCat("username = ", param(f.username)));
  if (!f.resource_pool.empty()) {
    clauses.push_back(absl::StrCat("resource_pool = ", param(f.resource_pool)));
  }
  return absl::StrJoin(clauses, " AND ");
}

}  // namespace

absl::StatusOr<Store::LastIds> Store::LastJobIds() {
  LastIds ids;
  absl::Status s = Read([&](pqxx::transaction_base& tx) {
    pqxx::row r = tx.exec1(
        "SELECT "
        "COALESCE(max(substring(job_id FROM '[0-9]+$')::BIGINT) FILTER (WHERE type = "
        "'experiment'), "
        "0), "
        "COALESCE(max(substring(job_id FROM '[0-9]+$')::BIGINT) FILTER (WHERE type <> "
        "'experiment'), "
        "0), "
        "(SELECT COALESCE(max(id), 0) FROM trials) FROM jobs");
    ids = {
        .experiment = r[0].as<int64_t>(), .task = r[1].as<int64_t>(), .trial = r[2].as<int64_t>()};
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return ids;
}

// Rows are JSON objects, each list of them comma-separated without brackets (so that a batch's
// arrays are their concatenation).
struct Store::PendingInsert {
  const std::string& job_id;
  std::string job_row;
  std::string trial_rows;
  std::string allocation_rows;
  absl::Status status;
  bool done = false;
};

namespace {

std::string JobRow(const JobRecord& job) {
  return nlohmann::json{{"job_id", job.job_id},
                        {"type", std::string(TaskTypeName(job.type))},
                        {"name", job.name},
                        {"username", job.username},
                        {"resource_pool", job.resource_pool},
                        {"priority", job.priority},
                        {"queue_position", job.queue_position},
                        {"slots", job.slots},
                        {"state", std::string(RunStateName(job.state))},
                        {"config", job.config},
                        {"entrypoint", job.entrypoint},
                        {"submit_ms", job.submit_ms}}
      .dump();
}

// The elements of `rows` (a JSON array), comma-separated.
std::string Elements(const nlohmann::json& rows) {
  std::string out = rows.dump();
  return out.substr(1, out.size() - 2);
}

// Trials belong to `job_id` whatever their records say.
std::string TrialRows(const std::string& job_id, const std::vector<TrialRecord>& trials) {
  nlohmann::json rows = nlohmann::json::array();
  for (const TrialRecord& t : trials) {
    rows.push_back({{"id", t.id},
                    {"job_id", job_id},
                    {"hparams", t.hparams},
                    {"state", std::string(RunStateName(t.state))},
                    {"runs", t.runs},
                    {"latest_checkpoint", t.latest_checkpoint},
                    {"steps_completed", t.steps_completed},
                    {"searcher_state", t.searcher_state}});
  }
  return Elements(rows);
}

std::string AllocationRows(const std::vector<AllocationRecord>& allocations) {
  nlohmann::json rows = nlohmann::json::array();
  for (const AllocationRecord& a : allocations) {
    rows.push_back({{"id", a.id},
                    {"job_id", a.job_id},
                    {"trial_id", a.trial_id ? nlohmann::json(*a.trial_id) : nullptr},
                    {"run", a.run},
                    {"state", std::string(AllocStateName(a.state))},
                    {"namespace", a.ns},
                    {"pods", a.pods},
                    {"token_hash", a.token_hash}});
  }
  return Elements(rows);
}

bool JobStored(pqxx::transaction_base& tx, const std::string& job_id) {
  return !tx.exec_params("SELECT 1 FROM jobs WHERE job_id = $1", job_id).empty();
}

}  // namespace

absl::Status Store::InsertJobs(const std::vector<PendingInsert*>& batch, bool check_first) {
  // The JSON array of every non-empty `part` of `batch`.
  auto array = [&](std::string PendingInsert::*part) {
    std::string out = "[";
    for (const PendingInsert* p : batch) {
      if ((p->*part).empty()) continue;
      if (out.size() > 1) out += ',';
      out += p->*part;
    }
    return out + "]";
  };
  return WriteAtomically(
      [&](pqxx::transaction_base& tx) {
        tx.conn().prepare("insert_jobs", kInsertJobs);
        tx.exec_prepared("insert_jobs", array(&PendingInsert::job_row),
                         array(&PendingInsert::trial_rows), array(&PendingInsert::allocation_rows));
      },
      // One statement: all of the batch is stored, or none of it.
      [&](pqxx::transaction_base& tx) { return JobStored(tx, batch.front()->job_id); },
      check_first);
}

absl::Status Store::InsertJob(const JobRecord& job, const std::vector<TrialRecord>& trials,
                              const std::vector<AllocationRecord>& allocations) {
  PendingInsert me{.job_id = job.job_id,
                   .job_row = JobRow(job),
                   .trial_rows = TrialRows(job.job_id, trials),
                   .allocation_rows = AllocationRows(allocations)};
  std::unique_lock<std::mutex> lock(group_mu_);
  waiting_.push_back(&me);
  group_cv_.wait(lock, [&] { return me.done || !committing_; });
  if (me.done) return me.status;  // A caller that went first committed it.
  committing_ = true;
  std::vector<PendingInsert*> batch;
  batch.swap(waiting_);
  lock.unlock();
  CommitInserts(batch);
  lock.lock();
  committing_ = false;
  for (PendingInsert* p : batch) p->done = true;
  group_cv_.notify_all();
  return me.status;
}

void Store::CommitInserts(const std::vector<PendingInsert*>& batch) {
  const absl::Status together = InsertJobs(batch, /*check_first=*/false);
  if (batch.size() == 1 || together.ok()) {
    for (PendingInsert* p : batch) p->status = together;
    return;
  }
  // Alone when the batch failed, so that each fails only for its own reason; after a commit of
  // unknown outcome, each first looks whether it is stored.
  for (PendingInsert* p : batch) p->status = InsertJobs({p}, absl::IsUnavailable(together));
}

absl::StatusOr<JobRecord> Store::GetJob(const std::string& job_id) {
  JobRecord job;
  absl::Status s = Read([&](pqxx::transaction_base& tx) {
    pqxx::result r = tx.exec_params(
        absl::StrCat("SELECT ", kJobColumns, " FROM jobs WHERE job_id = $1"), job_id);
    if (r.empty()) return absl::NotFoundError(absl::StrCat("no job \"", job_id, "\""));
    job = JobFromRow(r[0]);
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return job;
}

absl::StatusOr<std::pair<std::vector<JobRecord>, int>> Store::ListJobs(const JobFilter& filter) {
  std::pair<std::vector<JobRecord>, int> out;
  absl::Status s = Read([&](pqxx::transaction_base& tx) {
    std::vector<std::string> params;
    const std::string where = JobWhere(filter, params);
    out.second = tx.exec_params1(absl::StrCat("SELECT count(*) FROM jobs WHERE ", where),
                                 pqxx::prepare::make_dynamic_params(params))[0]
                     .as<int>();
    pqxx::result r = tx.exec_params(absl::StrCat("SELECT ", kJobColumns, " FROM jobs WHERE ", where,
                                                 " ORDER BY submitted_at DESC, job_id DESC LIMIT ",
                                                 filter.limit, " OFFSET ", filter.offset),
                                    pqxx::prepare::make_dynamic_params(params));
    for (const pqxx::row& row : r) out.first.push_back(JobFromRow(row));
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return out;
}

absl::Status Store::UpdateJob(const JobRecord& job) {
  return Transact([&](pqxx::transaction_base& tx) {
    pqxx::result r = tx.exec_params(
        "UPDATE jobs SET name = $2, resource_pool = $3, priority = $4, queue_position = $5, "
        "state = $6 WHERE job_id = $1",
        job.job_id, job.name, job.resource_pool, job.priority, job.queue_position,
        std::string(RunStateName(job.state)));
    if (r.affected_rows() == 0) return absl::NotFoundError(absl::StrCat("no job ", job.job_id));
    return absl::OkStatus();
  });
}

absl::StatusOr<std::vector<TrialRecord>> Store::ListTrials(const std::string& job_id) {
  std::vector<TrialRecord> out;
  absl::Status s = Read([&](pqxx::transaction_base& tx) {
    pqxx::result r = tx.exec_params(
        absl::StrCat("SELECT ", kTrialColumns, " FROM trials WHERE job_id = $1 ORDER BY id"),
        job_id);
    for (const pqxx::row& row : r) out.push_back(TrialFromRow(row));
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return out;
}

absl::StatusOr<TrialRecord> Store::GetTrial(int64_t id) {
  TrialRecord trial;
  absl::Status s = Read([&](pqxx::transaction_base& tx) {
    pqxx::result r =
        tx.exec_params(absl::StrCat("SELECT ", kTrialColumns, " FROM trials WHERE id = $1"), id);
    if (r.empty()) return absl::NotFoundError(absl::StrCat("no trial ", id));
    trial = TrialFromRow(r[0]);
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return trial;
}

absl::Status Store::UpdateTrial(const TrialRecord& t) {
  return Transact([&](pqxx::transaction_base& tx) {
    WriteTrial(tx, t);
    return absl::OkStatus();
  });
}

absl::Status Store::SetSearcherState(int64_t trial_id, const std::string& state) {
  return Transact([&](pqxx::transaction_base& tx) {
    tx.exec_params("UPDATE trials SET searcher_state = $2 WHERE id = $1", trial_id, state);
    return absl::OkStatus();
  });
}

absl::Status Store::CompleteTrials(const std::vector<int64_t>& ids) {
  return Transact([&](pqxx::transaction_base& tx) {
    tx.exec_params(
        "UPDATE trials SET state = 'COMPLETED' WHERE id = ANY($1::BIGINT[]) "
        "AND state NOT IN ('COMPLETED', 'CANCELED', 'ERROR')",
        absl::StrCat("{", absl::StrJoin(ids, ","), "}"));
    return absl::OkStatus();
  });
}

absl::Status Store::CountRestart(int64_t trial_id, const std::string& allocation_id) {
  return Transact([&](pqxx::transaction_base& tx) {
    tx.exec_params(
        "UPDATE trials SET restarts = restarts + 1, restarted_after = $2 "
        "WHERE id = $1 AND restarted_after <> $2",
        trial_id, allocation_id);
    return absl::OkStatus();
  });
}

absl::Status Store::StartRun(const StartedRun& run) {
  return Transact([&](pqxx::transaction_base& tx) {
    WriteTrial(tx, run.trial);
    WriteAllocation(tx, run.allocation);
    return absl::OkStatus();
  });
}

absl::StatusOr<int64_t> Store::AddCheckpoint(const std::string& allocation_id, int64_t trial_id,
                                             const std::string& uuid, int64_t steps_completed) {
  int64_t latest_ms = 0;
  absl::Status s = Transact([&](pqxx::transaction_base& tx) {
    const pqxx::result inserted = tx.exec_params(
        "INSERT INTO checkpoints (uuid, allocation_id, trial_id, steps_completed) "
        "VALUES ($1, $2, $3, $4) ON CONFLICT (uuid) DO NOTHING RETURNING uuid",
        uuid, allocation_id, trial_id, steps_completed);
    if (inserted.empty()) {
      const pqxx::row r = tx.exec_params1(
          "SELECT allocation_id, trial_id, steps_completed FROM checkpoints WHERE uuid = $1", uuid);
      const std::string reported_by = r[0].as<std::string>();
      const int64_t steps = r[2].as<int64_t>();
      if (reported_by == allocation_id && r[1].as<int64_t>() == trial_id &&
          steps == steps_completed) {
        latest_ms = LatestCheckpointMs(tx, trial_id);
        return absl::OkStatus();  // Reported again: already recorded.
      }
      return absl::AlreadyExistsError(absl::StrCat("checkpoint \"", uuid,
                                                   "\" was already reported by ", reported_by,
                                                   " at ", steps, " steps"));
    }
    tx.exec_params("UPDATE trials SET latest_checkpoint = $2, steps_completed = $3 WHERE id = $1",
                   trial_id, uuid, steps_completed);
    latest_ms = LatestCheckpointMs(tx, trial_id);
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return latest_ms;
}

absl::StatusOr<TrialHistory> Store::GetTrialHistory(int64_t trial_id, int max_preemptions) {
  TrialHistory history;
  absl::Status s = Read([&](pqxx::transaction_base& tx) {
    history.checkpoint_ms = LatestCheckpointMs(tx, trial_id);
    for (const pqxx::row& row : tx.exec_params(kPreemptedMs, trial_id, max_preemptions)) {
      history.preempted_ms.push_back(row[0].as<int64_t>());
    }
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return history;
}

absl::StatusOr<std::optional<MeasuredPace>> Store::MeasurePace(int64_t trial_id,
                                                               const JobRecord& job) {
  // Steps and seconds between the first and last of each run's checkpoints, summed per source
  // (0: the trial, 1: its job, 2: the owner's other jobs of that name). Bounded whatever the
  // tables hold: 22 jobs, their newest 20 trials, each trial's newest 20 checkpoints, all read
  // through indexes (migration 11).
  static constexpr char kPace[] = R"sql(
WITH jobs_of_name AS (
  (SELECT job_id FROM jobs WHERE username = $3 AND name = $4 AND type = $5
   ORDER BY submitted_at DESC LIMIT 21)
  UNION SELECT $2::TEXT),
candidates AS (
  SELECT id, job_id FROM trials WHERE id = $1
  UNION
  SELECT t.id, t.job_id FROM jobs_of_name j CROSS JOIN LATERAL (
    SELECT id, job_id FROM trials WHERE job_id = j.job_id ORDER BY id DESC LIMIT 20) t),
recent AS (
  SELECT c.allocation_id, c.steps_completed, c.reported_at,
         CASE WHEN t.id = $1 THEN 0 WHEN t.job_id = $2 THEN 1 ELSE 2 END AS source
  FROM candidates t CROSS JOIN LATERAL (
    SELECT allocation_id, steps_completed, reported_at FROM checkpoints
    WHERE trial_id = t.id ORDER BY reported_at DESC LIMIT 20) c),
runs AS (
  SELECT source, max(steps_completed) - min(steps_completed) AS steps,
         extract(epoch FROM max(reported_at) - min(reported_at)) AS seconds
  FROM recent GROUP BY source, allocation_id)
SELECT source, sum(steps)::FLOAT8, sum(seconds)::FLOAT8 FROM runs
WHERE steps > 0 AND seconds > 0 GROUP BY source ORDER BY source LIMIT 1
)sql";
  std::optional<MeasuredPace> pace;
  absl::Status s = Read([&](pqxx::transaction_base& tx) {
    const pqxx::result r = tx.exec_params(kPace, trial_id, job.job_id, job.username, job.name,
                                          std::string(TaskTypeName(job.type)));
    if (r.empty()) return absl::OkStatus();
    pace = MeasuredPace{.source = static_cast<MeasuredPace::Source>(r[0][0].as<int>()),
                        .steps_per_second = r[0][1].as<double>() / r[0][2].as<double>()};
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return pace;
}

absl::StatusOr<AllocationRecord> Store::GetAllocation(const std::string& id) {
  AllocationRecord a;
  absl::Status s = Read([&](pqxx::transaction_base& tx) {
    pqxx::result r = tx.exec_params(
        absl::StrCat("SELECT ", kAllocationColumns, " FROM allocations WHERE id = $1"), id);
    if (r.empty()) return absl::NotFoundError(absl::StrCat("no allocation \"", id, "\""));
    a = AllocationFromRow(r[0]);
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return a;
}

absl::Status Store::UpdateAllocation(const AllocationRecord& a) {
  return Transact([&](pqxx::transaction_base& tx) {
    tx.exec_params(
        "UPDATE allocations SET state = $2, preempt_requested = $3, preempt_acked = $4, "
        "preempt_at = CASE WHEN $3 THEN COALESCE(preempt_at, now()) END, "
        "start_failing_at = CASE WHEN $5 THEN COALESCE(start_failing_at, now()) END, "
        "victim_at = COALESCE(victim_at, CASE WHEN $6 THEN now() END) WHERE id = $1",
        a.id, std::string(AllocStateName(a.state)), a.preempt_requested, a.preempt_acked,
        a.start_failing, a.victim);
    return absl::OkStatus();
  });
}

absl::StatusOr<std::vector<AllocationRecord>> Store::ListOpenAllocations() {
  std::vector<AllocationRecord> out;
  absl::Status s = Read([&](pqxx::transaction_base& tx) {
    pqxx::result r = tx.exec(absl::StrCat("SELECT ", kAllocationColumns,
                                          " FROM allocations WHERE state <> 'TERMINATED' "
                                          "ORDER BY created_at, id"));
    for (const pqxx::row& row : r) out.push_back(AllocationFromRow(row));
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return out;
}

}  // namespace phalanx::master
