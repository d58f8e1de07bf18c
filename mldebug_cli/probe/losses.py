"""The loss terms of each trainer, separately, with the metric each one pushes (formulas of TRL 1.16).

SFT: token-mean NLL over the trained labels. DPO (``DPOTrainer._compute_loss``): per pair the summed completion
log-ratio margin m; ``sigmoid`` -logσ(βm), ``hinge`` relu(1-βm), ``ipo`` (m̄ - 1/2β)² on the token-averaged margin,
``sft`` the chosen NLL; ``loss_weights`` scale them (TRL 1.16's replacement for ``rpo_alpha``). ORPO
(``trl.experimental.orpo``): chosen NLL - λ·mean logσ(log odds) on the token-averaged log-probs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mldebug_cli.core.errors import UsageError

PAIRED = ("dpo", "orpo")
ORPO_TERM = "orpo-odds-ratio"  # the trainer facts' name of ORPO's λ-weighted term
ORPO_METRIC = "log odds ratio"
MEASURED_TASKS = ("sft", "dpo", "orpo")
DPO_TYPES = ("sigmoid", "hinge", "ipo", "sft")


@dataclass(frozen=True)
class TermSpec:
    name: str
    weight: float
    metric: str
    key: str | None  # the fact naming the config key behind the term


@dataclass
class Sequences:
    """Per-token log-probs of the labels of a batch (pairs: chosen rows first, then rejected)."""

    logps: Any  # [B, T-1]
    mask: Any  # [B, T-1] bool: trained label positions
    rows: list[int]

    def summed(self) -> Any:
        return (self.logps * self.mask).sum(-1)

    def averaged(self) -> Any:
        return self.summed() / self.mask.sum(-1).clamp_min(1)


@dataclass
class TermValue:
    loss: Any  # scalar, unweighted
    metric: Any  # per row or pair
    push: Any  # per row or pair: relative |d loss/d metric|
    rows: list[int]


def term_specs(facts: Any) -> list[TermSpec]:
    """The loss terms the config makes the trainer sum (trainer facts), with their coefficients."""
    task, loss = facts.task, facts.loss
    if task not in MEASURED_TASKS:
        raise UsageError(f"probe measures sft, dpo and orpo runs; this config trains {task}",
                         hint="KTO and GRPO terms are not measured yet")
    specs = []
    for term in loss.terms:
        if task == "dpo" and term.name not in DPO_TYPES:
            raise UsageError(f"probe measures the DPO loss types {', '.join(DPO_TYPES)}; the config uses {term.name!r}")
        if term.name in ("nll", "sft"):
            metric = "label log-prob" if task == "sft" else "chosen label log-prob"
        else:
            metric = ORPO_METRIC if term.name == ORPO_TERM else "margin"
        key = "beta" if term.name == ORPO_TERM else None if task != "dpo" else (
            "loss_weights" if len(loss.terms) > 1 else "loss_type")
        specs.append(TermSpec(term.name, float(term.weight), metric, key))
    return specs


def sequences(logits: Any, labels: Any, rows: list[int]) -> Sequences:
    import torch

    shifted = labels[:, 1:]
    mask = shifted != -100
    logps = torch.log_softmax(logits[:, :-1].float(), dim=-1)
    picked = logps.gather(-1, shifted.clamp_min(0).unsqueeze(-1)).squeeze(-1)
    return Sequences(picked * mask, mask, rows)


def term_values(task: str, specs: list[TermSpec], policy: Sequences, reference: Any, beta: float) -> dict[str, TermValue]:
    """Each term's unweighted loss, metric and push for one batch. ``reference``: summed reference log-probs per
    sequence (DPO), or None."""
    if task == "sft":
        return {"nll": _nll(policy, slice(None))}
    half = policy.logps.shape[0] // 2
    chosen = slice(0, half)
    out: dict[str, TermValue] = {}
    for spec in specs:
        if spec.name in ("nll", "sft"):
            out[spec.name] = _nll(policy, chosen)
        elif spec.name == ORPO_TERM:
            out[spec.name] = _odds_ratio(policy, half)
        else:
            out[spec.name] = _dpo(spec.name, policy, reference, half, beta)
    return out


def _nll(seq: Sequences, rows: slice) -> TermValue:
    import torch

    logps, mask = seq.logps[rows], seq.mask[rows]
    loss = -(logps * mask).sum() / mask.sum().clamp_min(1)
    with torch.no_grad():
        count = mask.sum(-1).clamp_min(1)
        mean_logp = (logps * mask).sum(-1) / count
        slack = ((1 - torch.exp(logps)) * mask).sum(-1) / count  # |d NLL/d label logit| is 1 - p per token
    return TermValue(loss, mean_logp, slack, seq.rows[rows])


def _odds_ratio(seq: Sequences, half: int) -> TermValue:
    import torch
    import torch.nn.functional as F

    avg = seq.averaged()
    c, r = avg[:half], avg[half:]
    log_odds = (c - r) - (_log1mexp(c) - _log1mexp(r))
    loss = -F.logsigmoid(log_odds).mean()
    push = _push(lambda m: -F.logsigmoid(m), log_odds)
    with torch.no_grad():
        metric = log_odds.detach()
    return TermValue(loss, metric, push, seq.rows[:half])


def _dpo(kind: str, seq: Sequences, reference: Any, half: int, beta: float) -> TermValue:
    import torch
    import torch.nn.functional as F

    ratios = seq.summed() - reference
    if kind == "ipo":
        ratios = ratios / seq.mask.sum(-1).clamp_min(1)
    margin = ratios[:half] - ratios[half:]
    formulas: dict[str, Callable[[Any], Any]] = {
        "sigmoid": lambda m: -F.logsigmoid(beta * m),
        "hinge": lambda m: torch.relu(1 - beta * m),
        "ipo": lambda m: (m - 1 / (2 * beta)) ** 2,
    }
    loss = formulas[kind](margin).mean()
    return TermValue(loss, margin.detach(), _push(formulas[kind], margin), seq.rows[:half])


def _push(formula: Callable[[Any], Any], metric: Any) -> Any:
    from mldebug_cli.probe.api import metric_sensitivity

    return metric_sensitivity(formula, metric)


def _log1mexp(x: Any) -> Any:
    import torch

    return torch.where(x > -0.693, torch.log(-torch.expm1(x)), torch.log1p(-torch.exp(x)))
