"""What it finds
A setting of the training framework that mldebug does not emulate (an axolotl dataset `type` it has no
prompter for, for example); the message names it and says what mldebug did instead.

Why it matters for training
mldebug's ids and labels are "your dataset as your trainer sees it" only where it reproduces the
trainer's own data code. Where it does not, the rows shown, the masking and the lengths behind the
step count come from a stand-in (the tokenizer's chat template, the rows' detected format), and the
trainer's may differ: a prompt format it writes, a field it reads, a part it leaves untrained.

Example
An axolotl config with `type: explainchoice` (a multiple-choice prompter mldebug does not emulate):
the rows are read as alpaca rows and rendered with the tokenizer's chat template, with this warning.

Fix
Check a few rows against the framework's own preprocessing (axolotl: `axolotl preprocess` with
`--debug`), or use a dataset type mldebug emulates (`chat_template`, `alpaca` and the other alpaca
prompters, `completion`, `input_output`, the dict form of `type`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.core.findings import Hit

if TYPE_CHECKING:
    from mldebug_cli.frameworks.subjects import Setup

SEVERITY = "warning"
SUBJECT = "setup"


def run(setup: Setup, ctx: Setup) -> Iterator[Hit]:
    for what in setup.rows.not_emulated():
        yield Hit(what, "compare a few rows with the framework's own preprocessing, or use a type mldebug emulates",
                  setup.location())
