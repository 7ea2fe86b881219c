// Applies admission rounds to pods (see admission_loop.h).
#include "scheduler_extender/admission_loop.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "gang/planner.h"
#include "kube/decode.h"
#include "kube/json.h"
#include "preemption/stranded.h"

namespace phalanx::extender {
namespace {

using kube::EncodeJsonString;
using preemption::GangDecision;
using preemption::Verdict;

constexpr int64_t kWriteWaitMs = 5000;
// A gang's pending reason is rewritten at once when it says something new, but at most this often
// when only its numbers changed (reasons quote free capacity, which changes with every admission;
// writing each change would patch every queued pod every round).
constexpr int64_t kReasonIntervalMs = 10'000;

// The reason with every run of digits replaced by '#'.
std::string Shape(absl::string_view reason) {
  std::string out;
  for (char c : reason) {
    const bool digit = absl::ascii_isdigit(static_cast<unsigned char>(c));
    if (!digit || out.empty() || out.back() != '#') out.push_back(digit ? '#' : c);
  }
  return out;
}

// Merge patch of annotations (nullopt removes one) and, optionally, the hostname selector.
std::string AnnotationPatch(
    const std::vector<std::pair<std::string, std::optional<std::string>>>& annotations,
    const std::optional<std::string>& hostname_pin, bool set_pin) {
  std::vector<std::string> items;
  for (const auto& [k, v] : annotations) {
    items.push_back(absl::StrCat(EncodeJsonString(k), ":", v ? EncodeJsonString(*v) : "null"));
  }
  std::string out =
      absl::StrCat("{\"metadata\":{\"annotations\":{", absl::StrJoin(items, ","), "}}");
  if (set_pin) {
    absl::StrAppend(&out, ",\"spec\":{\"nodeSelector\":{\"kubernetes.io/hostname\":",
                    hostname_pin ? EncodeJsonString(*hostname_pin) : "null", "}}");
  }
  return out + "}";
}

// What the kubernetes.io/hostname pin of a pod planned on node `name` says: the node's own label
// (which may differ from its name), else the name.
std::string PinFor(const core::ClusterSnapshot& snap, const std::string& name) {
  std::optional<int> i = snap.NodeIndex(name);
  if (!i) return name;
  const std::string* label = core::FindLabel(snap.node(*i).labels, "kubernetes.io/hostname");
  return label != nullptr ? *label : name;
}

// The outlook's fields of a /debug/queue entry: ,"eta":..,"what_if":{..} when known.
std::string OutlookJson(const GangOutlook* o) {
  if (o == nullptr) return "";
  std::string out = absl::StrCat(",\"eta\":", EncodeJsonString(EtaText(o->eta)));
  if (!o->eta.after.empty()) {
    std::vector<std::string> after;
    for (const std::string& a : o->eta.after) after.push_back(EncodeJsonString(a));
    absl::StrAppend(&out, ",\"after\":[", absl::StrJoin(after, ","), "]");
  }
  if (o->what_if) absl::StrAppend(&out, ",\"what_if\":", WhatIfJson(*o->what_if));
  return out;
}

}  // namespace

absl::Status AdmissionLoop::StillLeading() const {
  if (Leads()) return absl::OkStatus();
  return absl::AbortedError("no longer the leading replica: writes stop");
}

absl::Status AdmissionLoop::MergePatch(const core::PodInfo& pod, const std::string& patch) {
  if (absl::Status st = StillLeading(); !st.ok()) return st;
  absl::StatusOr<std::string> r =
      deps_.client->Patch(kube::kPods, pod.ns, pod.name, kube::PatchType::kMerge, patch);
  if (!r.ok() && !absl::IsNotFound(r.status())) return r.status();
  return absl::OkStatus();
}

absl::Status AdmissionLoop::Ungate(const core::PodInfo& pod) {
  static const std::string kPatch =
      "{\"spec\":{\"schedulingGates\":[{\"$patch\":\"delete\",\"name\":\"phalanx.io/"
      "admission\"}]}}";
  if (absl::Status st = StillLeading(); !st.ok()) return st;
  absl::StatusOr<std::string> r =
      deps_.client->Patch(kube::kPods, pod.ns, pod.name, kube::PatchType::kStrategicMerge, kPatch);
  if (!r.ok() && !absl::IsNotFound(r.status())) return r.status();
  return absl::OkStatus();
}

bool AdmissionLoop::HoldUntilSeen(const core::ClusterSnapshot& snap, const std::string& gang,
                                  std::vector<ReservationBook::Seat> seats, bool check) {
  if (deps_.reservations == nullptr) return true;
  if (check) {
    if (!deps_.reservations->ReserveIfRoom(gang, std::move(seats), snap, deps_.now_ms(),
                                           kWriteWaitMs)) {
      return false;
    }
  } else {
    deps_.reservations->Reserve(gang, std::move(seats), deps_.now_ms(), kWriteWaitMs);
  }
  held_.insert(gang);
  return true;
}

absl::Status AdmissionLoop::Admit(const core::ClusterSnapshot& snap, const GangDecision& d) {
  std::optional<std::string> backfilled;
  if (d.verdict == Verdict::kBackfill) {
    backfilled = d.backfilled_behind.empty() ? std::string("true") : d.backfilled_behind;
  }
  std::vector<const core::PodInfo*> pods;
  std::vector<ReservationBook::Seat> seats;
  for (const preemption::Assignment& a : d.plan) {
    const core::PodInfo* pod = snap.FindPod(a.pod_uid);
    if (pod == nullptr) continue;
    pods.push_back(pod);
    seats.push_back({pod->uid, a.node, pod->requests});
  }
  absl::Status st = Place(
      snap, d.gang, pods, std::move(seats),
      {{"phalanx.io/backfilled", std::move(backfilled)},
       {"phalanx.io/pending-reason", std::nullopt},
       {std::string(kube::kEtaAnnotation), std::nullopt},
       {std::string(kube::kWhatIfAnnotation), std::nullopt}},
      /*ungate=*/true);
  if (st.ok()) reasons_.erase(d.gang);
  return st;
}

absl::Status AdmissionLoop::Place(const core::ClusterSnapshot& snap, const std::string& gang,
                                  const std::vector<const core::PodInfo*>& pods,
                                  std::vector<ReservationBook::Seat> seats, Annotations annotations,
                                  bool ungate) {
  if (!HoldUntilSeen(snap, gang, seats, /*check=*/true)) {
    std::fprintf(stderr,
                 "phalanx-extender: gang %s waits for the next round: capacity it was planned on "
                 "was reserved meanwhile\n",
                 gang.c_str());
    return absl::OkStatus();
  }
  annotations.emplace_back(kube::kPlacementAnnotation, "");
  annotations.emplace_back(kube::kPlacementSignatureAnnotation, std::nullopt);
  const size_t at = annotations.size() - 2;
  absl::Status st;
  for (size_t i = 0; i < pods.size() && st.ok(); ++i) {
    annotations[at].second = seats[i].node;
    if (deps_.placement_key != nullptr) {
      annotations[at + 1].second = deps_.placement_key->SignPlacement(pods[i]->uid, seats[i].node);
    }
    st = MergePatch(*pods[i], AnnotationPatch(annotations, PinFor(snap, seats[i].node), true));
    if (st.ok()) awaited_[pods[i]->uid] = true;
  }
  for (size_t i = 0; ungate && i < pods.size() && st.ok(); ++i) st = Ungate(*pods[i]);
  if (!st.ok()) {
    if (deps_.reservations != nullptr) deps_.reservations->Release(gang);
    held_.erase(gang);
    return st;
  }
  HoldUntilSeen(snap, gang, std::move(seats), /*check=*/false);  // From the last write on.
  return absl::OkStatus();
}

absl::Status AdmissionLoop::MarkGang(const core::ClusterSnapshot& snap, const std::string& key,
                                     const std::string& by) {
  std::optional<core::Gang> g = snap.FindGang(key);
  if (!g) return absl::OkStatus();
  for (const core::PodInfo* p : g->members) {
    const std::string signature =
        deps_.placement_key != nullptr ? deps_.placement_key->SignMark(p->uid, by) : "";
    std::string patch =
        absl::StrCat("{\"metadata\":{\"labels\":{\"phalanx.io/preempt\":\"requested\"},",
                     "\"annotations\":{\"phalanx.io/preempted-by\":", EncodeJsonString(by),
                     ",\"phalanx.io/preempt-signature\":", EncodeJsonString(signature), "}}}");
    if (absl::Status st = MergePatch(*p, patch); !st.ok()) return st;
    awaited_[p->uid] = false;
  }
  return absl::OkStatus();
}

absl::Status AdmissionLoop::Recreate(const core::ClusterSnapshot& snap, const core::Gang& g) {
  if (absl::Status st = MarkGang(snap, g.key, g.key); !st.ok() || g.managed) return st;
  return Evict(g, g.key);
}

absl::Status AdmissionLoop::Evict(const core::Gang& g, const std::string& by) {
  for (const core::PodInfo* p : g.members) {
    if (absl::Status st = StillLeading(); !st.ok()) return st;
    std::fprintf(stderr, "phalanx-extender: evicting pod %s/%s for gang %s\n", p->ns.c_str(),
                 p->name.c_str(), by.c_str());
    absl::Status st = deps_.client->Delete(kube::kPods, p->ns, p->name);
    if (!st.ok() && !absl::IsNotFound(st)) return st;
  }
  return absl::OkStatus();
}

absl::Status AdmissionLoop::MarkVictims(const core::ClusterSnapshot& snap, const GangDecision& d) {
  for (const std::string& victim : d.victims) {
    if (absl::Status st = MarkGang(snap, victim, d.gang); !st.ok()) return st;
    std::optional<core::Gang> g = snap.FindGang(victim);
    if (g && !g->managed) {
      if (absl::Status st = Evict(*g, d.gang); !st.ok()) return st;
    }
  }
  if (deps_.metrics != nullptr) deps_.metrics->AddPreemptions(d.victims.size());
  return absl::OkStatus();
}

absl::flat_hash_set<std::string> AdmissionLoop::Replan(const core::ClusterSnapshot& snap) {
  std::vector<preemption::StrandedGang> stranded = preemption::StrandedGangs(snap);
  const int64_t now = deps_.now_ms();
  for (const preemption::RefusedMember& r : refusals_.Due(snap, now)) {
    if (const core::PodInfo* p = snap.FindPod(r.pod_uid)) refusals_.Avoid(*p, r.node, now);
    stranded.push_back(
        {r.gang, absl::StrCat("kube-scheduler refused pod ", r.pod_name, " on node ", r.node,
                              " for ", refusals_.RefusedFor(r.pod_uid, now) / 1000,
                              " s where it fits (it avoids that node from now on): ", r.message)});
  }
  absl::flat_hash_set<std::string> marked;
  for (const preemption::StrandedGang& s : stranded) {
    if (!marked.insert(s.gang).second) continue;  // Never ungated by recovery, marked or not.
    std::fprintf(stderr, "phalanx-extender: gang %s is recreated to be planned again: %s\n",
                 s.gang.c_str(), s.reason.c_str());
    if (std::optional<core::Gang> g = snap.FindGang(s.gang)) Check(s.gang, Recreate(snap, *g));
  }
  if (deps_.metrics != nullptr) deps_.metrics->AddReplans(marked.size());
  return marked;
}

absl::flat_hash_set<std::string> AdmissionLoop::NoteAvoidedNodes(
    const core::ClusterSnapshot& snap) {
  absl::flat_hash_set<std::string> noted;
  for (const core::Gang& g : snap.Gangs(core::ClusterSnapshot::GangFilter::kPending)) {
    for (const core::PodInfo* p : g.members) {
      std::optional<Refusals::Write> avoid = refusals_.Annotation(*p, snap);
      if (!avoid) continue;
      noted.insert(g.key);
      Check(g.key, MergePatch(*p, AnnotationPatch(
                                      {{std::string(kube::kAvoidNodesAnnotation), avoid->value}},
                                      std::nullopt, false)));
    }
  }
  return noted;
}

void AdmissionLoop::Check(absl::string_view gang, const absl::Status& st) {
  if (st.ok() || absl::IsAborted(st)) return;  // Aborted: the lead went (StillLeading).
  std::fprintf(stderr, "phalanx-extender: writes for gang %.*s failed: %s\n",
               static_cast<int>(gang.size()), gang.data(), st.ToString().c_str());
  if (deps_.metrics != nullptr) deps_.metrics->AddFailedWrites(1);
}

absl::Status AdmissionLoop::NoteReason(const core::ClusterSnapshot& snap, const GangDecision& d) {
  WrittenReason& last = reasons_[d.gang];
  const int64_t now = deps_.now_ms();
  const bool only_numbers_changed = !last.reason.empty() && Shape(last.reason) == Shape(d.reason);
  const bool reason_due =
      last.reason != d.reason && !(only_numbers_changed && now - last.at_ms < kReasonIntervalMs);
  std::optional<WrittenOutlook> outlook;
  if (const GangOutlook* o = OutlookOf(d.gang)) {
    outlook = OutlookDue(last.outlook, *o, now, reason_due);
  }
  if (!reason_due && !outlook) return absl::OkStatus();
  std::optional<core::Gang> g = snap.FindGang(d.gang);
  if (!g) return absl::OkStatus();
  Annotations annotations;
  if (reason_due) annotations.push_back({"phalanx.io/pending-reason", d.reason});
  if (outlook) {
    annotations.push_back({std::string(kube::kEtaAnnotation), outlook->eta});
    annotations.push_back({std::string(kube::kWhatIfAnnotation),
                           outlook->what_if.empty() ? std::nullopt
                                                    : std::optional<std::string>(outlook->what_if)});
  }
  const std::string patch = AnnotationPatch(annotations, std::nullopt, false);
  for (const core::PodInfo* p : g->members) {
    if (!p->gated) continue;
    if (absl::Status st = MergePatch(*p, patch); !st.ok()) return st;
  }
  if (reason_due) {
    last.reason = d.reason;
    last.at_ms = now;
  }
  if (outlook) last.outlook = *std::move(outlook);
  return absl::OkStatus();
}

const GangOutlook* AdmissionLoop::OutlookOf(const std::string& gang) {
  if (!outlook_) return nullptr;
  auto it = outlook_->gangs.find(gang);
  return it == outlook_->gangs.end() ? nullptr : &it->second;
}

void AdmissionLoop::Recover(const core::ClusterSnapshot& snap,
                            const absl::flat_hash_set<std::string>& stranded) {
  gang::Capacity free;  // Computed on first use; each completed placement then takes its share.
  for (const core::Gang& g : snap.Gangs(core::ClusterSnapshot::GangFilter::kPending)) {
    if (g.preempt_requested || stranded.contains(g.key)) continue;  // They wait for the master.
    if (g.Admitting()) {
      Check(g.key, UngateGang(g));
    } else if (!g.Pending()) {
      if (free.empty()) free = gang::FreeCapacity(snap, Held(snap));
      Check(g.key, CompletePlacement(snap, g, free));
    }
  }
}

absl::Status AdmissionLoop::UngateGang(const core::Gang& g) {
  for (const core::PodInfo* p : g.members) {
    if (!p->gated) continue;
    if (absl::Status st = Ungate(*p); !st.ok()) return st;
  }
  return absl::OkStatus();
}

absl::Status AdmissionLoop::CompletePlacement(const core::ClusterSnapshot& snap,
                                              const core::Gang& g, gang::Capacity& free) {
  // A pin cannot be taken back (Kubernetes only lets a gated pod's nodeSelector grow), so the
  // members placed before a crash keep their nodes and the rest are planned around them.
  core::Gang rest = g;
  std::erase_if(rest.members, [](const core::PodInfo* p) { return p->HoldsCapacity(); });
  gang::GangPlan plan = gang::GangPlanner(snap, options_.slots).Plan(rest, free);
  if (!plan.placed()) {
    // No room around the pinned members: the gang is recreated from scratch.
    return Recreate(snap, g);
  }
  gang::GangPlanner::Reserve(rest, plan, free);
  std::vector<ReservationBook::Seat> seats;
  for (size_t m = 0; m < plan.nodes.size(); ++m) {
    const core::PodInfo& pod = *rest.members[m];
    seats.push_back({pod.uid, snap.node(plan.nodes[m]).name, pod.requests});
  }
  return Place(snap, g.key, rest.members, std::move(seats), {}, /*ungate=*/false);
}

gang::Capacity AdmissionLoop::Held(const core::ClusterSnapshot& snap) {
  if (deps_.reservations == nullptr) return {};
  return deps_.reservations->Held(snap, deps_.now_ms(), "");
}

bool AdmissionLoop::AwaitingWrites(const core::ClusterSnapshot& snap) {
  absl::erase_if(awaited_, [&](const auto& kv) {
    const core::PodInfo* p = snap.FindPod(kv.first);
    return p == nullptr || (kv.second ? !p->placement.empty() : p->preempt_requested);
  });
  if (!awaited_.empty() && deps_.now_ms() - awaited_since_ms_ <= kWriteWaitMs) return true;
  awaited_.clear();  // All seen, or the informer missed them or they failed: plan from the cache.
  for (const std::string& gang : held_) deps_.reservations->Release(gang);
  held_.clear();
  return false;
}

preemption::RoundResult AdmissionLoop::RunOnce(const core::ClusterSnapshot& snap,
                                               absl::string_view seen_version) {
  Recover(snap, Replan(snap));
  // The wait for writes runs from when the last one was sent (sending them may take long).
  awaited_since_ms_ = deps_.now_ms();
  // Marks and recovery writes change what is free: plan only once the cache shows them.
  if (!awaited_.empty()) return preemption::RoundResult{};
  auto start = std::chrono::steady_clock::now();
  preemption::AdmissionOptions opts = options_;
  opts.now_ms = deps_.now_ms();
  opts.held = Held(snap);
  outlook_ = deps_.outlook ? deps_.outlook() : nullptr;
  preemption::RoundResult r = preemption::RunAdmissionRound(snap, opts);
  std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  // Published before the writes, so /debug/queue never lags what the pods' annotations show.
  Publish(r, took.count());
  const absl::flat_hash_set<std::string> avoiding = NoteAvoidedNodes(snap);
  for (const GangDecision& d : r.decisions) {
    if (!Leads()) break;
    if (avoiding.contains(d.gang)) continue;  // Planned once the cache shows what it avoids.
    absl::Status st;
    switch (d.verdict) {
      case Verdict::kAdmit:
      case Verdict::kBackfill:
        st = Admit(snap, d);
        break;
      case Verdict::kPreempt:
        st = MarkVictims(snap, d);
        if (st.ok()) st = NoteReason(snap, d);
        break;
      case Verdict::kWait:
      case Verdict::kInfeasible:
        st = NoteReason(snap, d);
        break;
    }
    Check(d.gang, st);
  }
  awaited_since_ms_ = deps_.now_ms();
  absl::flat_hash_set<absl::string_view> queued;
  for (const GangDecision& d : r.decisions) queued.insert(d.gang);
  absl::erase_if(reasons_, [&](const auto& kv) { return !queued.contains(kv.first); });
  absl::MutexLock lock(&mu_);
  applied_version_ = std::string(seen_version);  // Only once the round's writes are sent.
  return r;
}

void AdmissionLoop::Run(const std::atomic<bool>& stop) {
  uint64_t version = 0;
  bool led = true;
  while (!stop.load()) {
    if (!Leads()) {
      if (led) Follow();
      led = false;
      absl::SleepFor(absl::Milliseconds(std::min<int64_t>(resync_ms_, 100)));
      continue;
    }
    led = true;
    version = deps_.wait_for_change(version, resync_ms_);
    const std::string seen = deps_.cache_version ? deps_.cache_version() : "";
    std::shared_ptr<const core::ClusterSnapshot> snap = deps_.snapshot();
    if (snap == nullptr || !Leads() || AwaitingWrites(*snap)) continue;
    RunOnce(*snap, seen);
  }
}

void AdmissionLoop::Follow() {
  // What the last rounds wait to see stays: leading again soon, this replica still waits for
  // its own writes (AwaitingWrites) before it plans.
  reasons_.clear();
  absl::MutexLock lock(&mu_);
  queue_json_ = R"({"leading":false,"gangs":[]})";
  applied_version_.clear();
}

void AdmissionLoop::Publish(const preemption::RoundResult& r, double seconds) {
  std::vector<std::string> gangs;
  absl::flat_hash_map<std::string, double> counts;
  for (const GangDecision& d : r.decisions) {
    std::vector<std::string> nodes;
    for (const preemption::Assignment& a : d.plan) nodes.push_back(EncodeJsonString(a.node));
    std::vector<std::string> victims;
    for (const std::string& v : d.victims) victims.push_back(EncodeJsonString(v));
    gangs.push_back(absl::StrCat(
        "{\"gang\":", EncodeJsonString(d.gang), ",\"position\":", d.position, ",\"state\":",
        EncodeJsonString(preemption::VerdictName(d.verdict)), ",\"priority\":", d.priority,
        ",\"slots\":", d.slots, ",\"reason\":", EncodeJsonString(d.reason), ",\"nodes\":[",
        absl::StrJoin(nodes, ","), "],\"victims\":[", absl::StrJoin(victims, ","), "]",
        OutlookJson(OutlookOf(d.gang)), "}"));
    counts[preemption::VerdictName(d.verdict)] += 1;
  }
  if (deps_.metrics != nullptr) {
    deps_.metrics->ObserveRound(seconds);
    deps_.metrics->SetGangs("pending", counts["WAIT"]);
    deps_.metrics->SetGangs("preempting", counts["PREEMPT"]);
    deps_.metrics->SetGangs("infeasible", counts["INFEASIBLE"]);
  }
  absl::MutexLock lock(&mu_);
  queue_json_ = absl::StrCat("{\"gangs\":[", absl::StrJoin(gangs, ","), "]}");
}

std::string AdmissionLoop::DebugQueueJson() {
  absl::MutexLock lock(&mu_);
  if (applied_version_.empty()) return queue_json_;
  return absl::StrCat(absl::string_view(queue_json_).substr(0, queue_json_.size() - 1),
                      ",\"seen_version\":", EncodeJsonString(applied_version_), "}");
}

}  // namespace phalanx::extender
