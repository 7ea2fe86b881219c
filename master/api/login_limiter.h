// LoginLimiter: login attempts per user name and per peer address, in fixed windows. An attempt
// is counted before its password is checked, in the same locked step as the check of the limit,
// so that at most the limit (LoginLimits) of password checks run per key and window, even for
// logins made at once; a success takes its attempt back (and forgets the user's). A key at its
// limit is refused until its window ends. At most max_keys keys are held: past that, ended
// windows are swept, then the oldest window that is not blocking is dropped; when every window
// blocks, a new key is refused too, so memory stays bounded whatever names or peers an attacker
// uses and no blocked key is freed by flooding the table.
#ifndef PHALANX_MASTER_API_LOGIN_LIMITER_H_
#define PHALANX_MASTER_API_LOGIN_LIMITER_H_

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace phalanx::master {

struct LoginLimits {
  int per_user = 5;   // Failures of one user name per window.
  int per_peer = 20;  // Failures from one peer address per window.
  absl::Duration window = absl::Minutes(1);
  size_t max_keys = 10000;
};

class LoginLimiter {
 public:
  using Limits = LoginLimits;

  explicit LoginLimiter(Limits limits = {}, std::function<absl::Time()> now = absl::Now)
      : limits_(limits), now_(std::move(now)) {}

  // Counts an attempt of `user` from `peer` and returns nullopt when it may check the password
  // now; otherwise counts nothing and returns how long to wait.
  std::optional<absl::Duration> Attempt(const std::string& user, const std::string& peer);
  // The login of `user` from `peer` succeeded: the user's attempts are forgotten, and this one is
  // taken back from the peer's (its other attempts stay).
  void Succeeded(const std::string& user, const std::string& peer);
  size_t size() const;

  // The address of a gRPC peer ("ipv4:10.0.0.1:5000" → "ipv4:10.0.0.1").
  static std::string PeerAddress(const std::string& peer);

 private:
  struct Window {
    absl::Time start;
    int attempts = 0;
  };
  // The limit of `key` ("u:<name>" or "p:<address>").
  int LimitOf(const std::string& key) const;
  // Makes room for the keys that are new; false when there is none without dropping a blocking
  // window.
  bool RoomForLocked(const std::string& user_key, const std::string& peer_key, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CountLocked(const std::string& key, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::optional<absl::Duration> BlockedLocked(const std::string& key, absl::Time now) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);

  const Limits limits_;
  const std::function<absl::Time()> now_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Window> windows_ ABSL_GUARDED_BY(mu_);
};

}  // namespace phalanx::master

#endif  // PHALANX_MASTER_API_LOGIN_LIMITER_H_
