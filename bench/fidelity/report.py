"""The Markdown report of bench/replay_fidelity: the machine and commit, the agreement of each
simulation with each real run, the headline numbers side by side, and how to read them."""
import os
import platform
import statistics
import subprocess
import textwrap

from fidelity.common import RESTART_OVERHEAD_MS, ROOT


READING = """\
Reading the numbers (the mechanisms; per-job data in `<dir>/run<k>/fidelity-jobs.csv`, every real
run of a job in `<dir>/run<k>/real-runs.csv`):
- Start order is the queue order (priority, then submit order) applied to nearly the same events,
  so it agrees closely even where timing does not. Placement is the fragile part: a 1-GPU job goes
  to the fullest node it fits (ties by name) and a whole-node gang to the first nodes that drain,
  so one completion a few hundred ms earlier or later sends a job to another node, and from then
  on the two runs hold different nodes. Placements agree exactly up to the first difference and
  drift apart after it.
- Timing the observed simulation takes from the real run: submits land a few ms after their slice
  time (later when the master is busy); kwok ends a pod at `status.startTime`, which has whole
  seconds, plus its sim-duration, so a run is 0 to 1 s shorter than its trace duration, plus tens
  of ms of bind and watch latency; victims exit 0.05 to 0.4 s after the mark (each acknowledged by
  its own CLI call, and a head with several victims waits for the last), the simulation uses the
  median for all.
- What no input removes: the simulation runs one round per instant on exact times, the extender
  one per change its informer sees; and a victim's cost is whole seconds of run time
  (`LostSlotSeconds`), counted from `status.startTime` (whole seconds, set when kwok starts the
  pod) in the real cluster but from the exact admission in the simulation, so among gangs that
  started about a second ago the cheapest victim can differ. A victim whose pods end on their own
  before its ack is run again by the master (it cannot tell that exit from one for the
  preemption), while the simulation lets it complete; the watch counts such a run as preempted.
- The master recreates a victim's pods only once the old ones are gone (tens of ms later); a round
  in between does not see the victim, so work of its own priority queued behind it can take the
  capacity it freed. The simulator models that gap (`--requeue_s`); `scripts/replay` leaves it at
  0, so the trace runs above put the victim back in the same round.
"""




def commit():
    """The checkout's commit, with `+` when tracked files have uncommitted changes."""
    def git(*argv):
        return subprocess.run(["git", "-C", ROOT, *argv], capture_output=True,
                              text=True).stdout.strip()

    dirty = git("status", "--porcelain", "--untracked-files=no")
    return git("rev-parse", "--short", "HEAD") + ("+" if dirty else "")


def machine():
    with open("/proc/cpuinfo") as f:
        cpu = next((line.split(":", 1)[1].strip() for line in f
                    if line.startswith("model name")), platform.processor())
    return f"{cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}"


def summary(nominal_totals, runs):
    """One paragraph: the ranges of the agreement over the runs and both inputs, and how far the
    simulations' headline numbers are from the real runs'."""
    agree = [c for r in runs for c in r["agreement"].values()]

    def span(key, scale=1.0, digits=1):
        values = [scale * c[key] for c in agree]
        return f"{min(values):.{digits}f} to {max(values):.{digits}f}"

    firsts = [c["first_diff"] for c in agree if c["first_diff"] is not None]
    metrics = {"medium-class wait": lambda t: t["waits"]["medium"],
               "low-class wait": lambda t: t["waits"]["low"], "p95 wait": lambda t: t["wait_p95"],
               "mean JCT": lambda t: t["jct"], "makespan": lambda t: t["makespan"]}
    worst = max(((abs(get(sim) / get(r["totals"]["real"]) - 1), name)
                 for r in runs for sim in (nominal_totals, r["totals"]["observed"])
                 for name, get in metrics.items()), default=(float("nan"), ""))
    high = max(t["waits"]["high"] for r in runs for t in (nominal_totals, *r["totals"].values()))
    real = sorted(r["totals"]["real"]["preemptions"] for r in runs)
    observed = sorted(r["totals"]["observed"]["preemptions"] for r in runs)
    return para(
        f"Across the {len(runs)} real run(s) and both simulation inputs: {span('same_order', 100)}% "
        f"of job pairs start in the same order (Kendall tau-b {span('tau', digits=3)}); "
        f"{span('same_nodes', 100)}% of jobs run on the same nodes, the first difference at job "
        f"{min(firsts, default='-')} to {max(firsts, default='-')} in submit order; median start "
        f"error {span('err_median', digits=2)} s, the worst job {span('err_max', digits=1)} s. "
        f"The simulations' headline numbers (mean wait of the medium and low classes, p95 wait, "
        f"mean JCT, makespan) are within {100 * worst[0]:.0f}% of the real runs' (the farthest: "
        f"{worst[1]}); the high class waits {high:.2f} s at most on average everywhere; "
        f"preemptions: {nominal_totals['preemptions']} simulated from slice times, "
        f"{observed[0]} to {observed[-1]} from observed times, {real[0]} to {real[-1]} real.")


