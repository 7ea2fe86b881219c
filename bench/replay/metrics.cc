// Summary metrics of one simulated policy (definitions in metrics.h).
#include "bench/replay/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <utility>

namespace phalanx::replay {
namespace {

constexpr double kMsPerHour = 3600.0 * 1000.0;
constexpr int64_t kMinWaitMs = 60'000;  // The forecast error's least denominator.

template <typename T>
T NearestRank(std::vector<T> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double rank = std::ceil(p / 100.0 * static_cast<double>(values.size()));
  const size_t i = static_cast<size_t>(std::clamp(rank, 1.0, static_cast<double>(values.size())));
  return values[i - 1];
}

std::vector<int64_t> Jcts(const std::vector<Job>& jobs, const SimResult& result) {
  std::vector<int64_t> jct;
  for (const Job& j : jobs) {
    const JobOutcome& o = result.jobs[j.index];
    if (j.rejected.empty() && o.end_ms >= 0) jct.push_back(o.end_ms - j.trace.submit_ms);
  }
  return jct;
}

}  // namespace

int64_t Percentile(std::vector<int64_t> values, double p) {
  return NearestRank(std::move(values), p);
}

std::array<ForecastError, kForecastModels> ForecastErrors(const std::vector<Job>& jobs,
                                                          const SimResult& r) {
  std::array<ForecastError, kForecastModels> out{};
  for (int m = 0; m < kForecastModels; ++m) {
    ForecastError& e = out[m];
    std::vector<double> all, waited;
    for (const ForecastSample& f : r.forecasts) {
      ++e.sampled;
      const int64_t start = r.jobs[f.job].first_start_ms;
      if (f.start_ms[m] < 0) {
        ++e.no_estimate;
        continue;
      }
      if (start < 0) continue;
      const int64_t wait = start - jobs[f.job].trace.submit_ms;
      const double error = static_cast<double>(std::abs(f.start_ms[m] - start)) /
                           static_cast<double>(std::max(wait, kMinWaitMs));
      all.push_back(error);
      if (wait > kMinWaitMs) waited.push_back(error);
    }
    e.measured = static_cast<int64_t>(all.size());
    e.p50 = NearestRank(all, 50);
    e.p90 = NearestRank(all, 90);
    e.waited = static_cast<int64_t>(waited.size());
    e.waited_p50 = NearestRank(waited, 50);
    e.waited_p90 = NearestRank(waited, 90);
  }
  return out;
}

Summary Summarize(Policy policy, const std::vector<Job>& jobs, const SimResult& r) {
  Summary s;
  s.policy = PolicyName(policy);
  std::array<std::vector<int64_t>, kPriorityClasses> waits;
  double work_gpu_ms = 0;
  int64_t latest_end_ms = 1;
  for (const Job& j : jobs) {
    if (!j.rejected.empty()) continue;
    ++s.accepted;
    work_gpu_ms += static_cast<double>(j.trace.duration_ms) * j.gpus();
    latest_end_ms = std::max(latest_end_ms, j.trace.submit_ms + j.trace.duration_ms);
    const JobOutcome& o = r.jobs[j.index];
    if (o.end_ms >= 0) ++s.completed;
    s.max_job_preemptions = std::max<int64_t>(s.max_job_preemptions, o.preemptions);
    s.jobs_preempted_many += o.preemptions >= kManyPreemptions;
    const int c = static_cast<int>(ClassOf(j.priority));
    ++s.class_jobs[c];
    if (o.first_start_ms >= 0) waits[c].push_back(o.first_start_ms - j.trace.submit_ms);
  }
  for (int c = 0; c < kPriorityClasses; ++c) {
    s.wait_p50_ms[c] = Percentile(waits[c], 50);
    s.wait_p95_ms[c] = Percentile(waits[c], 95);
  }
  std::vector<int64_t> jct = Jcts(jobs, r);
  int64_t sum = 0;
  for (int64_t v : jct) sum += v;
  s.jct_mean_s = jct.empty() ? 0 : static_cast<double>(sum) / 1000.0 / jct.size();
  s.jct_p50_ms = Percentile(jct, 50);
  s.jct_p99_ms = Percentile(jct, 99);
  s.unfinished = r.unfinished;
  s.makespan_ms = r.end_ms;
  const double capacity_ms = static_cast<double>(r.cluster_gpus) * std::max<int64_t>(r.end_ms, 1);
  s.allocation_pct = 100.0 * r.allocated_gpu_ms / capacity_ms;
  s.busy_pct = 100.0 * r.busy_gpu_ms / capacity_ms;
  s.allocation_until_last_submit_pct =
      100.0 * r.allocated_gpu_ms_until_last_submit /
      (static_cast<double>(r.cluster_gpus) * std::max<int64_t>(r.last_submit_ms, 1));
  s.allocation_waiting_pct =
      100.0 * r.allocated_gpu_ms_waiting /
      (static_cast<double>(r.cluster_gpus) * std::max<int64_t>(r.waiting_ms, 1));
  s.idle_waiting_pct = r.waiting_ms > 0 ? 100.0 - s.allocation_waiting_pct : 0;
  const double gpus = std::max<int64_t>(r.cluster_gpus, 1);
  s.allocation_bound_pct =
      100.0 * work_gpu_ms / (gpus * std::max<double>(latest_end_ms, work_gpu_ms / gpus));
  s.waiting_hours = r.waiting_ms / kMsPerHour;
  s.preemptions = r.preemptions;
  s.lost_gpu_hours = r.lost_gpu_ms / kMsPerHour;
  s.deadlocks = r.deadlocks;
  s.releases = r.releases;
  s.deadlocked_gpu_hours = r.deadlocked_gpu_ms / kMsPerHour;
  s.held_idle_gpu_hours = r.held_idle_gpu_ms / kMsPerHour;
  s.long_partial_holds = r.long_partial_holds;
  s.max_partial_hold_hours = r.max_partial_hold_ms / kMsPerHour;
  s.fragmented_gpus = static_cast<double>(r.fragmented_gpu_ms) / std::max<int64_t>(r.end_ms, 1);
  s.rounds = r.rounds;
  s.forecast = ForecastErrors(jobs, r);
  return s;
}

std::vector<std::pair<double, int64_t>> JctQuantiles(const std::vector<Job>& jobs,
                                                     const SimResult& result, int points) {
  std::vector<int64_t> jct = Jcts(jobs, result);
  std::sort(jct.begin(), jct.end());
  std::vector<std::pair<double, int64_t>> out;
  if (jct.empty()) return out;
  for (int i = 1; i <= points; ++i) {
    const double q = static_cast<double>(i) / points;
    const size_t k = static_cast<size_t>(std::ceil(q * jct.size()));
    out.emplace_back(q, jct[std::clamp<size_t>(k, 1, jct.size()) - 1]);
  }
  return out;
}

}  // namespace phalanx::replay
