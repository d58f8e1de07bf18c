"""The loss terms of each trainer, separately, with the metric each one pushes (formulas of TRL 1.16).

SFT: token-mean NLL over the trained labels. DPO (``DPOTrainer._compute_loss``): per pair the summed completion
log-ratio margin m; ``sigmoid`` -logσ(βm), ``hinge`` relu(1-βm), ``ipo`` (m̄ - 1/2β)² on the token-averaged margin,
``sft`` the chosen NLL; ``loss_weights`` scale them (TRL 1.16's replacement for ``rpo_alpha``). ORPO
(``trl.experimental.orpo``): chosen NLL over every attended token (prompt and response) - λ·mean logσ(log odds) on
the token-averaged completion log-probs.
KTO (``KTOTrainer._compute_loss``): per row the summed completion log-ratio r; the KL estimate z₀ = mean over the
batch of the mismatched completions' log-ratios (each prompt with the previous row's completion), detached and
clamped at 0; desirable rows w_d·(1 - σ(β(r - z₀))), undesirable w_u·(1 - σ(β(z₀ - r))), the mean of both
(``apo_zero_unpaired``: no KL, 1 - σ(βr) and σ(βr)). GRPO (``GRPOTrainer._compute_loss``, on-policy): per token
-min(ρA, clip(ρ)A) with ρ = exp(logp - logp.detach()) plus β·(exp(ref - logp) - (ref - logp) - 1), reduced as
``loss_type`` says (grpo: per-sequence means, bnpo: the batch's token mean, dr_grpo: the sum over
B·max_completion_length, dapo: the sum over the generation batch's completion tokens).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from mldebug_cli.core.errors import UsageError
from mldebug_cli.frameworks.trainer_facts import PolicyFacts

PAIRED = ("dpo", "orpo")
ORPO_TERM = "orpo-odds-ratio"  # the trainer facts' name of ORPO's λ-weighted term
ORPO_METRIC = "log odds ratio"
MEASURED_TASKS = ("sft", "dpo", "orpo", "kto", "grpo")
DPO_TYPES = ("sigmoid", "hinge", "ipo", "sft")
KTO_TYPES = ("kto", "apo_zero_unpaired")
GRPO_TYPES = ("grpo", "dapo", "dr_grpo", "bnpo")
SCALE_REWARDS = ("group", "batch", "none")
POLICY_TERM = "grpo-policy"
KTO_METRIC = "margin over the KL estimate"
POLICY_METRIC = "advantage RMS of the group"
POLICY_PULL = "advantage-weighted mean log-prob"  # what the policy term raises, per completion


@dataclass(frozen=True)
class LossParams:
    """The coefficients the loss formulas read, beside each term's weight."""

    beta: float = 0.1
    loss_type: str = ""  # KTO's or GRPO's loss_type
    desirable_weight: float = 1.0
    undesirable_weight: float = 1.0
    policy: Any = None  # trainer facts' PolicyFacts (GRPO)
    max_completion_length: int | None = None
    accumulation: int = 1  # GRPO: micro-batches per optimizer step (the normaliser of grpo/bnpo/dr_grpo)
    items: int = 1  # GRPO dapo: completion tokens in the generation batch
    custom: tuple[Any, ...] = ()  # the user's own loss terms (probe.custom.UserFunction), added with weight 1
    upcast_logits: bool = False  # mixed precision: accelerate hands the loss fp32 logits (convert_outputs_to_fp32)


