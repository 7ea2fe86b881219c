// Store plumbing (connection, transactions, migrations) and users/tokens (see store.h).
#include "master/store/store.h"

#include <cstdio>
#include <exception>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "pqxx/pqxx"

namespace phalanx::master {
namespace {

// Each entry is one schema version; never edit an applied one, append a new one.
const char* const kMigrations[] = {
    R"sql(
CREATE TABLE users (
  id BIGSERIAL PRIMARY KEY,
  username TEXT NOT NULL UNIQUE,
  password_hash TEXT NOT NULL,
  admin BOOLEAN NOT NULL DEFAULT false,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now());
CREATE TABLE user_tokens (
  token_hash TEXT PRIMARY KEY,
  user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  expires_at TIMESTAMPTZ NOT NULL);
CREATE SEQUENCE experiment_numbers;
CREATE SEQUENCE task_numbers;
CREATE TABLE jobs (
  job_id TEXT PRIMARY KEY,
  type TEXT NOT NULL,
  name TEXT NOT NULL,
  username TEXT NOT NULL,
  resource_pool TEXT NOT NULL,
  priority INTEGER NOT NULL,
  queue_position DOUBLE PRECISION NOT NULL,
  slots INTEGER NOT NULL,
  state TEXT NOT NULL,
  config TEXT NOT NULL,
  entrypoint TEXT NOT NULL DEFAULT '[]',
  submitted_at TIMESTAMPTZ NOT NULL DEFAULT now());
CREATE INDEX jobs_state ON jobs (state);
CREATE TABLE trials (
  id BIGSERIAL PRIMARY KEY,
  job_id TEXT NOT NULL REFERENCES jobs(job_id),
  hparams TEXT NOT NULL,
  state TEXT NOT NULL,
  runs INTEGER NOT NULL DEFAULT 0,
  latest_checkpoint TEXT NOT NULL DEFAULT '',
  steps_completed BIGINT NOT NULL DEFAULT 0);
CREATE INDEX trials_job ON trials (job_id);
CREATE TABLE allocations (
  id TEXT PRIMARY KEY,
  job_id TEXT NOT NULL REFERENCES jobs(job_id),
  trial_id BIGINT REFERENCES trials(id),
  run INTEGER NOT NULL,
  state TEXT NOT NULL,
  namespace TEXT NOT NULL,
  pods INTEGER NOT NULL,
  preempt_requested BOOLEAN NOT NULL DEFAULT false,
  preempt_acked BOOLEAN NOT NULL DEFAULT false,
  preempt_at TIMESTAMPTZ,
  token_hash TEXT NOT NULL,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now());
CREATE INDEX allocations_open ON allocations (state) WHERE state <> 'TERMINATED';
CREATE TABLE checkpoints (
  uuid TEXT PRIMARY KEY,
  allocation_id TEXT NOT NULL REFERENCES allocations(id),
  trial_id BIGINT NOT NULL REFERENCES trials(id),
  steps_completed BIGINT NOT NULL,
  reported_at TIMESTAMPTZ NOT NULL DEFAULT now());
)sql",
    // Version 2: the master numbers jobs itself (Store::LastJobIds).
    "DROP SEQUENCE experiment_numbers, task_numbers",
    // Version 3: why a trial is in ERROR.
    "ALTER TABLE trials ADD COLUMN error TEXT NOT NULL DEFAULT ''",
    // Version 4: runs of a trial started again after they failed (max_restarts).
    "ALTER TABLE trials ADD COLUMN restarts INTEGER NOT NULL DEFAULT 0",
    // Version 5: the run whose failure was counted last, so that it is counted once.
    "ALTER TABLE trials ADD COLUMN restarted_after TEXT NOT NULL DEFAULT ''",
    // Version 6: since when a pod of the run cannot start a container (pod_start_failure_timeout).
    "ALTER TABLE allocations ADD COLUMN start_failing_at TIMESTAMPTZ",
    // Version 7: expired tokens are deleted at each login (AddToken).
    "CREATE INDEX user_tokens_expires ON user_tokens (expires_at)",
    // Version 8: when phalanx-extender marked the run as a preemption victim (a trial's
    // preemption history, Store::GetTrialHistory).
    R"sql(
ALTER TABLE allocations ADD COLUMN victim_at TIMESTAMPTZ;
CREATE INDEX allocations_victims ON allocations (trial_id, victim_at) WHERE victim_at IS NOT NULL;
)sql",
    // Version 9: trial metrics (store_metrics.cc): the steps each group reported at, the values,
    // and how many values each trial holds in each group (its bound).
    R"sql(
CREATE TABLE trial_metric_counts (
  trial_id BIGINT NOT NULL REFERENCES trials(id),
  grp SMALLINT NOT NULL,
  n BIGINT NOT NULL,
  PRIMARY KEY (trial_id, grp));
CREATE TABLE trial_metric_steps (
  trial_id BIGINT NOT NULL REFERENCES trials(id),
  grp SMALLINT NOT NULL,
  steps BIGINT NOT NULL,
  PRIMARY KEY (trial_id, grp, steps));
CREATE TABLE trial_metrics (
  trial_id BIGINT NOT NULL,
  grp SMALLINT NOT NULL,
  steps BIGINT NOT NULL,
  name TEXT NOT NULL,
  value DOUBLE PRECISION NOT NULL,
  allocation_id TEXT NOT NULL,
  reported_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  PRIMARY KEY (trial_id, grp, steps, name),
  FOREIGN KEY (trial_id, grp, steps) REFERENCES trial_metric_steps);
)sql",
    // Version 10: what an adaptive searcher keeps with each trial (master/search/asha.h).
    "ALTER TABLE trials ADD COLUMN searcher_state TEXT NOT NULL DEFAULT ''",
    // Version 11: a trial's newest checkpoints, and an owner's jobs of a name, read for the
    // training pace (Store::MeasurePace).
    "CREATE INDEX checkpoints_trial ON checkpoints (trial_id, reported_at);"
    "CREATE INDEX jobs_owner_name ON jobs (username, name, type, submitted_at)",
};

