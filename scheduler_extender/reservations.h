// Reservations of capacity that the snapshot does not show yet:
// - filter-time seats for gangs that arrive ungated and unplanned (pods other tools create with
//   gang labels): the first member seen plans the whole gang, and each member then passes only on
//   its reserved node;
// - the admission loop's plans from their writes until the informer shows them.
// A seat stops counting once the snapshot shows its pod holding capacity (bound, or placed) or
// finished. A reservation lives `ttl_ms` from when it was made or last renewed: a member passing
// on its seat, or moving to another, renews it. The admission loop and the verbs plan around the
// live seats, and reserve through ReserveIfRoom: of two plans made at once on the same capacity,
// the later is refused and waits (the loop's gang for the next round, a filter-time gang for
// kube-scheduler's retry). Thread-safe.
#ifndef PHALANX_SCHEDULER_EXTENDER_RESERVATIONS_H_
#define PHALANX_SCHEDULER_EXTENDER_RESERVATIONS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "core/resources.h"
#include "core/snapshot.h"
#include "gang/planner.h"

namespace phalanx::extender {

class ReservationBook {
 public:
  struct Seat {
    std::string pod_uid;
    std::string node;
    core::Resources requests;
  };

  // Reserves `seats` for `gang` for `ttl_ms` from `now_ms`, replacing an earlier reservation of it.
  void Reserve(const std::string& gang, std::vector<Seat> seats, int64_t now_ms, int64_t ttl_ms);
  // Reserve, only when every seat fits on its node beside what `snap` shows there and the live
  // seats of other gangs, checked and reserved under one lock: of two plans made at once on the
  // same capacity, the second is refused. False, and nothing reserved, otherwise.
  bool ReserveIfRoom(const std::string& gang, std::vector<Seat> seats,
                     const core::ClusterSnapshot& snap, int64_t now_ms, int64_t ttl_ms);
  void Release(const std::string& gang);
  // Moves the live seat of `pod_uid` of `gang` to `node` and renews the reservation; false when
  // it has none, or when it no longer fits there beside what `snap` shows and the live seats
  // (checked under the lock, as ReserveIfRoom does).
  bool MoveSeat(const std::string& gang, const std::string& pod_uid, const std::string& node,
                const core::ClusterSnapshot& snap, int64_t now_ms);
  // Renews `gang`'s reservation if it is live.
  void Renew(const std::string& gang, int64_t now_ms);
  // The node reserved for `pod_uid` of `gang`, if the reservation is live at `now_ms`.
  std::optional<std::string> NodeFor(const std::string& gang, const std::string& pod_uid,
                                     int64_t now_ms);
  // Requests of the live seats of pods `snap` does not show holding capacity, per node name,
  // leaving out `except_gang`'s own seats.
  absl::flat_hash_map<std::string, core::Resources> ByNode(const core::ClusterSnapshot& snap,
                                                           int64_t now_ms,
                                                           const std::string& except_gang);
  // The same per node index of `snap` (nodes it does not have are left out); empty when no seat
  // is live.
  gang::Capacity Held(const core::ClusterSnapshot& snap, int64_t now_ms,
                      const std::string& except_gang);
  size_t size();

 private:
  struct Entry {
    std::vector<Seat> seats;
    int64_t ttl_ms = 0;
    int64_t expires_ms = 0;
  };
  void ExpireLocked(int64_t now_ms) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::flat_hash_map<std::string, core::Resources> ByNodeLocked(const core::ClusterSnapshot& snap,
                                                                 const std::string& except_gang)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The live seat of `pod_uid` of `gang`; null when it has none.
  Seat* FindSeatLocked(const std::string& gang, const std::string& pod_uid, int64_t now_ms)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  absl::flat_hash_map<std::string, Entry> gangs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace phalanx::extender

#endif  // PHALANX_SCHEDULER_EXTENDER_RESERVATIONS_H_