def loss_params(facts: Any) -> LossParams:
    loss = facts.loss
    kind = loss.loss_type[0] if loss.loss_type else ""
    if facts.task == "kto" and kind not in KTO_TYPES:
        raise UsageError(f"probe measures the KTO loss types {', '.join(KTO_TYPES)}; the config uses {kind!r}")
    if facts.task == "grpo":
        if kind not in GRPO_TYPES:
            raise UsageError(f"probe measures the GRPO loss types {', '.join(GRPO_TYPES)}; the config uses {kind!r}")
        scale = (loss.policy or PolicyFacts()).scale_rewards
        if scale not in SCALE_REWARDS:
            raise UsageError(f"scale_rewards {scale!r} is none of {', '.join(SCALE_REWARDS)}: GRPOTrainer refuses it")
    beta = loss.beta if loss.beta is not None else 0.1
    policy = (loss.policy or PolicyFacts()) if facts.task == "grpo" else None
    return LossParams(float(beta), kind, loss.desirable_weight, loss.undesirable_weight, policy,
                      facts.max_completion_length)


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
    desirable: Any = None  # KTO: [B] bool per row
    kl_summed: Any = None  # KTO with a KL estimate: [B] summed log-probs of the mismatched rows (no grad)
    advantages: Any = None  # GRPO: [B] per completion
    whole: Sequences | None = None  # every attended token as a label (ORPO's NLL: prompt and response)
    outputs: Any = None  # the model's forward output (the user's own terms read its logits)
    inputs: Mapping[str, Any] | None = None  # the batch's input_ids, attention_mask and labels

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
    # the term's weighted share of the loss as the trainer writes it (None: loss × weight): in bf16 the one-pass
    # gradient follows the trainer's own operations, whose roundings another order of the same sums does not repeat
    trainer_form: Any = None


def term_specs(facts: Any) -> list[TermSpec]:
    """The loss terms the config makes the trainer sum (trainer facts), with their coefficients."""
    task, loss = facts.task, facts.loss
    if task not in MEASURED_TASKS:
        raise UsageError(f"probe measures sft, dpo, orpo, kto and grpo runs; this config trains {task}")
    specs = []
    for term in loss.terms:
        if task == "dpo" and term.name not in DPO_TYPES:
            raise UsageError(f"probe measures the DPO loss types {', '.join(DPO_TYPES)}; the config uses {term.name!r}")
        if task == "kto" and term.name != "kto":
            raise UsageError(f"probe measures KTO's own loss; the config adds {term.name!r}")
        if task in ("kto", "grpo"):
            metric = {"kto": KTO_METRIC, POLICY_TERM: POLICY_PULL}.get(term.name, "per-token KL to the reference")
            specs.append(TermSpec(term.name, float(term.weight), metric, "loss_type" if term.name != "kl" else "beta"))
            continue
        if term.name in ("nll", "sft"):
            metric = "label log-prob" if task == "sft" else "chosen label log-prob"
        else:
            metric = ORPO_METRIC if term.name == ORPO_TERM else "margin"
        key = "beta" if term.name == ORPO_TERM else None if task != "dpo" else (
            "loss_weights" if len(loss.terms) > 1 else "loss_type")
        specs.append(TermSpec(term.name, float(term.weight), metric, key))
    return specs


def sequences(logits: Any, labels: Any, rows: list[int], temperature: float = 1.0, whole: Any = None) -> Sequences:
    """The per-token log-probs of ``labels`` (-100: not trained); ``whole``, the same for another label tensor
    (every attended token) from the same log-softmax."""
    import torch

    logps = torch.log_softmax(logits[:, :-1].float() / temperature, dim=-1)

    def picked(targets: Any) -> Sequences:
        shifted = targets[:, 1:]
        mask = shifted != -100
        chosen = logps.gather(-1, shifted.clamp_min(0).unsqueeze(-1)).squeeze(-1)
        return Sequences(chosen * mask, mask, rows)

    out = picked(labels)
    out.whole = None if whole is None else picked(whole)
    return out


CUSTOM_METRIC = "its value"  # what a user's loss term is read by: there is no per-row metric it pushes


def custom_specs(users: tuple[Any, ...], specs: list[TermSpec]) -> list[TermSpec]:
    """One term per ``--loss-term`` function (weight 1), named after it; a name the trainer's terms use is refused."""
    taken = {s.name for s in specs}
    out = []
    for user in users:
        if user.name in taken:
            raise UsageError(f"{user.flag} {user.spec}: the config's loss already has a term {user.name!r}",
                             hint="rename the function")
        taken.add(user.name)
        out.append(TermSpec(user.name, 1.0, CUSTOM_METRIC, None))
    return out


