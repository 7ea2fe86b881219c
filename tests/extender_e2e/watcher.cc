// Pod-contract invariants over a namespace's watch stream (see watcher.h).
#include "tests/extender_e2e/watcher.h"

#include <algorithm>
#include <set>
#include <string_view>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kube/decode.h"
#include "kube/json.h"
#include "kube/status.h"

namespace phalanx::e2e {
namespace {

std::string Describe(const PodState& p) {
  return absl::StrCat(p.info.name, "(gpus=", p.info.requests.gpu(), " node=", p.info.node,
                      " placement=", p.info.placement, p.info.gated ? " gated" : "",
                      p.deleting ? " terminating" : "", ")");
}

// Live pods grouped by gang key.
std::map<std::string, std::vector<const PodState*>> LiveGangs(
    const std::vector<const PodState*>& pods) {
  std::map<std::string, std::vector<const PodState*>> gangs;
  for (const PodState* p : pods) {
    if (p->Live()) gangs[p->info.GangKey()].push_back(p);
  }
  return gangs;
}

// "node X double-booked: N GPUs of pods holding capacity on M allocatable: ..." when the pods that
// hold its capacity as the engine counts them (terminating ones too) need more than it has.
std::vector<std::string> OverBooked(const std::vector<const PodState*>& pods,
                                    const std::map<std::string, NodeRoom>& nodes,
                                    const std::set<std::string>& only) {
  std::map<std::string, std::vector<const PodState*>> on_node;
  for (const PodState* p : pods) {
    std::string node(p->info.AssignedNode());
    if (p->HoldsCapacity() && (only.empty() || only.count(node) > 0)) {
      on_node[node].push_back(p);
    }
  }
  std::vector<std::string> out;
  for (const auto& [node, members] : on_node) {
    auto room = nodes.find(node);
    if (room == nodes.end()) continue;
    int64_t used = 0;
    std::vector<std::string> names;
    for (const PodState* p : members) {
      used += p->info.requests.gpu();
      names.push_back(Describe(*p));
    }
    if (used > room->second.gpus) {
      out.push_back(absl::StrCat("node ", node, " double-booked: ", used,
                                 " GPUs of pods holding capacity on ", room->second.gpus,
                                 " allocatable: ", absl::StrJoin(names, ", ")));
    }
    // Every pod takes one of its node's pods, whatever it requests (NodeResourcesFit).
    if (static_cast<int64_t>(members.size()) > room->second.pods) {
      out.push_back(absl::StrCat("node ", node, " over-booked: ", members.size(),
                                 " pods holding capacity on room for ", room->second.pods, ": ",
                                 absl::StrJoin(names, ", ")));
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<PodState> ParsePod(simdjson::dom::element pod, const kube::PlacementKey* key) {
  PodState s;
  KUBE_ASSIGN_OR_RETURN(s.info, kube::DecodePod(pod, key));
  KUBE_ASSIGN_OR_RETURN(kube::JsonObject root, kube::JsonObject::Of(pod, "pod"));
  KUBE_ASSIGN_OR_RETURN(kube::JsonObject meta, root.Object("metadata"));
  s.deleting = meta.Get("deletionTimestamp").has_value();
  KUBE_ASSIGN_OR_RETURN(std::string_view version, meta.String("resourceVersion"));
  s.resource_version = std::string(version);
  KUBE_ASSIGN_OR_RETURN(core::Labels annotations, meta.StringMap("annotations"));
  if (const std::string* r = core::FindLabel(annotations, kube::kPendingReasonAnnotation)) {
    s.pending_reason = *r;
  }
  return s;
}

std::string TrialOf(const PodState& pod) {
  const std::string& gang = pod.info.gang;
  const size_t run = gang.rfind("-r");
  const std::string& job = pod.info.job_id;
  if (job.empty() || !absl::StartsWith(gang, job) || run == std::string::npos || run < job.size() ||
      run + 2 == gang.size() ||
      !std::all_of(gang.begin() + run + 2, gang.end(), absl::ascii_isdigit)) {
    return "";
  }
  return gang.substr(0, run);
}

std::vector<std::string> CheckFinalState(const std::vector<PodState>& pods,
                                         const std::map<std::string, NodeRoom>& nodes) {
  std::vector<const PodState*> ptrs;
  for (const PodState& p : pods) ptrs.push_back(&p);
  std::vector<std::string> out = OverBooked(ptrs, nodes, {});
  for (const auto& [gang, members] : LiveGangs(ptrs)) {
    size_t bound = 0, placed = 0;
    std::vector<std::string> names;
    for (const PodState* p : members) {
      bound += !p->info.node.empty();
      placed += !p->info.placement.empty();
      names.push_back(Describe(*p));
    }
    const size_t size = static_cast<size_t>(members.front()->info.gang_size);
    if (bound > 0 && (bound != members.size() || bound != size)) {
      out.push_back(absl::StrCat("gang ", gang, " partly bound (", bound, " of ", size,
                                 "): ", absl::StrJoin(names, ", ")));
    }
    if (placed > 0 && placed != members.size()) {
      out.push_back(absl::StrCat("gang ", gang, " partly placed (", placed, " of ", members.size(),
                                 "): ", absl::StrJoin(names, ", ")));
    }
  }
  return out;
}

absl::Status Watcher::Start() {
  simdjson::dom::parser parser;
  absl::StatusOr<std::string> version =
      client_->ListAll(kube::kPods, ns_, {}, [&](simdjson::dom::element item) {
        KUBE_ASSIGN_OR_RETURN(PodState p, ParsePod(item, key_));
        absl::MutexLock lock(&mu_);
        pods_[p.info.uid] = p;
        return absl::OkStatus();
      });
  if (!version.ok()) return version.status();
  thread_ = std::thread([this, v = *version] { Run(v); });
  return absl::OkStatus();
}

void Watcher::Stop() {
  if (!thread_.joinable()) return;
  std::string missed = CatchUp(absl::Seconds(15));
  Halt();
  if (missed.empty()) return;
  absl::MutexLock lock(&mu_);
  violations_.push_back(std::move(missed));
}

std::string Watcher::CatchUp(absl::Duration timeout) {
  absl::StatusOr<std::string> unseen;
  for (absl::Time deadline = absl::Now() + timeout;; absl::SleepFor(absl::Milliseconds(200))) {
    unseen = Unseen();
    if (unseen.ok() && unseen->empty()) return "";
    if (absl::Now() > deadline) break;
  }
  absl::MutexLock lock(&mu_);
  return absl::StrCat("the watch had not delivered in ", absl::FormatDuration(timeout),
                      " what a list of the namespace shows, so events may have gone unchecked "
                      "(last watch error: ",
                      watch_error_, "): ", unseen.ok() ? *unseen : unseen.status().ToString());
}

void Watcher::Halt() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

absl::StatusOr<std::string> Watcher::Unseen() {
  std::map<std::string, PodState> listed;  // By uid.
  absl::StatusOr<std::string> version =
      client_->ListAll(kube::kPods, ns_, {}, [&](simdjson::dom::element item) {
        KUBE_ASSIGN_OR_RETURN(PodState p, ParsePod(item, key_));
        listed[p.info.uid] = std::move(p);
        return absl::OkStatus();
      });
  if (!version.ok()) return version.status();
  absl::MutexLock lock(&mu_);
  std::vector<std::string> out;
  for (const auto& [uid, p] : listed) {
    auto seen = pods_.find(uid);
    if (seen == pods_.end()) {
      out.push_back(absl::StrCat(p.info.name, " never seen"));
    } else if (seen->second.resource_version != p.resource_version) {
      out.push_back(absl::StrCat(p.info.name, " at version ", p.resource_version, ", seen at ",
                                 seen->second.resource_version));
    }
  }
  for (const auto& [uid, p] : pods_) {
    if (listed.count(uid) == 0) out.push_back(absl::StrCat(p.info.name, " gone unseen"));
  }
  constexpr size_t kShown = 10;
  if (out.size() > kShown) {
    const size_t more = out.size() - kShown;
    out.resize(kShown);
    out.push_back(absl::StrCat("and ", more, " more"));
  }
  return absl::StrJoin(out, ", ");
}

void Watcher::Run(std::string resource_version) {
  while (!stop_.load()) {
    kube::WatchOptions options;
    options.resource_version = resource_version;
    options.timeout_seconds = 600;
    options.stop = &stop_;
    kube::WatchResult r = client_->Watch(
        kube::kPods, ns_, options, [&](kube::EventType type, simdjson::dom::element object) {
          absl::StatusOr<PodState> p = ParsePod(object, key_);
          absl::MutexLock lock(&mu_);
          if (!p.ok()) {
            violations_.push_back(absl::StrCat("undecodable pod event: ", p.status().ToString()));
          } else {
            Apply(type == kube::EventType::kDeleted, *p);
          }
          return true;
        });
    if (!r.resource_version.empty()) resource_version = r.resource_version;
    if (!r.status.ok()) {
      absl::MutexLock lock(&mu_);
      watch_error_ = absl::StrCat(r.status.ToString(), " at ", absl::FormatTime(absl::Now()));
      if (kube::IsGone(r.status)) {
        violations_.push_back("watch expired: events were missed, invariants unchecked");
        return;
      }
    }
    if (!r.status.ok() && !stop_.load()) absl::SleepFor(absl::Milliseconds(200));
  }
}

void Watcher::Apply(bool deleted, const PodState& pod) {
  last_event_ = absl::Now();
  uint64_t version = 0;
  if (absl::SimpleAtoi(pod.resource_version, &version)) {
    last_version_ = std::max(last_version_, version);
  }
  auto it = pods_.find(pod.info.uid);
  const PodState* before = it == pods_.end() ? nullptr : &it->second;
  if (deleted) {
    if (it != pods_.end()) pods_.erase(it);
    return;
  }
  bool newly_bound = !pod.info.node.empty() && (before == nullptr || before->info.node.empty());
  bool newly_placed =
      !pod.info.placement.empty() && (before == nullptr || before->info.placement.empty());
  pods_[pod.info.uid] = pod;
  placements_ += newly_placed;
  if (newly_bound) {
    ++bindings_;
    CheckBinding(pod);
  }
  std::string node(pod.info.AssignedNode());
  if (!node.empty()) CheckNode(node);
  CheckTrial(pod);
}

void Watcher::CheckBinding(const PodState& pod) {
  if (pod.info.gang.empty() && pod.info.placement.empty()) return;  // Not admitted by phalanx.
  if (pod.info.node != pod.info.placement) {
    violations_.push_back(absl::StrCat("pod ", pod.info.name, " bound to ", pod.info.node,
                                       " but placed on ", pod.info.placement));
  }
  std::vector<const PodState*> all;
  for (const auto& [uid, p] : pods_) all.push_back(&p);
  std::vector<const PodState*> members = LiveGangs(all)[pod.info.GangKey()];
  std::vector<std::string> names;
  bool unplanned = false;
  for (const PodState* p : members) {
    names.push_back(Describe(*p));
    unplanned |= p->info.placement.empty();
  }
  if (unplanned || static_cast<int>(members.size()) < pod.info.gang_size) {
    violations_.push_back(absl::StrCat("pod ", pod.info.name, " bound to ", pod.info.node,
                                       " while its gang of ", pod.info.gang_size,
                                       " is not fully placed: ", absl::StrJoin(names, ", ")));
  }
}

void Watcher::CheckNode(const std::string& node) {
  std::vector<const PodState*> all;
  for (const auto& [uid, p] : pods_) all.push_back(&p);
  for (std::string& v : OverBooked(all, nodes_, {node})) violations_.push_back(std::move(v));
}

void Watcher::CheckTrial(const PodState& pod) {
  const std::string trial = TrialOf(pod);
  if (trial.empty() || !pod.Live()) return;
  std::set<std::string> allocations;
  std::vector<std::string> names;
  for (const auto& [uid, p] : pods_) {
    if (p.Live() && TrialOf(p) == trial) {
      allocations.insert(p.info.gang);
      names.push_back(Describe(p));
    }
  }
  if (allocations.size() > 1) {
    violations_.push_back(absl::StrCat("trial ", trial, " has live pods of ", allocations.size(),
                                       " allocations at once: ", absl::StrJoin(names, ", ")));
  }
}

void Watcher::AddNode(const std::string& node, NodeRoom room) {
  absl::MutexLock lock(&mu_);
  nodes_[node] = room;
}

std::vector<std::string> Watcher::violations() {
  absl::MutexLock lock(&mu_);
  return violations_;
}

std::map<std::string, NodeRoom> Watcher::nodes() {
  absl::MutexLock lock(&mu_);
  return nodes_;
}

int64_t Watcher::bindings() {
  absl::MutexLock lock(&mu_);
  return bindings_;
}

int64_t Watcher::placements() {
  absl::MutexLock lock(&mu_);
  return placements_;
}

absl::Time Watcher::last_event() {
  absl::MutexLock lock(&mu_);
  return last_event_;
}

uint64_t Watcher::last_version() {
  absl::MutexLock lock(&mu_);
  return last_version_;
}

}  // namespace phalanx::e2e
