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
  if (end <= now || it->second.attempts < LimitOf(key)) return std::nullopt;
  return end - now;
}

bool LoginLimiter::RoomForLocked(const std::string& user_key, const std::string& peer_key,
                                 absl::Time now) {
  const size_t added = !windows_.contains(user_key) + !windows_.contains(peer_key);
  if (windows_.size() + added <= limits_.max_keys) return true;
  absl::erase_if(windows_, [&](const auto& w) { return w.second.start + limits_.window <= now; });
  while (windows_.size() + added > limits_.max_keys) {
    auto oldest = windows_.end();
    for (auto it = windows_.begin(); it != windows_.end(); ++it) {
      if (it->first == user_key || it->first == peer_key || BlockedLocked(it->first, now)) continue;
      if (oldest == windows_.end() || it->second.start < oldest->second.start) oldest = it;
    }
    if (oldest == windows_.end()) return false;
    windows_.erase(oldest);
  }
  return true;
}

void LoginLimiter::CountLocked(const std::string& key, absl::Time now) {
  Window& w = windows_[key];
  if (w.start + limits_.window <= now) w = Window{.start = now};
  ++w.attempts;
}

std::optional<absl::Duration> LoginLimiter::Attempt(const std::string& user,
                                                    const std::string& peer) {
  const absl::Time now = now_();
  const std::string user_key = UserKey(user), peer_key = PeerKey(peer);
  absl::MutexLock lock(&mu_);
  std::optional<absl::Duration> by_user = BlockedLocked(user_key, now);
  std::optional<absl::Duration> by_peer = BlockedLocked(peer_key, now);
  if (by_user || by_peer)
    return std::max(by_user.value_or(absl::ZeroDuration()), by_peer.value_or(absl::ZeroDuration()));
  if (!RoomForLocked(user_key, peer_key, now)) {
    // Every window blocks: wait for the first to end.
    absl::Time first_end = absl::InfiniteFuture();
    for (const auto& [key, w] : windows_) first_end = std::min(first_end, w.start + limits_.window);
    return std::max(first_end - now, absl::Seconds(1));
  }
  CountLocked(user_key, now);
  CountLocked(peer_key, now);
  return std::nullopt;
}

void LoginLimiter::Succeeded(const std::string& user, const std::string& peer) {
  absl::MutexLock lock(&mu_);
  windows_.erase(UserKey(user));
  auto it = windows_.find(PeerKey(peer));
  if (it != windows_.end() && it->second.attempts > 0) --it->second.attempts;
}

size_t LoginLimiter::size() const {
  absl::MutexLock lock(&mu_);
  return windows_.size();
}

}  // namespace phalanx::master