def term_values(task: str, specs: list[TermSpec], policy: Sequences, reference: Any,
                params: LossParams) -> dict[str, TermValue]:
    """Each term's unweighted loss, metric and push for one batch, the user's own terms last. ``reference``: the
    reference's per-token log-probs of the labels (DPO, KTO, GRPO with β > 0), or None."""
    from mldebug_cli.probe.custom import user_value

    users = {user.name: user for user in params.custom}
    out = _trainer_terms(task, [s for s in specs if s.name not in users], policy, reference, params)
    for name, user in users.items():
        loss = user_value(user, policy.outputs, policy.inputs or {})
        out[name] = TermValue(loss, loss.detach().reshape(1), loss.detach().reshape(1)[:0], [])
    return out


def trainer_sum(specs: list[TermSpec], values: Mapping[str, TermValue]) -> Any | None:
    """The loss as the trainer adds its terms, each written the trainer's way where it says (``trainer_form``); None:
    no term does, the weighted terms' sum is the trainer's."""
    forms = [values[s.name].trainer_form for s in specs]
    if all(f is None for f in forms):
        return None
    parts = [f if f is not None else values[s.name].loss * s.weight for s, f in zip(specs, forms)]
    return sum(parts[1:], parts[0])


def _trainer_terms(task: str, specs: list[TermSpec], policy: Sequences, reference: Any,
                   params: LossParams) -> dict[str, TermValue]:
    if task == "sft":
        return {"nll": _nll(policy, slice(None))}
    if task == "kto":
        return {"kto": _kto(policy, reference, params)}
    if task == "grpo":
        return _grpo(specs, policy, reference, params)
    beta = params.beta
    half = policy.logps.shape[0] // 2
    chosen = slice(0, half)
    out: dict[str, TermValue] = {}
    orpo = _orpo_trainer(policy, params) if task == "orpo" else None
    for spec in specs:
        if spec.name == "nll" and task == "orpo":  # ORPOTrainer: "computed over the full prompt and response"
            out[spec.name] = _nll(policy.whole or policy, chosen)
            if orpo is not None:
                out[spec.name].loss = orpo[0]
        elif spec.name in ("nll", "sft"):
            out[spec.name] = _nll(policy, chosen)
        elif spec.name == ORPO_TERM:
            out[spec.name] = _odds_ratio(policy, half, orpo[1] if orpo is not None else None, spec.weight)
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


def _odds_ratio(seq: Sequences, half: int, averaged: Any = None, weight: float = 1.0) -> TermValue:
    """ORPO's odds-ratio term -mean logσ(log odds) on the token-averaged log-probs (``averaged``: the trainer's own,
    from ``_orpo_trainer``; its ``trainer_form`` is the trainer's -mean(λ·logσ(log odds)))."""
    import torch
    import torch.nn.functional as F

    avg = seq.averaged() if averaged is None else averaged
    c, r = avg[:half].float(), avg[half:].float()
    log_odds = (c - r) - (_log1mexp(c) - _log1mexp(r))
    ratio = F.logsigmoid(log_odds)
    loss = -ratio.mean()
    push = _push(lambda m: -F.logsigmoid(m), log_odds)
    with torch.no_grad():
        metric = log_odds.detach()
    return TermValue(loss, metric, push, seq.rows[:half], trainer_form=-(weight * ratio).mean())


