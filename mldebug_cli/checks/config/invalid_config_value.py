"""A config value of the wrong type, or outside the values the key allows.

What it finds
    Values the framework cannot use for their key: a scheduler name that is not one
    (`lr_scheduler: cosin`), text where true/false is needed (`train_on_eos: yes` reads as
    true, not one of all/turn/last/none), a list where a number is needed, a fraction where a
    whole number is needed, and, where the loader passes text through unconverted (HfArgumentParser
    reading a TrainingArguments file), a number written as text such as `num_train_epochs: "3"`.
    Also keys the framework refuses together (LLaMA-Factory: `mask_history` with `train_on_prompt`).

Why it matters for training
    Some of these stop the run at start-up (an unknown scheduler name), others train with a value
    nobody chose: a string epoch count breaks the step arithmetic, `"false"` is a true string.

Example
    `lr_scheduler_type: cosin`: TrainingArguments raises "'cosin' is not a valid SchedulerType".

Fix
    Use one of the values the message lists, unquoted numbers, and true/false for switches.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from mldebug_cli.checks.config import at_key, present_keys
from mldebug_cli.core.findings import Hit

if TYPE_CHECKING:
    from mldebug_cli.frameworks.schema import ConfigReview

SEVERITY = "error"
SUBJECT = "config"
_NUMBER = re.compile(r"^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$")


def run(review: ConfigReview, ctx: None) -> Iterator[Hit]:
    if review.schema is None:
        return
    yield from _conflicts(review)
    for path, name, value, schema in present_keys(review):
        expected = schema.keys.get(name)
        if expected is None or value is None:
            continue
        problem = _problem(value, expected, schema.converts_text)
        if problem is None:
            continue
        line = review.config.line(path)
        where = f"line {line}: " if line else ""
        yield Hit(
            message=f"{where}{path} is {value!r}: {problem} ({schema.source})",
            hint=f"{path} takes {expected.describe()}",
            location=at_key(review, path),
        )


def _conflicts(review) -> Iterator[Hit]:
    for keys, refusal in review.schema.conflicts:
        if all(review.config.get(key) is True for key in keys):
            last = max(keys, key=lambda k: review.config.line(k) or 0)
            yield Hit(message=f"{' and '.join(keys)} are both true: {refusal}",
                      hint=f"keep only one of {', '.join(keys)}", location=at_key(review, last))


def _problem(value: Any, expected, converts_text: bool) -> str | None:
    if expected.choices is not None:
        if value in expected.choices or str(value) in [str(c) for c in expected.choices]:
            return None
        return "not one of the values the key accepts"
    kinds = expected.kinds
    if "any" in kinds or _fits(value, kinds):
        return None
    if isinstance(value, str) and _NUMBER.match(value) and kinds & {"int", "float"}:
        if converts_text:
            return None
        return "a number written as text: HfArgumentParser hands the text to the dataclass unconverted"
    return f"expected {expected.describe()}"


def _fits(value: Any, kinds: frozenset[str]) -> bool:
    if isinstance(value, bool):
        return "bool" in kinds
    if isinstance(value, int):
        return bool(kinds & {"int", "float"})
    if isinstance(value, float):
        return "float" in kinds or ("int" in kinds and value.is_integer())
    if isinstance(value, str):
        return bool(kinds & {"str", "list", "dict"})  # a list may be given as "a,b", a mapping as JSON text
    if isinstance(value, list):
        return "list" in kinds
    if isinstance(value, dict):
        return "dict" in kinds
    return True
