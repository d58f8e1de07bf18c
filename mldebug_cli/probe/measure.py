"""Forward and backward on the probe batches, each loss term separately; the numbers the GP checks read."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

from mldebug_cli.probe.losses import PAIRED, LossParams, Sequences, TermSpec, sequences, term_values, trainer_sum
from mldebug_cli.probe.subject import (
    GroupGradient,
    MetricMeasure,
    NonFinite,
    TensorGrad,
    TermCosine,
    TermMeasure,
    UpdateRatio,
)

SEED = 0
ADAM_BETAS = (0.9, 0.999)
ADAM_EPS = 1e-8


@dataclass
class Batch:
    input_ids: Any
    attention_mask: Any
    labels: Any
    rows: list[int]
    desirable: Any = None  # KTO: per row
    kl: Batch | None = None  # KTO with a KL estimate: the mismatched rows, collated and run on their own, no grad
    advantages: Any = None  # GRPO: per completion
    temperature: float = 1.0  # GRPO: the logits are divided by the sampling temperature
    fused_head: bool = False  # the model carries the trainer's fused LM head: the log-probs come from it


@dataclass
class Measured:
    terms: list[TermMeasure]
    names: list[str]
    grads: dict[str, list[Any]]  # term -> per trainable tensor (weighted)
    total: list[Any]
    error: str | None = None
    non_finite: NonFinite | None = None
    output_rows: dict[int, float] = field(default_factory=dict)


def collate(sequences_: list[tuple[list[int], list[int]]], rows: list[int], pad_id: int, device: str) -> Batch:
    """Right-padded input_ids, attention_mask and labels (-100 on padding), as the trainers' collators pad."""
    import torch

    width = max(len(ids) for ids, _ in sequences_)
    ids = torch.full((len(sequences_), width), pad_id, dtype=torch.long)
    labels = torch.full((len(sequences_), width), -100, dtype=torch.long)
    mask = torch.zeros((len(sequences_), width), dtype=torch.long)
    for i, (seq, lab) in enumerate(sequences_):
        ids[i, : len(seq)] = torch.tensor(seq)
        labels[i, : len(lab)] = torch.tensor(lab)
        mask[i, : len(seq)] = 1
    return Batch(ids.to(device), mask.to(device), labels.to(device), rows)


def autocast(device: str, dtype: str):
    import torch

    if dtype == "fp32":
        return nullcontext()
    return torch.autocast(device_type=device, dtype=torch.float16 if dtype == "fp16" else torch.bfloat16)


def forward(model: Any, batch: Batch) -> Sequences:
    """The batch's per-token log-probs. KTO's KL rows first, as their own batch under no_grad (KTOTrainer's
    ``_compute_kl_logps``): run with the rows, their padding and zero gradients would change the bf16 sums' blocking."""
    kl_summed = None
    if batch.kl is not None:
        import torch

        with torch.no_grad():
            kl_summed = forward(model, batch.kl).summed()
    seq = _forward(model, batch)
    seq.kl_summed = kl_summed
    return seq


def _forward(model: Any, batch: Batch) -> Sequences:
    if batch.fused_head:  # the trainer's own head (TRL's add_fused_lm_head): shifted log-probs, 0 off the labels
        outputs = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask, labels=batch.labels,
                        fused_lm_head=True)
        seq = Sequences(outputs.log_probs, batch.labels[:, 1:] != -100, batch.rows)
        seq.desirable, seq.advantages = batch.desirable, batch.advantages
        seq.outputs = outputs
        seq.inputs = {"input_ids": batch.input_ids, "attention_mask": batch.attention_mask, "labels": batch.labels}
        return seq
    outputs = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask, use_cache=False)
    whole = batch.input_ids.masked_fill(batch.attention_mask == 0, -100)
    seq = sequences(outputs.logits, batch.labels, batch.rows, batch.temperature, whole)
    seq.desirable, seq.advantages = batch.desirable, batch.advantages
    seq.outputs = outputs
    seq.inputs = {"input_ids": batch.input_ids, "attention_mask": batch.attention_mask, "labels": batch.labels}
    return seq


