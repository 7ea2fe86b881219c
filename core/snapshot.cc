// Copy-on-write snapshot storage and incremental updates.
#include "core/snapshot.h"

#include <algorithm>
#include <atomic>
#include <tuple>

#include "absl/hash/hash.h"

namespace phalanx::core {
namespace {

// The entry in `slot`, safe to change: copied first unless this builder copied it since its last
// Build, or nothing else refers to it (every snapshot that shared it is gone: a snapshot refers to
// its entries for as long as it lives, so none can come to share it but through this builder).
// Under ThreadSanitizer, which does not model the fence, entries are always copied.
template <typename T>
T* CopyOnWrite(std::shared_ptr<const T>& slot, absl::flat_hash_set<const void*>& owned) {
  if (!owned.contains(slot.get())) {
#ifdef __SANITIZE_THREAD__
    constexpr bool kInPlace = false;
#else
    constexpr bool kInPlace = true;
#endif
    if (kInPlace && slot.use_count() == 1) {
      // Pairs with the release of the last other owner's reference: its reads come first.
      std::atomic_thread_fence(std::memory_order_acquire);
    } else {
      slot = std::make_shared<T>(*slot);
    }
    owned.insert(slot.get());
  }
  // Safe: every entry is created non-const (make_shared<T>, here and in Empty).
  return const_cast<T*>(slot.get());
}

bool UidLess(const ClusterSnapshot::PodPtr& a, const ClusterSnapshot::PodPtr& b) {
  return a->uid < b->uid;
}

void SortByKey(std::vector<Gang>& gangs) {
  std::sort(gangs.begin(), gangs.end(), [](const Gang& a, const Gang& b) { return a.key < b.key; });
}

// Running (holding capacity, none gated), unmarked, every member preemptible.
bool Preemptible(const Gang& g) { return g.Running() && g.preemptible && !g.preempt_requested; }

// Occupant order: priority, then key.
bool OccupantLess(const ClusterSnapshot::Occupant& o, const Gang& g) {
  return std::tie(o.gang->priority, o.gang->key) < std::tie(g.priority, g.key);
}

std::shared_ptr<const Gang> SummaryOf(const ClusterSnapshot::GangPtr& gang) {
  return std::shared_ptr<const Gang>(gang, &gang->summary);
}

// Recomputes what node entry `e` has free after its allocatable or usage changed.
void Recount(ClusterSnapshot::NodeEntry* e) { e->free = e->node.allocatable - e->used; }

auto NodeNameLess = [](const std::shared_ptr<const ClusterSnapshot::NodeEntry>& e,
                       absl::string_view name) { return e->node.name < name; };

}  // namespace

std::shared_ptr<const ClusterSnapshot> ClusterSnapshot::Empty() {
  static const std::shared_ptr<const ClusterSnapshot> empty = [] {
    auto s = std::make_shared<ClusterSnapshot>();
    std::shared_ptr<const PodShard> pods = std::make_shared<PodShard>();
    std::shared_ptr<const GangShard> gangs = std::make_shared<GangShard>();
    std::shared_ptr<const KeyShard> keys = std::make_shared<KeyShard>();
    s->pods_.fill(pods);
    s->gangs_.fill(gangs);
    s->pending_.fill(keys);
    s->marked_.fill(keys);
    s->placing_.fill(keys);
    return s;
  }();
  return empty;
}

int ClusterSnapshot::ShardOf(absl::string_view key) {
  return static_cast<int>(absl::HashOf(key) % kSnapshotShards);
}

std::optional<int> ClusterSnapshot::NodeIndex(absl::string_view name) const {
  const int i = NodePosition(name);
  return i < 0 ? std::nullopt : std::optional<int>(i);
}

int ClusterSnapshot::NodePosition(absl::string_view name) const {
  if (node_index_ != nullptr) return node_index_->Position(name);
  auto it = std::lower_bound(nodes_.begin(), nodes_.end(), name, NodeNameLess);
  if (it == nodes_.end() || (*it)->node.name != name) return -1;
  return static_cast<int>(it - nodes_.begin());
}

std::vector<int> ClusterSnapshot::NodeIndices(absl::Span<const std::string> names) const {
  std::vector<int> out(names.size());
  if (node_index_ != nullptr) {
    node_index_->Positions(names, absl::MakeSpan(out));
  } else {
    for (size_t i = 0; i < names.size(); ++i) out[i] = NodePosition(names[i]);
  }
  return out;
}

std::vector<const PodInfo*> ClusterSnapshot::PodsOnNode(int i) const {
  std::vector<const PodInfo*> out;
  for (const PodPtr& p : nodes_[i]->pods) out.push_back(p.get());
  return out;
}

const PodInfo* ClusterSnapshot::FindPod(absl::string_view uid) const {
  const PodShard& shard = *pods_[ShardOf(uid)];
  auto it = shard.find(uid);
  return it == shard.end() ? nullptr : it->second.get();
}

void ClusterSnapshot::ForEachPod(const std::function<void(const PodInfo&)>& fn) const {
  for (const auto& shard : pods_) {
    for (const auto& [uid, pod] : *shard) fn(*pod);
  }
}

std::vector<Gang> ClusterSnapshot::Gangs(GangFilter filter) const {
  if (filter == GangFilter::kAll) return Gangs([](const GangEntry&) { return true; });
  const KeyIndex& index = filter == GangFilter::kPending  ? pending_
                          : filter == GangFilter::kMarked ? marked_
                                                          : placing_;
  std::vector<Gang> out = FromIndex(index);
  SortByKey(out);
  return out;
}

std::vector<Gang> ClusterSnapshot::FromIndex(const KeyIndex& index) const {
  std::vector<Gang> out;
  for (const auto& shard : index) {
    for (const std::string& key : *shard) out.push_back(gangs_[ShardOf(key)]->at(key)->summary);
  }
  return out;
}

std::vector<Gang> ClusterSnapshot::Gangs(const std::function<bool(const GangEntry&)>& keep) const {
  std::vector<Gang> out;
  for (const auto& shard : gangs_) {
    for (const auto& [key, entry] : *shard) {
      if (keep(*entry)) out.push_back(entry->summary);
    }
  }
  SortByKey(out);
  return out;
}

std::optional<Gang> ClusterSnapshot::FindGang(absl::string_view key) const {
  const GangShard& shard = *gangs_[ShardOf(key)];
  auto it = shard.find(key);
  if (it == shard.end()) return std::nullopt;
  return it->second->summary;
}

SnapshotBuilder::SnapshotBuilder(std::shared_ptr<const ClusterSnapshot> base)
    : next_(std::make_shared<ClusterSnapshot>(*base)) {}

ClusterSnapshot::NodeEntry* SnapshotBuilder::MutableNode(int i) {
  return CopyOnWrite(next_->nodes_[i], owned_);
}

ClusterSnapshot::PodShard& SnapshotBuilder::MutablePods(int shard) {
  return *CopyOnWrite(next_->pods_[shard], owned_);
}

ClusterSnapshot::GangShard& SnapshotBuilder::MutableGangs(int shard) {
  return *CopyOnWrite(next_->gangs_[shard], owned_);
}

void SnapshotBuilder::Index(const std::string& key, const Gang* gang) {
  const int shard = ClusterSnapshot::ShardOf(key);
  auto keep = [&](std::shared_ptr<const ClusterSnapshot::KeyShard>& slot, bool wanted) {
    if (slot->contains(key) == wanted) return;
    ClusterSnapshot::KeyShard* keys = CopyOnWrite(slot, owned_);
    if (wanted) {
      keys->insert(key);
    } else {
      keys->erase(key);
    }
  };
  keep(next_->pending_[shard], gang != nullptr && gang->gated);
  keep(next_->marked_[shard], gang != nullptr && gang->preempt_requested);
  keep(next_->placing_[shard], gang != nullptr && gang->placing);
}

std::vector<std::pair<int, Resources>> SnapshotBuilder::HeldPerNode(const Gang& gang) const {
  std::vector<std::pair<int, Resources>> held;
  for (const PodInfo* p : gang.members) {
    if (!p->HoldsCapacity()) continue;
    std::optional<int> i = next_->NodeIndex(p->AssignedNode());
    if (!i) continue;
    auto it = std::find_if(held.begin(), held.end(), [&](const auto& h) { return h.first == *i; });
    if (it == held.end()) {
      held.emplace_back(*i, p->requests);
    } else {
      it->second += p->requests;
    }
  }
  return held;
}

void SnapshotBuilder::ListOccupant(const ClusterSnapshot::GangPtr& gang, bool add) {
  const Gang& g = gang->summary;
  if (!Preemptible(g)) return;
  for (auto& [i, held] : HeldPerNode(g)) {
    std::vector<ClusterSnapshot::Occupant>& list = MutableNode(i)->occupants;
    auto it = std::lower_bound(list.begin(), list.end(), g, OccupantLess);
    if (add) {
      list.insert(it, {SummaryOf(gang), std::move(held)});
    } else if (it != list.end() && it->gang.get() == &g) {
      list.erase(it);
    }
  }
}

void SnapshotBuilder::UpsertNode(Node node) {
  auto& nodes = next_->nodes_;
  auto it = std::lower_bound(nodes.begin(), nodes.end(), node.name, NodeNameLess);
  if (it != nodes.end() && (*it)->node.name == node.name) {
    ClusterSnapshot::NodeEntry* e = MutableNode(static_cast<int>(it - nodes.begin()));
    e->node = std::move(node);
    Recount(e);
    return;
  }
  auto entry = std::make_shared<ClusterSnapshot::NodeEntry>();
  entry->node = std::move(node);
  owned_.insert(entry.get());
  int index = static_cast<int>(it - nodes.begin());
  nodes.insert(it, std::move(entry));
  next_->node_index_ = nullptr;
  AttachAllTo(index);
}

void SnapshotBuilder::RemoveNode(absl::string_view name) {
  std::optional<int> i = next_->NodeIndex(name);
  if (!i) return;
  next_->nodes_.erase(next_->nodes_.begin() + *i);
  next_->node_index_ = nullptr;
}

void SnapshotBuilder::AttachAllTo(int node_index) {
  ClusterSnapshot::NodeEntry* entry = MutableNode(node_index);
  entry->used = Resources();
  entry->planned = Resources();
  entry->marked = 0;
  entry->pods.clear();
  entry->occupants.clear();
  next_->ForEachPod([&](const PodInfo& p) {
    if (p.HoldsCapacity() && p.AssignedNode() == entry->node.name) {
      entry->used += p.requests;
      if (p.node.empty()) entry->planned += p.requests;
      if (p.preempt_requested) ++entry->marked;
      entry->pods.push_back(next_->pods_[ClusterSnapshot::ShardOf(p.uid)]->at(p.uid));
    }
  });
  Recount(entry);
  std::sort(entry->pods.begin(), entry->pods.end(), UidLess);
  absl::flat_hash_set<const ClusterSnapshot::GangEntry*> seen;
  for (const ClusterSnapshot::PodPtr& p : entry->pods) {
    const std::string key = p->GangKey();
    const ClusterSnapshot::GangPtr& gang = next_->gangs_[ClusterSnapshot::ShardOf(key)]->at(key);
    if (!seen.insert(gang.get()).second || !Preemptible(gang->summary)) continue;
    for (auto& [i, held] : HeldPerNode(gang->summary)) {
      if (i == node_index) entry->occupants.push_back({SummaryOf(gang), std::move(held)});
    }
  }
  std::sort(entry->occupants.begin(), entry->occupants.end(),
            [](const ClusterSnapshot::Occupant& a, const ClusterSnapshot::Occupant& b) {
              return OccupantLess(a, *b.gang);
            });
}

void SnapshotBuilder::Attach(const ClusterSnapshot::PodPtr& pod) {
  if (!pod->HoldsCapacity()) return;
  std::optional<int> i = next_->NodeIndex(pod->AssignedNode());
  if (!i) return;  // Attached when the node arrives.
  ClusterSnapshot::NodeEntry* e = MutableNode(*i);
  e->used += pod->requests;
  if (pod->node.empty()) e->planned += pod->requests;
  if (pod->preempt_requested) ++e->marked;
  Recount(e);
  e->pods.insert(std::lower_bound(e->pods.begin(), e->pods.end(), pod, UidLess), pod);
}

void SnapshotBuilder::Detach(const ClusterSnapshot::PodPtr& pod) {
  if (!pod->HoldsCapacity()) return;
  std::optional<int> i = next_->NodeIndex(pod->AssignedNode());
  if (!i) return;
  ClusterSnapshot::NodeEntry* e = MutableNode(*i);
  auto it = std::lower_bound(e->pods.begin(), e->pods.end(), pod, UidLess);
  if (it == e->pods.end() || *it != pod) return;
  e->pods.erase(it);
  e->used -= pod->requests;
  if (pod->node.empty()) e->planned -= pod->requests;
  if (pod->preempt_requested) --e->marked;
  Recount(e);
}

ClusterSnapshot::PodPtr SnapshotBuilder::Unlink(absl::string_view uid) {
  const int shard = ClusterSnapshot::ShardOf(uid);
  auto found = next_->pods_[shard]->find(uid);
  if (found == next_->pods_[shard]->end()) return nullptr;
  ClusterSnapshot::PodPtr pod = found->second;
  Detach(pod);
  MutablePods(shard).erase(pod->uid);
  --next_->pod_count_;
  return pod;
}

void SnapshotBuilder::EditGang(const std::string& key, const ClusterSnapshot::PodPtr& drop,
                               const ClusterSnapshot::PodPtr& add) {
  ClusterSnapshot::GangShard& gangs = MutableGangs(ClusterSnapshot::ShardOf(key));
  auto it = gangs.find(key);
  std::vector<ClusterSnapshot::PodPtr> pods;
  if (it != gangs.end()) {
    pods = it->second->pods;
    ListOccupant(it->second, /*add=*/false);
  }
  if (drop != nullptr) std::erase(pods, drop);
  if (add != nullptr) pods.insert(std::lower_bound(pods.begin(), pods.end(), add, UidLess), add);
  if (pods.empty()) {
    if (it != gangs.end()) gangs.erase(it);
    Index(key, nullptr);
    return;
  }
  auto entry = std::make_shared<ClusterSnapshot::GangEntry>();
  std::vector<const PodInfo*> members;
  members.reserve(pods.size());
  for (const ClusterSnapshot::PodPtr& p : pods) members.push_back(p.get());
  entry->pods = std::move(pods);
  entry->summary = SummarizeGang(key, std::move(members));
  Index(key, &entry->summary);
  ListOccupant(entry, /*add=*/true);
  gangs.insert_or_assign(key, std::move(entry));
}

void SnapshotBuilder::UpsertPod(PodInfo pod) {
  auto shared = std::make_shared<const PodInfo>(std::move(pod));
  ClusterSnapshot::PodPtr old = Unlink(shared->uid);
  const std::string key = shared->GangKey();
  const bool moved = old != nullptr && old->GangKey() != key;
  if (moved) EditGang(old->GangKey(), old, nullptr);
  EditGang(key, moved ? nullptr : old, shared);
  Attach(shared);
  MutablePods(ClusterSnapshot::ShardOf(shared->uid))[shared->uid] = std::move(shared);
  ++next_->pod_count_;
}

void SnapshotBuilder::RemovePod(absl::string_view uid) {
  ClusterSnapshot::PodPtr old = Unlink(uid);
  if (old != nullptr) EditGang(old->GangKey(), old, nullptr);
}

std::shared_ptr<const ClusterSnapshot> SnapshotBuilder::Build() {
  if (next_->node_index_ == nullptr) {
    std::vector<absl::string_view> names;
    names.reserve(next_->nodes_.size());
    for (const auto& entry : next_->nodes_) names.push_back(entry->node.name);
    next_->node_index_ = std::make_shared<const NameIndex>(names);
  }
  auto done = std::make_shared<ClusterSnapshot>(*next_);
  owned_.clear();  // Everything built is now shared with `done`.
  return done;
}

}  // namespace phalanx::core
