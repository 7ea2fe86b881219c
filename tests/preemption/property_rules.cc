// The rules restated for uniform gangs (every pod alike, as the random worlds make them) and the
// checks of a round against them (list in the header).
#include "tests/preemption/property_rules.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/node_hash_map.h"
#include "absl/strings/str_cat.h"

namespace phalanx::preemption {

// Verdicts by name in failure messages.
void PrintTo(Verdict v, std::ostream* os) { *os << VerdictName(v); }

namespace property {
namespace {

using Capacity = std::vector<core::Resources>;

bool Started(const GangDecision& d) {
  return d.verdict == Verdict::kAdmit || d.verdict == Verdict::kBackfill;
}

// Copies of `req` that fit in `avail`.
int64_t Copies(const core::Resources& req, const core::Resources& avail) {
  int64_t copies = std::numeric_limits<int64_t>::max();
  for (auto [need, have] :
       {std::pair{req.milli_cpu(), avail.milli_cpu()}, std::pair{req.memory(), avail.memory()},
        std::pair{req.gpu(), avail.gpu()}}) {
    if (need > 0) copies = std::min(copies, std::max<int64_t>(have, 0) / need);
  }
  return copies;
}

// What decides eligibility for the generated pods.
std::string Signature(const core::PodInfo& p) {
  std::string sig;
  for (const auto& [k, v] : p.node_selector) absl::StrAppend(&sig, k, "=", v, ";");
  for (const core::Toleration& t : p.tolerations) {
    absl::StrAppend(&sig, "|", t.key, static_cast<int>(t.op), t.value);
  }
  for (const std::string& n : p.avoid_nodes) absl::StrAppend(&sig, "!", n);
  return sig;
}

// A gang as the test reads it from its live pods.
struct GangView {
  std::string key;
  std::vector<const core::PodInfo*> pods;
  int32_t priority = std::numeric_limits<int32_t>::min();
  double position = core::kNoQueuePosition;
  int64_t created = std::numeric_limits<int64_t>::max();
  int32_t expected = 1;
  bool preemptible = true;
  bool gated = false;       // Some pod gated.
  bool holding = false;     // Some pod holds a node.
  bool all_holding = true;  // Every pod does.
  std::string marked_by;    // Set when marked for preemption.
  std::string backfilled_behind;
  int64_t start_ms = 0;
  int64_t checkpoint_ms = 0;
  size_t recent_preemptions = 0;
  const std::vector<bool>* eligible = nullptr;  // Per node index.

  bool Pending() const { return gated && !holding; }
  bool Running() const { return !gated && all_holding; }
  bool Marked() const { return !marked_by.empty(); }
  bool Complete() const { return static_cast<int32_t>(pods.size()) >= expected; }
};

class RoundChecker {
 public:
  RoundChecker(const core::ClusterSnapshot& snap, const AdmissionOptions& opts,
               const RoundResult& r)
      : snap_(snap), opts_(opts), r_(r) {}

  Coverage Run() {
    // The later checks rely on what these assert.
    for (auto step :
         {&RoundChecker::ReadWorld, &RoundChecker::CheckOrder, &RoundChecker::CheckPlans}) {
      (this->*step)();
      if (::testing::Test::HasFatalFailure()) return seen_;
    }
    CheckCapacity();
    CheckFeasibility();
    CheckVictims();
    CheckFirstToRun();
    CheckPassing();
    return seen_;
  }

 private:
  const std::vector<bool>& MaskOf(const core::PodInfo& p) {
    auto [it, fresh] = masks_.try_emplace(Signature(p));
    if (fresh) {
      for (int i = 0; i < snap_.node_count(); ++i) it->second.push_back(Eligible(p, snap_.node(i)));
    }
    return it->second;
  }

