// Replay outputs as text: a Markdown section per trace, summary / time-series / JCT CSVs for plots,
// and the per-job file (placement and start order) for comparing with a real run later. Every
// output is a pure function of its inputs, so the same seed gives the same bytes.
//
// Per-job CSV columns: job (index in submit order), line (in the trace file), submit_ms, gpus,
// pods, gpus_per_pod, priority, status (done | unfinished | rejected), first_start_ms, end_ms,
// start_order (rank of the first start, 0-based), starts, preemptions, nodes (node of each pod in
// its last run, ';'-separated, by pod index), reason (why rejected). Times are ms since the trace's
// first submit; -1 when it never happened.
#ifndef PHALANX_BENCH_REPLAY_REPORT_H_
#define PHALANX_BENCH_REPLAY_REPORT_H_

#include <string>
#include <vector>

#include "bench/replay/metrics.h"
#include "bench/replay/simulator.h"
#include "bench/replay/trace.h"
#include "bench/replay/workload.h"

namespace phalanx::replay {

struct ReplaySetup {
  std::string name;        // Label of the run, e.g. "philly".
  std::string trace_path;  // Its file name, or the synthetic workload's spec (every key).
  std::string cluster;     // The spec, e.g. "125x8".
  int64_t cluster_gpus = 0;
  int nodes = 0;
  uint64_t seed = 0;
  std::string priority_source = "trace";  // Or "seeded" (the trace's own priorities ignored).
  SimOptions options;                     // Policy is ignored.
};

struct PolicyRun {
  Policy policy;
  SimResult result;
  Summary summary;
};

// "### <name>" with the setup, what was left out or rejected, the table of `runs`, and the forecast
// error of those that sampled it.
std::string MarkdownSection(const ReplaySetup& setup, const Trace& trace,
                            const std::vector<Job>& jobs, const std::vector<PolicyRun>& runs);
std::string SummaryCsv(const std::vector<PolicyRun>& runs);
// policy,model,sampled,no_estimate_pct,measured,error_p50_pct,error_p90_pct,waited,
// waited_error_p50_pct,waited_error_p90_pct: the forecast error per runtime model of the runs that
// sampled it (metrics.h; percentages).
std::string ForecastCsv(const std::vector<PolicyRun>& runs);
// policy,hour,allocated_pct,busy_pct,queued_mean,queued_max per bucket.
std::string SeriesCsv(const std::vector<PolicyRun>& runs, int64_t bucket_ms);
// policy,fraction,jct_s: 200 quantiles of JCT per policy.
std::string JctCsv(const std::vector<Job>& jobs, const std::vector<PolicyRun>& runs);
std::string JobsCsv(const std::vector<Job>& jobs, const SimResult& result);

}  // namespace phalanx::replay

#endif  // PHALANX_BENCH_REPLAY_REPORT_H_
