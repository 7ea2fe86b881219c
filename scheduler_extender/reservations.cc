// Reservations of capacity the snapshot does not show yet.
#include "scheduler_extender/reservations.h"

#include <algorithm>

namespace phalanx::extender {
namespace {

// Whether `seat` holds capacity `snap` does not show: its pod is not there, or neither holds
// capacity nor has finished.
bool Counts(const core::ClusterSnapshot& snap, const ReservationBook::Seat& seat) {
  const core::PodInfo* pod = snap.FindPod(seat.pod_uid);
  return pod == nullptr || (!pod->HoldsCapacity() && !pod->IsTerminal());
}

}  // namespace

void ReservationBook::Reserve(const std::string& gang, std::vector<Seat> seats, int64_t now_ms,
                              int64_t ttl_ms) {
  absl::MutexLock lock(&mu_);
  gangs_[gang] = Entry{std::move(seats), ttl_ms, now_ms + ttl_ms};
}

void ReservationBook::Release(const std::string& gang) {
  absl::MutexLock lock(&mu_);
  gangs_.erase(gang);
}

ReservationBook::Seat* ReservationBook::FindSeatLocked(const std::string& gang,
                                                       const std::string& pod_uid, int64_t now_ms) {
  ExpireLocked(now_ms);
  auto it = gangs_.find(gang);
  if (it == gangs_.end()) return nullptr;
  for (Seat& s : it->second.seats) {
    if (s.pod_uid == pod_uid) return &s;
  }
  return nullptr;
}

void ReservationBook::Renew(const std::string& gang, int64_t now_ms) {
  absl::MutexLock lock(&mu_);
  ExpireLocked(now_ms);
  auto it = gangs_.find(gang);
  if (it != gangs_.end()) it->second.expires_ms = now_ms + it->second.ttl_ms;
}

std::optional<std::string> ReservationBook::NodeFor(const std::string& gang,
                                                    const std::string& pod_uid, int64_t now_ms) {
  absl::MutexLock lock(&mu_);
  const Seat* seat = FindSeatLocked(gang, pod_uid, now_ms);
  if (seat == nullptr) return std::nullopt;
  return seat->node;
}

bool ReservationBook::MoveSeat(const std::string& gang, const std::string& pod_uid,
                               const std::string& node, const core::ClusterSnapshot& snap,
                               int64_t now_ms) {
  absl::MutexLock lock(&mu_);
  Seat* seat = FindSeatLocked(gang, pod_uid, now_ms);
  const std::optional<int> i = snap.NodeIndex(node);
  if (seat == nullptr || !i) return false;
  absl::flat_hash_map<std::string, core::Resources> taken = ByNodeLocked(snap, "");
  if (seat->node != node && !(snap.Free(*i) - taken[node] - seat->requests).IsNonNegative()) {
    return false;
  }
  seat->node = node;
  gangs_[gang].expires_ms = now_ms + gangs_[gang].ttl_ms;
  return true;
}

bool ReservationBook::ReserveIfRoom(const std::string& gang, std::vector<Seat> seats,
                                    const core::ClusterSnapshot& snap, int64_t now_ms,
                                    int64_t ttl_ms) {
  absl::MutexLock lock(&mu_);
  ExpireLocked(now_ms);
  absl::flat_hash_map<std::string, core::Resources> taken = ByNodeLocked(snap, gang);
  for (const Seat& s : seats) {
    if (Counts(snap, s)) taken[s.node] += s.requests;
  }
  for (const Seat& s : seats) {
    const std::optional<int> i = snap.NodeIndex(s.node);
    if (!i || !(snap.Free(*i) - taken[s.node]).IsNonNegative()) return false;
  }
  gangs_[gang] = Entry{std::move(seats), ttl_ms, now_ms + ttl_ms};
  return true;
}

absl::flat_hash_map<std::string, core::Resources> ReservationBook::ByNode(
    const core::ClusterSnapshot& snap, int64_t now_ms, const std::string& except_gang) {
  absl::MutexLock lock(&mu_);
  ExpireLocked(now_ms);
  return ByNodeLocked(snap, except_gang);
}

absl::flat_hash_map<std::string, core::Resources> ReservationBook::ByNodeLocked(
    const core::ClusterSnapshot& snap, const std::string& except_gang) {
  absl::flat_hash_map<std::string, core::Resources> out;
  for (const auto& [gang, entry] : gangs_) {
    if (gang == except_gang) continue;
    for (const Seat& s : entry.seats) {
      if (Counts(snap, s)) out[s.node] += s.requests;
    }
  }
  return out;
}

gang::Capacity ReservationBook::Held(const core::ClusterSnapshot& snap, int64_t now_ms,
                                     const std::string& except_gang) {
  const absl::flat_hash_map<std::string, core::Resources> by_node =
      ByNode(snap, now_ms, except_gang);
  if (by_node.empty()) return {};  // The usual case: nothing to take off every round's plan.
  gang::Capacity held(snap.node_count());
  for (const auto& [node, r] : by_node) {
    if (std::optional<int> i = snap.NodeIndex(node)) held[*i] += r;
  }
  return held;
}

size_t ReservationBook::size() {
  absl::MutexLock lock(&mu_);
  return gangs_.size();
}

void ReservationBook::ExpireLocked(int64_t now_ms) {
  absl::erase_if(gangs_, [now_ms](const auto& kv) { return kv.second.expires_ms <= now_ms; });
}

}  // namespace phalanx::extender