  void AddPod(const core::PodInfo& p) {
    GangView& g = gangs_[p.GangKey()];
    g.key = p.GangKey();
    g.pods.push_back(&p);
    g.priority = std::max(g.priority, p.priority);
    g.position = std::min(g.position, p.queue_position);
    g.created = std::min(g.created, p.creation_ms);
    g.expected = std::max(g.expected, p.gang_size);
    g.preemptible &= p.preemptible;
    g.gated |= p.gated;
    const bool holds = !p.AssignedNode().empty();
    g.holding |= holds;
    g.all_holding &= holds;
    if (p.preempt_requested) g.marked_by = p.preempted_by;
    if (!p.backfilled_behind.empty()) g.backfilled_behind = p.backfilled_behind;
    g.start_ms = p.start_ms;
    g.checkpoint_ms = std::max(g.checkpoint_ms, p.checkpoint_ms);
    g.recent_preemptions =
        std::count_if(p.preempted_ms.begin(), p.preempted_ms.end(), [&](int64_t t) {
          return t <= opts_.now_ms &&
                 (opts_.rules.window_ms == 0 || opts_.now_ms - t < opts_.rules.window_ms);
        });
    if (holds) {
      ASSERT_GE(HeldNode(p), 0) << p.uid;
      used_[HeldNode(p)] += p.requests;
    }
  }

  void ReadWorld() {
    for (int i = 0; i < snap_.node_count(); ++i) alloc_.push_back(snap_.node(i).allocatable);
    used_ = Capacity(alloc_.size());
    snap_.ForEachPod([&](const core::PodInfo& p) {
      if (!p.IsTerminal()) AddPod(p);
    });
    for (int i = 0; i < snap_.node_count(); ++i) free_.push_back(alloc_[i] - used_[i]);
    for (auto& [key, g] : gangs_) {
      const core::PodInfo& first = *g.pods.front();
      for (const core::PodInfo* p : g.pods) {
        ASSERT_TRUE(p->requests == first.requests && Signature(*p) == Signature(first)) << key;
      }
      g.eligible = &MaskOf(first);
      if (g.Pending()) queue_.push_back(&g);
    }
    std::sort(queue_.begin(), queue_.end(), [](const GangView* a, const GangView* b) {
      return std::tie(b->priority, a->position, a->created, a->key) <
             std::tie(a->priority, b->position, b->created, b->key);
    });
    for (const GangDecision& d : r_.decisions) {
      decision_[d.gang] = &d;
      victims_.insert(d.victims.begin(), d.victims.end());
    }
  }

  const GangDecision& DecisionOf(const GangView& g) const { return *decision_.at(g.key); }

  // Some pod breaks maxSlotsPerPod, or the gang's slots are more than it and not a multiple.
  bool BreaksSlots(const GangView& g) const {
    const int64_t max = opts_.slots.max_slots_per_pod;
    int64_t total = 0;
    for (const core::PodInfo* p : g.pods) {
      if (max > 0 && p->requests.gpu() > max) return true;
      total += p->requests.gpu();
    }
    return max > 0 && total > max && total % max != 0;
  }

  bool Fits(const GangView& g, const Capacity& cap) const {
    int64_t copies = 0;
    for (size_t n = 0; n < cap.size(); ++n) {
      if ((*g.eligible)[n]) copies += Copies(g.pods.front()->requests, cap[n]);
      if (copies >= static_cast<int64_t>(g.pods.size())) return true;
    }
    return false;
  }

  bool Feasible(const GangView& g) const { return !BreaksSlots(g) && Fits(g, alloc_); }
  bool Waiting(const GangView& g) const {
    const GangDecision& d = DecisionOf(g);
    return g.Complete() && Feasible(g) && !Started(d) && d.verdict != Verdict::kPreempt;
  }

  int NodeOf(const Assignment& a) const { return *snap_.NodeIndex(a.node); }
  // The index of the node `p` holds, or -1.
  int HeldNode(const core::PodInfo& p) const {
    return p.AssignedNode().empty() ? -1 : snap_.NodeIndex(p.AssignedNode()).value_or(-1);
  }