def para(text):
    """`text` wrapped at 100 columns like the rest of the results pages."""
    return textwrap.fill(text, 100, break_long_words=False, break_on_hyphens=False)


def report(a, slice_jobs, n_pods, rejected, nominal_totals, runs, source, load):
    durations = [d for _, d, _ in slice_jobs]
    medians = ", ".join(" / ".join("none" if r["timing"][k] is None else f"{r['timing'][k]:.3f}"
                                   for k in ("exit", "requeue")) for r in runs)
    late = ", ".join(f"{r['timing']['late_median']:.3f} / {r['timing']['late_max']:.3f}"
                     for r in runs)
    intro = para(
        "A slice of the Philly trace replayed through the real system (phalanx-master on Postgres, "
        "the real kube-scheduler calling phalanx-extender, kwok nodes) and through the simulator, "
        "compared job by job (how, and how jitter is handled: the docstring of "
        "`bench/replay_fidelity`). Reproduce (about seven minutes a run; needs the cluster "
        "binaries of `scripts/build-cluster` and phalanx-master, phalanx-extender, phalanx and "
        "phalanx-replay built in `build/`):")
    command = (f"bench/replay_fidelity --offset {a.offset} --jobs {a.jobs} --cluster {a.cluster} "
               f"--arrival-span {a.arrival_span:g} --duration-scale {a.duration_scale:g} "
               f"--min-duration {a.min_duration:g} --max-duration {a.max_duration:g} "
               f"--runs {a.runs} --publish")
    setup = para(
        f"Slice: Philly jobs {a.offset}..{a.offset + a.jobs - 1} in submit order, "
        f"{a.jobs - len(rejected)} run ({n_pods} pods), {len(rejected)} rejected at submit"
        f"{''.join(f' ({r})' for r in sorted(set(rejected.values())))}. Gaps between submits / "
        f"{a.arrival_scale:.0f}, at least {a.min_gap:g} s: {slice_jobs[-1][0]:.0f} s of arrivals; "
        f"durations / {a.duration_scale:g}, clamped to {a.min_duration:g}..{a.max_duration:g} s "
        f"(median {statistics.median(durations):.1f} s, mean {statistics.fmean(durations):.1f} "
        f"s). Cluster `{a.cluster}`, maxSlotsPerPod {a.max_slots_per_pod}, priorities by the "
        f"replay's seeded rule (seed {a.seed}), no checkpoints, restart overhead "
        f"{RESTART_OVERHEAD_MS / 1000:g} s in both engines' victim costs (a restart's real cost is "
        f"the measured requeue), the engine's other preemption rules at their defaults, victims "
        f"acknowledged at once. "
        f"{a.runs} real run(s) of the same slice, each on a fresh cluster, binaries of commit "
        f"{source}. Median victim exit (mark to pods deleted) / requeue (deleted to recreated) "
        f"per run: {medians} s; the nominal simulation assumes {a.preempt_exit:g} / "
        f"{a.requeue:g} s. Submit calls late by (median / max, per run): {late} s.")
    host = para(f"Machine: {machine()}; load average {load[0]:.1f} at the start, {load[1]:.1f} "
                "at the end.")
    md = ["### Fidelity", "", intro, "", "```sh", command, "```", "", setup, "", host, "",
          summary(nominal_totals, runs), "",
          "| real run | simulation input | jobs | same placement | first job placed differently "
          "| same start order (pairs) | Kendall tau-b | start error median / p90 / max s | "
          "preempted in both |",
          "|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    labels = {"nominal": "slice times (nominal)",
              "observed": "observed submits, holds, exit, requeue"}
    for k, r in enumerate(runs, start=1):
        for name, c in r["agreement"].items():
            first = "none" if c["first_diff"] is None else f"job {c['first_diff']}"
            md.append(f"| {k} | {labels[name]} | {c['jobs']} | {100 * c['same_nodes']:.1f}% | "
                      f"{first} | {100 * c['same_order']:.1f}% | {c['tau']:.3f} | "
                      f"{c['err_median']:.2f} / {c['err_p90']:.2f} / {c['err_max']:.2f} | "
                      f"{c['preempted_both']} |")
    md += ["", "| run | mean wait s: high / medium / low | p95 wait s | mean JCT s | preemptions "
           "| makespan s |", "|---|---:|---:|---:|---:|---:|"]
    rows = [("simulated, slice times (nominal)", nominal_totals)]
    for k, r in enumerate(runs, start=1):
        rows += [(f"real system, run {k}", r["totals"]["real"]),
                 (f"simulated, observed in run {k}", r["totals"]["observed"])]
    for label, t in rows:
        w = t["waits"]
        md.append(f"| {label} | {w['high']:.2f} / {w['medium']:.2f} / {w['low']:.2f} | "
                  f"{t['wait_p95']:.2f} | {t['jct']:.2f} | {t['preemptions']} | "
                  f"{t['makespan']:.1f} |")
    return "\n".join(md + ["", READING])
