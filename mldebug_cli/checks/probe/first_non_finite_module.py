"""First non-finite module: in the run's dtype, the first module whose output or gradient is inf/NaN.

What it finds
    When the loss or a gradient of the probed rows is not finite in the config's compute dtype (fp16/bf16
    autocast, or the weights' dtype), a second pass with hooks on every module names the first whose forward
    output (or, going backward, gradient) is inf or NaN, and the largest absolute values of the modules that ran
    before it.

Why it matters for training
    A NaN loss says that, not where. fp16's largest value is 65504: one layer whose activations grow past it
    poisons every later value, and the run's loss goes NaN on the first step or after a few. The module and the
    sizes before it say whether to fix a layer, the dtype, or the data.

Example
    ``model.layers.1.mlp.down_proj's forward output is inf in fp16 (largest before it:
    model.layers.1.mlp.up_proj 3.1e+04, model.layers.1.mlp.act_fn 2.2e+04)``.

Fix
    Train in bf16 (``bf16: true``) or fp32 instead of fp16; find why that module's inputs grow (a bad checkpoint,
    a layer scaled by a merge); lower the LR if it appears after some steps.
"""

from __future__ import annotations

from collections.abc import Iterator

from mldebug_cli.checks.probe.common import ProbeContext, fmt
from mldebug_cli.core.findings import Hit
from mldebug_cli.probe.subject import ProbeSubject

SEVERITY = "error"
SUBJECT = "probe"


def run(subject: ProbeSubject, ctx: ProbeContext) -> Iterator[Hit]:
    found = subject.non_finite
    if found is None:
        return
    before = ", ".join(f"{name} {fmt(value)}" for name, value in found.before) or "none ran before it"
    yield Hit(
        message=f"{found.module}'s {found.phase} {'output' if found.phase == 'forward' else 'gradient'} is "
                f"{found.value} in {found.dtype} (largest before it: {before})",
        hint="train in bf16 or fp32, or find why that module's inputs grow" if found.dtype == "fp16"
        else "find why that module's inputs grow (the weights, the data), or lower the LR",
        location=subject.location(found.dtype if found.dtype in ("fp16", "bf16") else "model_dtype"),
    )
