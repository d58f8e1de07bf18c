"""A trainer checkpoint's ``optimizer.pt``: Adam's moments matched to the trainable parameters, and how they sit
against the current gradient."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import Any

from mldebug_cli.core.errors import InputError
from mldebug_cli.probe.subject import OptimizerState

OPTIMIZER_FILE = "optimizer.pt"


def read_moments(folder: str, model: Any) -> dict[str, dict[str, Any]] | None:
    """parameter name -> {exp_avg, exp_avg_sq, step}, matching the Trainer's parameter groups (weight decay first,
    then the rest, each in named_parameters order). None when the folder has no optimizer.pt."""
    import torch
    from transformers import Trainer

    path = Path(folder) / OPTIMIZER_FILE
    if not path.is_file():
        return None
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # a truncated or foreign pickle: say which file
        raise InputError(f"{path}: cannot read the optimizer state ({type(exc).__name__}: {exc})") from None
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    # called unbound: it reads only the model (transformers' Trainer.get_decay_parameter_names uses no self attribute)
    decay = set(Trainer.get_decay_parameter_names(None, model))  # type: ignore[arg-type]
    order = [n for n, _ in named if n in decay] + [n for n, _ in named if n not in decay]
    indices = [i for group in state.get("param_groups", []) for i in group.get("params", [])]
    shapes = dict((n, p.shape) for n, p in named)
    if len(indices) != len(order):
        raise InputError(f"{path}: holds {len(indices)} parameter states, the model has {len(order)} trainable "
                         "tensors", hint="pass the checkpoint that trained this model and adapter")
    moments: dict[str, dict[str, Any]] = {}
    for name, index in zip(order, indices):
        entry = state.get("state", {}).get(index)
        if not entry or "exp_avg" not in entry:
            continue
        if tuple(entry["exp_avg"].shape) != tuple(shapes[name]):
            raise InputError(f"{path}: the state of {name} has shape {tuple(entry['exp_avg'].shape)}, the parameter "
                             f"{tuple(shapes[name])}", hint="pass the checkpoint that trained this model and adapter")
        step = entry.get("step", 0)
        moments[name] = {"exp_avg": entry["exp_avg"], "exp_avg_sq": entry["exp_avg_sq"],
                         "step": int(step.item() if hasattr(step, "item") else step)}
    return moments


def global_step(folder: str) -> int | None:
    try:
        return int(json.loads((Path(folder) / "trainer_state.json").read_text())["global_step"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def compare(folder: str, moments: dict[str, dict[str, Any]], names: list[str], grads: list[Any]) -> OptimizerState:
    """Cosine of exp_avg with the current gradient, the share of elements whose tensor points against it, and the
    median RMS of g/(sqrt(v̂)+eps): Adam's step for this gradient relative to a fresh optimizer's (~1)."""
    dot = a2 = b2 = 0.0
    against = total = 0
    ratios = []
    for name, grad in zip(names, grads):
        entry = moments.get(name)
        if entry is None or grad is None:
            continue
        m, v, g = entry["exp_avg"].double(), entry["exp_avg_sq"].double(), grad.double()
        d, mm, gg = float((m * g).sum()), float((m * m).sum()), float((g * g).sum())
        dot, a2, b2 = dot + d, a2 + mm, b2 + gg
        total += g.numel()
        against += g.numel() if d < 0 else 0
        step = max(entry["step"], 1)
        v_hat = v / (1 - 0.999 ** step)
        if gg > 0:
            ratios.append(float((g / (v_hat.sqrt() + 1e-8)).pow(2).mean().sqrt()))
    cosine = dot / math.sqrt(a2 * b2) if a2 > 0 and b2 > 0 else math.nan
    steps = {e["step"] for e in moments.values()}
    return OptimizerState(
        path=str(Path(folder) / OPTIMIZER_FILE), step=global_step(folder) or (max(steps) if steps else None),
        cosine=cosine, against_share=against / total if total else math.nan,
        step_ratio=statistics.median(ratios) if ratios else math.nan, tensors=len(ratios),
    )
