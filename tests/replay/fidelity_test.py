#!/usr/bin/env python3
"""Unit tests of bench/replay_fidelity's pure parts (bench/fidelity/: slice compression, order
agreement, job comparison, the report) and of publish.splice, which puts its `### Fidelity` part
into bench/results/replay.md."""
import argparse
import os
import subprocess
import sys
import tempfile
import threading
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench", "replay"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import publish  # noqa: E402
from fidelity import agreement, real_system, report, trace_slice  # noqa: E402


class SliceTest(unittest.TestCase):
    def test_compresses_gaps_and_durations(self):
        with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
            f.write("timestamp,duration,num_gpus,gpu_time,cluster\n"
                    "2017-10-01 00:10:00,6000.0,8,0,c\n"   # Unsorted, like the trace.
                    "2017-10-01 00:00:00,30.0,1,0,c\n"
                    "2017-10-01 00:00:00,90000.0,2,0,c\n"  # Same second: a burst.
                    "2017-10-01 00:20:00,600.0,4,0,c\n")
        a = argparse.Namespace(offset=0, jobs=3, arrival_span=60, min_gap=0.2,
                               duration_scale=300, min_duration=1, max_duration=20)
        jobs = trace_slice.philly_slice(f.name, a)
        os.unlink(f.name)
        # Sorted by time then line; 600 s of arrivals scaled to 60; the burst gets the min gap.
        self.assertEqual(jobs, [(0.0, 1.0, 1), (0.2, 20.0, 2), (60.2, 20.0, 8)])
        self.assertEqual(a.arrival_scale, 10)


class OrderTest(unittest.TestCase):
    def test_same_order_and_tau(self):
        same, tau = agreement.order_agreement([(0, 0.0), (1, 1.0), (2, 2.0)])
        self.assertEqual((same, tau), (1.0, 1.0))
        same, tau = agreement.order_agreement([(0, 2.0), (1, 1.0), (2, 0.0)])
        self.assertEqual((same, tau), (0.0, -1.0))

    def test_sim_ties_are_left_out_of_same_order(self):
        # Two jobs in one simulated round: only the pairs with the third count, both concordant.
        same, _ = agreement.order_agreement([(0, 0.1), (0, 0.0), (5, 3.0)])
        self.assertEqual(same, 1.0)


class CompareTest(unittest.TestCase):
    def setUp(self):
        rows = {0: {"status": "done", "submit_ms": "0", "first_start_ms": "0", "end_ms": "5000",
                    "nodes": "n1;n0", "preemptions": "0", "priority": "90"},
                1: {"status": "done", "submit_ms": "500", "first_start_ms": "1000",
                    "end_ms": "4000", "nodes": "n1", "preemptions": "1", "priority": "10"},
                2: {"status": "rejected", "submit_ms": "600", "first_start_ms": "-1",
                    "end_ms": "-1", "nodes": "", "preemptions": "0", "priority": "50"}}
        self.sim = agreement.sim_records(rows)
        real = {0: {"submit": 1.0, "start": 1.2, "end": 6.0, "nodes": ["n-1", "n-0"],
                    "preemptions": 0},
                1: {"submit": 1.5, "start": 2.5, "end": 5.0, "nodes": ["n-0"], "preemptions": 1},
                3: {"submit": 2.0, "start": 3.0, "end": None, "nodes": None, "preemptions": 0}}
        self.real = agreement.real_records(real, {0: 90, 1: 10, 3: 50}, 1.0,
                                          {"n-0": "n0", "n-1": "n1"})

    def test_records(self):
        self.assertEqual(sorted(self.sim), [0, 1])
        self.assertEqual(sorted(self.real), [0, 1])
        self.assertEqual(self.real[0]["nodes"], ["n0", "n1"])
        self.assertAlmostEqual(self.real[1]["start"], 1.5)

    def test_agreement(self):
        c = agreement.compare(self.sim, self.real)
        self.assertEqual((c["jobs"], c["same_nodes"], c["first_diff"]), (2, 0.5, 1))
        self.assertEqual((c["same_order"], c["tau"]), (1.0, 1.0))
        self.assertAlmostEqual(c["err_max"], 0.5)
        self.assertEqual(c["preempted_both"], 1)

    def test_aggregates(self):
        t = agreement.aggregates(self.real, [0, 1])
        self.assertAlmostEqual(t["waits"]["high"], 0.2)
        self.assertAlmostEqual(t["waits"]["low"], 1.0)
        self.assertNotEqual(t["waits"]["medium"], t["waits"]["medium"])  # NaN: no such job.
        self.assertAlmostEqual(t["jct"], 4.25)
        self.assertEqual(t["preemptions"], 1)
        self.assertAlmostEqual(t["makespan"], 5.0)