def reference_logps(model: Any, batches: list[Batch], peft: bool, device: str, dtype: str) -> list[Any]:
    """The reference's per-token log-probs of the labels (0 elsewhere): the adapter disabled (PEFT), else the
    weights as loaded. The policy with its adapter disabled stays in training mode, as TRL 1.16's trainers run it
    (``compute_ref_log_probs``: no ``eval()``): bitsandbytes' 8-bit layers multiply otherwise in eval mode
    (``MatmulLtState.is_training``: int8 activations instead of the dequantised weight on the CPU)."""
    import torch

    out = []
    model.train(peft)  # from_pretrained hands the model over in eval mode; the trainer trains it
    with torch.no_grad(), autocast(device, dtype):
        for batch in batches:
            with model.disable_adapter() if peft else nullcontext():
                seq = forward(model, batch)
                out.append(seq.logps.float() if seq.kl_summed is None else (seq.logps.float(), seq.kl_summed.float()))
    return out


def trainable(model: Any) -> list[tuple[str, Any]]:
    return [(name, p) for name, p in model.named_parameters() if p.requires_grad]


def measure(model: Any, task: str, specs: list[TermSpec], batches: list[Batch], references: list[Any] | None,
            params: LossParams, device: str, dtype: str) -> Measured:
    """Each term's gradient (weighted by its coefficient) summed over the batches, and its push per row."""
    import torch

    from mldebug_cli.probe.api import TermGradients, term_gradients

    named = trainable(model)
    totals = TermGradients([n for n, _ in named], {})
    # a QLoRA adapter in bf16 (TRL casts it) rounds each backward's gradients the same way, without autocast
    rounded = dtype != "fp32" or any(p.dtype != torch.float32 for _, p in named)
    per_term: dict[str, dict[str, list[Any]]] = {s.name: {"push": [], "metric": [], "rows": [], "loss": []}
                                                    for s in specs}
    error = None
    torch.manual_seed(SEED)
    model.train()
    for index, batch in enumerate(batches):
        with autocast(device, dtype):
            seq = forward(model, batch)
        values = term_values(task, specs, seq, references[index] if references else None, params)
        weighted = {s.name: values[s.name].loss * s.weight for s in specs}
        if any(not bool(torch.isfinite(v.detach()).all()) for v in weighted.values()):
            return Measured([], totals.names, {}, [], non_finite=_locate_non_finite(model, batch, device, dtype))
        for spec in specs:
            value = values[spec.name]
            per_term[spec.name]["push"] += [float(x) for x in value.push]
            per_term[spec.name]["metric"] += [float(x) for x in value.metric]
            per_term[spec.name]["rows"] += list(value.rows)
            per_term[spec.name]["loss"].append(float(value.loss.detach()) if hasattr(value.loss, "detach") else float(value.loss))
        if not any(v.requires_grad for v in weighted.values()):
            error = "no loss term requires grad: backward cannot run (no trainable parameter is on the loss's path)"
        # under autocast the sum of the terms' gradients is not the trainer's one-pass gradient (each backward rounds
        # its own bf16/fp16 output gradients: 7e-4 relative on an ORPO LoRA in bf16; 1e-3 on a DPO sigmoid+sft QLoRA in
        # fp32, whose adapter is bf16): take that one as well
        totals.add(term_gradients(weighted, named, together=rounded,
                                  combined_loss=trainer_sum(specs, values) if rounded else None))
    total = totals.total()
    if any(g is not None and not bool(torch.isfinite(g).all()) for g in total):
        return Measured([], totals.names, {}, [], non_finite=_locate_non_finite(model, batches[0], device, dtype))
    norms = totals.norms()
    sources = {user.name: user.spec for user in params.custom}
    terms = [TermMeasure(s.name, s.weight, s.metric, tuple(per_term[s.name]["rows"]), tuple(per_term[s.name]["push"]),
                         tuple(per_term[s.name]["metric"]), norms.get(s.name, 0.0), s.key,
                         losses=tuple(per_term[s.name]["loss"]), source=sources.get(s.name))
             for s in specs]
    return Measured(terms, totals.names, totals.grads, total, error)