def _orpo_trainer(seq: Sequences, params: LossParams) -> tuple[Any, Any] | None:
    """TRL 1.16's ORPOTrainer on the batch's logits, op for op (``concatenated_forward``): the chosen rows'
    ``nn.CrossEntropyLoss`` over every attended token, and every row's token-averaged completion log-prob from
    ``get_batch_logps``/``selective_log_softmax`` (fp32 logits: gather minus a per-row logsumexp; bf16: a per-row
    log_softmax). Both read one logits tensor, fp32 under mixed precision as accelerate converts the outputs, so their
    gradients add in it before the cast back: what the trainer rounds in bf16, this rounds the same way. None: the
    forward gave no logits (the fused head)."""
    import torch
    import torch.nn.functional as F

    logits = getattr(seq.outputs, "logits", None)
    if logits is None or seq.inputs is None:
        return None
    if params.upcast_logits:
        logits = logits.float()
    inputs = seq.inputs
    half = logits.shape[0] // 2
    whole = torch.where(inputs["attention_mask"] == 1, inputs["input_ids"], -100)
    chosen = logits[:half][..., :-1, :].contiguous()
    nll = F.cross_entropy(chosen.view(-1, chosen.shape[-1]), whole[:half][..., 1:].contiguous().view(-1))
    labels = inputs["labels"][:, 1:].clone()
    shifted = logits[:, :-1, :]
    mask = labels != -100
    labels = torch.where(labels == -100, 0, labels).unsqueeze(-1)
    if shifted.dtype in (torch.float32, torch.float64):
        lse = torch.stack([torch.logsumexp(row, dim=-1) for row in shifted])
        per_token = (torch.gather(shifted, dim=-1, index=labels) - lse.unsqueeze(-1)).squeeze(-1)
    else:
        per_token = torch.stack([F.log_softmax(row, dim=-1).gather(dim=-1, index=index)
                                 for row, index in zip(shifted, labels)]).squeeze(-1)
    return nll, (per_token * mask).sum(-1) / mask.sum(-1)


def _dpo(kind: str, seq: Sequences, reference: Any, half: int, beta: float) -> TermValue:
    import torch
    import torch.nn.functional as F

    ratios = seq.summed() - reference.sum(-1)
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


def _kto(seq: Sequences, reference: Any, params: LossParams) -> TermValue:
    """KTOTrainer's loss, op for op (in bf16 another order of the same sums rounds the gradients otherwise): the
    rows' summed log-ratios r; ``kto``: z₀ from the KL rows (``seq.kl_summed``, each prompt with the previous row's
    completion, and the reference's), desirable rows 1 - σ(β(r - z₀)), undesirable 1 - σ(β(z₀ - r));
    ``apo_zero_unpaired``: 1 - σ(βr) and σ(βr); each weighted, their nanmean. ``reference``: the reference's
    per-token log-probs, with its KL rows' sums as a pair when the loss has a KL estimate."""
    import torch

    ref_main, ref_kl = reference if isinstance(reference, tuple) else (reference, None)
    ratios = seq.summed() - ref_main.sum(-1)
    if params.loss_type == "kto":
        kl = (seq.kl_summed - ref_kl).mean().detach().clamp(min=0)
    else:
        kl = torch.zeros((), device=ratios.device)
    desirable = seq.desirable.to(ratios.device)
    margin = torch.where(desirable, ratios - kl, kl - ratios)  # larger: the row is where KTO wants it
    beta = params.beta
    if params.loss_type == "kto":
        chosen, rejected = 1 - torch.sigmoid(beta * (ratios - kl)), 1 - torch.sigmoid(beta * (kl - ratios))
    else:  # apo_zero_unpaired
        chosen, rejected = 1 - torch.sigmoid(beta * ratios), torch.sigmoid(beta * ratios)
    losses = torch.where(desirable, params.desirable_weight * chosen, params.undesirable_weight * rejected)

    def formula(m: Any) -> Any:
        return 1 - torch.sigmoid(beta * m)

    return TermValue(losses.nanmean(), margin.detach(), _push(formula, margin), seq.rows)


