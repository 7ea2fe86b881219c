// One active phalanx-master per database: the active one holds a session-level Postgres advisory
// lock on a connection of its own (a direct or session-pooled connection: a pooler in transaction
// mode cannot keep a session's lock); standbys try to take it every poll and take over as soon as
// it is free, ending the old master's sessions first (FenceOthers). Postgres frees it when the
// holder's session ends: at once when the process dies (its socket closes), and after about 11 s of
// silence when its host or network goes (the session's server-side TCP keepalives). The holder
// checks its session every second; once it is broken the lock may be another master's, so the
// holder must stop at once (Watch's on_lost).
#ifndef PHALANX_MASTER_STORE_LEADER_LOCK_H_
#define PHALANX_MASTER_STORE_LEADER_LOCK_H_

#include <atomic>
#include <csignal>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace phalanx::master {

class LeaderLock {
 public:
  // `url`: the master's libpq connection string (ConnectionString); the lock's session adds its
  // own keepalives and timeouts.
  explicit LeaderLock(std::string url);
  ~LeaderLock();  // Stops Watch; closing the session frees the lock.

  // Tries every `poll` until the lock is held (OK), `stop` is set (Cancelled), or the database
  // stayed unreachable for `unreachable` (Unavailable). `waiting` is told why, once when another
  // master holds the lock and once per stretch of database errors.
  absl::Status Acquire(const volatile std::sig_atomic_t& stop, absl::Duration poll,
                       absl::Duration unreachable,
                       const std::function<void(const std::string&)>& waiting);
  // Ends the database sessions of other masters (their store's, named kMasterApplicationName):
  // a master that took over fences the one before, whose open transactions (and row locks) end
  // with them and which can write no more. Returns how many it ended.
  absl::StatusOr<int> FenceOthers();
  // Checks every `period`, on a thread of its own, that the lock's session still holds the lock;
  // calls `on_lost` once if it does not, or the session breaks or stops answering.
  void Watch(absl::Duration period, std::function<void(const std::string& why)> on_lost);

 private:
  struct Session;
  // Whether the lock is ours now; an error when the database cannot be reached.
  absl::Status TryOnce(bool& held);

  const std::string url_;
  std::unique_ptr<Session> session_;
  std::atomic<bool> stop_{false};
  std::thread watcher_;
};

}  // namespace phalanx::master

#endif  // PHALANX_MASTER_STORE_LEADER_LOCK_H_
