"""phalanx: the Python SDK of phalanx-master.

Inside a task pod, phalanx.init() gives the trial's context (distributed shape, hyperparameters,
preemption signal, checkpoints, metrics, searcher). Elsewhere, phalanx.Client calls the master's API
(login, experiments, trial metrics, the job queue). Stubs (phalanx.v1) are generated from the
repository's proto/ when the SDK is built or installed (gen_stubs.py)."""
from phalanx.client import Client
from phalanx.context import Context, init

__all__ = ["Client", "Context", "init"]