  // Adds the requests of `g`'s pods that hold a node to `cap`; TakePlan takes a plan's.
  void AddHeld(const GangView& g, Capacity& cap) const {
    for (const core::PodInfo* p : g.pods) {
      if (HeldNode(*p) >= 0) cap[HeldNode(*p)] += p->requests;
    }
  }
  void TakePlan(const GangDecision& d, Capacity& cap) const {
    for (const Assignment& a : d.plan) cap[NodeOf(a)] -= snap_.FindPod(a.pod_uid)->requests;
  }
  // What the gangs already marked for `key` will free.
  Capacity Incoming(const std::string& key, Capacity cap) const {
    for (const auto& [k, g] : gangs_) {
      if (g.marked_by == key) AddHeld(g, cap);
    }
    return cap;
  }
  bool HasIncoming(const std::string& key) const {
    return std::any_of(gangs_.begin(), gangs_.end(),
                       [&](const auto& kv) { return kv.second.marked_by == key; });
  }

  // Preempted preemption_limit times in the window: never a victim again.
  bool AtLimit(const GangView& v) const {
    const int32_t limit = opts_.rules.preemption_limit;
    return limit > 0 && v.recent_preemptions >= static_cast<size_t>(limit);
  }
  // Whether `by` may take `v` back: preemptible, below its limit, and lower or backfilled behind
  // it.
  bool MayTake(const GangView& by, const GangView& v) const {
    return v.preemptible && !AtLimit(v) &&
           (v.priority < by.priority || v.backfilled_behind == by.key);
  }
  // Young or often preempted, and not backfilled behind `by`.
  bool Protected(const GangView& v, const GangView& by) const {
    if (v.backfilled_behind == by.key) return false;
    const int32_t max = opts_.rules.max_preemptions;
    return opts_.now_ms - v.start_ms < opts_.rules.min_run_ms ||
           (max > 0 && v.recent_preemptions >= static_cast<size_t>(max));
  }
  // Whether `c` holds a node `g` may use.
  bool OnNodeFor(const GangView& c, const GangView& g) const {
    return std::any_of(c.pods.begin(), c.pods.end(), [&](const core::PodInfo* p) {
      return HeldNode(*p) >= 0 && (*g.eligible)[HeldNode(*p)];
    });
  }
  // Running, unmarked gangs `g` may take on a node it may use.
  std::vector<const GangView*> Candidates(const GangView& g) const {
    std::vector<const GangView*> out;
    for (const auto& [k, c] : gangs_) {
      if (c.Running() && !c.Marked() && MayTake(g, c) && OnNodeFor(c, g)) out.push_back(&c);
    }
    return out;
  }
  // Whether a running gang `g` could take but for its preemption limit holds a node `g` may use.
  bool SparesOneAtLimit(const GangView& g) const {
    return std::any_of(gangs_.begin(), gangs_.end(), [&](const auto& kv) {
      const GangView& c = kv.second;
      return c.Running() && !c.Marked() && AtLimit(c) && c.preemptible && c.priority < g.priority &&
             OnNodeFor(c, g);
    });
  }

  void CheckOrder() {
    std::vector<std::string> want, got;
    for (const GangView* g : queue_) want.push_back(g->key);
    for (const GangDecision& d : r_.decisions) got.push_back(d.gang);
    std::vector<std::string> want_sorted = want, got_sorted = got;
    std::sort(want_sorted.begin(), want_sorted.end());
    std::sort(got_sorted.begin(), got_sorted.end());
    ASSERT_EQ(got_sorted, want_sorted) << "not one decision per pending gang";
    EXPECT_EQ(got, want) << "decisions are not in queue order";
  }

