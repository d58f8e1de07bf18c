"""A key the framework, at the target version, does not know.

What it finds
    Keys of a training config that are not in the framework's schema: TrainingArguments and the
    TRL config classes (from their dataclasses), axolotl's `AxolotlInputConfig` and its dataset
    entries, LLaMA-Factory's argument dataclasses. The message gives the key's line, the closest
    known key, and what the framework does with it.

Why it matters for training
    A typo is not a setting. HfArgumentParser (HF, TRL, LLaMA-Factory) refuses the whole file, so
    the job dies after queueing; axolotl's schema drops the key silently, so `lr_schedular: cosine`
    trains with the default scheduler and `warmup_ration: 0.1` with the default warmup.

Example
    `warmup_ration: 0.1` in an axolotl config: "did you mean warmup_ratio?"; axolotl drops it and
    warms up for 3% of the steps.

Fix
    Rename the key to the one suggested, or remove it. Give the framework version you train with
    (`--transformers-version`, `--axolotl-version`, ...) when the key exists in another version.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.checks.config import at_key, present_keys
from mldebug_cli.core.findings import Hit

if TYPE_CHECKING:
    from mldebug_cli.frameworks.schema import ConfigReview

SEVERITY = "error"
SUBJECT = "config"


def run(review: ConfigReview, ctx: None) -> Iterator[Hit]:
    if review.schema is None:
        return
    for path, name, _value, schema in present_keys(review):
        if name in schema or path in review.reported:
            continue
        close = difflib.get_close_matches(name, list(schema.keys), n=1, cutoff=0.75)
        line = review.config.line(path)
        where = f"line {line}: " if line else ""
        guess = f" (did you mean {close[0]!r}?)" if close else ""
        renamed = schema.renamed.get(name)
        yield Hit(
            message=f"{where}{path!r} is not a key {schema.source} knows{guess}: {schema.on_unknown}",
            hint=renamed or (f"rename it to {close[0]}" if close else "remove it, or check the framework's docs"),
            location=at_key(review, path),
        )
