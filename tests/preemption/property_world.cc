// Random worlds for the property test, and what the services do with a round's decisions.
#include "tests/preemption/property_world.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "tests/preemption/property_rules.h"
#include "tests/testing/fixtures.h"

namespace phalanx::preemption::property {
namespace {

int Draw(std::mt19937& rng, int n) { return static_cast<int>(rng() % n); }

core::Node RandomNode(std::mt19937& rng, int i) {
  core::Node n = testing::GpuNode(absl::StrCat("node-", i), Draw(rng, 2) ? 8 : 4);
  n.labels = {{"zone", Draw(rng, 2) ? "a" : "b"}};
  if (Draw(rng, 5) == 0) n.taints.push_back({"dedicated", "team", core::TaintEffect::kNoSchedule});
  n.unschedulable = Draw(rng, 20) == 0;
  return n;
}

// The gang's eligibility (selector, tolerations, an avoided node) and queue data, the same on every
// pod.
void Decorate(std::mt19937& rng, int nodes, std::vector<core::PodInfo>& pods) {
  std::vector<std::string> avoid;
  if (Draw(rng, 5) == 0) avoid = {absl::StrCat("node-", Draw(rng, nodes))};
  const double position = Draw(rng, 4) == 0 ? 1 + Draw(rng, 3) : core::kNoQueuePosition;
  core::Labels selector;
  if (Draw(rng, 4) == 0) selector = {{"zone", Draw(rng, 2) ? "a" : "b"}};
  std::vector<core::Toleration> tolerations;
  if (Draw(rng, 3) == 0) {
    tolerations.push_back(
        Draw(rng, 2)
            ? core::Toleration{.key = "dedicated", .value = "team"}
            : core::Toleration{.key = "dedicated", .op = core::Toleration::Operator::kExists});
  }
  for (core::PodInfo& p : pods) {
    p.queue_position = position;
    p.node_selector = selector;
    p.tolerations = tolerations;
    p.avoid_nodes = avoid;
  }
}

// Binds `pods` on random eligible nodes with room in `free`, all or none.
bool Start(std::mt19937& rng, const World& w, std::vector<core::Resources>& free,
           std::vector<core::PodInfo>& pods) {
  std::vector<core::Resources> left = free;
  std::vector<int> chosen;
  for (const core::PodInfo& p : pods) {
    const int n = static_cast<int>(w.nodes.size());
    const int start = Draw(rng, n);
    int found = -1;
    for (int k = 0; k < n && found < 0; ++k) {
      int i = (start + k) % n;
      if (Eligible(p, w.nodes[i]) && p.requests.FitsIn(left[i])) found = i;
    }
    if (found < 0) return false;
    left[found] -= p.requests;
    chosen.push_back(found);
  }
  // Runs of every age against PropertyRules' min_run_ms, some checkpointed, some often preempted.
  const int64_t start_ms = 1 + Draw(rng, 9000);
  const int64_t checkpoint_ms = Draw(rng, 3) == 0 ? start_ms + Draw(rng, 1000) : 0;
  std::vector<int64_t> preempted;
  const int preemptions = Draw(rng, 4) == 0 ? 1 + Draw(rng, 3) : 0;
  for (int k = 1; k <= preemptions; ++k) preempted.push_back(k);
  const bool backfilled = Draw(rng, 5) == 0;
  for (size_t m = 0; m < pods.size(); ++m) {
    core::PodInfo& p = pods[m];
    p.gated = false;
    p.node = p.placement = w.nodes[chosen[m]].name;
    p.phase = core::PodPhase::kRunning;
    p.start_ms = start_ms;
    p.checkpoint_ms = checkpoint_ms;
    p.preempted_ms = preempted;
    p.backfilled = backfilled;
  }
  free = std::move(left);
  return true;
}

// Free capacity per node of `w`.
std::vector<core::Resources> FreeOf(const World& w) {
  std::vector<core::Resources> free;
  absl::flat_hash_map<std::string, size_t> index;
  for (const core::Node& n : w.nodes) {
    index[n.name] = free.size();
    free.push_back(n.allocatable);
  }
  for (const core::PodInfo& p : w.pods) {
    if (p.HoldsCapacity()) free[index.at(p.AssignedNode())] -= p.requests;
  }
  return free;
}

}  // namespace

World RandomWorld(std::mt19937& rng, int max_nodes) {
  World w;
  int n = std::uniform_int_distribution<int>(1, max_nodes)(rng);
  for (int i = 0; i < n; ++i) w.nodes.push_back(RandomNode(rng, i));
  AddGangs(rng, std::uniform_int_distribution<int>(1, n * 2 + 4)(rng), "", /*may_run=*/true, w);
  return w;
}

void AddGangs(std::mt19937& rng, int count, const std::string& prefix, bool may_run, World& w) {
  std::vector<core::Resources> free = FreeOf(w);
  for (int g = 0; g < count; ++g) {
    const int most = Draw(rng, 8);
    const int divisor = 1 + Draw(rng, 4);
    testing::GangSpec spec{.name = absl::StrCat(prefix, "g", g), .pods = 1 + most / divisor};
    spec.gpus_per_pod = int64_t{1} << Draw(rng, 4);
    spec.priority = 10 * (1 + Draw(rng, 9));
    spec.created_ms = Draw(rng, 100);
    spec.preemptible = Draw(rng, 10) != 0;
    std::vector<core::PodInfo> pods = testing::GatedGang(spec);
    Decorate(rng, static_cast<int>(w.nodes.size()), pods);
    const bool incomplete = Draw(rng, 20) == 0 && pods.size() > 1;
    if (incomplete) pods.pop_back();
    if (may_run && !incomplete && Draw(rng, 2) == 0) Start(rng, w, free, pods);
    for (core::PodInfo& p : pods) w.pods.push_back(std::move(p));
  }
}

std::shared_ptr<const core::ClusterSnapshot> Build(const World& w, std::mt19937* shuffle) {
  std::vector<core::Node> nodes = w.nodes;
  std::vector<core::PodInfo> pods = w.pods;
  if (shuffle != nullptr) {
    std::shuffle(nodes.begin(), nodes.end(), *shuffle);
    std::shuffle(pods.begin(), pods.end(), *shuffle);
  }
  core::SnapshotBuilder b;
  for (core::Node& n : nodes) b.UpsertNode(std::move(n));
  for (core::PodInfo& p : pods) b.UpsertPod(std::move(p));
  return b.Build();
}

void Apply(const RoundResult& r, int64_t now_ms, World& w) {
  absl::flat_hash_map<std::string, std::pair<std::string, const GangDecision*>> start;  // By uid.
  absl::flat_hash_map<std::string, std::string> marked_by;
  for (const GangDecision& d : r.decisions) {
    if (d.verdict == Verdict::kAdmit || d.verdict == Verdict::kBackfill) {
      for (const Assignment& a : d.plan) start[a.pod_uid] = {a.node, &d};
    }
    for (const std::string& v : d.victims) marked_by[v] = d.gang;
  }
  for (core::PodInfo& p : w.pods) {
    if (auto it = start.find(p.uid); it != start.end()) {
      p.gated = false;
      p.node = p.placement = it->second.first;
      p.backfilled = it->second.second->verdict == Verdict::kBackfill;
      p.backfilled_behind = it->second.second->backfilled_behind;
      p.phase = core::PodPhase::kRunning;
      p.start_ms = now_ms;
    }
    if (auto it = marked_by.find(p.GangKey()); it != marked_by.end()) {
      p.preempt_requested = true;
      p.preempted_by = it->second;
    }
  }
}

void RequeueVictims(World& w, int64_t now_ms) {
  for (core::PodInfo& p : w.pods) {
    if (p.preempt_requested) p = core::Requeued(std::move(p), now_ms);
  }
}

void FinishSome(std::mt19937& rng, World& w) {
  absl::flat_hash_set<std::string> running;
  for (const core::PodInfo& p : w.pods) {
    if (!p.gated && !p.preempt_requested) running.insert(p.GangKey());
  }
  std::vector<std::string> keys(running.begin(), running.end());
  std::sort(keys.begin(), keys.end());  // Draws in a fixed order.
  absl::flat_hash_set<std::string> done;
  for (const std::string& k : keys) {
    if (Draw(rng, 6) == 0) done.insert(k);
  }
  std::erase_if(w.pods, [&](const core::PodInfo& p) { return done.contains(p.GangKey()); });
}

std::string Render(const World& w) {
  std::string out;
  for (const core::Node& n : w.nodes) {
    absl::StrAppend(&out, n.name, " gpu=", n.allocatable.gpu(), " zone=", n.labels[0].second,
                    n.taints.empty() ? "" : " tainted", n.unschedulable ? " cordoned" : "", "\n");
  }
  for (const core::PodInfo& p : w.pods) {
    absl::StrAppend(&out, p.uid, " gang=", p.gang, "/", p.gang_size, " gpu=", p.requests.gpu(),
                    " prio=", p.priority, " pos=", p.queue_position, " created=", p.creation_ms,
                    p.preemptible ? "" : " pinned", p.gated ? " gated" : "",
                    p.node.empty() ? "" : " on=", p.node, p.backfilled ? " backfilled" : "",
                    p.backfilled_behind.empty() ? "" : " behind=", p.backfilled_behind,
                    " started=", p.start_ms, " checkpoint=", p.checkpoint_ms,
                    " preempted=", p.preempted_ms.size(), p.preempt_requested ? " marked-by=" : "",
                    p.preempted_by);
    for (const auto& [k, v] : p.node_selector) absl::StrAppend(&out, " sel ", k, "=", v);
    for (const std::string& n : p.avoid_nodes) absl::StrAppend(&out, " avoid ", n);
    for (const core::Toleration& t : p.tolerations) {
      absl::StrAppend(&out, " tol ", t.key, t.op == core::Toleration::Operator::kExists ? "" : "=",
                      t.value);
    }
    absl::StrAppend(&out, "\n");
  }
  return out;
}

std::string Render(const RoundResult& r) {
  std::string out;
  for (const GangDecision& d : r.decisions) {
    absl::StrAppend(&out, d.gang, " ", VerdictName(d.verdict), " ", d.reason,
                    d.backfilled_behind.empty() ? "" : " behind=", d.backfilled_behind, "\n");
    for (const Assignment& a : d.plan) absl::StrAppend(&out, "  ", a.pod_uid, "@", a.node, "\n");
    for (const std::string& v : d.victims) absl::StrAppend(&out, "  victim ", v, "\n");
  }
  return out;
}

}  // namespace phalanx::preemption::property
