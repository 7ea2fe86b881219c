// The admission round (algorithm in admission.h).
#include "preemption/admission.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "gang/planner.h"
#include "preemption/holds.h"
#include "preemption/queue.h"
#include "preemption/victims.h"

namespace phalanx::preemption {
namespace {

using core::Gang;
using gang::Capacity;
using gang::GangPlan;

class Round {
 public:
  Round(const core::ClusterSnapshot& snapshot, const AdmissionOptions& options)
      : snap_(snapshot),
        opt_(options),
        planner_(snapshot, options.slots),
        free_(gang::FreeCapacity(snapshot, options.held)),
        holds_(planner_),
        pending_(snapshot.Gangs(core::ClusterSnapshot::GangFilter::kPending)) {
    for (const Gang& g : snapshot.Gangs(core::ClusterSnapshot::GangFilter::kMarked)) {
      if (!g.Running() || g.preempted_by.empty()) continue;
      exiting_[g.preempted_by].insert(g.key);
      for (const core::PodInfo* p : g.members) {
        std::optional<int> n = snap_.NodeIndex(p->AssignedNode());
        if (n) incoming_[g.preempted_by].push_back({*n, p->requests});
      }
    }
    for (int n = 0; n < static_cast<int>(snapshot.node_count()); ++n) {
      for (const core::ClusterSnapshot::Occupant& o : snapshot.Occupants(n)) {
        if (!o.gang->backfilled_behind.empty()) reclaims_.insert(o.gang->backfilled_behind);
      }
    }
  }

  RoundResult Run() {
    RoundResult result;
    int position = 0;
    for (const Gang* g : PendingQueue(pending_)) {
      result.decisions.push_back(Decide(*g, ++position));
    }
    return result;
  }

 private:
  // Gangs waiting ahead, grouped by the node set they may use.
  struct Block {
    std::vector<bool> mask;
    int32_t priority;      // Of the first waiting gang, the highest.
    std::string first;     // The first waiting gang, named in reasons.
    core::Resources unit;  // The largest member of any of them, per resource.
  };
  // Nodes a blocked gang holds as they drain.
  struct Held {
    const std::string* holder;
    std::vector<bool> mask;
  };

  GangDecision Decide(const Gang& g, int position) {
    EnterLevel(g.priority);
    GangDecision d{.gang = g.key,
                   .position = position,
                   .priority = g.priority,
                   .slots = opt_.slots.SlotsOf(g.total)};
    if (!g.contract_error.empty()) {
      d.verdict = Verdict::kInfeasible;
      d.reason = absl::StrCat("a pod's phalanx labels cannot be read: ", g.contract_error);
      return d;
    }
    const std::string shape = ShapeKey(g);
    auto [known, fresh] = feasible_.try_emplace(shape);
    if (fresh) known->second = planner_.CheckFeasible(g);
    const GangPlan& feasible = known->second;
    if (!feasible.placed()) {
      d.verdict = feasible.outcome == GangPlan::Outcome::kInfeasible ? Verdict::kInfeasible
                                                                     : Verdict::kWait;
      d.reason = feasible.reason;
      return d;
    }
    Capacity cap;  // Capacity counted on beyond `open_`, when preempting.
    std::vector<const Gang*> victims;
    GangPlan plan = PlanOnIncoming(g, cap);
    if (!plan.placed()) plan = PlanOnOpen(g, shape);
    if (!plan.placed()) plan = PlanProvisionally(g, shape, std::move(plan));
    if (!plan.placed()) plan = PlanWithPreemption(g, shape, std::move(plan), cap, victims);
    if (plan.placed() && !cap.empty() && OnHeldNode(plan)) {
      plan = GangPlan{.reason = absl::StrCat("the capacity it could free is held for ",
                                             *level_holder_, ", ahead of it")};
      victims.clear();
    }
    if (!plan.placed()) {
      d.reason = plan.reason;
      d.patient_until_ms = std::exchange(patient_until_ms_, 0);
      AddBlock(g);
      if (opt_.backfill) Hold(g);
      return d;
    }
    const Block* b = Blocking(g, plan);
    if (b != nullptr && cap.empty()) {  // Off the nodes of the gangs ahead it may not pass.
      GangPlan around = PlanAround(g);
      if (around.placed()) {
        plan = std::move(around);
        b = Blocking(g, plan);
      }
    }
    if (b != nullptr) {
      d.reason = absl::StrCat("waiting behind ", b->first, " (priority ", b->priority,
                              "), which needs the capacity it would use");
      AddBlock(g);  // Blocked by order: work behind it may not pass it either.
      return d;
    }
    if (cap.empty() && HolderUnder(g, plan) && Thrashed(g, opt_.rules, opt_.now_ms)) {
      plan = PlanOffHolds(g);
      if (!plan.placed() || Blocking(g, plan) != nullptr) {
        d.reason = absl::StrCat("preempted ", RecentPreemptions(g, opt_.rules, opt_.now_ms),
                                " times: it waits for capacity no blocked gang holds");
        AddBlock(g);
        return d;
      }
    }
    Commit(g, plan, cap, victims, d);
    return d;
  }

