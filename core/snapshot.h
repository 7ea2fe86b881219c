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
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/gang.h"
#include "core/name_index.h"
#include "core/node.h"
#include "core/pod.h"

namespace phalanx::core {

inline constexpr int kSnapshotShards = 256;

class ClusterSnapshot {
 public:
  using PodPtr = std::shared_ptr<const PodInfo>;
  // A preemptible gang (running: holding capacity, none gated; unmarked; every member
  // preemptible) as seen from a node it holds capacity on.
  struct Occupant {
    std::shared_ptr<const Gang> gang;  // Its summary, shared by every snapshot it is unchanged in.
    Resources held;                    // Requests of its members holding capacity on this node.
  };
  struct NodeEntry {
    Node node;
    Resources used;                   // Requests of the pods holding capacity here.
    Resources free;                   // node.allocatable - used, kept up to date by the builder.
    Resources planned;                // Of `used`, what pods planned here and not bound hold.
    int marked = 0;                   // Of those pods, the ones marked for preemption.
    std::vector<PodPtr> pods;         // Those pods, sorted by uid.
    std::vector<Occupant> occupants;  // Preemptible gangs among them, by priority, then key.
  };
  // Immutable: an update replaces the whole entry.
  struct GangEntry {
    std::vector<PodPtr> pods;  // Sorted by uid.
    Gang summary;              // Of `pods`; its members point into them.
  };
  using GangPtr = std::shared_ptr<const GangEntry>;
  enum class GangFilter { kAll, kPending, kMarked, kPlacing };
  using PodShard = absl::flat_hash_map<std::string, PodPtr>;
  using GangShard = absl::flat_hash_map<std::string, GangPtr>;
  using KeyShard = absl::flat_hash_set<std::string>;

  static std::shared_ptr<const ClusterSnapshot> Empty();

  int node_count() const { return static_cast<int>(nodes_.size()); }
  const Node& node(int i) const { return nodes_[i]->node; }
  const Resources& used(int i) const { return nodes_[i]->used; }
  const Resources& Free(int i) const { return nodes_[i]->free; }
  // What pods planned on node `i` (phalanx.io/placement) and not bound there yet hold.
  const Resources& Planned(int i) const { return nodes_[i]->planned; }
  // How many pods holding capacity on node `i` are marked for preemption (phalanx.io/preempt).
  int MarkedOn(int i) const { return nodes_[i]->marked; }
  // Preemptible gangs holding capacity on node `i`, lowest priority first (see Occupant).
  const std::vector<Occupant>& Occupants(int i) const { return nodes_[i]->occupants; }
  // Index of the node called `name` (nodes are sorted by name).
  std::optional<int> NodeIndex(absl::string_view name) const;
  // NodeIndex of each of `names`, in order, -1 for names not in the snapshot. A request's whole
  // node list is resolved in one pass that fetches blocks of slots at once (NameIndex::Positions).
  std::vector<int> NodeIndices(absl::Span<const std::string> names) const;
  std::vector<const PodInfo*> PodsOnNode(int i) const;

  size_t pod_count() const { return pod_count_; }
  const PodInfo* FindPod(absl::string_view uid) const;
  void ForEachPod(const std::function<void(const PodInfo&)>& fn) const;

  // Gangs with at least one pod (kAll), a gated pod (kPending), a pod marked for preemption
  // (kMarked) or a pod planned on a node and not bound there yet (kPlacing), sorted by key.
  std::vector<Gang> Gangs(GangFilter filter = GangFilter::kAll) const;
  // Gangs whose entry `keep` accepts, sorted by key.
  std::vector<Gang> Gangs(const std::function<bool(const GangEntry&)>& keep) const;
  std::optional<Gang> FindGang(absl::string_view key) const;

 private:
  friend class SnapshotBuilder;
  using KeyIndex = std::array<std::shared_ptr<const KeyShard>, kSnapshotShards>;
  static int ShardOf(absl::string_view key);
  // NodeIndex as an int, -1 when absent.
  int NodePosition(absl::string_view name) const;
  std::vector<Gang> FromIndex(const KeyIndex& index) const;

  std::vector<std::shared_ptr<const NodeEntry>> nodes_;
  // Node name -> index; shared by every snapshot with the same node set, rebuilt when it changes.
  std::shared_ptr<const NameIndex> node_index_;
  std::array<std::shared_ptr<const PodShard>, kSnapshotShards> pods_;
  std::array<std::shared_ptr<const GangShard>, kSnapshotShards> gangs_;
  // Keys of gangs with a gated member, a member marked for preemption, and a member planned but
  // not bound: rounds read these without scanning every gang.
  KeyIndex pending_;
  KeyIndex marked_;
  KeyIndex placing_;
  size_t pod_count_ = 0;
};

class SnapshotBuilder {
 public:
  explicit SnapshotBuilder(std::shared_ptr<const ClusterSnapshot> base = ClusterSnapshot::Empty());
  // A copy would share what it may change in place.
  SnapshotBuilder(const SnapshotBuilder&) = delete;
  SnapshotBuilder& operator=(const SnapshotBuilder&) = delete;
  SnapshotBuilder(SnapshotBuilder&&) = default;
  SnapshotBuilder& operator=(SnapshotBuilder&&) = default;

  void UpsertNode(Node node);
  void RemoveNode(absl::string_view name);
  void UpsertPod(PodInfo pod);
  void RemovePod(absl::string_view uid);

  // The new snapshot; the builder may keep going from it.
  std::shared_ptr<const ClusterSnapshot> Build();
  // What Build would return, without sealing it: valid until the next change, and what it holds
  // (pods, gangs' members) only until then.
  const ClusterSnapshot& Current() const { return *next_; }

 private:
  ClusterSnapshot::NodeEntry* MutableNode(int i);
  ClusterSnapshot::PodShard& MutablePods(int shard);
  ClusterSnapshot::GangShard& MutableGangs(int shard);
  // Takes the pod out of its node and the pod index (not out of its gang); null when unknown.
  ClusterSnapshot::PodPtr Unlink(absl::string_view uid);
  // Replaces gang `key`'s entry by one with `drop` (may be null) taken out of its pods and `add`
  // (may be null) put in, and re-indexes it; a gang left without pods is removed.
  void EditGang(const std::string& key, const ClusterSnapshot::PodPtr& drop,
                const ClusterSnapshot::PodPtr& add);
  // Keeps `key` in the pending, marked and placing key sets exactly when `gang` (null: gone)
  // belongs there.
  void Index(const std::string& key, const Gang* gang);
  // Adds `gang` (if preemptible) to, or removes it from, the occupants of the nodes it holds.
  void ListOccupant(const ClusterSnapshot::GangPtr& gang, bool add);
  void Attach(const ClusterSnapshot::PodPtr& pod);
  void Detach(const ClusterSnapshot::PodPtr& pod);
  void AttachAllTo(int node_index);
  // What the members of `gang` hold, per node index, for the nodes in this snapshot.
  std::vector<std::pair<int, Resources>> HeldPerNode(const Gang& gang) const;

  std::shared_ptr<ClusterSnapshot> next_;
  absl::flat_hash_set<const void*> owned_;  // Entries copied by this builder, safe to mutate.
};

}  // namespace phalanx::core

#endif  // PHALANX_CORE_SNAPSHOT_H_
