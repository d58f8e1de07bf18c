"""No gradient path: trainable tensors that get exactly no gradient from the loss.

What it finds
    After a forward and backward pass on the probed rows, the trainable tensors whose gradient is missing (the
    loss never reaches them) or exactly zero, with the reason: reentrant gradient checkpointing whose inputs do
    not require grad (no ``enable_input_require_grads``), or adapters on modules the loss does not use. LoRA's A
    matrices get exactly zero gradient while B is still 0 (the first step, by design): never reported.

Why it matters for training
    The second question: can the parameters change the metric at all? A tensor with no gradient never moves;
    with reentrant checkpointing and a frozen embedding, every adapter inside the checkpointed layers is cut off
    and the run trains nothing while its loss curve looks merely flat. TRL 1.16 and transformers 5.x turn input
    grads on themselves; transformers 4.x with a plain Trainer or a custom loop does not.

Example
    ``4 of 8 trainable tensors get no gradient (...layers.0.self_attn.q_proj.lora_B.default.weight, ...):
    reentrant gradient checkpointing and the inputs do not require grad; 4 LoRA A matrices are zero by design on
    the first step``.

Fix
    Call ``model.enable_input_require_grads()`` after ``get_peft_model``, or set
    ``gradient_checkpointing_kwargs: {use_reentrant: false}``; put adapters on modules the forward pass uses.
"""

from __future__ import annotations

from collections.abc import Iterator

from mldebug_cli.checks.probe.common import ProbeContext
from mldebug_cli.core.findings import Hit
from mldebug_cli.probe.subject import ProbeSubject

SEVERITY = "error"
SUBJECT = "probe"


def run(subject: ProbeSubject, ctx: ProbeContext) -> Iterator[Hit]:
    missing = [t for t in subject.tensors if t.exempt is None and (t.grad_norm is None or t.grad_norm == 0.0)]
    if not missing:
        return
    path = subject.path
    names = ", ".join(t.name for t in missing[:3]) + (", ..." if len(missing) > 3 else "")
    if path.checkpointing and path.reentrant and not path.input_grads:
        why = "reentrant gradient checkpointing and the inputs do not require grad"
        hint = ("call model.enable_input_require_grads() after get_peft_model, or set "
                f"{subject.key('gradient_checkpointing_kwargs')} to {{use_reentrant: false}}")
        key = "gradient_checkpointing_kwargs"
    elif all(t.grad_norm is None for t in missing):
        why = "the loss never reaches these modules"
        hint = "put the adapters on modules the forward pass uses (target_modules)"
        key = "lora_target_modules"
    else:
        why = "their gradient is exactly zero on these rows"
        hint = "check what multiplies them (a zero scale, a masked branch)"
        key = "lora_target_modules"
    exempt = sum(t.exempt is not None for t in subject.tensors)
    spared = f"; {exempt} LoRA A matrices are zero by design on the first step" if exempt else ""
    yield Hit(
        message=f"{len(missing)} of {len(subject.tensors)} trainable tensors get no gradient ({names}): {why}{spared}",
        hint=hint,
        location=subject.location(key),
    )