def metric_gradients(model: Any, batches: list[Batch], user: Any, device: str, dtype: str) -> MetricMeasure:
    """The user's metric (``--metric``), its mean over the batches, and d(metric)/d(param): the norm per parameter
    group (a layer's block, the embedding, the head) and over all trainable tensors (None: nothing reaches them)."""
    import torch

    from mldebug_cli.probe.api import TermGradients, term_gradients
    from mldebug_cli.probe.custom import parameter_group, user_value

    named = trainable(model)
    totals = TermGradients([n for n, _ in named], {})
    values = []
    model.train()
    for batch in batches:
        with autocast(device, dtype):
            seq = forward(model, batch)
        value = user_value(user, seq.outputs, seq.inputs or {})
        values.append(float(value.detach()))
        totals.add(term_gradients({"metric": value / len(batches)}, named))
    grads = totals.grads.get("metric", [None] * len(named))
    groups: dict[str, list[Any]] = {}
    for name, grad in zip(totals.names, grads):
        groups.setdefault(parameter_group(name), []).append(grad)
    reached = [g for g in grads if g is not None]
    total = math.sqrt(sum(float(g.double().pow(2).sum()) for g in reached)) if reached else None
    finite = total is None or math.isfinite(total)
    group_norms = tuple(
        GroupGradient(group, len(parts), None if all(g is None for g in parts)
                      else math.sqrt(sum(float(g.double().pow(2).sum()) for g in parts if g is not None)))
        for group, parts in groups.items())
    return MetricMeasure(user.spec, statistics.fmean(values) if values else math.nan, total, group_norms,
                         len(named), finite and bool(torch.isfinite(torch.tensor(values)).all()))


def tensor_grads(model: Any, measured: Measured) -> list[TensorGrad]:
    """Per trainable tensor: its gradient norm (None: nothing reached it) and why an exact zero is by design."""
    params = dict(trainable(model))
    out = []
    for name, grad in zip(measured.names, measured.total):
        norm = None if grad is None else float(grad.double().norm())
        exempt = None
        if "lora_A" in name and (norm is None or norm == 0.0):
            partner = params.get(name.replace("lora_A", "lora_B"))
            if partner is not None and not bool(partner.detach().any()):
                exempt = "LoRA A with B still 0: no gradient on the first step by design"
        out.append(TensorGrad(name, params[name].numel(), norm, exempt))
    return out


def cosines(measured: Measured) -> list[TermCosine]:
    from mldebug_cli.probe.api import TermGradients

    grads = TermGradients(measured.names, measured.grads)
    norms = grads.norms()
    names = list(measured.grads)
    return [TermCosine(a, b, grads.cosine(a, b), norms[a], norms[b])
            for i, a in enumerate(names) for b in names[i + 1:]]


def update_ratio(model: Any, measured: Measured, optimizer: str, lr: float, state: dict[str, Any] | None) -> UpdateRatio:
    """RMS(update)/RMS(param) per tensor for one optimizer step at ``lr`` with the current gradient (Adam: from the
    checkpoint's moments when there are some, else a first step, where the update is lr·g/|g|). A LoRA pair is
    one tensor: the change of scale·B·A against the base weight it adds to (B starts at 0, so B alone has no
    scale)."""
    params = dict(trainable(model))
    grads = dict(zip(measured.names, measured.total))
    adam = "adam" in optimizer.lower()

    def stepped(name: str) -> Any:
        grad, p = grads.get(name), params[name].detach().float()
        if grad is None:
            return p
        step = _adam_direction(grad.float(), (state or {}).get(name)) if adam else grad.float()
        return p - lr * step

    modules = dict(model.named_modules())
    ratios: list[tuple[str, float]] = []
    for name in measured.names:
        if "lora_A" in name:
            continue
        if "lora_B" in name:
            ratio = _lora_ratio(name, params, modules, stepped) if grads.get(name) is not None else None
        else:
            p = params[name].detach().float()
            ratio = _rms(stepped(name) - p) / _rms(p) if bool(p.any()) and grads.get(name) is not None else None
        if ratio is not None:
            ratios.append((name.replace(".lora_B", ""), ratio))
    ratios.sort(key=lambda item: item[1])
    median = statistics.median(r for _, r in ratios) if ratios else math.nan
    return UpdateRatio(optimizer, lr, median, tuple(ratios[:3]), tuple(reversed(ratios[-3:])), len(ratios))


