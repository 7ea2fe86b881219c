// Markdown and CSV outputs of a replay (report.h).
#include "bench/replay/report.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"

namespace phalanx::replay {
namespace {

double Hours(int64_t ms) { return ms / 3600000.0; }
double Minutes(int64_t ms) { return ms / 60000.0; }

// What the jobs come from, as the Markdown section names it.
std::string Source(const ReplaySetup& setup, const Trace& trace) {
  if (trace.format == TraceFormat::kSynthetic) {
    return absl::StrFormat("Synthetic workload `%s` (bench/replay/synthetic.h)", setup.trace_path);
  }
  return absl::StrFormat("Trace `%s` (%s format)", setup.trace_path, TraceFormatName(trace.format));
}

// The engine's anti-thrash rules and the restart overhead, as a sentence's clauses.
std::string RulesText(const preemption::PreemptionRules& r) {
  std::string text = absl::StrFormat("restart overhead %g s; runs younger than %g min",
                                     r.restart_overhead_ms / 1000.0, Minutes(r.min_run_ms));
  const std::string within =
      r.window_ms == 0 ? std::string() : absl::StrFormat(" within %g h", Hours(r.window_ms));
  if (r.max_preemptions > 0) {
    absl::StrAppendFormat(&text, ", and jobs preempted %d times%s,", r.max_preemptions, within);
  }
  text += " are victims only as a last resort";
  if (r.preemption_limit > 0) {
    absl::StrAppendFormat(&text, "; jobs preempted %d times%s never are", r.preemption_limit,
                          within);
  }
  return text;
}

double Pct(int64_t part, int64_t whole) {
  return whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0;
}

// The forecast accuracy of the runs that sampled it (SimOptions::forecast_every), or nothing.
std::string ForecastTable(const SimOptions& o, const std::vector<PolicyRun>& runs) {
  std::string rows;
  for (const PolicyRun& run : runs) {
    for (int m = 0; m < kForecastModels; ++m) {
      const ForecastError& e = run.summary.forecast[m];
      if (e.sampled == 0) continue;
      absl::StrAppendFormat(&rows, "| %s | %s | %d | %.1f | %.1f | %.1f | %d | %.1f | %.1f |\n",
                            run.summary.policy, ForecastModelName(static_cast<ForecastModel>(m)),
                            e.sampled, Pct(e.no_estimate, e.sampled), 100 * e.p50, 100 * e.p90,
                            e.waited, 100 * e.waited_p50, 100 * e.waited_p90);
    }
  }
  if (rows.empty()) return "";
  return absl::StrFormat(
      "\nForecast start error (`forecast/`): at the submission of %s, before "
      "that time's round, the forecast of its start with exact durations, with each job's off by "
      "a seeded factor in [0.5, 2], and with none; error = |forecast - first start| / max(wait, 1 "
      "min), over the jobs with an estimate (steps of %g s or %g%% of the lead; the forecasts' "
      "time counts in the policy's wall time).\n\n"
      "| policy | durations | jobs sampled | no estimate %% | error p50 %% | error p90 %% | jobs "
      "that waited > 1 min | their error p50 %% | their error p90 %% |\n"
      "|---|---|---:|---:|---:|---:|---:|---:|---:|\n%s",
      o.forecast_every == 1 ? std::string("every accepted job")
                            : absl::StrCat("one accepted job in ", o.forecast_every),
      o.forecast_step_ms / 1000.0, 100 * o.forecast_step_fraction, rows);
}

}  // namespace

std::string MarkdownSection(const ReplaySetup& setup, const Trace& trace,
                            const std::vector<Job>& jobs, const std::vector<PolicyRun>& runs) {
  std::map<std::string, int64_t> rejected;
  int64_t accepted = 0;
  for (const Job& j : jobs) {
    if (j.rejected.empty()) {
      ++accepted;
    } else {
      ++rejected[j.rejected];
    }
  }
  const SimOptions& o = setup.options;
  std::string md = absl::StrCat("### ", setup.name, "\n\n");
  absl::StrAppendFormat(
      &md,
      "%s: %d GPU jobs, %d accepted. Cluster `%s`: %d nodes, %d GPUs; "
      "maxSlotsPerPod %d; priorities: %s, seed %d; checkpoint every %d min; victims exit %d s "
      "after the mark; %s; greedy deadlocks released after %d min.\n\n",
      Source(setup, trace), static_cast<int64_t>(jobs.size()), accepted, setup.cluster, setup.nodes,
      setup.cluster_gpus, o.max_slots_per_pod,
      setup.priority_source == "seeded" ? "seeded rule for every job"
                                        : "from the trace where it has them, else seeded rule",
      setup.seed, o.checkpoint_interval_ms / 60000, o.preempt_exit_ms / 1000, RulesText(o.rules),
      o.deadlock_timeout_ms / 60000);
  if (trace.skipped_no_gpu + trace.skipped_never_ran + trace.fractional_gpu_rounded_up > 0) {
    absl::StrAppendFormat(&md,
                          "Left out: %d rows without GPUs, %d rows never scheduled in the original "
                          "cluster; %d fractional-GPU pods counted as 1 GPU.\n\n",
                          trace.skipped_no_gpu, trace.skipped_never_ran,
                          trace.fractional_gpu_rounded_up);
  }
  for (const auto& [reason, count] : rejected) {
    absl::StrAppendFormat(&md, "Rejected at submit: %d jobs: %s.\n", count, reason);
  }
  if (!rejected.empty()) md += "\n";
  absl::StrAppend(&md,
                  "| policy | alloc % | alloc % while jobs wait (hours waiting) | GPUs idle while "
                  "jobs wait % | JCT mean h | JCT p50 h | JCT p99 h | wait p50/p95 min: high | "
                  "medium | low | makespan h | preemptions | max preemptions of a job | jobs "
                  "preempted >= ",
                  kManyPreemptions,
                  "x | lost GPU-h | deadlocks | deadlocked GPU-h | held idle GPU-h | frag GPUs |\n"
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:"
                  "|---:|---:|---:|\n");
  for (const PolicyRun& run : runs) {
    const Summary& s = run.summary;
    absl::StrAppendFormat(&md, "| %s | %.1f | %.1f (%.0f) | %.1f | %.2f | %.2f | %.1f |", s.policy,
                          s.allocation_pct, s.allocation_waiting_pct, s.waiting_hours,
                          s.idle_waiting_pct, s.jct_mean_s / 3600.0, Hours(s.jct_p50_ms),
                          Hours(s.jct_p99_ms));
    for (int c = 0; c < kPriorityClasses; ++c) {
      absl::StrAppendFormat(&md, " %.1f / %.1f |", Minutes(s.wait_p50_ms[c]),
                            Minutes(s.wait_p95_ms[c]));
    }
    absl::StrAppendFormat(&md, " %.1f | %d | %d | %d | %.1f | %d | %.1f | %.1f | %.1f |\n",
                          Hours(s.makespan_ms), s.preemptions, s.max_job_preemptions,
                          s.jobs_preempted_many, s.lost_gpu_hours, s.deadlocks,
                          s.deadlocked_gpu_hours, s.held_idle_gpu_hours, s.fragmented_gpus);
  }
  for (const PolicyRun& run : runs) {
    if (run.summary.unfinished > 0) {
      absl::StrAppendFormat(&md, "\n%s left %d jobs unfinished.\n", run.summary.policy,
                            run.summary.unfinished);
    }
  }
  md += ForecastTable(o, runs);
  return md;
}

std::string ForecastCsv(const std::vector<PolicyRun>& runs) {
  std::string csv =
      "policy,model,sampled,no_estimate_pct,measured,error_p50_pct,error_p90_pct,waited,"
      "waited_error_p50_pct,waited_error_p90_pct\n";
  for (const PolicyRun& run : runs) {
    for (int m = 0; m < kForecastModels; ++m) {
      const ForecastError& e = run.summary.forecast[m];
      if (e.sampled == 0) continue;
      absl::StrAppendFormat(&csv, "%s,%s,%d,%.3f,%d,%.3f,%.3f,%d,%.3f,%.3f\n", run.summary.policy,
                            ForecastModelName(static_cast<ForecastModel>(m)), e.sampled,
                            Pct(e.no_estimate, e.sampled), e.measured, 100 * e.p50, 100 * e.p90,
                            e.waited, 100 * e.waited_p50, 100 * e.waited_p90);
    }
  }
  return csv;
}

std::string SummaryCsv(const std::vector<PolicyRun>& runs) {
  std::string csv = absl::StrCat(
      "policy,accepted,completed,unfinished,allocation_pct,allocation_until_last_submit_pct,"
      "busy_pct,allocation_waiting_pct,waiting_h,jct_mean_s,jct_p50_s,jct_p99_s,high_jobs,high_"
      "wait_p50_s,high_wait_p95_s,"
      "medium_jobs,medium_wait_p50_s,medium_wait_p95_s,low_jobs,low_wait_p50_s,low_wait_p95_s,"
      "makespan_s,preemptions,lost_gpu_h,deadlocks,releases,deadlocked_gpu_h,held_idle_gpu_h,"
      "long_partial_holds,max_partial_hold_h,fragmented_gpus,rounds,allocation_bound_pct,"
      "idle_waiting_pct,max_job_preemptions,jobs_preempted_",
      kManyPreemptions, "x\n");
  for (const PolicyRun& run : runs) {
    const Summary& s = run.summary;
    absl::StrAppendFormat(&csv, "%s,%d,%d,%d,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f", s.policy,
                          s.accepted, s.completed, s.unfinished, s.allocation_pct,
                          s.allocation_until_last_submit_pct, s.busy_pct, s.allocation_waiting_pct,
                          s.waiting_hours, s.jct_mean_s, s.jct_p50_ms / 1000.0,
                          s.jct_p99_ms / 1000.0);
    for (int c = 0; c < kPriorityClasses; ++c) {
      absl::StrAppendFormat(&csv, ",%d,%.3f,%.3f", s.class_jobs[c], s.wait_p50_ms[c] / 1000.0,
                            s.wait_p95_ms[c] / 1000.0);
    }
    absl::StrAppendFormat(&csv, ",%.3f,%d,%.3f,%d,%d,%.3f,%.3f,%d,%.3f,%.3f,%d,%.3f,%.3f,%d,%d\n",
                          s.makespan_ms / 1000.0, s.preemptions, s.lost_gpu_hours, s.deadlocks,
                          s.releases, s.deadlocked_gpu_hours, s.held_idle_gpu_hours,
                          s.long_partial_holds, s.max_partial_hold_hours, s.fragmented_gpus,
                          s.rounds, s.allocation_bound_pct, s.idle_waiting_pct,
                          s.max_job_preemptions, s.jobs_preempted_many);
  }
  return csv;
}

std::string SeriesCsv(const std::vector<PolicyRun>& runs, int64_t bucket_ms) {
  std::string csv = "policy,hour,allocated_pct,busy_pct,queued_mean,queued_max\n";
  for (const PolicyRun& run : runs) {
    const double capacity = static_cast<double>(run.result.cluster_gpus) * bucket_ms;
    for (size_t i = 0; i < run.result.series.size(); ++i) {
      const Bucket& b = run.result.series[i];
      absl::StrAppendFormat(&csv, "%s,%.3f,%.3f,%.3f,%.3f,%d\n", PolicyName(run.policy),
                            Hours(static_cast<int64_t>(i) * bucket_ms),
                            100.0 * b.allocated_gpu_ms / capacity, 100.0 * b.busy_gpu_ms / capacity,
                            static_cast<double>(b.queued_job_ms) / bucket_ms, b.max_queued);
    }
  }
  return csv;
}

std::string JctCsv(const std::vector<Job>& jobs, const std::vector<PolicyRun>& runs) {
  std::string csv = "policy,fraction,jct_s\n";
  for (const PolicyRun& run : runs) {
    for (const auto& [q, jct] : JctQuantiles(jobs, run.result, 200)) {
      absl::StrAppendFormat(&csv, "%s,%.3f,%.3f\n", PolicyName(run.policy), q, jct / 1000.0);
    }
  }
  return csv;
}

std::string JobsCsv(const std::vector<Job>& jobs, const SimResult& result) {
  std::string csv =
      "job,line,submit_ms,gpus,pods,gpus_per_pod,priority,status,first_start_ms,end_ms,"
      "start_order,starts,preemptions,nodes,reason\n";
  for (const Job& j : jobs) {
    const JobOutcome& o = result.jobs[j.index];
    const char* status = !j.rejected.empty() ? "rejected" : o.end_ms >= 0 ? "done" : "unfinished";
    absl::StrAppendFormat(&csv, "%d,%d,%d,%d,%d,%d,%d,%s,%d,%d,%d,%d,%d,%s,%s\n", j.index,
                          j.trace.line, j.trace.submit_ms, j.trace.gpus, j.shape.pods,
                          j.shape.gpus_per_pod, j.priority, status, o.first_start_ms, o.end_ms,
                          o.start_order, o.starts, o.preemptions, absl::StrJoin(o.nodes, ";"),
                          absl::StrReplaceAll(j.rejected, {{",", ";"}}));
  }
  return csv;
}

}  // namespace phalanx::replay
