"""What it finds
Rows the training framework's own data preparation raises on, so the run stops before its first step:
TRL's SFTTrainer reads a `messages` column (role/content), `prompt`/`completion` or `text`, and raises
`KeyError: 'text'` on anything else (alpaca's instruction/input/output, role/content messages under
`conversations`). The message names the framework's error and the rows' columns; the rows shown are
mldebug's reading of the format, not something the framework trains.

Why it matters for training
The job fails at start-up, after the model has been downloaded and the GPUs allocated, or, where the
rows are converted by hand later, trains on a conversion nobody checked.

Example
`alpaca_en_demo.json` (LLaMA-Factory's alpaca demo) under `--framework trl`: SFTTrainer raises
`KeyError: 'text'` while tokenizing.

Fix
Convert the rows to a shape the framework reads (the hint says how), or train with a framework that
reads the format (LLaMA-Factory and axolotl read alpaca and ShareGPT).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.core.findings import Hit, Location

if TYPE_CHECKING:
    from mldebug_cli.frameworks.subjects import Setup

SEVERITY = "error"
SUBJECT = "setup"


def run(setup: Setup, ctx: Setup) -> Iterator[Hit]:
    if setup.refusal is None:
        return
    error, how = setup.refusal
    yield Hit(f"{error}: the run stops before training (the rows below are mldebug's reading of them as "
              f"{setup.row_format} rows, not what {setup.framework} trains)", how, Location(path=setup.dataset_path))
