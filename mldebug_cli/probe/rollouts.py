"""GRPO's rollouts from a rewards file, laid out as GRPOTrainer lays out a generation batch: each prompt rendered
with the chat template and its generation prompt (a text prompt tokenized as is), left-padded; the completions
right-padded after them, cut to ``max_completion_length``; the loss on the completion tokens only."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from mldebug_cli.core.errors import InputError, in_one_line
from mldebug_cli.probe.losses import POLICY_METRIC, POLICY_TERM, grpo_advantages
from mldebug_cli.probe.subject import TermMeasure
from mldebug_cli.sources.rewards import RewardGroup


@dataclass
class Rollout:
    group: int  # index of the group among the probed ones
    prompt_ids: list[int]
    completion_ids: list[int]
    advantage: float
    truncated: bool  # cut at max_completion_length, or never ended on an end-of-sequence token


def rollouts(groups: list[RewardGroup], tokenizer: Any, max_completion_length: int | None, scale: str,
             stop_ids: set[int]) -> list[Rollout]:
    advantages = grpo_advantages([list(g.rewards) for g in groups], scale)
    out = []
    for index, group in enumerate(groups):
        prompt = _prompt_ids(tokenizer, group)
        for completion, advantage in zip(group.completions, advantages[index]):
            ids = list(completion) if isinstance(completion, tuple) else tokenizer(
                completion, add_special_tokens=False)["input_ids"]
            if max_completion_length is not None:
                ids = ids[:max_completion_length]
            vocab = len(tokenizer)
            if any(t >= vocab for t in ids):
                raise InputError(f"line {group.line}: a completion holds a token id past the vocabulary ({vocab})")
            out.append(Rollout(index, prompt, ids, advantage, not ids or ids[-1] not in stop_ids))
    return out


def _prompt_ids(tokenizer: Any, group: RewardGroup) -> list[int]:
    if isinstance(group.prompt, str):
        return list(tokenizer(text=group.prompt)["input_ids"])
    try:
        ids = tokenizer.apply_chat_template(group.prompt, add_generation_prompt=True, tokenize=True, return_dict=True)
    except Exception as exc:  # a template error on the user's messages: name the line
        raise InputError(f"line {group.line}: the chat template cannot render the prompt ({type(exc).__name__}: "
                         f"{in_one_line(exc, 120)})") from None
    return list(ids["input_ids"])


def collate(items: list[Rollout], pad_id: int, mask_truncated: bool, temperature: float, device: str):
    """Prompts left-padded, completions right-padded, as GRPOTrainer pads them (the positions the model sees
    follow); labels on the completion tokens (none on a truncated completion under mask_truncated_completions)."""
    import torch

    from mldebug_cli.probe.measure import Batch

    left = max(len(r.prompt_ids) for r in items)
    right = max(len(r.completion_ids) for r in items)
    ids = torch.full((len(items), left + right), pad_id, dtype=torch.long)
    mask = torch.zeros_like(ids)
    labels = torch.full_like(ids, -100)
    for i, r in enumerate(items):
        p, c = r.prompt_ids, r.completion_ids
        ids[i, left - len(p): left] = torch.tensor(p)
        mask[i, left - len(p): left] = 1
        ids[i, left: left + len(c)] = torch.tensor(c)
        if not (mask_truncated and r.truncated):
            mask[i, left: left + len(c)] = 1
            labels[i, left: left + len(c)] = torch.tensor(c)
    advantages = torch.tensor([r.advantage for r in items], dtype=torch.float32)
    return Batch(ids.to(device), mask.to(device), labels.to(device), [r.group for r in items],
                 advantages=advantages.to(device), temperature=temperature)


def batches(items: list[Rollout], size: int, pad_id: int, mask_truncated: bool, temperature: float, device: str):
    return [collate(items[start:start + size], pad_id, mask_truncated, temperature, device)
            for start in range(0, len(items), max(size, 1))]


def policy_measure(term: TermMeasure, items: list[Rollout], groups: list[RewardGroup]) -> TermMeasure:
    """The policy term per group: its push is the RMS of the group's advantages relative to the largest group's
    (d loss/d logp of a completion is -A: a group with equal rewards has A = 0 and pushes nothing); its metric
    that RMS. Each group is named by its prompt and line."""
    by_group: dict[int, list[float]] = {}
    for r in items:
        by_group.setdefault(r.group, []).append(r.advantage)
    rms = {g: math.sqrt(sum(a * a for a in values) / len(values)) for g, values in by_group.items()}
    largest = max(rms.values(), default=0.0)
    order = sorted(rms)
    push = tuple(rms[g] / largest if largest > 0 else 0.0 for g in order)
    names = tuple(f"{_short(groups[g].prompt_text())!r} (line {groups[g].line})" for g in order)
    return TermMeasure(POLICY_TERM, term.weight, POLICY_METRIC, tuple(order), push, tuple(rms[g] for g in order),
                       term.grad_norm, term.key, names, term.losses)


def _short(text: str, limit: int = 40) -> str:
    flat = "".join(ch if ch.isprintable() else " " for ch in " ".join(text.split()))
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
