// Failed-login rate limits (see login_limiter.h).
#include "master/api/login_limiter.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace phalanx::master {
namespace {

// User names are kept to this length as keys (longer ones share a key, and a window).
constexpr size_t kMaxKeyName = 256;

std::string UserKey(const std::string& user) {
  return absl::StrCat("u:", user.substr(0, kMaxKeyName));
}
std::string PeerKey(const std::string& peer) {
  return absl::StrCat("p:", LoginLimiter::PeerAddress(peer).substr(0, kMaxKeyName));
}

}  // namespace

std::string LoginLimiter::PeerAddress(const std::string& peer) {
  const size_t colon = peer.rfind(':');
  const size_t scheme = peer.find(':');
  return colon == std::string::npos || colon == scheme ? peer : peer.substr(0, colon);
}

int LoginLimiter::LimitOf(const std::string& key) const {
  return key[0] == 'u' ? limits_.per_user : limits_.per_peer;
}

std::optional<absl::Duration> LoginLimiter::BlockedLocked(const std::string& key,
                                                          absl::Time now) const {
  auto it = windows_.find(key);
  if (it == windows_.end()) return std::nullopt;
  const absl::Time end = it->second.start + limits_.window;
  if (end <= now || it->second.failures < LimitOf(key)) return std::nullopt;
  return end - now;
}

std::optional<absl::Duration> LoginLimiter::Blocked(const std::string& user,
                                                    const std::string& peer) const {
  const absl::Time now = now_();
  absl::MutexLock lock(&mu_);
  std::optional<absl::Duration> by_user = BlockedLocked(UserKey(user), now);
  std::optional<absl::Duration> by_peer = BlockedLocked(PeerKey(peer), now);
  if (!by_user) return by_peer;
  if (!by_peer) return by_user;
  return std::max(*by_user, *by_peer);
}

void LoginLimiter::CountLocked(const std::string& key, absl::Time now) {
  auto it = windows_.find(key);
  if (it == windows_.end() && windows_.size() >= limits_.max_keys) {
    absl::erase_if(windows_, [&](const auto& w) { return w.second.start + limits_.window <= now; });
    if (windows_.size() >= limits_.max_keys) {
      windows_.erase(std::min_element(
          windows_.begin(), windows_.end(),
          [](const auto& a, const auto& b) { return a.second.start < b.second.start; }));
    }
  }
  Window& w = windows_[key];
  if (w.start + limits_.window <= now) w = Window{.start = now};
  ++w.failures;
}

void LoginLimiter::Failed(const std::string& user, const std::string& peer) {
  const absl::Time now = now_();
  absl::MutexLock lock(&mu_);
  CountLocked(UserKey(user), now);
  CountLocked(PeerKey(peer), now);
}

void LoginLimiter::Succeeded(const std::string& user) {
  absl::MutexLock lock(&mu_);
  windows_.erase(UserKey(user));
}

size_t LoginLimiter::size() const {
  absl::MutexLock lock(&mu_);
  return windows_.size();
}

}  // namespace phalanx::master
