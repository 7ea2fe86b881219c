// Copy-on-write snapshot storage and incremental updates.
#include "core/snapshot.h"

#include <algorithm>

#include "absl/hash/hash.h"

namespace phalanx::core {
namespace {

template <typename T>
T* CopyOnWrite(std::shared_ptr<const T>& slot, absl::flat_hash_set<const void*>& owned) {
  if (!owned.contains(slot.get())) {
    auto copy = std::make_shared<T>(*slot);
    owned.insert(copy.get());
    slot = std::move(copy);
  }
  // Safe: every owned entry was created non-const by make_shared above.
  return const_cast<T*>(slot.get());
}

bool UidLess(const ClusterSnapshot::PodPtr& a, const ClusterSnapshot::PodPtr& b) {
  return a->uid < b->uid;
}

void SortByKey(std::vector<Gang>& gangs) {
  std::sort(gangs.begin(), gangs.end(), [](const Gang& a, const Gang& b) { return a.key < b.key; });
}

Gang Summarize(const std::string& key, const ClusterSnapshot::GangEntry& entry) {
  std::vector<const PodInfo*> pods;
  pods.reserve(entry.pods.size());
  for (const ClusterSnapshot::PodPtr& p : entry.pods) pods.push_back(p.get());
  return SummarizeGang(key, std::move(pods));
}

// Adds (+1) or removes (-1) `pod` from the entry's counters.
void Count(ClusterSnapshot::GangEntry& gang, const PodInfo& pod, int sign) {
  bool live = !pod.IsTerminal();
  gang.gated += sign * (live && pod.gated);
  gang.marked += sign * (live && pod.preempt_requested);
  gang.holding += sign * pod.HoldsCapacity();
  gang.pinned += sign * (live && !pod.preemptible);
}

void RecomputeMaxPriority(ClusterSnapshot::GangEntry& gang) {
  bool first = true;
  for (const ClusterSnapshot::PodPtr& p : gang.pods) {
    if (p->IsTerminal()) continue;
    gang.max_priority = first ? p->priority : std::max(gang.max_priority, p->priority);
    first = false;
  }
  if (first) gang.max_priority = 0;
}

auto NodeNameLess = [](const std::shared_ptr<const ClusterSnapshot::NodeEntry>& e,
                       absl::string_view name) { return e->node.name < name; };

}  // namespace

std::shared_ptr<const ClusterSnapshot> ClusterSnapshot::Empty() {
  static const std::shared_ptr<const ClusterSnapshot> empty = [] {
    auto s = std::make_shared<ClusterSnapshot>();
    auto pods = std::make_shared<const PodShard>();
    auto gangs = std::make_shared<const GangShard>();
    auto keys = std::make_shared<const KeyShard>();
    s->pods_.fill(pods);
    s->gangs_.fill(gangs);
    s->pending_.fill(keys);
    s->marked_.fill(keys);
    s->preemptible_.fill(keys);
    return s;
  }();
  return empty;
}

int ClusterSnapshot::ShardOf(absl::string_view key) {
  return static_cast<int>(absl::HashOf(key) % kSnapshotShards);
}

std::optional<int> ClusterSnapshot::NodeIndex(absl::string_view name) const {
  if (node_index_ != nullptr) {
    auto found = node_index_->find(name);
    if (found == node_index_->end()) return std::nullopt;
    return found->second;
  }
  auto it = std::lower_bound(nodes_.begin(), nodes_.end(), name, NodeNameLess);
  if (it == nodes_.end() || (*it)->node.name != name) return std::nullopt;
  return static_cast<int>(it - nodes_.begin());
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
  std::vector<Gang> out = FromIndex(filter == GangFilter::kPending  ? pending_
                                    : filter == GangFilter::kMarked ? marked_
                                                                    : preemptible_,
                                    [](const GangEntry&) { return true; });
  SortByKey(out);
  return out;
}

std::vector<Gang> ClusterSnapshot::PreemptibleBelow(int32_t priority) const {
  std::vector<Gang> out =
      FromIndex(preemptible_, [priority](const GangEntry& e) { return e.max_priority < priority; });
  SortByKey(out);
  return out;
}

std::vector<Gang> ClusterSnapshot::FromIndex(
    const KeyIndex& index, const std::function<bool(const GangEntry&)>& keep) const {
  std::vector<Gang> out;
  for (const auto& shard : index) {
    for (const std::string& key : *shard) {
      const GangEntry& entry = gangs_[ShardOf(key)]->at(key);
      if (keep(entry)) out.push_back(Summarize(key, entry));
    }
  }
  return out;
}

std::vector<Gang> ClusterSnapshot::Gangs(const std::function<bool(const GangEntry&)>& keep) const {
  std::vector<Gang> out;
  for (const auto& shard : gangs_) {
    for (const auto& [key, entry] : *shard) {
      if (keep(entry)) out.push_back(Summarize(key, entry));
    }
  }
  SortByKey(out);
  return out;
}

std::optional<Gang> ClusterSnapshot::FindGang(absl::string_view key) const {
  const GangShard& shard = *gangs_[ShardOf(key)];
  auto it = shard.find(key);
  if (it == shard.end()) return std::nullopt;
  return Summarize(it->first, it->second);
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

void SnapshotBuilder::Index(const std::string& key, const ClusterSnapshot::GangEntry* gang) {
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
  keep(next_->pending_[shard], gang != nullptr && gang->gated > 0);
  keep(next_->marked_[shard], gang != nullptr && gang->marked > 0);
  keep(next_->preemptible_[shard], gang != nullptr && gang->holding > 0 && gang->gated == 0 &&
                                       gang->marked == 0 && gang->pinned == 0);
}

void SnapshotBuilder::UpsertNode(Node node) {
  auto& nodes = next_->nodes_;
  auto it = std::lower_bound(nodes.begin(), nodes.end(), node.name, NodeNameLess);
  if (it != nodes.end() && (*it)->node.name == node.name) {
    MutableNode(static_cast<int>(it - nodes.begin()))->node = std::move(node);
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
  entry->pods.clear();
  next_->ForEachPod([&](const PodInfo& p) {
    if (p.HoldsCapacity() && p.AssignedNode() == entry->node.name) {
      entry->used += p.requests;
      entry->pods.push_back(next_->pods_[ClusterSnapshot::ShardOf(p.uid)]->at(p.uid));
    }
  });
  std::sort(entry->pods.begin(), entry->pods.end(), UidLess);
}

void SnapshotBuilder::Attach(const ClusterSnapshot::PodPtr& pod) {
  if (!pod->HoldsCapacity()) return;
  std::optional<int> i = next_->NodeIndex(pod->AssignedNode());
  if (!i) return;  // Attached when the node arrives.
  ClusterSnapshot::NodeEntry* e = MutableNode(*i);
  e->used += pod->requests;
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
}

void SnapshotBuilder::UpsertPod(PodInfo pod) {
  RemovePod(pod.uid);
  auto shared = std::make_shared<const PodInfo>(std::move(pod));
  Attach(shared);
  std::string key = shared->GangKey();
  ClusterSnapshot::GangEntry& gang = MutableGangs(ClusterSnapshot::ShardOf(key))[key];
  gang.pods.insert(std::lower_bound(gang.pods.begin(), gang.pods.end(), shared, UidLess), shared);
  Count(gang, *shared, +1);
  RecomputeMaxPriority(gang);
  Index(key, &gang);
  MutablePods(ClusterSnapshot::ShardOf(shared->uid))[shared->uid] = std::move(shared);
  ++next_->pod_count_;
}

void SnapshotBuilder::RemovePod(absl::string_view uid) {
  const ClusterSnapshot::PodShard& shard = *next_->pods_[ClusterSnapshot::ShardOf(uid)];
  auto found = shard.find(uid);
  if (found == shard.end()) return;
  ClusterSnapshot::PodPtr keep = found->second;
  Detach(keep);
  std::string key = keep->GangKey();
  ClusterSnapshot::GangShard& gangs = MutableGangs(ClusterSnapshot::ShardOf(key));
  auto git = gangs.find(key);
  if (git != gangs.end()) {
    ClusterSnapshot::GangEntry& gang = git->second;
    std::erase(gang.pods, keep);
    Count(gang, *keep, -1);
    RecomputeMaxPriority(gang);
    Index(key, gang.pods.empty() ? nullptr : &gang);
    if (gang.pods.empty()) gangs.erase(git);
  }
  MutablePods(ClusterSnapshot::ShardOf(uid)).erase(uid);
  --next_->pod_count_;
}

std::shared_ptr<const ClusterSnapshot> SnapshotBuilder::Build() {
  if (next_->node_index_ == nullptr) {
    auto index = std::make_shared<absl::flat_hash_map<std::string, int>>();
    index->reserve(next_->nodes_.size());
    for (size_t i = 0; i < next_->nodes_.size(); ++i) {
      index->emplace(next_->nodes_[i]->node.name, static_cast<int>(i));
    }
    next_->node_index_ = std::move(index);
  }
  auto done = std::make_shared<ClusterSnapshot>(*next_);
  owned_.clear();  // Everything built is now shared with `done`.
  return done;
}

}  // namespace phalanx::core
