"""A DeepSpeed config on a single process: it must still be started by a DeepSpeed-aware launcher.

What it finds
    Runs whose config names a DeepSpeed config (``deepspeed:``, a file or inline) while the run is
    planned on one process (``--world-size 1``, the default).

Why it matters for training
    With a DeepSpeed config the Trainer prepares the model through accelerate's DeepSpeed plugin; when
    that config has an ``optimizer`` block, accelerate hands out a stand-in, ``DummyOptim``, that only
    DeepSpeed's engine replaces. Started without the plugin active (plain ``python`` on one GPU, or an
    ``accelerate launch`` whose accelerate config does not enable DeepSpeed), the stand-in is stepped and
    the run stops at its first optimizer step with ``'DummyOptim' object has no attribute 'step'``
    (accelerate utils/deepspeed.py: the class has no ``step``). On one GPU, ZeRO also buys little unless it
    offloads to the CPU. ``mldebug check-run`` names the same error in a crashed log (RN040).

Example
    ``deepspeed: ds_z2.json`` in a TrainingArguments YAML checked with the default ``--world-size 1``.

Fix
    Launch with ``deepspeed train.py`` or ``accelerate launch --use_deepspeed``; on one GPU without CPU
    offload, drop the ``deepspeed`` key (or the DeepSpeed config's ``optimizer`` block).
"""

from __future__ import annotations

from collections.abc import Iterator

from mldebug_cli.checks.schedule import at_key
from mldebug_cli.core.findings import Hit
from mldebug_cli.schedule.model import Simulation

SEVERITY = "info"
SUBJECT = "schedule"


def run(subject: Simulation, ctx: None) -> Iterator[Hit]:
    spec = subject.spec
    if spec.deepspeed is None or spec.world_size != 1:
        return
    named = spec.deepspeed if isinstance(spec.deepspeed, str) else "an inline DeepSpeed config"
    yield Hit(
        message=(f"the run uses DeepSpeed ({named}) on one process: started without DeepSpeed's launcher it stops at "
                 "the first step with \"'DummyOptim' object has no attribute 'step'\" (accelerate's stand-in for the "
                 "DeepSpeed config's optimizer)"),
        hint="launch with `deepspeed` or `accelerate launch --use_deepspeed` (pass --world-size for a multi-GPU run); "
             "on one GPU without CPU offload, drop the deepspeed key",
        location=at_key(subject, spec.key("deepspeed"), "deepspeed"),
    )
