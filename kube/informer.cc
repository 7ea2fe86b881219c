// Informer loops: list, then watch from the list's resourceVersion; apply events to the snapshot
// builder under one lock and publish lazily (Snapshot() builds only when something changed).
#include "kube/informer.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kube/decode.h"
#include "kube/status.h"

namespace phalanx::kube {
namespace {

std::string MetaString(simdjson::dom::element object, std::string_view key) {
  std::string_view s;
  if (object["metadata"][key].get(s) != simdjson::SUCCESS) return "";
  return std::string(s);
}

// Moves a decoded object to `out`; returns the decode error otherwise.
template <typename T>
absl::Status Append(absl::StatusOr<T> decoded, std::vector<T>& out) {
  if (!decoded.ok()) return decoded.status();
  out.push_back(*std::move(decoded));
  return absl::OkStatus();
}

}  // namespace

Informer::Informer(Client& client, InformerOptions options)
    : client_(client), options_(std::move(options)), snapshot_(core::ClusterSnapshot::Empty()) {}

Informer::~Informer() { Stop(); }

void Informer::Start() {
  threads_[0] = std::thread([this] { Run(Kind::kNodes); });
  threads_[1] = std::thread([this] { Run(Kind::kPods); });
}

void Informer::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  for (auto& abort : abort_watch_) abort = true;
  cv_.notify_all();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
}

void Informer::RestartWatches() {
  for (auto& abort : abort_watch_) abort = true;
}

std::shared_ptr<const core::ClusterSnapshot> Informer::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (dirty_) {
    snapshot_ = builder_.Build();
    dirty_ = false;
  }
  return snapshot_;
}

uint64_t Informer::version() const {
  std::lock_guard<std::mutex> lock(mu_);
  return version_;
}

uint64_t Informer::WaitForChange(uint64_t last_version, absl::Duration timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, absl::ToChronoMilliseconds(timeout),
               [&] { return version_ != last_version || stop_; });
  return version_;
}

bool Informer::HasSynced() const {
  std::lock_guard<std::mutex> lock(mu_);
  return synced_[0] && synced_[1];
}

bool Informer::WaitForSync(absl::Duration timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, absl::ToChronoMilliseconds(timeout),
                      [&] { return (synced_[0] && synced_[1]) || stop_; }) &&
         synced_[0] && synced_[1];
}

InformerCounters Informer::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  InformerCounters c = counters_;
  c.nodes = static_cast<int64_t>(node_names_.size());
  c.pods = static_cast<int64_t>(pod_uids_.size());
  return c;
}

std::string Informer::pods_resource_version() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pods_resource_version_;
}

void Informer::Changed() {
  dirty_ = true;
  ++version_;
  cv_.notify_all();
}

void Informer::Fail(const absl::Status& status) {
  std::lock_guard<std::mutex> lock(mu_);
  ++counters_.errors;
  counters_.last_error = std::string(status.message());
}

void Informer::Sleep(absl::Duration d) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, absl::ToChronoMilliseconds(d), [&] { return stop_.load(); });
}

absl::StatusOr<std::string> Informer::Relist(Kind kind) {
  const bool pods = kind == Kind::kPods;
  const char* key = pods ? "uid" : "name";
  ListOptions list;
  list.label_selector = pods ? options_.pod_label_selector : options_.node_label_selector;
  std::vector<core::Node> nodes;
  std::vector<core::PodInfo> pod_infos;
  std::vector<std::string> errors;
  std::vector<std::string> undecoded;  // Keys of the objects in `errors`.
  absl::StatusOr<std::string> version = client_.ListAll(
      pods ? kPods : kNodes, pods ? options_.pod_namespace : "", list,
      [&](simdjson::dom::element item) {
        absl::Status decoded = pods ? Append(DecodePod(item, options_.placement_key), pod_infos)
                                    : Append(DecodeNode(item), nodes);
        if (!decoded.ok()) {
          errors.emplace_back(decoded.message());
          undecoded.push_back(MetaString(item, key));
        }
        return absl::OkStatus();
      });
  if (!version.ok()) return version.status();

  std::lock_guard<std::mutex> lock(mu_);
  counters_.decode_errors += static_cast<int64_t>(errors.size());
  if (!errors.empty()) counters_.last_error = errors.back();
  absl::flat_hash_set<std::string>& cached = pods ? pod_uids_ : node_names_;
  absl::flat_hash_set<std::string> listed;
  for (const core::PodInfo& p : pod_infos) listed.insert(p.uid);
  for (const core::Node& n : nodes) listed.insert(n.name);
  // As in ApplyEvent, an object that no longer decodes keeps its last good version.
  for (const std::string& k : undecoded) {
    if (cached.contains(k)) listed.insert(k);
  }
  for (const std::string& k : cached) {
    if (listed.contains(k)) continue;
    if (pods) {
      builder_.RemovePod(k);
    } else {
      builder_.RemoveNode(k);
    }
  }
  for (core::PodInfo& p : pod_infos) builder_.UpsertPod(std::move(p));
  for (core::Node& n : nodes) builder_.UpsertNode(std::move(n));
  cached = std::move(listed);
  if (pods) pods_resource_version_ = *version;
  synced_[static_cast<int>(kind)] = true;
  Changed();
  return version;
}

