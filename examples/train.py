#!/usr/bin/env python3
"""An example trial that uses every part of the phalanx SDK (sdk/python): it reads its
hyperparameters and distributed shape, resumes from the trial's latest checkpoint, trains to the
length the searcher asks for while reporting training metrics, validates, checkpoints, stops
gracefully when the master preempts it, and reports its completion. The "model" is a number that
decays towards 0 at the rate `lr`, so the script needs nothing but the SDK.

Run it as the trial process of a phalanx experiment (the pod's environment says where the master is
and which run this is), e.g. `entrypoint: python3 train.py` with
hyperparameters {lr: {type: double, minval: 0.01, maxval: 0.1}} and
searcher {name: single, metric: loss, max_length: {batches: 500}}. Under adaptive_asha the same loop
trains rung by rung: each operation is a rung, validated at its end; when the trial waits for a
promotion the operations end and the run stops (the master resumes it from its checkpoint if it is
promoted later)."""
import json
import os

import phalanx

VALIDATE_EVERY = 100  # Batches between validations and checkpoints.


def restore(ctx):
    """(steps, weight) of the trial's latest checkpoint, or a fresh start."""
    if ctx.checkpoint.directory is None:  # Object storage: this example keeps no state there.
        return 0, 1.0
    path = ctx.checkpoint.restore_path()
    state = os.path.join(path, "state.json") if path else None
    if state and os.path.exists(state):
        with open(state) as f:
            saved = json.load(f)
        return saved["steps"], saved["weight"]
    return 0, 1.0


def checkpoint(ctx, steps, weight):
    with ctx.checkpoint.store_path({"steps_completed": steps}) as (path, uuid):
        with open(os.path.join(path, "state.json"), "w") as f:
            json.dump({"steps": steps, "weight": weight}, f)
    return uuid


def main():
    with phalanx.init() as ctx:
        lr = float(ctx.hparams.get("lr", 0.05))
        d = ctx.distributed
        print(f"rank {d.rank} of {d.size} pods ({d.world_size} processes), chief {d.chief_addr}:"
              f"{d.chief_port}, lr {lr}")
        steps, weight = restore(ctx)
        print(f"starting at step {steps}" + (f" from {ctx.checkpoint.latest}" if steps else ""))
        for op in ctx.searcher.operations():
            while steps < op.length:
                steps += 1
                weight *= 1 - lr
                if d.is_chief:  # Every rank trains; the chief speaks for the run.
                    ctx.train.report_training_metrics(steps, {"loss": weight})
                if steps % VALIDATE_EVERY and steps < op.length:
                    continue
                if d.is_chief:
                    ctx.train.report_validation_metrics(steps, {ctx.searcher.metric or "loss": weight})
                    uuid = checkpoint(ctx, steps, weight) if ctx.checkpoint.directory else None
                    print(f"step {steps}: validation loss {weight:.6f}, checkpoint {uuid}")
                # Every rank asks the master (a run's pods are signalled together). A job with
                # collectives broadcasts the chief's answer instead, so that all stop at one step.
                if ctx.preempt.should_preempt():
                    print("preempted: checkpointed; exiting")
                    if d.is_chief:
                        ctx.preempt.acknowledge()
                    return
        if d.is_chief:
            ctx.complete()
        print(f"completed at step {steps}, loss {weight:.6f}")


if __name__ == "__main__":
    main()