  // `open` plus what the victims already marked for `g` will free.
  Capacity WithIncoming(const Gang& g) const {
    Capacity cap = open_;
    if (auto inc = incoming_.find(g.key); inc != incoming_.end()) {
      for (const auto& [n, r] : inc->second) cap[n] += r;
    }
    return cap;
  }

  // Plans `g`, if victims are already marked for it, on WithIncoming; `cap` receives that capacity
  // when the plan needs more than `open`.
  GangPlan PlanOnIncoming(const Gang& g, Capacity& cap) {
    if (!incoming_.contains(g.key)) return GangPlan{};
    Capacity with = WithIncoming(g);
    GangPlan plan = planner_.Plan(g, with);
    if (plan.placed() && !FitsOnOpen(g, plan)) cap = std::move(with);
    return plan;
  }

  // What `plan` puts on each of its nodes.
  static absl::flat_hash_map<int, core::Resources> LoadOf(const Gang& g, const GangPlan& plan) {
    absl::flat_hash_map<int, core::Resources> load;
    for (size_t m = 0; m < plan.nodes.size(); ++m) load[plan.nodes[m]] += g.members[m]->requests;
    return load;
  }

  // Whether `plan` fits on `open` alone; looks at the plan's nodes only.
  bool FitsOnOpen(const Gang& g, const GangPlan& plan) const {
    const absl::flat_hash_map<int, core::Resources> need = LoadOf(g, plan);
    return std::all_of(need.begin(), need.end(),
                       [&](const auto& n) { return n.second.FitsIn(open_[n.first]); });
  }

  // Plans `g` on the capacity new victims would free beyond WithIncoming.
  GangPlan PlanWithPreemption(const Gang& g, const std::string& shape, GangPlan plan, Capacity& cap,
                              std::vector<const Gang*>& victims) {
    if (!opt_.preemption) return plan;
    std::optional<VictimChoice> choice;
    if (!KnownToFail(g, shape)) {
      cap = WithIncoming(g);
      choice = ChooseVictims(planner_, g, cap, claimed_, opt_.rules, opt_.now_ms,
                             level_held_.empty() ? nullptr : &level_held_);
    }
    if (!choice) {
      RecordFailure(g, shape);
      absl::StrAppend(&plan.reason, "; no set of lower-priority preemptible gangs frees enough");
      return plan;
    }
    if (const int64_t loss = DearestLoss(g, choice->victims);
        WaitsToPreempt(g, loss, opt_.rules, opt_.now_ms) && !CheaperChoice(g, cap, *choice)) {
      absl::StrAppend(&plan.reason, "; preempting now would lose ", DurationText(loss),
                      " of a run's work: it waits for capacity or a checkpoint, until ",
                      DurationText(opt_.rules.patience_ms), " after its creation");
      patient_until_ms_ = g.creation_ms + opt_.rules.patience_ms;
      claimed_.insert(choice->victims.begin(), choice->victims.end());  // Spared for `g`.
      return plan;
    }
    for (const auto& [n, r] : choice->freed) cap[n] += r;
    victims = std::move(choice->victims);
    return choice->plan;
  }

  // The most work one of `victims` loses, those backfilled behind `g` left out (rules.h
  // WaitsToPreempt).
  int64_t DearestLoss(const Gang& g, const std::vector<const Gang*>& victims) const {
    int64_t loss = 0;
    for (const Gang* v : victims) {
      if (v->backfilled_behind != g.key) loss = std::max(loss, LostWorkMs(*v, opt_.now_ms));
    }
    return loss;
  }