  void CheckPlans() {
    for (const GangDecision& d : r_.decisions) {
      const GangView& g = gangs_.at(d.gang);
      EXPECT_TRUE(d.victims.empty() || d.verdict == Verdict::kPreempt) << d.gang;
      if (!Started(d) && d.verdict != Verdict::kPreempt) {
        ASSERT_TRUE(d.plan.empty()) << d.gang << " " << VerdictName(d.verdict) << " has a plan";
        continue;
      }
      ASSERT_EQ(d.plan.size(), g.pods.size()) << d.gang << ": the plan is not the whole gang";
      absl::flat_hash_set<std::string> uids;
      for (const Assignment& a : d.plan) {
        ASSERT_TRUE(snap_.NodeIndex(a.node).has_value()) << d.gang << " planned on " << a.node;
        const core::PodInfo* p = snap_.FindPod(a.pod_uid);
        ASSERT_TRUE(p != nullptr && p->GangKey() == d.gang && uids.insert(a.pod_uid).second)
            << d.gang << " plans " << a.pod_uid;
        EXPECT_TRUE(Eligible(*p, snap_.node(NodeOf(a)))) << a.pod_uid << " on " << a.node;
      }
    }
  }

  // Now: running pods and started plans. Once every marked gang has left: the rest, and every
  // plan, preemptors' included (their capacity is reserved).
  void CheckCapacity() {
    Capacity now = used_, later(alloc_.size());
    for (const auto& [key, g] : gangs_) {
      if (!g.Marked() && !victims_.contains(key)) AddHeld(g, later);
    }
    for (const GangDecision& d : r_.decisions) {
      for (const Assignment& a : d.plan) {
        const core::Resources& req = snap_.FindPod(a.pod_uid)->requests;
        if (Started(d)) now[NodeOf(a)] += req;
        later[NodeOf(a)] += req;
      }
    }
    for (size_t n = 0; n < alloc_.size(); ++n) {
      EXPECT_TRUE(now[n].FitsIn(alloc_[n])) << snap_.node(n).name << " over capacity";
      EXPECT_TRUE(later[n].FitsIn(alloc_[n]))
          << "(d) " << snap_.node(n).name << " over capacity once victims leave";
    }
  }

  // A gang that can never run is infeasible, incomplete or not; a feasible incomplete one waits.
  void CheckFeasibility() {
    for (const GangView* g : queue_) {
      const Verdict v = DecisionOf(*g).verdict;
      if (!Feasible(*g)) {
        ++seen_.infeasible;
        EXPECT_EQ(v, Verdict::kInfeasible) << "(e) " << g->key << " can never run";
      } else if (!g->Complete()) {
        ++seen_.incomplete;
        EXPECT_EQ(v, Verdict::kWait) << "(e) " << g->key << " is incomplete";
      } else {
        EXPECT_NE(v, Verdict::kInfeasible) << "(e) " << g->key << " can run";
      }
    }
  }

  void CheckVictims() {
    absl::flat_hash_set<std::string> taken;
    for (const GangDecision& d : r_.decisions) {
      if (d.verdict != Verdict::kWait) {
        EXPECT_EQ(d.patient_until_ms, 0) << "(i) " << d.gang;
      }
      if (d.verdict == Verdict::kPreempt && d.victims.empty()) {
        EXPECT_TRUE(HasIncoming(d.gang)) << "(d) " << d.gang << " preempts nothing";
      }
      const GangView& g = gangs_.at(d.gang);
      for (const std::string& v : d.victims) {
        ++seen_.victims;
        EXPECT_TRUE(taken.insert(v).second) << "(d) " << v << " is taken twice";
        EXPECT_TRUE(opts_.preemption) << "(d) " << d.gang << " preempts with preemption off";
        auto it = gangs_.find(v);
        ASSERT_NE(it, gangs_.end()) << "(d) unknown victim " << v;
        const GangView& victim = it->second;
        EXPECT_TRUE(victim.Running() && !victim.Marked()) << "(d) " << v << " for " << d.gang;
        EXPECT_TRUE(MayTake(g, victim)) << "(d) " << v << " may not be taken by " << d.gang;
        if (Young(g) && victim.backfilled_behind != d.gang) {
          ++seen_.patient_preempts;
          EXPECT_LE(Lost(victim), opts_.rules.patience_loss_ms)
              << "(i) " << d.gang << ", still patient, takes " << v << ", which loses more";
        }
        seen_.reclaimed += victim.backfilled_behind == d.gang;
        EXPECT_TRUE(std::any_of(
            victim.pods.begin(), victim.pods.end(),
            [&](const auto* p) { return HeldNode(*p) >= 0 && (*g.eligible)[HeldNode(*p)]; }))
            << "(d) " << v << " is on no node " << d.gang << " may use";
      }
    }
  }

