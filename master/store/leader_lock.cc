// The active master's advisory lock (leader_lock.h).
#include "master/store/leader_lock.h"

#include <chrono>
#include <exception>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "master/store/store.h"
#include "pqxx/pqxx"

namespace phalanx::master {
namespace {

// The lock's key pair (pg_try_advisory_lock(int, int)): "phlx" and 1. Store::Migrate's
// transaction lock uses the one-key form, a separate key space.
constexpr int kLockClass = 0x70686c78;
constexpr int kLockId = 1;

// The server ends this session (freeing the lock) ~11 s after its peer went silent. Named apart
// from the store's sessions, which FenceOthers ends.
constexpr char kSessionSettings[] =
    "SET tcp_keepalives_idle = 5; SET tcp_keepalives_interval = 2; "
    "SET tcp_keepalives_count = 3; SET statement_timeout = '10s'; "
    "SET application_name = 'phalanx-master-lock'";

// Whether this session holds the lock (not only whether it is alive: behind a pooler in
// transaction mode a session could lose it silently).
constexpr char kHeld[] =
    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid::bigint = $1 AND "
    "objid::bigint = $2 AND objsubid = 2 AND granted AND pid = pg_backend_pid()";

}  // namespace

struct LeaderLock::Session {
  explicit Session(const std::string& url) : conn(url) {
    pqxx::nontransaction(conn).exec(kSessionSettings);
  }
  pqxx::connection conn;
};

LeaderLock::LeaderLock(std::string url) : url_(std::move(url)) {}

LeaderLock::~LeaderLock() {
  stop_ = true;
  if (watcher_.joinable()) watcher_.join();
}

absl::Status LeaderLock::TryOnce(bool& held) {
  try {
    if (session_ == nullptr || !session_->conn.is_open())
      session_ = std::make_unique<Session>(url_);
    pqxx::nontransaction tx(session_->conn);
    held =
        tx.exec_params1("SELECT pg_try_advisory_lock($1, $2)", kLockClass, kLockId)[0].as<bool>();
    return absl::OkStatus();
  } catch (const std::exception& e) {
    session_.reset();
    return absl::UnavailableError(absl::StrCat("database: ", e.what()));
  }
}

absl::StatusOr<int> LeaderLock::FenceOthers() {
  try {
    pqxx::nontransaction tx(session_->conn);
    return tx
        .exec_params1(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = "
            "current_database() AND application_name = $1 AND pid <> pg_backend_pid()",
            std::string(kMasterApplicationName))[0]
        .as<int>();
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("database: ", e.what()));
  }
}

absl::Status LeaderLock::Acquire(const volatile std::sig_atomic_t& stop, absl::Duration poll,
                                 absl::Duration unreachable,
                                 const std::function<void(const std::string&)>& waiting) {
  bool told_held = false;
  std::optional<absl::Time> failing_since;
  while (!stop) {
    bool held = false;
    absl::Status s = TryOnce(held);
    if (s.ok() && held) return absl::OkStatus();
    if (s.ok()) {
      failing_since.reset();
      if (!told_held) waiting("another phalanx-master is active");
      told_held = true;
    } else if (!failing_since) {
      failing_since = absl::Now();
      waiting(std::string(s.message()));
    } else if (absl::Now() - *failing_since > unreachable) {
      return s;
    }
    absl::SleepFor(poll);
  }
  return absl::CancelledError("stopped before the lock was taken");
}

void LeaderLock::Watch(absl::Duration period, std::function<void(const std::string& why)> on_lost) {
  watcher_ = std::thread([this, period, on_lost = std::move(on_lost)] {
    // A check that does not answer within 3 periods (a silent network) counts as lost too.
    using Clock = std::chrono::steady_clock;
    std::atomic<Clock::time_point> last_ok{Clock::now()};
    std::atomic<bool> done{false};
    std::string broke;  // Written by the checker before it sets `done`.
    std::thread checker([&] {
      while (!stop_ && !done) {
        try {
          pqxx::nontransaction tx(session_->conn);
          if (tx.exec_params1(kHeld, kLockClass, kLockId)[0].as<int>() == 0) {
            broke = "the lock's database session no longer holds the lock";
            done = true;
            return;
          }
          last_ok = Clock::now();
        } catch (const std::exception& e) {
          broke = absl::StrCat("the lock's database session broke: ", e.what());
          done = true;
          return;
        }
        absl::SleepFor(period);
      }
    });
    const int64_t limit_ms = 3 * absl::ToInt64Milliseconds(period) + 1000;
    while (!stop_ && !done) {
      if (Clock::now() - last_ok.load() > std::chrono::milliseconds(limit_ms)) break;
      absl::SleepFor(absl::Milliseconds(100));
    }
    if (!stop_) {
      // Called before joining: the checker may hang on a silent network.
      on_lost(
          done ? broke
               : absl::StrCat("the lock's database session did not answer for ", limit_ms, " ms"));
    }
    done = true;
    checker.join();
  });
}

}  // namespace phalanx::master
