// Test helpers for building clusters and replaying admission decisions.
#include "tests/testing/fixtures.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace phalanx::testing {

core::Node GpuNode(std::string name, int64_t gpus) {
  core::Node n;
  n.name = std::move(name);
  n.allocatable = core::Resources(64'000, 512LL << 30, gpus);
  n.allocatable.Set(core::kPods, 110);
  return n;
}

core::Resources PodRequests(int64_t milli_cpu, int64_t memory, int64_t gpus) {
  core::Resources r(milli_cpu, memory, gpus);
  r.Set(core::kPods, 1);
  return r;
}

std::vector<core::PodInfo> GatedGang(const GangSpec& spec) {
  std::vector<core::PodInfo> pods;
  for (int i = 0; i < spec.pods; ++i) {
    core::PodInfo p;
    p.ns = spec.ns;
    p.name = absl::StrCat(spec.name, "-", i);
    p.uid = absl::StrCat(spec.ns, "/", p.name);
    p.gang = spec.name;
    p.gang_size = spec.pods;
    p.requests = PodRequests(1000, 1LL << 30, spec.gpus_per_pod);
    p.priority = spec.priority;
    p.creation_ms = spec.created_ms;
    p.preemptible = spec.preemptible;
    p.gated = true;
    p.pool = spec.pool;
    if (!spec.pool.empty()) p.job_id = absl::StrCat("job-", spec.name);
    p.node_selector = spec.node_selector;
    pods.push_back(std::move(p));
  }
  return pods;
}

void Cluster::AddNode(core::Node node) { builder_.UpsertNode(std::move(node)); }

void Cluster::Submit(const GangSpec& spec) {
  for (core::PodInfo& p : GatedGang(spec)) builder_.UpsertPod(std::move(p));
}

preemption::RoundResult Cluster::Step(const preemption::AdmissionOptions& options) {
  preemption::AdmissionOptions opts = options;
  opts.now_ms = now_ms;
  auto snap = builder_.Build();
  preemption::RoundResult r = preemption::RunAdmissionRound(*snap, opts);
  for (const preemption::GangDecision& d : r.decisions) {
    bool starts =
        d.verdict == preemption::Verdict::kAdmit || d.verdict == preemption::Verdict::kBackfill;
    for (const preemption::Assignment& a :
         starts ? d.plan : std::vector<preemption::Assignment>{}) {
      core::PodInfo p = *snap->FindPod(a.pod_uid);
      p.gated = false;
      p.placement = a.node;
      p.node = a.node;
      p.phase = core::PodPhase::kRunning;
      p.start_ms = now_ms;
      p.backfilled = d.verdict == preemption::Verdict::kBackfill;
      p.backfilled_behind = d.backfilled_behind;
      builder_.UpsertPod(std::move(p));
    }
    for (const std::string& victim : d.victims) {
      core::Gang gang = *snap->FindGang(victim);
      for (const core::PodInfo* m : gang.members) {
        core::PodInfo p = *m;
        p.preempt_requested = true;
        p.preempted_by = d.gang;
        builder_.UpsertPod(std::move(p));
      }
    }
  }
  return r;
}

void Cluster::Finish(const std::string& gang_key) {
  auto snap = builder_.Build();
  std::optional<core::Gang> g = snap->FindGang(gang_key);
  if (!g) return;
  for (const core::PodInfo* p : g->members) builder_.RemovePod(p->uid);
}

void Cluster::ExitPodOn(const std::string& gang_key, const std::string& node) {
  auto snap = builder_.Build();
  std::optional<core::Gang> g = snap->FindGang(gang_key);
  if (!g) return;
  for (const core::PodInfo* p : g->members) {
    if (p->AssignedNode() == node) builder_.RemovePod(p->uid);
  }
}

std::vector<std::string> Cluster::RequeueMarkedVictims() {
  auto snap = builder_.Build();
  std::vector<std::string> keys;
  for (const core::Gang& g : snap->Gangs()) {
    if (!g.preempt_requested) continue;
    keys.push_back(g.key);
    for (const core::PodInfo* m : g.members) builder_.UpsertPod(core::Requeued(*m, now_ms));
  }
  return keys;
}

std::vector<std::string> Cluster::NodesOf(const std::string& gang_key) {
  std::vector<std::string> nodes;
  auto snap = builder_.Build();
  std::optional<core::Gang> g = snap->FindGang(gang_key);
  if (!g || !g->Running()) return nodes;
  for (const core::PodInfo* p : g->members) nodes.emplace_back(p->AssignedNode());
  std::sort(nodes.begin(), nodes.end());
  return nodes;
}

bool Cluster::Running(const std::string& gang_key) { return !NodesOf(gang_key).empty(); }

const preemption::GangDecision* FindDecision(const preemption::RoundResult& r,
                                             const std::string& gang_key) {
  for (const preemption::GangDecision& d : r.decisions) {
    if (d.gang == gang_key) return &d;
  }
  return nullptr;
}

}  // namespace phalanx::testing