class WatcherTest(unittest.TestCase):
    """The watch's view of runs, as real_jobs reads it: a victim that finishes before its pods are
    deleted completes its job (as the master treats it); one deleted first is a preemption."""

    @staticmethod
    def pod(alloc, phase="Pending", node="", marked=False, placed=False):
        labels = {"phalanx.io/gang": alloc, "phalanx.io/job-id": alloc.split("-trial")[0],
                  "phalanx.io/gang-size": "1"}
        if marked:
            labels["phalanx.io/preempt"] = "requested"
        return {"metadata": {"name": alloc + "-0", "labels": labels,
                             "annotations": {"phalanx.io/placement": node} if placed else {}},
                "spec": {"nodeName": node,
                         "containers": [{"env": [{"name": "PHALANX_ALLOCATION_TOKEN",
                                                  "value": "t"}]}]},
                "status": {"phase": phase}}

    def test_victim_that_finishes_first_completes_and_one_deleted_first_is_preempted(self):
        w = real_system.Watcher.__new__(real_system.Watcher)
        w.runs, w.lock, w.ack_failures = {}, threading.Lock(), []
        w.cli = lambda argv, token=None: subprocess.CompletedProcess(argv, 0, "", "")
        events = [  # (time, kind, pod)
            (1, "ADDED", self.pod("exp-1-trial-1-r1")),
            (2, "MODIFIED", self.pod("exp-1-trial-1-r1", "Running", "n-0", placed=True)),
            (3, "MODIFIED", self.pod("exp-1-trial-1-r1", "Running", "n-0", True, True)),
            (4, "MODIFIED", self.pod("exp-1-trial-1-r1", "Succeeded", "n-0", True, True)),
            (5, "DELETED", self.pod("exp-1-trial-1-r1", "Succeeded", "n-0", True, True)),
            (1, "ADDED", self.pod("exp-2-trial-2-r1")),
            (2, "MODIFIED", self.pod("exp-2-trial-2-r1", "Running", "n-1", placed=True)),
            (3, "MODIFIED", self.pod("exp-2-trial-2-r1", "Running", "n-1", True, True)),
            (3.5, "DELETED", self.pod("exp-2-trial-2-r1", "Running", "n-1", True, True)),
            (4, "ADDED", self.pod("exp-2-trial-2-r2")),
            (5, "MODIFIED", self.pod("exp-2-trial-2-r2", "Running", "n-0", placed=True)),
            (9, "MODIFIED", self.pod("exp-2-trial-2-r2", "Succeeded", "n-0", placed=True)),
        ]
        for t, kind, pod in events:
            w.on_pod(kind, pod, t)
        jobs = real_system.real_jobs(w.snapshot(), {"exp-1": 0, "exp-2": 1}, 0)
        self.assertEqual((jobs[0]["end"], jobs[0]["preemptions"], jobs[0]["exits"]), (4, 0, []))
        self.assertEqual((jobs[1]["end"], jobs[1]["preemptions"]), (9, 1))
        self.assertEqual(jobs[1]["exits"], [0.5])
        self.assertEqual(jobs[1]["requeues"], [0.5])
        self.assertEqual(jobs[1]["nodes"], ["n-0"])


class DurationTest(unittest.TestCase):
    """A slice job's duration reaches kwok's pod-complete stage: the watcher copies the pod's
    fidelity/duration annotation (users may not write phalanx.io/) when the pod is added."""

    def test_added_pods_get_their_duration_copied_once(self):
        w = real_system.Watcher.__new__(real_system.Watcher)
        w.runs, w.lock, w.ack_failures = {}, threading.Lock(), []
        copied = []
        w.set_duration = lambda name, seconds: copied.append((name, seconds))
        pod = WatcherTest.pod("exp-1-trial-1-r1")
        pod["metadata"]["annotations"][real_system.DURATION_KEY] = "7.5"
        w.on_pod("ADDED", pod, 1)
        w.on_pod("MODIFIED", pod, 2)
        for _ in range(500):  # The copy runs on its own thread.
            if copied:
                break
            threading.Event().wait(0.01)
        self.assertEqual(copied, [("exp-1-trial-1-r1-0", "7.5")])
        self.assertIn(real_system.DURATION_KEY,
                      real_system.experiment_yaml(0, 8, 50, 7.5))


