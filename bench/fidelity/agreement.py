"""Step 5 of bench/replay_fidelity: how a simulation agrees with a real run, job by job (placement,
start order, start-time error), and the headline numbers of either."""
import statistics


# --- 5. agreement ------------------------------------------------------------------------------

def sign(x):
    return (x > 0) - (x < 0)


def order_agreement(pairs):
    """(fraction of pairs in the same order over pairs untied in both, Kendall tau-b) of
    [(sim, real)] start times."""
    concordant = discordant = tied_sim = tied_real = total = 0
    for k in range(len(pairs)):
        for j in range(k + 1, len(pairs)):
            s = sign(pairs[k][0] - pairs[j][0])
            r = sign(pairs[k][1] - pairs[j][1])
            total += 1
            tied_sim += s == 0
            tied_real += r == 0
            concordant += s * r > 0
            discordant += s * r < 0
    same = concordant / max(concordant + discordant, 1)
    denom = ((total - tied_sim) * (total - tied_real)) ** 0.5
    return same, (concordant - discordant) / denom if denom else float("nan")


def quantile(values, q):
    values = sorted(values)
    return values[min(int(q * len(values)), len(values) - 1)] if values else float("nan")


def real_records(real, priorities, origin, node_map):
    """Completed real jobs as records: times in s since `origin`, nodes by simulated name."""
    return {i: {"submit": r["submit"] - origin, "start": r["start"] - origin,
                "end": r["end"] - origin, "nodes": sorted(node_map[n] for n in r["nodes"]),
                "preemptions": r["preemptions"], "priority": priorities[i]}
            for i, r in real.items() if r["end"] is not None}


def sim_records(rows):
    """Completed simulated jobs (phalanx-replay's per-job rows) as records."""
    return {i: {"submit": int(r["submit_ms"]) / 1000, "start": int(r["first_start_ms"]) / 1000,
                "end": int(r["end_ms"]) / 1000, "nodes": sorted(r["nodes"].split(";")),
                "preemptions": int(r["preemptions"]), "priority": int(r["priority"])}
            for i, r in rows.items() if r["status"] == "done"}


def compare(sim, real):
    """Job-by-job agreement of a simulation's records with the real run's, over the jobs both
    completed."""
    both = sorted(set(sim) & set(real))
    differ = [i for i in both if sim[i]["nodes"] != real[i]["nodes"]]
    same, tau = order_agreement([(sim[i]["start"], real[i]["start"]) for i in both])
    errors = [abs(real[i]["start"] - sim[i]["start"]) for i in both]
    return {"jobs": len(both), "same_nodes": 1 - len(differ) / max(len(both), 1),
            "first_diff": differ[0] if differ else None, "same_order": same, "tau": tau,
            "err_median": quantile(errors, 0.5), "err_p90": quantile(errors, 0.9),
            "err_max": max(errors, default=float("nan")),
            "preempted_both": sum(sim[i]["preemptions"] > 0 and real[i]["preemptions"] > 0
                                  for i in both)}


def aggregates(records, jobs):
    """The replay's headline numbers over `jobs`: mean wait per priority class (the replay's
    bins: >= 90 high, >= 50 medium), p95 wait, mean JCT, preemptions, makespan."""
    recs = [records[i] for i in jobs]
    waits = {c: [r["start"] - r["submit"] for r in recs if cls(r["priority"]) == c]
             for c in ("high", "medium", "low")}
    return {"waits": {c: statistics.fmean(w) if w else float("nan") for c, w in waits.items()},
            "wait_p95": quantile([r["start"] - r["submit"] for r in recs], 0.95),
            "jct": statistics.fmean(r["end"] - r["submit"] for r in recs),
            "preemptions": sum(r["preemptions"] for r in recs),
            "makespan": max(r["end"] for r in recs) - min(r["submit"] for r in recs)}


def cls(priority):
    return "high" if priority >= 90 else "medium" if priority >= 50 else "low"