void Informer::ApplyEvent(Kind kind, EventType type, simdjson::dom::element object) {
  const bool pods = kind == Kind::kPods;
  if (type == EventType::kDeleted) {
    std::string key = MetaString(object, pods ? "uid" : "name");
    std::lock_guard<std::mutex> lock(mu_);
    ++counters_.events;
    if (pods) pods_resource_version_ = MetaString(object, "resourceVersion");
    if (pods && pod_uids_.erase(key) > 0) {
      builder_.RemovePod(key);
      Changed();
    } else if (!pods && node_names_.erase(key) > 0) {
      builder_.RemoveNode(key);
      Changed();
    }
    return;
  }
  absl::StatusOr<core::PodInfo> pod;
  absl::StatusOr<core::Node> node;
  absl::Status decoded = pods ? (pod = DecodePod(object, options_.placement_key)).status()
                              : (node = DecodeNode(object)).status();
  std::lock_guard<std::mutex> lock(mu_);
  ++counters_.events;
  if (pods) pods_resource_version_ = MetaString(object, "resourceVersion");
  if (!decoded.ok()) {
    // The last good version (if any) stays: it is the best estimate of what the object holds.
    ++counters_.decode_errors;
    counters_.last_error = std::string(decoded.message());
    return;
  }
  if (pods) {
    pod_uids_.insert(pod->uid);
    builder_.UpsertPod(*std::move(pod));
  } else {
    node_names_.insert(node->name);
    builder_.UpsertNode(*std::move(node));
  }
  Changed();
}

void Informer::Run(Kind kind) {
  const bool pods = kind == Kind::kPods;
  std::atomic<bool>& abort = abort_watch_[static_cast<int>(kind)];
  std::string version;  // Empty: list first.
  absl::Duration backoff = options_.initial_backoff;
  bool first_watch = true;
  auto back_off = [&](const absl::Status& status) {
    Fail(status);
    Sleep(backoff);
    backoff = std::min(backoff * 2, options_.max_backoff);
  };
  while (!stop_) {
    if (version.empty()) {
      absl::StatusOr<std::string> listed = Relist(kind);
      if (!listed.ok()) {
        back_off(listed.status());
        continue;
      }
      version = *std::move(listed);
    }
    if (!first_watch) {
      std::lock_guard<std::mutex> lock(mu_);
      ++counters_.watch_restarts;
    }
    first_watch = false;
    WatchOptions watch;
    watch.label_selector = pods ? options_.pod_label_selector : options_.node_label_selector;
    watch.resource_version = version;
    watch.timeout_seconds = options_.watch_timeout_seconds;
    watch.stop = &abort;
    WatchResult result = client_.Watch(pods ? kPods : kNodes, pods ? options_.pod_namespace : "",
                                       watch, [&](EventType type, simdjson::dom::element object) {
                                         ApplyEvent(kind, type, object);
                                         return true;
                                       });
    const bool aborted = abort.exchange(stop_.load());  // By Stop or RestartWatches.
    version = result.resource_version;
    if (IsGone(result.status)) {
      std::lock_guard<std::mutex> lock(mu_);
      ++counters_.relists;
      version.clear();
    } else if (!result.status.ok()) {
      if (result.events > 0) backoff = options_.initial_backoff;
      back_off(result.status);
    } else if (result.EndedAtOnce() && !aborted) {
      back_off(absl::UnavailableError("the watch ended at once without an event"));
    } else {
      backoff = options_.initial_backoff;
    }
  }
}

}  // namespace phalanx::kube