class ReportTest(unittest.TestCase):
    def totals(self, wait, preemptions):
        return {"waits": {"high": 0.01, "medium": wait, "low": 2 * wait}, "wait_p95": 3 * wait,
                "jct": 10.0, "preemptions": preemptions, "makespan": 100.0}

    def one_run(self, same_nodes, first_diff, real_wait):
        c = {"jobs": 3, "same_nodes": same_nodes, "first_diff": first_diff, "same_order": 1.0,
             "tau": 0.99, "err_median": 0.1, "err_p90": 0.5, "err_max": 2.0, "preempted_both": 1}
        return {"timing": {"exit": 0.05, "requeue": None, "late_median": 0.0, "late_max": 0.01},
                "agreement": {"nominal": c, "observed": dict(c, same_nodes=1.0, first_diff=None)},
                "totals": {"real": self.totals(real_wait, 3), "observed": self.totals(1.0, 4)}}

    def test_summary_spans_runs_and_inputs(self):
        runs = [self.one_run(0.5, 7, 1.0), self.one_run(0.25, 9, 1.25)]
        text = " ".join(report.summary(self.totals(1.0, 5), runs).split())
        self.assertIn("25.0 to 100.0% of jobs run on the same nodes", text)
        self.assertIn("the first difference at job 7 to 9", text)
        self.assertIn("within 20% of the real runs'", text)  # 1.0 simulated vs 1.25 real.
        self.assertIn("preemptions: 5 simulated from slice times, 4 to 4 from observed times, 3 "
                      "to 3 real.", text)

    def test_report_renders(self):
        a = argparse.Namespace(offset=0, jobs=3, cluster="1x8", arrival_span=10,
                               duration_scale=100, min_duration=2, max_duration=20, runs=1,
                               arrival_scale=5, min_gap=0.2, max_slots_per_pod=8, seed=1,
                               preempt_exit=0.2, requeue=0.02)
        md = report.report(a, [(0.0, 2.0, 1), (1.0, 3.0, 8), (2.0, 2.0, 16)], 4, {},
                             self.totals(1.0, 5), [self.one_run(0.5, 7, 1.0)], "abc1234", (0.1, 0.2))
        self.assertTrue(md.startswith("### Fidelity\n"))
        self.assertIn("| 1 | observed submits, holds, exit, requeue | 3 | 100.0% | none |", md)
        self.assertIn("0.050 / none s", " ".join(md.split()))
        self.assertTrue(all(len(l) <= 100 for l in md.splitlines()
                            if not l.startswith(("|", "bench/"))))


class SpliceTest(unittest.TestCase):
    def splice(self, text, md, **kw):
        with tempfile.NamedTemporaryFile("w", suffix=".md", delete=False) as f:
            f.write(text)
        publish.splice(f.name, md, **kw)
        with open(f.name) as f:
            out = f.read()
        os.unlink(f.name)
        return out

    def test_inserts_at_the_end_of_the_parent_section(self):
        out = self.splice("# R\n\n## Trace replay\n\nx\n\n### a\n\ny\n\n## Next\n\nz\n",
                          "### Fidelity\n\nf\n", heading="### Fidelity", within="## Trace replay")
        self.assertEqual(out, "# R\n\n## Trace replay\n\nx\n\n### a\n\ny\n\n### Fidelity\n\nf\n\n"
                              "## Next\n\nz\n")

    def test_replaces_the_part_up_to_the_next_heading(self):
        out = self.splice("## Trace replay\n\nx\n\n### Fidelity\n\nold\n",
                          "### Fidelity\n\nnew\n", heading="### Fidelity", within="## Trace replay")
        self.assertEqual(out, "## Trace replay\n\nx\n\n### Fidelity\n\nnew\n")

    def test_whole_section_keeps_the_others(self):
        out = self.splice("## A\n\na\n\n## Trace replay\n\n### Fidelity\n\nold\n\n## B\n\nb\n",
                          "## Trace replay\n\nnew\n")
        self.assertEqual(out, "## A\n\na\n\n## Trace replay\n\nnew\n\n## B\n\nb\n")


class EntryPointTest(unittest.TestCase):
    def test_the_script_imports_its_modules(self):
        script = os.path.join(ROOT, "bench", "replay_fidelity")
        run = subprocess.run([sys.executable, script, "--help"], capture_output=True, text=True,
                             cwd=tempfile.gettempdir())
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("--publish", run.stdout)

    def test_zero_runs_is_refused_naming_the_flag(self):
        script = os.path.join(ROOT, "bench", "replay_fidelity")
        run = subprocess.run([sys.executable, script, "--runs", "0"], capture_output=True,
                             text=True, cwd=tempfile.gettempdir())
        self.assertEqual(run.returncode, 2)
        self.assertIn("--runs: must be at least 1, got 0", run.stderr)


if __name__ == "__main__":
    unittest.main()