  // (a): the first gang not started that can run, on what the gangs ahead of it left.
  void CheckFirstToRun() {
    Capacity cap = free_;
    for (const GangView* g : queue_) {
      const GangDecision& d = DecisionOf(*g);
      if (!g->Complete() || !Feasible(*g)) continue;
      if (!Started(d)) return CheckFirst(*g, d, cap);
      ++seen_.first_fits;  // Each in turn was the first to run.
      TakePlan(d, cap);
    }
  }

  void CheckFirst(const GangView& g, const GangDecision& d, const Capacity& cap) {
    const std::string what =
        absl::StrCat("(a) first to run ", g.key, " is ", VerdictName(d.verdict), ": ", d.reason);
    if (Fits(g, cap)) {
      ++seen_.first_fits;
      // A gang with victims marked may keep to the nodes they free (admission.h, step 2).
      bool keeps = d.verdict == Verdict::kPreempt && d.victims.empty() && HasIncoming(g.key);
      EXPECT_TRUE(d.verdict == Verdict::kAdmit || keeps) << what << "; it fits on free capacity";
      return;
    }
    const Capacity incoming = Incoming(g.key, cap);
    if (Fits(g, incoming)) {
      ++seen_.first_preempts;
      EXPECT_TRUE(d.verdict == Verdict::kPreempt && d.victims.empty())
          << what << "; it fits once its marked victims leave";
      return;
    }
    Capacity all = incoming, unprotected = incoming;
    const std::vector<const GangView*> candidates = Candidates(g);
    bool any_protected = false;
    for (const GangView* c : candidates) {
      AddHeld(*c, all);
      if (Protected(*c, g)) {
        any_protected = true;
      } else {
        AddHeld(*c, unprotected);
      }
    }
    const bool can = opts_.preemption && Fits(g, all);
    seen_.at_limit_spared += opts_.preemption && SparesOneAtLimit(g);
    if (can && d.verdict == Verdict::kWait) {
      ++seen_.patient_waits;
      const bool dear = std::any_of(candidates.begin(), candidates.end(), [&](const auto* c) {
        return c->backfilled_behind != g.key && Lost(*c) > opts_.rules.patience_loss_ms;
      });
      EXPECT_TRUE(Young(g) && dear) << "(i) " << what << "; it may preempt and is not patient";
      EXPECT_EQ(d.patient_until_ms, g.created + opts_.rules.patience_ms) << what;
      return;
    }
    ++(can ? seen_.first_preempts : seen_.first_waits);
    EXPECT_EQ(d.verdict, can ? Verdict::kPreempt : Verdict::kWait) << what << "; it may preempt";
    if (d.verdict != Verdict::kPreempt) return;
    const bool takes_protected =
        std::any_of(d.victims.begin(), d.victims.end(),
                    [&](const auto& v) { return Protected(gangs_.at(v), g); });
    if (any_protected) ++(takes_protected ? seen_.protected_taken : seen_.protected_spared);
    EXPECT_TRUE(!takes_protected || !Fits(g, unprotected))
        << "(g) " << what << "; it takes a protected victim though unprotected ones free enough";
    for (const std::string& v : d.victims) {  // Cheapest implies minimal.
      Capacity rest = incoming;
      for (const std::string& u : d.victims) {
        if (u != v) AddHeld(gangs_.at(u), rest);
      }
      EXPECT_FALSE(Fits(g, rest)) << what << "; it fits without victim " << v;
    }
  }

