// ClusterSnapshot: an immutable view of nodes and pods that the pure engine decides on.
// SnapshotBuilder derives a new snapshot from an old one by copy-on-write: only the node entries
// and pod/gang shards that an update touches are copied; the rest is shared between versions.
#ifndef PHALANX_CORE_SNAPSHOT_H_
#define PHALANX_CORE_SNAPSHOT_H_

#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "core/gang.h"
#include "core/node.h"
#include "core/pod.h"

namespace phalanx::core {

inline constexpr int kSnapshotShards = 256;

class ClusterSnapshot {
 public:
  using PodPtr = std::shared_ptr<const PodInfo>;
  struct NodeEntry {
    Node node;
    Resources used;            // Requests of the pods holding capacity here.
    std::vector<PodPtr> pods;  // Those pods, sorted by uid.
  };
  struct GangEntry {
    std::vector<PodPtr> pods;  // Sorted by uid.
    int gated = 0;             // Live members carrying the admission gate.
    int marked = 0;            // Live members marked for preemption.
    int holding = 0;           // Members holding capacity (bound or planned).
    int pinned = 0;            // Live members that may not be preempted.
    int32_t max_priority = 0;  // Highest live member priority (0 without live members).
  };
  // kPreemptible: running (holding capacity, none gated), unmarked, every member preemptible.
  enum class GangFilter { kAll, kPending, kMarked, kPreemptible };
  using PodShard = absl::flat_hash_map<std::string, PodPtr>;
  using GangShard = absl::flat_hash_map<std::string, GangEntry>;
  using KeyShard = absl::flat_hash_set<std::string>;

  static std::shared_ptr<const ClusterSnapshot> Empty();

  int node_count() const { return static_cast<int>(nodes_.size()); }
  const Node& node(int i) const { return nodes_[i]->node; }
  const Resources& used(int i) const { return nodes_[i]->used; }
  Resources Free(int i) const { return nodes_[i]->node.allocatable - nodes_[i]->used; }
  // Index of the node called `name` (nodes are sorted by name).
  std::optional<int> NodeIndex(absl::string_view name) const;
  std::vector<const PodInfo*> PodsOnNode(int i) const;

  size_t pod_count() const { return pod_count_; }
  const PodInfo* FindPod(absl::string_view uid) const;
  void ForEachPod(const std::function<void(const PodInfo&)>& fn) const;

  // Gangs with at least one pod (kAll), a gated pod (kPending) or a pod marked for preemption
  // (kMarked), sorted by key.
  std::vector<Gang> Gangs(GangFilter filter = GangFilter::kAll) const;
  // Like Gangs(kPreemptible), only those whose top priority is below `priority`.
  std::vector<Gang> PreemptibleBelow(int32_t priority) const;
  // Gangs whose entry `keep` accepts, sorted by key; `keep` sees the raw entry, so a caller can
  // skip gangs before they are summarized.
  std::vector<Gang> Gangs(const std::function<bool(const GangEntry&)>& keep) const;
  std::optional<Gang> FindGang(absl::string_view key) const;

 private:
  friend class SnapshotBuilder;
  using KeyIndex = std::array<std::shared_ptr<const KeyShard>, kSnapshotShards>;
  static int ShardOf(absl::string_view key);
  std::vector<Gang> FromIndex(const KeyIndex& index,
                              const std::function<bool(const GangEntry&)>& keep) const;

  std::vector<std::shared_ptr<const NodeEntry>> nodes_;
  // Node name -> index; shared by every snapshot with the same node set, rebuilt when it changes.
  std::shared_ptr<const absl::flat_hash_map<std::string, int>> node_index_;
  std::array<std::shared_ptr<const PodShard>, kSnapshotShards> pods_;
  std::array<std::shared_ptr<const GangShard>, kSnapshotShards> gangs_;
  // Keys of gangs with a gated member, and with a member marked for preemption: rounds read these
  // without scanning every gang.
  KeyIndex pending_;
  KeyIndex marked_;
  KeyIndex preemptible_;
  size_t pod_count_ = 0;
};

class SnapshotBuilder {
 public:
  explicit SnapshotBuilder(std::shared_ptr<const ClusterSnapshot> base = ClusterSnapshot::Empty());

  void UpsertNode(Node node);
  void RemoveNode(absl::string_view name);
  void UpsertPod(PodInfo pod);
  void RemovePod(absl::string_view uid);

  // The new snapshot; the builder may keep going from it.
  std::shared_ptr<const ClusterSnapshot> Build();

 private:
  ClusterSnapshot::NodeEntry* MutableNode(int i);
  ClusterSnapshot::PodShard& MutablePods(int shard);
  ClusterSnapshot::GangShard& MutableGangs(int shard);
  // Keeps `key` in the pending, marked and preemptible key sets exactly when `gang` (null: gone)
  // belongs there.
  void Index(const std::string& key, const ClusterSnapshot::GangEntry* gang);
  void Attach(const ClusterSnapshot::PodPtr& pod);
  void Detach(const ClusterSnapshot::PodPtr& pod);
  void AttachAllTo(int node_index);

  std::shared_ptr<ClusterSnapshot> next_;
  absl::flat_hash_set<const void*> owned_;  // Entries copied by this builder, safe to mutate.
};

}  // namespace phalanx::core

#endif  // PHALANX_CORE_SNAPSHOT_H_
