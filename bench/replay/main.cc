// phalanx-replay: replays a GPU-cluster job trace (--trace), or a seeded synthetic gang-heavy
// workload (--synthetic, synthetic.h), under several scheduling policies in one run and writes,
// into --out: <name>-summary.md (Markdown section), <name>-summary.csv, <name>-series.csv
// (allocation and queue depth over time), <name>-jct.csv (JCT quantiles), <name>-forecast.csv (with
// --forecast_every: the forecast's start error), <name>-timing.csv (wall time per policy: the only
// output that varies between runs), and into --jobs_dir one <name>-<policy>-jobs.csv per policy
// (placement and start order of every job).
//
//   phalanx-replay --trace=philly_pollux.csv --cluster=125x8 --out=bench/results/philly
//   phalanx-replay --synthetic=jobs=3000,seed=7,load=1.2 --cluster=12x8 --out=/tmp/synthetic
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "bench/replay/report.h"
#include "bench/replay/synthetic.h"
#include "core/pod.h"
#include "forecast/forecast.h"
#include "preemption/rules.h"

namespace {
constexpr phalanx::preemption::PreemptionRules kDefaultRules;
}  // namespace

ABSL_FLAG(std::string, trace, "", "trace file (Philly, Alibaba v2023 or generic CSV)");
ABSL_FLAG(std::string, synthetic, "",
          "instead of --trace: a seeded gang-heavy workload, SPEC like jobs=3000,seed=7,load=1.2 "
          "(keys jobs, seed, load, median_min, sigma: bench/replay/synthetic.h)");
ABSL_FLAG(std::string, format, "auto", "trace format: auto, philly, alibaba, generic");
ABSL_FLAG(std::string, cluster, "125x8", "nodes x GPUs per node, groups comma-separated");
ABSL_FLAG(int32_t, max_slots_per_pod, 8, "maxSlotsPerPod of the master's split");
ABSL_FLAG(uint64_t, seed, 1, "seed of the priority rule for jobs without a priority");
ABSL_FLAG(std::string, policies, "phalanx,fifo-gang,priority-no-backfill,greedy",
          "policies to compare, comma-separated");
ABSL_FLAG(int64_t, checkpoint_min, 30, "checkpoint interval of every job, minutes (0: none)");
ABSL_FLAG(double, preempt_exit_s, 30, "seconds a marked victim takes to exit (decimals allowed)");
ABSL_FLAG(double, requeue_s, 0,
          "seconds from a victim's exit until its recreated pods queue again (decimals allowed)");
ABSL_FLAG(double, restart_overhead_s, kDefaultRules.restart_overhead_ms / 1000.0,
          "seconds a preempted job's rerun takes before it makes progress again (recreating pods, "
          "reloading the checkpoint): added to its remaining work, counted as lost GPU time, and "
          "charged in the engine's victim cost");
ABSL_FLAG(double, min_run_before_preemption_s, kDefaultRules.min_run_ms / 1000.0,
          "engine rule: runs younger than this are victims only as a last resort");
ABSL_FLAG(int32_t, max_preemptions, kDefaultRules.max_preemptions,
          "engine rule: a job preempted this often (within --preemption_window_h) is a victim "
          "only as a last resort (0: no such rule)");
ABSL_FLAG(int32_t, preemption_limit, kDefaultRules.preemption_limit,
          "engine rule: a job preempted this often (within --preemption_window_h) is never a "
          "victim again (0: no limit)");
ABSL_FLAG(double, preemption_window_h, kDefaultRules.window_ms / 3'600'000.0,
          "engine rule: the window of --max_preemptions and --preemption_limit, hours (0: the "
          "job's whole life)");
ABSL_FLAG(double, preemption_patience_min, kDefaultRules.patience_ms / 60'000.0,
          "engine rule: a job younger than this does not take victims that would lose more than "
          "--preemption_patience_loss_min of work (0: it never waits)");
ABSL_FLAG(double, preemption_patience_loss_min, kDefaultRules.patience_loss_ms / 60'000.0,
          "engine rule: see --preemption_patience_min");
ABSL_FLAG(int64_t, deadlock_timeout_min, 60, "greedy: minutes before a deadlock is broken");
ABSL_FLAG(int64_t, bucket_min, 60, "time-series bucket, minutes");
ABSL_FLAG(std::string, priority_source, "trace",
          "trace: keep priorities the trace has (Alibaba qos, generic column), seeded rule for the "
          "rest; seeded: the seeded rule for every job");
ABSL_FLAG(int64_t, forecast_every, 0,
          "phalanx only: at the submission of one accepted job in N, forecast its start with "
          "exact, noisy (x0.5-2, seeded by --seed) and no durations, and report the error (0: "
          "never)");
ABSL_FLAG(double, forecast_step_fraction, phalanx::forecast::ForecastOptions{}.step_fraction,
          "the forecast's steps: events within this fraction of their distance from now (and at "
          "least a minute) are applied together, 0 to 1");