  // A set of victims `g` takes while patient, searched for with the dear victims of `choice` and
  // of each set found left out, kCheaperSearches times at most; replaces `choice` when found. It
  // takes no protected victim (rules.h ProtectionTier): waiting spares those too.
  static constexpr int kCheaperSearches = 2;
  bool CheaperChoice(const Gang& g, const Capacity& cap, VictimChoice& choice) const {
    absl::flat_hash_set<const Gang*> left_out = claimed_;
    const VictimChoice* last = &choice;
    std::optional<VictimChoice> found;
    for (int i = 0; i < kCheaperSearches; ++i) {
      for (const Gang* v : last->victims) {
        if (v->backfilled_behind != g.key &&
            LostWorkMs(*v, opt_.now_ms) > opt_.rules.patience_loss_ms) {
          left_out.insert(v);
        }
      }
      found = ChooseVictims(planner_, g, cap, left_out, opt_.rules, opt_.now_ms,
                            level_held_.empty() ? nullptr : &level_held_);
      if (!found) return false;
      const bool spares_protected = std::none_of(
          found->victims.begin(), found->victims.end(),
          [&](const Gang* v) { return ProtectionTier(*v, g, opt_.rules, opt_.now_ms) > 0; });
      if (spares_protected &&
          !WaitsToPreempt(g, DearestLoss(g, found->victims), opt_.rules, opt_.now_ms)) {
        choice = *std::move(found);
        return true;
      }
      last = &*found;
    }
    return false;
  }

  static std::string DurationText(int64_t ms) {
    return absl::FormatDuration(absl::Seconds(ms / 1000));
  }

  void Commit(const Gang& g, const GangPlan& plan, const Capacity& cap,
              const std::vector<const Gang*>& victims, GangDecision& d) {
    for (size_t m = 0; m < plan.nodes.size(); ++m) {
      d.plan.push_back({g.members[m]->uid, g.members[m]->name, snap_.node(plan.nodes[m]).name});
    }
    if (cap.empty()) {
      d.verdict = backfill_ahead_ ? Verdict::kBackfill : Verdict::kAdmit;
      d.reason =
          backfill_ahead_ ? absl::StrCat("backfilled behind ", backfill_ahead_->first) : "admitted";
      if (const std::string* holder = HolderUnder(g, plan); holder && backfill_ahead_) {
        d.backfilled_behind = *holder;
        d.reason = absl::StrCat("backfilled behind ", *holder,
                                " on nodes it holds; it takes them back when it can start");
      }
      gang::GangPlanner::Reserve(g, plan, free_);
      gang::GangPlanner::Reserve(g, plan, open_);
      for (int n : plan.nodes) {
        if (!level_held_.empty() && level_held_[n]) open_[n] = core::Resources();
      }
      return;
    }
    d.verdict = Verdict::kPreempt;
    Capacity left = cap;
    gang::GangPlanner::Reserve(g, plan, left);
    for (int n : plan.nodes) {
      free_[n] = core::Resources::Min(free_[n], left[n]);
      open_[n] = core::Resources::Min(open_[n], left[n]);
    }
    claimed_.insert(victims.begin(), victims.end());
    for (const Gang* v : victims) d.victims.push_back(v->key);
    d.reason = victims.empty() ? WaitingForVictims(g)
                               : absl::StrCat("preempting ", absl::StrJoin(d.victims, ", "));
  }

  // The reason of a gang whose victims, marked in earlier rounds, are still running.
  std::string WaitingForVictims(const Gang& g) const {
    auto it = exiting_.find(g.key);
    if (it == exiting_.end()) {
      return "waiting for preempted gangs to exit; their capacity is reserved";
    }
    const bool one = it->second.size() == 1;
    return absl::StrCat("waiting for preempted ", one ? "gang " : "gangs ",
                        absl::StrJoin(it->second, ", "), " to exit; ", one ? "its" : "their",
                        " capacity is reserved");
  }

  // The first waiting gang ahead that `g`'s plan would pass without being able to reclaim it, or
  // nullptr. Sets backfill_ahead_ to a waiting gang the plan passes legitimately. Work of a
  // waiting gang's own priority passes it (its plan already kept off that gang's drain hold).
  const Block* Blocking(const Gang& g, const GangPlan& plan) {
    backfill_ahead_ = nullptr;
    const absl::flat_hash_map<int, core::Resources> load = LoadOf(g, plan);
    for (const Block& b : blocks_) {
      bool overlaps = std::any_of(load.begin(), load.end(), [&](const auto& nl) {
        return b.mask[nl.first] && !MayPassOn(nl.second, b.unit, free_[nl.first]);
      });
      if (!overlaps) continue;
      if (!Passes(g, b)) return &b;
      if (backfill_ahead_ == nullptr) backfill_ahead_ = &b;
    }
    return nullptr;
  }