def _grpo(specs: list[TermSpec], seq: Sequences, reference: Any, params: LossParams) -> dict[str, TermValue]:
    """GRPOTrainer's policy and KL terms, on-policy (the old log-probs are the current ones, detached)."""
    import torch

    policy = params.policy
    logps, mask = seq.logps, seq.mask.float()
    advantages = seq.advantages.to(logps.device).unsqueeze(1)
    log_ratio = logps - logps.detach()
    if policy.importance_sampling_level == "sequence":
        log_ratio = ((log_ratio * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)).unsqueeze(-1)
    coef_1 = torch.exp(log_ratio)
    high = policy.epsilon_high if policy.epsilon_high is not None else policy.epsilon
    coef_2 = torch.clamp(coef_1, 1 - policy.epsilon, 1 + high)
    if policy.delta is not None:
        coef_1 = torch.clamp(coef_1, max=policy.delta)
    per_token = {POLICY_TERM: -torch.min(coef_1 * advantages, coef_2 * advantages) * torch.ones_like(logps)}
    if reference is not None:
        gap = reference.to(logps.device) - logps
        per_token["kl"] = torch.exp(gap) - gap - 1
    out = {}
    for spec in specs:
        values = per_token[spec.name]
        loss = _reduce(values, mask, params)
        if spec.name == POLICY_TERM:  # the push per group is the advantages' (the pipeline groups them)
            pull = (seq.advantages.to(logps.device) * seq.averaged()).detach()
            out[spec.name] = TermValue(loss, pull, pull[:0], seq.rows)
        else:
            mean_kl = ((values * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)).detach()
            out[spec.name] = TermValue(loss, mean_kl, mean_kl[:0], seq.rows)
    return out


def _reduce(per_token: Any, mask: Any, params: LossParams) -> Any:
    """GRPO's loss_type reduction over one micro-batch, with the trainer's accumulation normaliser."""
    kind, steps = params.loss_type, params.accumulation
    if kind == "grpo":
        return ((per_token * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)).mean() / steps
    if kind == "bnpo":
        return (per_token * mask).sum() / mask.sum().clamp(min=1.0) / steps
    if kind == "dr_grpo":
        return (per_token * mask).sum() / (per_token.size(0) * params.max_completion_length) / steps
    return (per_token * mask).sum() / max(params.items, 1)  # dapo: steps_per_generation = accumulation here


def grpo_advantages(rewards: list[list[float | None]], scale: str) -> list[list[float]]:
    """GRPOTrainer's advantages (sum_then_normalize, one reward column): per group the reward minus the group's
    mean, divided by the group's (or the batch's) Bessel std + 1e-4 unless ``scale`` is none; an unscorable
    completion (None) is left out of the mean and std and gets 0."""
    import torch

    width = max(len(group) for group in rewards)
    table = torch.tensor([[math.nan if r is None else float(r) for r in g] + [math.nan] * (width - len(g))
                          for g in rewards], dtype=torch.float32)
    mean = torch.nanmean(table, dim=1, keepdim=True)
    std = _nanstd(table, dim=1) if scale in ("group", "none") else _nanstd(table.flatten(), dim=0).expand(len(rewards), 1)
    advantages = table - mean
    if scale != "none":
        advantages = advantages / (std + 1e-4)
    advantages = torch.nan_to_num(advantages, nan=0.0)
    return [advantages[i, : len(g)].tolist() for i, g in enumerate(rewards)]


def _nanstd(values: Any, dim: int) -> Any:
    import torch

    mean = torch.nanmean(values, dim=dim, keepdim=True)
    variance = torch.nanmean((values - mean) ** 2, dim=dim, keepdim=True)
    count = (~torch.isnan(values)).sum(dim=dim, keepdim=True)
    correction = torch.where(count > 1, count / (count - 1), torch.full_like(variance, math.nan))
    return (variance * correction).sqrt().reshape(-1, 1) if dim == 1 else (variance * correction).sqrt()


def _push(formula: Callable[[Any], Any], metric: Any) -> Any:
    from mldebug_cli.probe.api import metric_sensitivity

    return metric_sensitivity(formula, metric)


def _log1mexp(x: Any) -> Any:
    import torch

    # TRL 1.16's log1mexp, branch and threshold as written (-ln 2)
    return torch.where(x < -0.6931471805599453, torch.log1p(-torch.exp(x)), torch.log(-torch.expm1(x)))