// SQLSTATE classes that mean the connection is gone: 08 (connection exception), 57P (shutdown).
bool IsConnectionState(const std::string& state) {
  return absl::StartsWith(state, "08") || absl::StartsWith(state, "57P");
}

// A status of `code` saying `what`; the database's own text goes only to the master's log, never
// to callers (it can quote their input, or the schema).
absl::Status Logged(absl::StatusCode code, absl::string_view what, const std::exception& e) {
  std::fprintf(stderr, "phalanx-master: %s: %s\n", std::string(what).c_str(), e.what());
  return absl::Status(code, absl::StrCat(what, " (details in the master's log)"));
}

User UserFromRow(const pqxx::row& row) {
  return User{.id = row["id"].as<int64_t>(),
              .username = row["username"].as<std::string>(),
              .admin = row["admin"].as<bool>()};
}

}  // namespace

std::string ConnectionString(const DbConfig& db) {
  auto quote = [](const std::string& v) {
    std::string out = "'";
    for (char c : v) {
      if (c == '\'' || c == '\\') out += '\\';
      out += c;
    }
    return out + "'";
  };
  // The job manager holds its lock across statements, so none may hang: a dead host or a network
  // partition is noticed within about a minute rather than the kernel's hours (keepalives probe an
  // idle connection after 30 s, every 10 s, 3 times, on both ends; tcp_user_timeout drops one whose
  // sent data stays unacknowledged 60 s), and the server ends a statement (lock waits included)
  // after 60 s, well beyond any query the master makes, and a session idle in a transaction as
  // long (its row locks go with it). The sessions are named, so that a master taking over can end
  // those of the one before (LeaderLock::FenceOthers).
  return absl::StrCat(
      "host=", quote(db.host), " port=", db.port, " dbname=", quote(db.name),
      " user=", quote(db.user), " password=", quote(db.password), " sslmode=", quote(db.sslmode),
      " connect_timeout=10 keepalives=1 keepalives_idle=30 keepalives_interval=10",
      " keepalives_count=3 tcp_user_timeout=60000 application_name=", kMasterApplicationName,
      " options=",
      quote("-c statement_timeout=60s -c idle_in_transaction_session_timeout=60s "
            "-c tcp_keepalives_idle=30 -c tcp_keepalives_interval=10 -c tcp_keepalives_count=3"));
}

