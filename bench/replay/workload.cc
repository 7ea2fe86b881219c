// Cluster specs, the master's slots-to-pods split, and trace jobs as gangs (workload.h).
#include "bench/replay/workload.h"

#include <map>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "bench/replay/priority.h"
#include "core/gang.h"
#include "core/snapshot.h"
#include "gang/planner.h"

namespace phalanx::replay {
namespace {

int Digits(int64_t n) {
  int d = 1;
  for (; n >= 10; n /= 10) ++d;
  return d;
}

}  // namespace

absl::StatusOr<std::vector<core::Node>> ParseCluster(absl::string_view spec) {
  std::vector<std::pair<int64_t, int64_t>> groups;
  int64_t count = 0;
  for (absl::string_view part : absl::StrSplit(spec, ',')) {
    std::vector<absl::string_view> nx = absl::StrSplit(part, 'x');
    int64_t nodes = 0;
    int64_t gpus = 0;
    if (nx.size() != 2 || !absl::SimpleAtoi(nx[0], &nodes) || !absl::SimpleAtoi(nx[1], &gpus) ||
        nodes <= 0 || gpus <= 0 || nodes > 100000) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cluster '", spec, "': part '", part, "' is not NODESxGPUS, e.g. 125x8 or 64x8,32x4"));
    }
    groups.emplace_back(nodes, gpus);
    count += nodes;
  }
  std::vector<core::Node> out;
  const int width = Digits(count - 1);
  for (const auto& [nodes, gpus] : groups) {
    for (int64_t i = 0; i < nodes; ++i) {
      core::Node n;
      n.name = absl::StrFormat("n%0*d", width, static_cast<int64_t>(out.size()));
      n.allocatable = core::Resources(0, 0, gpus);
      out.push_back(std::move(n));
    }
  }
  return out;
}

int64_t TotalGpus(const std::vector<core::Node>& nodes) {
  int64_t total = 0;
  for (const core::Node& n : nodes) total += n.allocatable.gpu();
  return total;
}

absl::StatusOr<PodShape> SplitSlots(int64_t slots, int32_t max_slots_per_pod) {
  if (max_slots_per_pod <= 0) {
    return absl::InvalidArgumentError("maxSlotsPerPod must be at least 1");
  }
  if (slots <= max_slots_per_pod) return PodShape{1, slots};
  if (slots % max_slots_per_pod != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(slots, " slots is not a multiple of maxSlotsPerPod ", max_slots_per_pod));
  }
  return PodShape{static_cast<int>(slots / max_slots_per_pod), max_slots_per_pod};
}

std::string JobName(int index, int job_count) {
  return absl::StrFormat("j%0*d", Digits(std::max(job_count - 1, 0)), index);
}

int JobIndexOf(absl::string_view key) {
  const std::string prefix = absl::StrCat(kNamespace, "/j");
  if (!absl::ConsumePrefix(&key, prefix)) return -1;
  key = key.substr(0, key.find('-'));
  int index = -1;
  return absl::SimpleAtoi(key, &index) ? index : -1;
}

int PodIndexOf(absl::string_view name) {
  size_t dash = name.rfind('-');
  int index = -1;
  if (dash == absl::string_view::npos || !absl::SimpleAtoi(name.substr(dash + 1), &index)) {
    return -1;
  }
  return index;
}

std::vector<core::PodInfo> MakePods(const Job& job, int job_count, bool as_gang,
                                    int64_t creation_ms) {
  std::vector<core::PodInfo> pods;
  const std::string name = JobName(job.index, job_count);
  for (int i = 0; i < job.shape.pods; ++i) {
    core::PodInfo p;
    p.ns = std::string(kNamespace);
    p.name = absl::StrCat(name, "-", i);
    p.uid = absl::StrCat(kNamespace, "/", p.name);
    if (as_gang) {
      p.gang = name;
      p.gang_size = job.shape.pods;
    }
    p.requests = core::Resources(0, 0, job.shape.gpus_per_pod);
    p.priority = job.priority;
    p.creation_ms = creation_ms + (as_gang ? 0 : i);
    p.gated = true;
    pods.push_back(std::move(p));
  }
  return pods;
}

std::vector<Job> BuildJobs(const Trace& trace, const std::vector<core::Node>& nodes,
                           int32_t max_slots_per_pod, uint64_t seed) {
  std::vector<TraceJob> with_priority = trace.jobs;
  AssignPriorities(with_priority, seed);
  core::SnapshotBuilder builder;
  for (const core::Node& n : nodes) builder.UpsertNode(n);
  std::shared_ptr<const core::ClusterSnapshot> empty = builder.Build();
  gang::SlotPolicy slots;
  slots.max_slots_per_pod = max_slots_per_pod;
  gang::GangPlanner planner(*empty, slots);
  std::map<std::pair<int, int64_t>, std::string> infeasible;  // By shape, so each is checked once.

  std::vector<Job> jobs;
  jobs.reserve(with_priority.size());
  for (TraceJob& t : with_priority) {
    Job job;
    job.index = static_cast<int>(jobs.size());
    job.priority = *t.priority;
    job.trace = std::move(t);
    absl::StatusOr<PodShape> shape = SplitSlots(job.trace.gpus, max_slots_per_pod);
    if (!shape.ok()) {
      job.rejected = std::string(shape.status().message());
      jobs.push_back(std::move(job));
      continue;
    }
    job.shape = *shape;
    auto [it, added] = infeasible.try_emplace({shape->pods, shape->gpus_per_pod});
    if (added) {
      std::vector<core::PodInfo> pods = MakePods(job, 1, /*as_gang=*/true, 0);
      std::vector<const core::PodInfo*> members;
      for (const core::PodInfo& p : pods) members.push_back(&p);
      core::Gang g = core::SummarizeGang("probe", members);
      gang::GangPlan plan = planner.CheckFeasible(g);
      if (plan.outcome == gang::GangPlan::Outcome::kInfeasible) it->second = plan.reason;
    }
    job.rejected = it->second;
    jobs.push_back(std::move(job));
  }
  return jobs;
}

}  // namespace phalanx::replay
