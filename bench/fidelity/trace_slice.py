"""Steps 1, 2 and 4 of bench/replay_fidelity: the time-compressed slice of the Philly trace (a
generic replay CSV) and phalanx-replay's simulation of it."""
import csv
import datetime
import os
import subprocess
import sys

from fidelity.common import RESTART_OVERHEAD_MS


# --- 1. the slice ------------------------------------------------------------------------------

def philly_slice(path, a):
    """[(submit_s, duration_s, gpus)] of the compressed slice, in submit order (then line)."""
    rows = []
    with open(path, newline="") as f:
        for line, r in enumerate(csv.DictReader(f), start=2):
            t = datetime.datetime.strptime(r["timestamp"], "%Y-%m-%d %H:%M:%S")
            rows.append((t.replace(tzinfo=datetime.timezone.utc).timestamp(), line,
                         float(r["duration"]), int(r["num_gpus"])))
    rows.sort()
    window = rows[a.offset:a.offset + a.jobs]
    a.arrival_scale = max((window[-1][0] - window[0][0]) / a.arrival_span, 1)
    out, submit = [], 0.0
    for k, (t, _, duration, gpus) in enumerate(window):
        if k:
            submit += max((t - window[k - 1][0]) / a.arrival_scale, a.min_gap)
        d = min(max(duration / a.duration_scale, a.min_duration), a.max_duration)
        out.append((round(submit, 3), round(d, 1), gpus))
    return out


def write_generic(path, jobs, priorities=None):
    """A generic replay CSV: submit_time,duration,num_gpus[,priority]."""
    with open(path, "w") as f:
        f.write("submit_time,duration,num_gpus" + (",priority" if priorities else "") + "\n")
        for k, (submit, duration, gpus) in enumerate(jobs):
            f.write(f"{submit:.3f},{duration:.3f},{gpus}" +
                    (f",{priorities[k]}" if priorities else "") + "\n")


# --- 2 and 4. the simulator --------------------------------------------------------------------

def simulate(a, name, trace, preempt_exit_s, requeue_s):
    """Rows of phalanx-replay's <name>-phalanx-jobs.csv by job row of `trace` (0-based)."""
    out = os.path.join(a.dir, "sim")
    run = subprocess.run(
        [os.path.join(a.build, "bench/replay/phalanx-replay"), f"--trace={trace}",
         "--format=generic", f"--cluster={a.cluster}", "--policies=phalanx",
         f"--max_slots_per_pod={a.max_slots_per_pod}", f"--seed={a.seed}", "--checkpoint_min=0",
         f"--preempt_exit_s={preempt_exit_s:.3f}", f"--requeue_s={requeue_s:.3f}",
         f"--restart_overhead_s={RESTART_OVERHEAD_MS / 1000}",
         "--bucket_min=1", f"--name={name}",
         f"--out={out}"], capture_output=True, text=True)
    if run.returncode:
        sys.exit(f"replay_fidelity: phalanx-replay: {run.stderr}")
    with open(os.path.join(out, f"{name}-phalanx-jobs.csv"), newline="") as f:
        return {int(r["line"]) - 2: r for r in csv.DictReader(f)}