struct Store::Connection {
  explicit Connection(const std::string& url) : conn(url) {}
  pqxx::connection conn;
};

Store::Store(std::string url) : url_(std::move(url)) {}
Store::~Store() = default;

absl::StatusOr<std::unique_ptr<Store>> Store::Open(const std::string& url) {
  std::unique_ptr<Store> store(new Store(url));
  if (absl::Status s = store->Migrate(); !s.ok()) return s;
  return store;
}

absl::Status Store::Transact(const std::function<absl::Status(pqxx::transaction_base&)>& fn) {
  return Run(fn, /*write=*/true);
}

absl::Status Store::Read(const std::function<absl::Status(pqxx::transaction_base&)>& fn) {
  return Run(fn, /*write=*/false);
}

absl::Status Store::Run(const std::function<absl::Status(pqxx::transaction_base&)>& fn,
                        bool write) {
  return WithConnection([&](Connection& c, int) {
    if (!write) {
      pqxx::nontransaction tx(c.conn);
      return fn(tx);
    }
    pqxx::work tx(c.conn);
    absl::Status status = fn(tx);
    if (!status.ok()) return status;  // The transaction aborts.
    tx.commit();
    return absl::OkStatus();
  });
}

absl::Status Store::WriteAtomically(const std::function<void(pqxx::transaction_base&)>& write,
                                    const std::function<bool(pqxx::transaction_base&)>& committed,
                                    bool check_first) {
  return WithConnection([&](Connection& c, int attempt) {
    pqxx::nontransaction tx(c.conn);
    if ((attempt > 0 || check_first) && committed(tx)) return absl::OkStatus();
    write(tx);
    return absl::OkStatus();
  });
}

absl::Status Store::WithConnection(
    const std::function<absl::Status(Connection&, int attempt)>& body) {
  std::lock_guard<std::mutex> lock(mu_);
  for (int attempt = 0;; ++attempt) {
    const bool last = attempt >= 1;
    try {
      if (conn_ == nullptr || !conn_->conn.is_open()) conn_ = std::make_unique<Connection>(url_);
      return body(*conn_, attempt);
    } catch (const pqxx::in_doubt_error& e) {
      conn_.reset();
      return Logged(absl::StatusCode::kUnavailable, "database: commit outcome unknown", e);
    } catch (const pqxx::broken_connection& e) {
      conn_.reset();
      if (last) return Logged(absl::StatusCode::kUnavailable, "database unreachable", e);
    } catch (const pqxx::sql_error& e) {
      if (e.sqlstate() == "23505") {
        return Logged(absl::StatusCode::kAlreadyExists, "database: already exists", e);
      }
      if (!IsConnectionState(e.sqlstate())) {
        return Logged(absl::StatusCode::kInternal, "database error", e);
      }
      conn_.reset();
      if (last) return Logged(absl::StatusCode::kUnavailable, "database unreachable", e);
    } catch (const std::exception& e) {
      conn_.reset();
      return Logged(absl::StatusCode::kInternal, "database error", e);
    }
  }
}

absl::Status Store::Migrate() {
  return Transact([](pqxx::transaction_base& tx) {
    // Waiting for another master's migration, or a long migration, may outlast the connection's
    // statement timeout.
    tx.exec("SET LOCAL statement_timeout = 0");
    tx.exec("SELECT pg_advisory_xact_lock(7316)");  // One migrating master at a time.
    tx.exec("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY)");
    const int applied = tx.exec1("SELECT count(*) FROM schema_migrations")[0].as<int>();
    const int known = static_cast<int>(std::size(kMigrations));
    if (applied > known) {
      return absl::FailedPreconditionError(absl::StrCat(
          "database schema version ", applied, " is newer than this master's (", known, ")"));
    }
    for (int v = applied; v < known; ++v) {
      tx.exec(kMigrations[v]);
      tx.exec_params("INSERT INTO schema_migrations (version) VALUES ($1)", v + 1);
    }
    return absl::OkStatus();
  });
}