  // Plans `g` on `open` off the nodes of every waiting gang it may not pass.
  GangPlan PlanAround(const Gang& g) const {
    std::vector<bool> closed(snap_.node_count(), false);
    for (const Block& b : blocks_) {
      if (Passes(g, b)) continue;
      for (size_t n = 0; n < closed.size(); ++n) closed[n] = closed[n] || b.mask[n];
    }
    return planner_.Plan(g, open_, &closed);
  }

  // Whether `g` may use nodes waiting gang `b` may use: with backfill, when it has b's priority (it
  // keeps off b's drain hold) or b could take them back (preemption on, g preemptible, lower and
  // not at its preemption limit).
  bool Passes(const Gang& g, const Block& b) const {
    return opt_.backfill &&
           (g.priority >= b.priority ||
            (opt_.preemption && g.preemptible && !AtPreemptionLimit(g, opt_.rules, opt_.now_ms)));
  }

  void AddBlock(const Gang& g) {
    const std::vector<int>* nodes = &planner_.EligibleNodes(g);
    auto [it, added] = block_index_.try_emplace(nodes, blocks_.size());
    if (!added) {
      Block& b = blocks_[it->second];
      b.unit = core::Resources::Max(b.unit, gang::LargestMember(g, opt_.slots));
      return;
    }
    Block b{std::vector<bool>(snap_.node_count(), false), g.priority, g.key,
            gang::LargestMember(g, opt_.slots)};
    for (int n : *nodes) b.mask[n] = true;
    blocks_.push_back(std::move(b));
  }

  // The first blocked gang of a priority holds nodes as they drain; the ones behind it do not
  // (they would close the cluster to their whole priority).
  void Hold(const Gang& g) {
    if (level_holder_) return;
    level_holder_ = &g.key;
    level_held_.assign(snap_.node_count(), false);
    for (int n : holds_.Hold(g, free_, open_)) level_held_[n] = true;
    held_.push_back({level_holder_, level_held_});
  }

  // Plans `g` on `open` off every node a blocked gang other than `g` holds.
  GangPlan PlanOffHolds(const Gang& g) const {
    std::vector<bool> closed(snap_.node_count(), false);
    for (const Held& h : held_) {
      if (*h.holder == g.key) continue;
      for (size_t n = 0; n < closed.size(); ++n) closed[n] = closed[n] || h.mask[n];
    }
    return planner_.Plan(g, open_, &closed);
  }

  // The first blocked gang other than `g` holding one of `plan`'s nodes, or nullptr.
  const std::string* HolderUnder(const Gang& g, const GangPlan& plan) const {
    for (const Held& h : held_) {
      if (*h.holder == g.key) continue;
      if (std::any_of(plan.nodes.begin(), plan.nodes.end(), [&](int n) { return h.mask[n]; })) {
        return h.holder;
      }
    }
    return nullptr;
  }

  // Preempting for a plan on a held node would take capacity from the gang it is held for.
  bool OnHeldNode(const GangPlan& plan) const {
    return !level_held_.empty() &&
           std::any_of(plan.nodes.begin(), plan.nodes.end(), [&](int n) { return level_held_[n]; });
  }

  // Gangs of a lower priority may use what higher gangs hold as their nodes drain (they can be
  // preempted), and more capacity than this level's plans saw: the per-level memos start over.
  void EnterLevel(int32_t priority) {
    if (level_ == priority) return;
    level_ = priority;
    level_holder_ = nullptr;
    level_held_.clear();
    open_ = free_;
    no_fit_.clear();
    no_fit_provisionally_.clear();
    failed_.clear();
  }

  // What planning depends on: the eligible nodes, the pool (its maxSlotsPerPod), the expected size
  // and every member's requests, in order (runs of equal requests written once, with their length).
  std::string ShapeKey(const Gang& g) const {
    std::string key = absl::StrCat(reinterpret_cast<uintptr_t>(&planner_.EligibleNodes(g)), "|",
                                   g.pool, "|", g.expected_size);
    for (size_t m = 0; m < g.members.size();) {
      const core::Resources& r = g.members[m]->requests;
      size_t end = m + 1;
      while (end < g.members.size() && g.members[end]->requests == r) ++end;
      absl::StrAppend(&key, "|", end - m, "x", r.ToString());
      m = end;
    }
    return key;
  }