  // Patience, restated: younger than patience_ms, and the work a victim loses, since its run
  // started or, if later, it checkpointed.
  bool Young(const GangView& g) const { return opts_.now_ms - g.created < opts_.rules.patience_ms; }
  int64_t Lost(const GangView& v) const {
    const int64_t since = std::max(v.start_ms, v.checkpoint_ms);
    return v.start_ms > 0 && opts_.now_ms > since ? opts_.now_ms - since : 0;
  }

  bool Uses(const GangDecision& d, const std::vector<bool>& nodes) const {
    return std::any_of(d.plan.begin(), d.plan.end(),
                       [&](const Assignment& a) { return nodes[NodeOf(a)]; });
  }

  // (b) and (c): what starts on a node a waiting gang ahead of it may use.
  void CheckPassing() {
    Capacity cap = free_;  // Less the plans started ahead; at least what the engine saw.
    std::vector<const GangView*> waiting;
    for (const GangView* g : queue_) {
      const GangDecision& d = DecisionOf(*g);
      if (Waiting(*g)) waiting.push_back(g);
      if (!Started(d)) continue;
      seen_.behind_waiting += !waiting.empty();
      bool passes = false, uses = false;
      for (const GangView* h : waiting) {
        uses |= Uses(d, *h->eligible);
        if (!TakesWhatItLacks(d, *h, cap)) continue;
        passes = true;
        ++seen_.passing;
        const std::string what =
            absl::StrCat(g->key, " (priority ", g->priority, ") starts on a node ", h->key,
                         " (priority ", h->priority, ") waits for");
        EXPECT_TRUE(opts_.backfill) << "(b) strict order: " << what;
        EXPECT_TRUE(!opts_.backfill || g->priority >= h->priority ||
                    (opts_.preemption && g->preemptible && !AtLimit(*g)))
            << "(c) not allowed to backfill: " << what;
      }
      EXPECT_TRUE(d.verdict == Verdict::kBackfill ? uses : !passes)
          << "(c) " << g->key << " is " << VerdictName(d.verdict);
      TakePlan(d, cap);
      CheckProvisional(*g, d, waiting);
    }
  }

  // Whether `d`'s plan takes, on a node `h` may use, what `h`'s pod request is short of there once
  // the plan's load is off what `free` leaves (cpu, memory, GPUs, pods).
  bool TakesWhatItLacks(const GangDecision& d, const GangView& h, const Capacity& free) const {
    absl::flat_hash_map<int, core::Resources> load;
    for (const Assignment& a : d.plan) load[NodeOf(a)] += snap_.FindPod(a.pod_uid)->requests;
    const core::Resources& unit = h.pods.front()->requests;
    for (const auto& [n, l] : load) {
      if (!(*h.eligible)[n]) continue;
      const core::Resources left = free[n] - l;
      for (auto [take, need, have] : {std::tuple{l.milli_cpu(), unit.milli_cpu(), left.milli_cpu()},
                                      std::tuple{l.memory(), unit.memory(), left.memory()},
                                      std::tuple{l.gpu(), unit.gpu(), left.gpu()},
                                      std::tuple{l.pods(), unit.pods(), left.pods()}}) {
        if (take > 0 && need > have) return true;
      }
    }
    return false;
  }