ABSL_FLAG(int64_t, progress_rounds, 0, "print a progress line every N rounds (0: never)");
ABSL_FLAG(std::string, name, "",
          "label of the run and prefix of output files (default: trace stem, or synthetic)");
ABSL_FLAG(std::string, out, ".", "directory for summary, series, JCT and timing files");
ABSL_FLAG(std::string, jobs_dir, "", "directory for the per-job files (default: --out)");

namespace phalanx::replay {
namespace {

absl::Status Write(const std::filesystem::path& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  f.close();
  if (!f) return absl::InternalError(absl::StrCat("cannot write ", path.string()));
  return absl::OkStatus();
}

// The jobs of --trace or --synthetic (on `cluster_gpus` GPUs); names their source in `setup`.
absl::StatusOr<Trace> Workload(int64_t cluster_gpus, ReplaySetup& setup) {
  const std::string trace_path = absl::GetFlag(FLAGS_trace);
  const std::string synthetic = absl::GetFlag(FLAGS_synthetic);
  if (trace_path.empty() == synthetic.empty()) {
    return absl::InvalidArgumentError("give exactly one of --trace and --synthetic");
  }
  if (!synthetic.empty()) {
    absl::StatusOr<SyntheticSpec> spec = ParseSyntheticSpec(synthetic);
    if (!spec.ok()) return spec.status();
    setup.trace_path = SyntheticSpecText(*spec);
    if (setup.name.empty()) setup.name = "synthetic";
    return GenerateSynthetic(*spec, cluster_gpus);
  }
  absl::StatusOr<TraceFormat> format = ParseTraceFormat(absl::GetFlag(FLAGS_format));
  if (!format.ok()) return format.status();
  setup.trace_path = std::filesystem::path(trace_path).filename().string();
  if (setup.name.empty()) setup.name = std::filesystem::path(trace_path).stem().string();
  return LoadTrace(trace_path, *format);
}

// The restart overhead and the engine's anti-thrash rules from their flags.
absl::StatusOr<preemption::PreemptionRules> Rules() {
  preemption::PreemptionRules r;
  const double restart_s = absl::GetFlag(FLAGS_restart_overhead_s);
  const double min_run_s = absl::GetFlag(FLAGS_min_run_before_preemption_s);
  const double window_h = absl::GetFlag(FLAGS_preemption_window_h);
  if (!(restart_s >= 0)) return absl::InvalidArgumentError("--restart_overhead_s must be >= 0");
  if (!(min_run_s >= 0)) {
    return absl::InvalidArgumentError("--min_run_before_preemption_s must be >= 0");
  }
  if (!(window_h >= 0)) return absl::InvalidArgumentError("--preemption_window_h must be >= 0");
  const double patience_min = absl::GetFlag(FLAGS_preemption_patience_min);
  const double patience_loss_min = absl::GetFlag(FLAGS_preemption_patience_loss_min);
  if (!(patience_min >= 0 && patience_min <= 43'200)) {
    return absl::InvalidArgumentError(
        "--preemption_patience_min must be from 0 to 43200 (30 days)");
  }
  if (!(patience_loss_min >= 0 && patience_loss_min <= 43'200)) {
    return absl::InvalidArgumentError(
        "--preemption_patience_loss_min must be from 0 to 43200 (30 days)");
  }
  r.max_preemptions = absl::GetFlag(FLAGS_max_preemptions);
  r.preemption_limit = absl::GetFlag(FLAGS_preemption_limit);
  for (int32_t n : {r.max_preemptions, r.preemption_limit}) {
    if (n < 0 || n > core::kMaxPreemptionHistory) {
      return absl::InvalidArgumentError(
          "--max_preemptions and --preemption_limit must be from 0 to 16 (the history pods keep)");
    }
  }
  r.restart_overhead_ms = std::llround(restart_s * 1000);
  r.min_run_ms = std::llround(min_run_s * 1000);
  r.window_ms = std::llround(window_h * 3'600'000);
  r.patience_ms = std::llround(patience_min * 60'000);
  r.patience_loss_ms = std::llround(patience_loss_min * 60'000);
  return r;
}

absl::Status Main() {
  absl::StatusOr<std::vector<core::Node>> nodes = ParseCluster(absl::GetFlag(FLAGS_cluster));
  if (!nodes.ok()) return nodes.status();
  ReplaySetup setup;
  setup.name = absl::GetFlag(FLAGS_name);
  absl::StatusOr<Trace> trace = Workload(TotalGpus(*nodes), setup);
  if (!trace.ok()) return trace.status();
  std::vector<Policy> policies;
  for (absl::string_view name : absl::StrSplit(absl::GetFlag(FLAGS_policies), ',')) {
    absl::StatusOr<Policy> p = ParsePolicy(name);
    if (!p.ok()) return p.status();
    policies.push_back(*p);
  }

  setup.cluster = absl::GetFlag(FLAGS_cluster);
  setup.cluster_gpus = TotalGpus(*nodes);
  setup.nodes = static_cast<int>(nodes->size());
  setup.seed = absl::GetFlag(FLAGS_seed);
  SimOptions& o = setup.options;
  o.max_slots_per_pod = absl::GetFlag(FLAGS_max_slots_per_pod);
  o.checkpoint_interval_ms = absl::GetFlag(FLAGS_checkpoint_min) * 60'000;
  o.preempt_exit_ms = std::llround(absl::GetFlag(FLAGS_preempt_exit_s) * 1000);
  o.requeue_ms = std::llround(absl::GetFlag(FLAGS_requeue_s) * 1000);
  absl::StatusOr<preemption::PreemptionRules> rules = Rules();
  if (!rules.ok()) return rules.status();
  o.rules = *rules;
  o.deadlock_timeout_ms = absl::GetFlag(FLAGS_deadlock_timeout_min) * 60'000;
  o.bucket_ms = absl::GetFlag(FLAGS_bucket_min) * 60'000;
  if (o.bucket_ms <= 0) return absl::InvalidArgumentError("--bucket_min must be positive");
  o.forecast_every = absl::GetFlag(FLAGS_forecast_every);
  if (o.forecast_every < 0) return absl::InvalidArgumentError("--forecast_every must be >= 0");
  o.forecast_seed = setup.seed;
  o.forecast_step_fraction = absl::GetFlag(FLAGS_forecast_step_fraction);
  if (!(o.forecast_step_fraction >= 0 && o.forecast_step_fraction <= 1)) {
    return absl::InvalidArgumentError("--forecast_step_fraction must be within 0 to 1");
  }
  const std::string priority_source = absl::GetFlag(FLAGS_priority_source);
  if (priority_source == "seeded") {
    for (TraceJob& j : trace->jobs) j.priority.reset();
  } else if (priority_source != "trace") {
    return absl::InvalidArgumentError("--priority_source must be trace or seeded");
  }
  setup.priority_source = priority_source;
  std::vector<Job> jobs = BuildJobs(*trace, *nodes, o.max_slots_per_pod, setup.seed);

  const std::filesystem::path out = absl::GetFlag(FLAGS_out);
  std::filesystem::path jobs_dir = absl::GetFlag(FLAGS_jobs_dir);
  if (jobs_dir.empty()) jobs_dir = out;
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  std::filesystem::create_directories(jobs_dir, ec);

  std::vector<PolicyRun> runs;
  std::string timing = "policy,seconds,rounds\n";
  for (Policy p : policies) {
    SimOptions po = o;
    po.policy = p;
    if (p != Policy::kPhalanx) po.forecast_every = 0;
    const auto start = std::chrono::steady_clock::now();
    po.progress_rounds = absl::GetFlag(FLAGS_progress_rounds);
    po.progress = [&](int64_t t_ms, int64_t rounds, int64_t queued) {
      const double wall =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      absl::FPrintF(stderr, "%s %s: %.1f s wall, simulated hour %.1f, %d rounds, %d jobs waiting\n",
                    setup.name, PolicyName(p), wall, t_ms / 3.6e6, rounds, queued);
    };
    absl::StatusOr<SimResult> result = Simulate(jobs, *nodes, po);
    if (!result.ok()) return result.status();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    Summary summary = Summarize(p, jobs, *result);
    absl::StrAppendFormat(&timing, "%s,%.2f,%d\n", PolicyName(p), seconds, summary.rounds);
    absl::FPrintF(stderr, "%s %s: %.2f s, %d rounds\n", setup.name, PolicyName(p), seconds,
                  summary.rounds);
    absl::Status s = Write(jobs_dir / absl::StrCat(setup.name, "-", PolicyName(p), "-jobs.csv"),
                           JobsCsv(jobs, *result));
    if (!s.ok()) return s;
    runs.push_back({p, std::move(*result), std::move(summary)});
  }
  const std::string md = MarkdownSection(setup, *trace, jobs, runs);
  std::vector<std::pair<std::string, std::string>> outputs = {
      {"summary.md", md},
      {"summary.csv", SummaryCsv(runs)},
      {"series.csv", SeriesCsv(runs, o.bucket_ms)},
      {"jct.csv", JctCsv(jobs, runs)},
      {"timing.csv", timing}};
  if (o.forecast_every > 0) outputs.emplace_back("forecast.csv", ForecastCsv(runs));
  for (const auto& [suffix, text] : outputs) {
    absl::Status s = Write(out / absl::StrCat(setup.name, "-", suffix), text);
    if (!s.ok()) return s;
  }
  std::fputs(md.c_str(), stdout);
  return absl::OkStatus();
}

}  // namespace
}  // namespace phalanx::replay

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("Replays a GPU job trace under several scheduling policies.");
  absl::ParseCommandLine(argc, argv);
  absl::Status s = phalanx::replay::Main();
  if (!s.ok()) {
    absl::FPrintF(stderr, "phalanx-replay: %s\n", s.ToString());
    return 1;
  }
  return 0;
}