  // Open capacity only shrinks within a priority level, so a shape that found no plan finds none
  // later in the level.
  GangPlan PlanOnOpen(const Gang& g, const std::string& shape) {
    if (auto it = no_fit_.find(shape); it != no_fit_.end()) {
      return GangPlan{.outcome = GangPlan::Outcome::kWait, .reason = it->second};
    }
    GangPlan plan = planner_.Plan(g, open_);
    if (!plan.placed()) no_fit_.emplace(shape, plan.reason);
    return plan;
  }

  // Plans `g` on `free`, the nodes held for this level's blocked gang included, as that gang's to
  // take back; `plan` (the failed plan on `open`) when it may not or does not fit.
  GangPlan PlanProvisionally(const Gang& g, const std::string& shape, GangPlan plan) {
    if (level_held_.empty() || !opt_.backfill || !opt_.preemption ||
        !MayBackfillProvisionally(g, opt_.rules, opt_.now_ms) ||
        no_fit_provisionally_.contains(shape)) {
      return plan;
    }
    GangPlan on_free = planner_.Plan(g, free_);
    if (on_free.placed()) return on_free;
    no_fit_provisionally_.insert(shape);
    return plan;
  }

  // Victim search is monotone within a level too: a gang of the same shape and no higher priority
  // than one that failed, fails; unless victims already marked for it free capacity for it alone.
  bool KnownToFail(const Gang& g, const std::string& shape) const {
    if (incoming_.contains(g.key) || reclaims_.contains(g.key)) return false;
    auto it = failed_.find(shape);
    return it != failed_.end() && g.priority <= it->second;
  }
  void RecordFailure(const Gang& g, const std::string& shape) {
    if (incoming_.contains(g.key) || reclaims_.contains(g.key)) return;
    int32_t& p = failed_.try_emplace(shape, g.priority).first->second;
    p = std::max(p, g.priority);
  }

  const core::ClusterSnapshot& snap_;
  const AdmissionOptions& opt_;
  gang::GangPlanner planner_;
  Capacity free_;  // Left after this round's plans.
  Capacity open_;  // free_, less the nodes this level's blocked gangs hold as they drain.
  DrainHolds holds_;
  std::optional<int32_t> level_;               // Priority of the gangs being decided.
  const std::string* level_holder_ = nullptr;  // Its first gang that found no plan.
  std::vector<bool> level_held_;               // Nodes held for that gang (empty: none).
  std::vector<Gang> pending_;
  absl::flat_hash_set<const Gang*> claimed_;  // Victims taken this round.
  absl::flat_hash_map<std::string, std::vector<std::pair<int, core::Resources>>> incoming_;
  // By preemptor: its victims marked in earlier rounds that still run, by key.
  absl::flat_hash_map<std::string, absl::btree_set<std::string>> exiting_;
  std::vector<Block> blocks_;
  absl::flat_hash_map<const std::vector<int>*, size_t> block_index_;
  absl::flat_hash_map<std::string, int32_t> failed_;
  absl::flat_hash_map<std::string, GangPlan> feasible_;
  absl::flat_hash_map<std::string, std::string> no_fit_;
  absl::flat_hash_set<std::string> no_fit_provisionally_;
  std::vector<Held> held_;  // Every hold of the round, in queue order.
  // Keys of the gangs that running gangs were backfilled behind (their victim search differs).
  absl::flat_hash_set<std::string> reclaims_;
  const Block* backfill_ahead_ = nullptr;
  int64_t patient_until_ms_ = 0;  // Set by PlanWithPreemption when the gang waits on patience.
};

}  // namespace

const char* VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kAdmit:
      return "ADMIT";
    case Verdict::kBackfill:
      return "BACKFILL";
    case Verdict::kPreempt:
      return "PREEMPT";
    case Verdict::kWait:
      return "WAIT";
    case Verdict::kInfeasible:
      return "INFEASIBLE";
  }
  return "UNKNOWN";
}

RoundResult RunAdmissionRound(const core::ClusterSnapshot& snapshot,
                              const AdmissionOptions& options) {
  return Round(snapshot, options).Run();
}

}  // namespace phalanx::preemption
