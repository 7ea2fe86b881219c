// Informer: lists then watches nodes and pods on its own threads and publishes immutable
// ClusterSnapshots built copy-on-write from the events. Handles bookmarks, 410 Gone (list again),
// disconnects (reconnect with capped exponential backoff) and counts what it does for metrics.
#ifndef PHALANX_KUBE_INFORMER_H_
#define PHALANX_KUBE_INFORMER_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/container/flat_hash_set.h"
#include "absl/time/time.h"
#include "core/snapshot.h"
#include "kube/client.h"
#include "kube/placement_key.h"

namespace phalanx::kube {

struct InformerOptions {
  std::string pod_namespace;  // Empty: every namespace.
  std::string pod_label_selector;
  std::string node_label_selector;
  int watch_timeout_seconds = 300;
  absl::Duration initial_backoff = absl::Milliseconds(100);
  absl::Duration max_backoff = absl::Seconds(30);
  // Pods are decoded with this key (DecodePod): placements and marks it did not sign are left
  // out. Null: taken as written. Must outlive the informer.
  const PlacementKey* placement_key = nullptr;
};

struct InformerCounters {
  int64_t watch_restarts = 0;  // Watches opened after each resource's first one, for any reason.
  int64_t relists = 0;         // Lists after 410 Gone.
  int64_t errors = 0;          // Failed lists and watches (each followed by a backoff).
  int64_t decode_errors = 0;   // Objects that did not decode (their last good version stays).
  int64_t events = 0;          // Watch events applied.
  int64_t nodes = 0;           // Objects in the cache now.
  int64_t pods = 0;
  std::string last_error;  // The latest error or decode error, for logs.
};

class Informer {
 public:
  // `client` must outlive the informer.
  explicit Informer(Client& client, InformerOptions options = {});
  ~Informer();  // Stops.
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  void Start();
  // Ends the watches (within about a second) and joins the threads.
  void Stop();

  // The current state; cheap when nothing changed since the last call.
  std::shared_ptr<const core::ClusterSnapshot> Snapshot() const;
  // Grows by at least one with every change applied.
  uint64_t version() const;
  // Blocks until version() differs from `last_version`, the timeout passes or the informer stops;
  // returns version().
  uint64_t WaitForChange(uint64_t last_version, absl::Duration timeout) const;
  // True once nodes and pods were both listed.
  bool HasSynced() const;
  bool WaitForSync(absl::Duration timeout) const;
  InformerCounters counters() const;
  // The resourceVersion of the last pod list or event applied ("" before the first list): every
  // pod change up to it is in the next Snapshot(). Read it before the snapshot it stands for.
  std::string pods_resource_version() const;
  // Ends the open watches; each resumes from its last resourceVersion.
  void RestartWatches();

 private:
  enum class Kind { kNodes, kPods };

  void Run(Kind kind);
  // Lists `kind` and replaces its cached objects; returns the resourceVersion to watch from.
  absl::StatusOr<std::string> Relist(Kind kind);
  void ApplyEvent(Kind kind, EventType type, simdjson::dom::element object);
  void Changed();  // Requires mu_.
  void Fail(const absl::Status& status);
  void Sleep(absl::Duration d);

  Client& client_;
  const InformerOptions options_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> abort_watch_[2] = {false, false};  // Per Kind.

  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  mutable core::SnapshotBuilder builder_;
  mutable std::shared_ptr<const core::ClusterSnapshot> snapshot_;
  mutable bool dirty_ = false;
  uint64_t version_ = 0;
  bool synced_[2] = {false, false};
  absl::flat_hash_set<std::string> node_names_;
  absl::flat_hash_set<std::string> pod_uids_;
  InformerCounters counters_;
  std::string pods_resource_version_;
  std::thread threads_[2];
};

}  // namespace phalanx::kube

#endif  // PHALANX_KUBE_INFORMER_H_
