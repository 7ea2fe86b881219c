// The active master's advisory lock (leader_lock.h).
#include "master/store/leader_lock.h"

#include <exception>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "pqxx/pqxx"

namespace phalanx::master {
namespace {

// The lock's key pair (pg_try_advisory_lock(int, int)): "phlx" and 1. Store::Migrate's
// transaction lock uses the one-key form, a separate key space.
constexpr int kLockClass = 0x70686c78;
constexpr int kLockId = 1;

// The server ends this session (freeing the lock) ~11 s after its peer went silent.
constexpr char kSessionSettings[] =
    "SET tcp_keepalives_idle = 5; SET tcp_keepalives_interval = 2; "
    "SET tcp_keepalives_count = 3; SET statement_timeout = '10s'";

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
    std::atomic<int64_t> last_ok_ms{absl::ToUnixMillis(absl::Now())};
    std::atomic<bool> done{false};
    std::string broke;  // Written by the checker before it sets `done`.
    std::thread checker([&] {
      while (!stop_ && !done) {
        try {
          pqxx::nontransaction(session_->conn).exec("SELECT 1");
          last_ok_ms = absl::ToUnixMillis(absl::Now());
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
      if (absl::ToUnixMillis(absl::Now()) - last_ok_ms > limit_ms) break;
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
