// Filter-time gang reservations.
#include "scheduler_extender/reservations.h"

#include <algorithm>

namespace phalanx::extender {

void ReservationBook::Reserve(const std::string& gang, std::vector<Seat> seats,
                              int64_t expires_ms) {
  absl::MutexLock lock(&mu_);
  gangs_[gang] = Entry{std::move(seats), expires_ms};
}

std::optional<std::string> ReservationBook::NodeFor(const std::string& gang,
                                                    const std::string& pod_uid, int64_t now_ms) {
  absl::MutexLock lock(&mu_);
  ExpireLocked(now_ms);
  auto it = gangs_.find(gang);
  if (it == gangs_.end()) return std::nullopt;
  for (const Seat& s : it->second.seats) {
    if (s.pod_uid == pod_uid) return s.node;
  }
  return std::nullopt;
}

void ReservationBook::Release(const std::string& gang, const std::string& pod_uid) {
  absl::MutexLock lock(&mu_);
  auto it = gangs_.find(gang);
  if (it == gangs_.end()) return;
  std::erase_if(it->second.seats, [&](const Seat& s) { return s.pod_uid == pod_uid; });
  if (it->second.seats.empty()) gangs_.erase(it);
}

absl::flat_hash_map<std::string, core::Resources> ReservationBook::ByNode(
    int64_t now_ms, const std::string& except_gang) {
  absl::MutexLock lock(&mu_);
  ExpireLocked(now_ms);
  absl::flat_hash_map<std::string, core::Resources> out;
  for (const auto& [gang, entry] : gangs_) {
    if (gang == except_gang) continue;
    for (const Seat& s : entry.seats) out[s.node] += s.requests;
  }
  return out;
}

size_t ReservationBook::size() {
  absl::MutexLock lock(&mu_);
  return gangs_.size();
}

void ReservationBook::ExpireLocked(int64_t now_ms) {
  absl::erase_if(gangs_, [now_ms](const auto& kv) { return kv.second.expires_ms <= now_ms; });
}

}  // namespace phalanx::extender
