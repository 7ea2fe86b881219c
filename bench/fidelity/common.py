"""Shared by the fidelity modules: the repository root, the test cluster's namespace and password,
the priority classes, logging and waiting."""
import os
import subprocess
import sys
import time


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

NAMESPACE = "fidelity"
PASSWORD = "fidelity"
# The restart overhead both engines charge victims: a slice's jobs restart from scratch, and the
# real cost of a restart (pods deleted and recreated) is measured as the requeue time instead.
RESTART_OVERHEAD_MS = 0
PRIORITY_CLASSES = {"phalanx-high-priority": 100, "phalanx-medium-priority": 50,
                    "phalanx-low-priority": 1}


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def script(*argv, check=True):
    """Runs scripts/<argv[0]> with the other arguments, its output on stderr."""
    subprocess.run([os.path.join(ROOT, "scripts", argv[0]), *argv[1:]], check=check,
                   stdout=sys.stderr)


def wait_for(what, check, timeout=120):
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            sys.exit(f"replay_fidelity: timed out waiting for {what}")
        time.sleep(0.2)