def _lora_ratio(name: str, params: dict[str, Any], modules: dict[str, Any], stepped: Callable[[str], Any]) -> float | None:
    a_name = name.replace("lora_B", "lora_A")
    owner = modules.get(name.split(".lora_B.")[0])
    adapter = name.split(".lora_B.")[1].split(".")[0]
    base = getattr(getattr(owner, "base_layer", None), "weight", None)
    if a_name not in params or base is None or owner is None:
        return None
    scale = float(owner.scaling.get(adapter, 1.0)) if isinstance(getattr(owner, "scaling", None), dict) else 1.0
    a, b = params[a_name].detach().float(), params[name].detach().float()
    change = scale * (stepped(name) @ stepped(a_name) - b @ a)
    return _rms(change) / _rms(base.detach().float())


def _adam_direction(grad: Any, moments: dict[str, Any] | None) -> Any:
    b1, b2 = ADAM_BETAS
    if moments is None:
        m, v, t = grad * (1 - b1), grad * grad * (1 - b2), 1
    else:
        m = b1 * moments["exp_avg"].float() + (1 - b1) * grad
        v = b2 * moments["exp_avg_sq"].float() + (1 - b2) * grad * grad
        t = moments["step"] + 1
    return (m / (1 - b1 ** t)) / ((v / (1 - b2 ** t)).sqrt() + ADAM_EPS)


def _rms(t: Any) -> float:
    return float(t.double().pow(2).mean().sqrt())


def _locate_non_finite(model: Any, batch: Batch, device: str, dtype: str) -> NonFinite:
    from mldebug_cli.probe.api import trace_non_finite

    def run():
        with autocast(device, dtype):
            return forward(model, batch).summed().sum()

    trace = trace_non_finite(model, run)
    if trace.first is None:
        return NonFinite("the loss", "forward", dtype, "non-finite", tuple(trace.before()))
    module, phase, value = trace.first
    return NonFinite(module, phase, dtype, value, tuple(trace.before()))


def metric_mean(model: Any, task: str, specs: list[TermSpec], batches: list[Batch], references: list[Any] | None,
                params: LossParams, term: str, device: str, dtype: str) -> float:
    """The mean of ``term``'s metric over the batches, without gradients."""
    import torch

    model.eval()
    values: list[float] = []
    with torch.no_grad():
        for index, batch in enumerate(batches):
            with autocast(device, dtype):
                seq = forward(model, batch)
            values += [float(x) for x in term_values(task, specs, seq, references[index] if references else None,
                                                      params)[term].metric]
    return statistics.fmean(values) if values else math.nan


def train_steps(model: Any, task: str, specs: list[TermSpec], batches: list[Batch], references: list[Any] | None,
                params: LossParams, steps: int, lr: float, weight_decay: float, device: str, dtype: str,
                progress: Callable[[str], None] | None = None) -> None:
    """``steps`` AdamW steps on the batches in turn (seeded), the terms weighted by their coefficients."""
    import torch

    torch.manual_seed(SEED)
    tensors = [p for _, p in trainable(model)]
    optimizer = torch.optim.AdamW(tensors, lr=lr, weight_decay=weight_decay, betas=ADAM_BETAS, eps=ADAM_EPS)
    model.train()
    for step in range(steps):
        index = step % len(batches)
        with autocast(device, dtype):
            seq = forward(model, batches[index])
        values = term_values(task, specs, seq, references[index] if references else None, params)
        loss = sum(values[s.name].loss * s.weight for s in specs if s.weight)
        optimizer.zero_grad(set_to_none=True)
        if isinstance(loss, torch.Tensor) and loss.requires_grad:
            loss.backward()
            optimizer.step()
        if progress is not None:
            progress(f"step {step + 1}/{steps}")
    optimizer.zero_grad(set_to_none=True)


def paired(task: str) -> bool:
    return task in PAIRED
