// Which phalanx-extender replica runs admission rounds when the scheduler runs several: the one
// whose own kube-scheduler (the container beside it in the same pod, hence the same host name)
// holds the leader-election Lease that kube-scheduler renews. Following that Lease rather than
// holding one of its own keeps the rounds, their writes and the reservations they make beside the
// only kube-scheduler that binds pods, so filter calls always reach the replica that planned.
// kube-scheduler names itself "<host name>_<uuid>" in the Lease's holderIdentity.
//
// The Lease is read every poll_ms. A replica leads while the last record read names its holder
// prefix, was renewed less than half the Lease's duration ago by this host's clock (kube-scheduler
// writes renewTime from the same clock), and last changed less than half a duration ago by this
// process's monotonic clock (so a renewTime in the future, or a clock stepped back, keeps no stale
// record fresh). So it stops by itself when its kube-scheduler dies, hangs or is cut off, or when
// the Lease cannot be read, at least half a duration before another kube-scheduler may take the
// Lease over; a follower starts leading at its first poll after its kube-scheduler acquired it.
// Every write of the admission loop checks Leads() first.
#ifndef PHALANX_SCHEDULER_EXTENDER_LEADERSHIP_H_
#define PHALANX_SCHEDULER_EXTENDER_LEADERSHIP_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "kube/client.h"

namespace phalanx::extender {

inline constexpr kube::Resource kLeases{"/apis/coordination.k8s.io/v1", "leases", true};

// What a Lease says of its holder.
struct LeaseRecord {
  std::string holder;       // spec.holderIdentity; empty when released.
  int64_t renew_ms = -1;    // spec.renewTime (else acquireTime) in Unix ms; -1 when unset.
  int64_t duration_ms = 0;  // spec.leaseDurationSeconds.
};

// The Lease object `json` (GET .../leases/NAME); an error names the field it cannot read.
absl::StatusOr<LeaseRecord> ParseLease(absl::string_view json);

// Whether `lease` is held by a holder named `holder_prefix`... and still fresh at `now_ms`:
// renewed less than half its duration ago, and seen to change less than that ago (`unchanged_ms`).
bool HeldBy(const LeaseRecord& lease, absl::string_view holder_prefix, int64_t now_ms,
            int64_t unchanged_ms);

// "<this host's name>_": how kube-scheduler beside this process names itself in the Lease.
std::string DefaultHolderPrefix();

// The holder prefix to follow: `configured` when set, else `host_prefix` (DefaultHolderPrefix).
// In a pod (`pod_name` set, from the downward API) a host name other than the pod's name is
// refused: Kubernetes cuts host names to 63 characters, and replicas whose names differ only past
// that would share one prefix and both lead.
absl::StatusOr<std::string> HolderPrefix(const std::string& configured,
                                         const std::string& host_prefix,
                                         const std::string& pod_name);

struct LeadershipOptions {
  std::string lease_namespace;
  std::string lease_name;
  std::string holder_prefix;
  int64_t poll_ms = 500;
};

class Leadership {
 public:
  Leadership(LeadershipOptions options, kube::Client* client, std::function<int64_t()> now_ms)
      : options_(std::move(options)), client_(client), now_ms_(std::move(now_ms)) {}

  // Reads the Lease once; a failed read keeps the last record, which ages out (see above).
  void Poll() ABSL_LOCKS_EXCLUDED(mu_);
  // Polls every poll_ms until `stop` is set.
  void Run(const std::atomic<bool>& stop);
  bool Leads() const ABSL_LOCKS_EXCLUDED(mu_);
  // The holder named by the last record read ("" before any).
  std::string Holder() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const LeadershipOptions options_;
  kube::Client* const client_;
  const std::function<int64_t()> now_ms_;
  mutable absl::Mutex mu_;
  LeaseRecord last_ ABSL_GUARDED_BY(mu_);
  // When last_ last changed (holder or renewal), by the monotonic clock.
  std::chrono::steady_clock::time_point changed_ ABSL_GUARDED_BY(mu_);
  bool warned_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace phalanx::extender

#endif  // PHALANX_SCHEDULER_EXTENDER_LEADERSHIP_H_