absl::StatusOr<User> Store::CreateUser(const std::string& username,
                                       const std::string& password_hash, bool admin) {
  User user;
  absl::Status s = Transact([&](pqxx::transaction_base& tx) {
    user = UserFromRow(
        tx.exec_params1("INSERT INTO users (username, password_hash, admin) VALUES ($1, $2, $3) "
                        "RETURNING id, username, admin",
                        username, password_hash, admin));
    return absl::OkStatus();
  });
  if (absl::IsAlreadyExists(s)) {
    return absl::AlreadyExistsError(absl::StrCat("user \"", username, "\" already exists"));
  }
  if (!s.ok()) return s;
  return user;
}

absl::StatusOr<bool> Store::EnsureUser(const std::string& username,
                                       const std::string& password_hash, bool admin) {
  bool created = false;
  absl::Status s = Transact([&](pqxx::transaction_base& tx) {
    created = !tx.exec_params(
                     "INSERT INTO users (username, password_hash, admin) VALUES ($1, $2, $3) "
                     "ON CONFLICT (username) DO NOTHING RETURNING id",
                     username, password_hash, admin)
                   .empty();
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return created;
}

absl::StatusOr<StoredUser> Store::FindUser(const std::string& username) {
  StoredUser out;
  absl::Status s = Read([&](pqxx::transaction_base& tx) {
    pqxx::result r = tx.exec_params(
        "SELECT id, username, admin, password_hash FROM users WHERE username = $1", username);
    if (r.empty()) return absl::NotFoundError(absl::StrCat("no user \"", username, "\""));
    out.user = UserFromRow(r[0]);
    out.password_hash = r[0]["password_hash"].as<std::string>();
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return out;
}

absl::Status Store::AddToken(const std::string& token_hash, int64_t user_id, absl::Time expires) {
  return Transact([&](pqxx::transaction_base& tx) {
    tx.exec("DELETE FROM user_tokens WHERE expires_at <= now()");
    tx.exec_params(
        "INSERT INTO user_tokens (token_hash, user_id, expires_at) "
        "VALUES ($1, $2, to_timestamp($3))",
        token_hash, user_id, absl::ToUnixSeconds(expires));
    return absl::OkStatus();
  });
}

absl::StatusOr<User> Store::UserForToken(const std::string& token_hash) {
  User user;
  absl::Status s = Read([&](pqxx::transaction_base& tx) {
    pqxx::result r = tx.exec_params(
        "SELECT u.id, u.username, u.admin, t.expires_at > now() AS live "
        "FROM user_tokens t JOIN users u ON u.id = t.user_id WHERE t.token_hash = $1",
        token_hash);
    if (!r.empty() && !r[0]["live"].as<bool>()) {
      tx.exec_params("DELETE FROM user_tokens WHERE token_hash = $1", token_hash);
    }
    if (r.empty() || !r[0]["live"].as<bool>()) {
      return absl::UnauthenticatedError("invalid or expired token; log in again");
    }
    user = UserFromRow(r[0]);
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return user;
}

absl::Status Store::DeleteToken(const std::string& token_hash) {
  return Transact([&](pqxx::transaction_base& tx) {
    tx.exec_params("DELETE FROM user_tokens WHERE token_hash = $1", token_hash);
    return absl::OkStatus();
  });
}

absl::StatusOr<User> Store::SetPassword(const std::string& username,
                                        const std::string& password_hash,
                                        const std::string& keep_token_hash) {
  User user;
  absl::Status s = Transact([&](pqxx::transaction_base& tx) {
    pqxx::result r = tx.exec_params(
        "UPDATE users SET password_hash = $2 WHERE username = $1 RETURNING id, username, admin",
        username, password_hash);
    if (r.empty()) return absl::NotFoundError(absl::StrCat("no user \"", username, "\""));
    user = UserFromRow(r[0]);
    tx.exec_params("DELETE FROM user_tokens WHERE user_id = $1 AND token_hash <> $2", user.id,
                   keep_token_hash);
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return user;
}

}  // namespace phalanx::master
