"""TRL 1.16's preference and RL data semantics: how DPO, KTO and GRPO turn rows into trained sequences.

Learnt from trl 1.16.0 (``trainer/dpo_trainer.py``, ``trainer/kto_trainer.py``, ``trainer/grpo_trainer.py``,
``data_utils.py``) and checked against goldens made by running those trainers (tools/trl_preference_goldens.py).
Pure functions on texts, messages and ids: rendering and tokenizing are the caller's.

- The first row decides for the whole dataset: no ``prompt`` column -> the prompt is extracted from chosen/rejected;
  not conversational -> EOS text is appended to each reply that does not already end with it.
- Prompt and prompt+reply are tokenized separately (conversations: the prompt with the generation prompt); the
  completion starts where the ids diverge, and what the prompt alone had beyond that is left out of training.
- ``max_length`` (1024 by default): DPO with ``keep_start`` and KTO drop rows whose prompt alone fills it;
  the collator then cuts each sequence on its own (``keep_start``: the end, ``keep_end``: the start).
- GRPO does no preparation: the prompt is rendered with the generation prompt when sampling.
- ORPO (``trl.experimental.orpo``, the legacy path): the chat template is applied at the string level (the prompt
  cut to the characters it shares with each rendered prompt+reply), everything is encoded without special tokens,
  each side takes its prompt part from its own prompt+reply ids (one token less when the prompt's last token merged
  with the reply), the BOS id is prepended when missing, the EOS id appended unless it is already last, and only
  the completion is cut to ``max_length``: the prompt never is, and no row is dropped.
- KTO on chosen/rejected rows: KTOTrainer unpairs them (chosen desirable, rejected undesirable) and each unpaired
  row gets its own prompt/completion split and length filter.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mldebug_cli.core.labels import IGNORE_INDEX

TASKS = ("dpo", "kto", "orpo", "grpo")
TRUNCATION_MODES = ("keep_start", "keep_end")
DEFAULT_MAX_LENGTH = 1024  # DPOConfig.max_length and KTOConfig.max_length


def refusal(first: Any, task: str) -> tuple[str, str] | None:
    """(what TRL 1.16's trainer for ``task`` raises while preparing rows shaped like ``first``, how to convert them);
    None when it reads them. LLaMA-Factory's shapes are not TRL's: its ranking rows (``chosen`` one ShareGPT turn)
    fail prompt extraction (``chosen[0]``), its v1 ``chosen_messages`` and KTO ``messages`` rows have no column TRL
    reads (checked by running the trainers: tests/frameworks/test_trust_claims.py)."""
    if not isinstance(first, dict):
        return None
    sharegpt = ("convert to TRL's columns: prompt = the conversations as role/content messages, chosen/rejected = "
                "[{role: assistant, content: value}]; or train with LLaMA-Factory, which reads them")
    if task in ("dpo", "orpo", "kto") and isinstance(first.get("chosen"), dict) and "prompt" not in first:
        trainer = {"dpo": "DPOTrainer", "orpo": "ORPOTrainer", "kto": "KTOTrainer"}[task]
        return f"TRL's {trainer} raises KeyError: 0 while preparing LLaMA-Factory ranking rows (chosen is one turn, " \
               "not a list of messages)", sharegpt
    if task in ("dpo", "orpo") and "chosen" not in first and "chosen_messages" in first:
        error = "KeyError: 'chosen'" if task == "dpo" else "KeyError: 'prompt'"
        return (f"TRL's {task.upper()}Trainer raises {error} on LLaMA-Factory v1 rows (chosen_messages/"
                "rejected_messages)", "rename the columns chosen/rejected and make each content a string (the parts' "
                "text joined)")
    if task == "kto" and "messages" in first and not {"prompt", "completion"} <= set(first):
        return ("TRL's KTOTrainer raises KeyError: 'chosen' on LLaMA-Factory KTO rows (messages + label)",
                "split each row: prompt = the messages before the last, completion = [the last], label kept")
    return None


def is_conversational(value: Any) -> bool:
    """A list whose first element is a message with a role (TRL looks at one column of the first row)."""
    return isinstance(value, list) and bool(value) and isinstance(value[0], dict) and "role" in value[0]


def extract_prompt(chosen: Sequence, rejected: Sequence) -> tuple[Sequence, Sequence, Sequence]:
    """(prompt, chosen, rejected) split where chosen and rejected first differ (messages or characters).

    When nothing differs the last element is split off; a cut after a space moves one to the left.
    """
    idx = 0
    for idx in range(min(len(chosen), len(rejected))):
        if chosen[idx] != rejected[idx]:
            if chosen[idx - 1] == " ":
                idx -= 1
            break
    return chosen[:idx], chosen[idx:], rejected[idx:]


def with_eos(text: str, eos: str | None) -> str:
    """The reply as TRL tokenizes plain text: EOS text appended unless the string already ends with it."""
    return text if not eos or text.endswith(eos) else text + eos


def common_prefix_length(a: Sequence[object], b: Sequence[object]) -> int:
    shorter = min(len(a), len(b))
    if a[:shorter] == b[:shorter]:  # the usual case, compared in one step
        return shorter
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


@dataclass(frozen=True)
class Collated:
    """One sequence as the collator hands it to the model."""

    input_ids: list[int]
    labels: list[int]
    prompt_tokens: int  # prompt tokens before truncation
    completion_tokens: int  # completion tokens before truncation

    @property
    def trained(self) -> int:
        return len(self.labels) - self.labels.count(IGNORE_INDEX)

    @property
    def completion_cut(self) -> int:
        """Completion tokens truncation removed."""
        return self.completion_tokens - self.trained


def collate(prompt_ids: list[int], completion_ids: list[int], max_length: int | None, mode: str) -> Collated:
    """prompt + completion, labels -100 over the prompt, cut to max_length as the collator cuts."""
    ids = prompt_ids + completion_ids
    labels = [IGNORE_INDEX] * len(prompt_ids) + list(completion_ids)
    if max_length is not None and len(ids) > max_length:
        cut = slice(None, max_length) if mode == "keep_start" else slice(-max_length, None)
        ids, labels = ids[cut], labels[cut]
    return Collated(ids, labels, len(prompt_ids), len(completion_ids))


class OrpoRefusal(ValueError):
    """A row ORPOTrainer's tokenize_row raises on (the map stops: no dataset at all)."""


def orpo_sides(prompt_ids: Sequence[int], joint: dict[str, list[int]], bos_id: int | None, eos_id: int | None,
               max_length: int | None) -> dict[str, tuple[int, list[int], Collated]]:
    """Side -> (prompt tokens taken from its prompt+reply ids, the completion with EOS, the trained sequence)."""
    parts = {}
    for side, full in joint.items():
        if len(prompt_ids) > len(full):
            raise OrpoRefusal("the prompt alone has more tokens than prompt+reply")
        start = len(prompt_ids) - (list(prompt_ids) != full[: len(prompt_ids)])
        parts[side] = (full[:start], full[start:])
    chosen, rejected = parts["chosen"][0], parts["rejected"][0]
    if sum(a != b for a, b in zip(chosen, rejected)) > 1 or abs(len(chosen) - len(rejected)) > 1:
        raise OrpoRefusal("chosen's and rejected's prompt ids differ in more than their last token")
    out = {}
    for side, (prompt, answer) in parts.items():
        split = len(prompt)
        if bos_id is not None and (not prompt or prompt[0] != bos_id):
            prompt = [bos_id, *prompt]
        if eos_id is not None and (not answer or answer[-1] != eos_id):
            answer = [*answer, eos_id]
        kept = answer if max_length is None else answer[: max(0, max_length - len(prompt))]
        out[side] = (split, answer, Collated(prompt + kept, [IGNORE_INDEX] * len(prompt) + kept, len(prompt),
                                             len(answer)))
    return out


def dropped(prompt_tokens: int, max_length: int | None, task: str, mode: str) -> bool:
    """The dataset filter: rows whose prompt alone fills max_length leave (DPO: with keep_start only)."""
    if max_length is None or (task == "dpo" and mode != "keep_start"):
        return False
    return prompt_tokens >= max_length