  // (f): a BACKFILL behind a gang names one waiting ahead of it, and is provisional by the rules.
  void CheckProvisional(const GangView& g, const GangDecision& d,
                        const std::vector<const GangView*>& waiting) {
    if (d.backfilled_behind.empty()) return;
    EXPECT_EQ(d.verdict, Verdict::kBackfill) << "(f) " << g.key;
    auto it = std::find_if(waiting.begin(), waiting.end(),
                           [&](const GangView* h) { return h->key == d.backfilled_behind; });
    ASSERT_NE(it, waiting.end()) << "(f) " << g.key << " is behind " << d.backfilled_behind
                                 << ", which does not wait ahead of it";
    const int32_t max = opts_.rules.max_preemptions;
    EXPECT_TRUE(max <= 0 || g.recent_preemptions < static_cast<size_t>(max))
        << "(f) " << g.key << " was preempted too often to run on held nodes";
    if (g.priority < (*it)->priority) return;
    ++seen_.provisional;
    EXPECT_TRUE(opts_.rules.provisional_backfill && g.preemptible)
        << "(f) " << g.key << " may not backfill provisionally";
  }

  const core::ClusterSnapshot& snap_;
  const AdmissionOptions& opts_;
  const RoundResult& r_;
  absl::flat_hash_map<std::string, GangView> gangs_;
  std::vector<const GangView*> queue_;
  absl::flat_hash_map<std::string, const GangDecision*> decision_;
  absl::flat_hash_set<std::string> victims_;                   // Marked this round.
  absl::node_hash_map<std::string, std::vector<bool>> masks_;  // By Signature; stable.
  Capacity alloc_, used_, free_;
  Coverage seen_;
};

}  // namespace

bool Eligible(const core::PodInfo& pod, const core::Node& node) {
  if (node.unschedulable) return false;
  if (std::find(pod.avoid_nodes.begin(), pod.avoid_nodes.end(), node.name) !=
      pod.avoid_nodes.end()) {
    return false;
  }
  for (const auto& [key, value] : pod.node_selector) {
    if (std::find(node.labels.begin(), node.labels.end(), std::pair{key, value}) ==
        node.labels.end()) {
      return false;
    }
  }
  return std::all_of(node.taints.begin(), node.taints.end(), [&](const core::Taint& t) {
    return std::any_of(
        pod.tolerations.begin(), pod.tolerations.end(), [&](const core::Toleration& tol) {
          return tol.key == t.key &&
                 (tol.op == core::Toleration::Operator::kExists || tol.value == t.value);
        });
  });
}

Coverage& Coverage::operator+=(const Coverage& o) {
  first_fits += o.first_fits;
  first_preempts += o.first_preempts;
  first_waits += o.first_waits;
  behind_waiting += o.behind_waiting;
  passing += o.passing;
  victims += o.victims;
  infeasible += o.infeasible;
  incomplete += o.incomplete;
  provisional += o.provisional;
  reclaimed += o.reclaimed;
  protected_spared += o.protected_spared;
  protected_taken += o.protected_taken;
  at_limit_spared += o.at_limit_spared;
  patient_waits += o.patient_waits;
  patient_preempts += o.patient_preempts;
  return *this;
}

PreemptionRules PropertyRules() {
  return {.restart_overhead_ms = 1'000,
          .min_run_ms = 5'000,
          .max_preemptions = 2,
          .preemption_limit = 3,
          .window_ms = 3'600'000,
          .patience_ms = 20'000,  // Young in the first two rounds (property_test.cc).
          .patience_loss_ms = 4'000};
}

Coverage CheckRound(const core::ClusterSnapshot& snap, const AdmissionOptions& opts,
                    const RoundResult& r) {
  return RoundChecker(snap, opts, r).Run();
}

void CheckWholeGangs(const core::ClusterSnapshot& snap) {
  for (const core::Gang& g : snap.Gangs()) {
    size_t holding = std::count_if(g.members.begin(), g.members.end(),
                                   [](const core::PodInfo* p) { return p->HoldsCapacity(); });
    EXPECT_TRUE(holding == 0 || holding == g.members.size()) << g.key << " holds in part";
    size_t marked = std::count_if(g.members.begin(), g.members.end(),
                                  [](const core::PodInfo* p) { return p->preempt_requested; });
    EXPECT_TRUE(marked == 0 || marked == g.members.size()) << g.key << " marked in part";
  }
}

}  // namespace property
}  // namespace phalanx::preemption
