"""A GRPO rewards file: the completions sampled for each prompt and the reward each one got (`probe --rewards`).

JSON Lines, one prompt (one GRPO group) per line:

    {"prompt": [{"role": "user", "content": "What is 2+2?"}], "completions": ["4", "5"], "rewards": [1.0, 0.0]}

- ``prompt``: the prompt as the GRPO dataset holds it: a list of messages (rendered with the chat template and
  the generation prompt) or a text;
- ``completions``: the sampled completions, each a text (tokenized without special tokens: write the
  end-of-turn token where generation stopped on it) or a list of token ids (exactly as generated);
- ``rewards``: one number per completion, the summed (weighted) reward; ``null`` for a completion no reward
  function scored.

There must be ``num_generations`` completions on each line: GRPO normalises the rewards within those groups.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from mldebug_cli.core.errors import InputError
from mldebug_cli.core.safe_io import read_text

KEYS = ("prompt", "completions", "rewards")


@dataclass(frozen=True)
class RewardGroup:
    line: int  # 1-based line of the file
    prompt: list[dict] | str
    completions: tuple[str | tuple[int, ...], ...]
    rewards: tuple[float | None, ...]

    def prompt_text(self) -> str:
        if isinstance(self.prompt, str):
            return self.prompt
        return str(self.prompt[-1].get("content", "")) if self.prompt else ""


def read_rewards(path: str, group_size: int | None = None) -> list[RewardGroup]:
    """Every line of the file as a group; one-line errors naming the file and line."""
    try:
        text = read_text(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read the rewards file ({type(exc).__name__})") from None
    groups = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if raw.strip():
            groups.append(_group(path, number, raw, group_size))
    if not groups:
        raise InputError(f"{path}: the rewards file has no lines", hint="one JSON object per prompt: " + _shape())
    return groups


def _group(path: str, line: int, raw: str, group_size: int | None) -> RewardGroup:
    where = f"{Path(path).name}: line {line}"
    try:
        row = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise InputError(f"{where}: not JSON ({exc.msg} at column {exc.colno})", hint=_shape()) from None
    if not isinstance(row, dict) or any(k not in row for k in KEYS):
        missing = [k for k in KEYS if not isinstance(row, dict) or k not in row]
        raise InputError(f"{where}: missing {', '.join(missing)}", hint=_shape())
    prompt, completions, rewards = row["prompt"], row["completions"], row["rewards"]
    if not (isinstance(prompt, str) or (isinstance(prompt, list) and prompt and all(
            isinstance(m, dict) and isinstance(m.get("role"), str) and "content" in m for m in prompt))):
        raise InputError(f"{where}: prompt is neither a text nor a list of messages with role and content")
    if not isinstance(completions, list) or not completions:
        raise InputError(f"{where}: completions is not a non-empty list")
    parsed = tuple(_completion(where, i, c) for i, c in enumerate(completions))
    if not isinstance(rewards, list) or len(rewards) != len(completions):
        size = len(rewards) if isinstance(rewards, list) else "no list of"
        raise InputError(f"{where}: {size} rewards for {len(completions)} completions")
    values = tuple(_reward(where, i, r) for i, r in enumerate(rewards))
    if group_size is not None and len(completions) != group_size:
        raise InputError(f"{where}: {len(completions)} completions; the config's num_generations is {group_size}",
                         hint="GRPO normalises rewards over num_generations completions per prompt: give that many")
    return RewardGroup(line, prompt, parsed, values)


def _completion(where: str, index: int, value) -> str | tuple[int, ...]:
    if isinstance(value, str) and value:
        return value
    if isinstance(value, list) and value and all(isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in value):
        return tuple(value)
    raise InputError(f"{where}: completion {index} is neither a non-empty text nor a list of token ids")


def _reward(where: str, index: int, value) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(f"{where}: reward {index} is {json.dumps(value)[:40]}, not a finite number or null")
    return float(value)


def _shape() -> str:
    return '{"prompt": [...messages] or "text", "completions": ["...", ...], "rewards": [1.0, ...]}'
