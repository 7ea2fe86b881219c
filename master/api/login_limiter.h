// LoginLimiter: failed logins per user name and per peer address, in fixed windows. A key that
// failed its limit (LoginLimits) in its window is refused until the window ends. At most max_keys
// keys are held: past that, ended windows are swept, and if none ended the oldest window is
// dropped, so memory stays bounded whatever names or peers an attacker uses.
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

  // How long `user` from `peer` must wait before trying again; nullopt when it may try now.
  std::optional<absl::Duration> Blocked(const std::string& user, const std::string& peer) const;
  // Counts a failed login.
  void Failed(const std::string& user, const std::string& peer);
  // A login of `user` succeeded: its failures are forgotten (the peer's are not).
  void Succeeded(const std::string& user);
  size_t size() const;

  // The address of a gRPC peer ("ipv4:10.0.0.1:5000" → "ipv4:10.0.0.1").
  static std::string PeerAddress(const std::string& peer);

 private:
  struct Window {
    absl::Time start;
    int failures = 0;
  };
  // The limit of `key` ("u:<name>" or "p:<address>").
  int LimitOf(const std::string& key) const;
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
