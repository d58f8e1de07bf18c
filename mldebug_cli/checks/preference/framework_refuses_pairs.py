"""What it finds
Preference rows the trainer's own data preparation raises on, so the run stops before its first step:
TRL's DPOTrainer on LLaMA-Factory's ranking rows (`conversations` + one `chosen` and one `rejected` turn)
raises `KeyError: 0` in its prompt extraction; on LLaMA-Factory's v1 rows (`chosen_messages`) and KTO
rows (`messages` + `label`) `KeyError: 'chosen'`. The pairs shown are mldebug's reading of those shapes,
not something TRL trains.

Why it matters for training
The job fails at start-up, after the model has been loaded and the GPUs allocated.

Example
`dpo_en_demo.json` (LLaMA-Factory's DPO demo) with `--framework trl`: `KeyError: 0`.

Fix
Convert the rows to TRL's columns (`prompt`, `chosen`, `rejected` as message lists or text; KTO:
`prompt`, `completion`, `label`), or train with LLaMA-Factory (`--framework llama-factory`), which reads them.
"""

from __future__ import annotations

from collections.abc import Iterator

from mldebug_cli.core.findings import Hit, Location
from mldebug_cli.frameworks.preference_subjects import PreferenceSetup

SEVERITY = "error"
SUBJECT = "preference-setup"


def run(setup: PreferenceSetup, ctx: PreferenceSetup) -> Iterator[Hit]:
    if setup.refusal is None:
        return
    error, how = setup.refusal
    yield Hit(f"{error}: the run stops before training (the pairs below are mldebug's reading of the rows, not what "
              "TRL trains)", how, Location(path=setup.dataset_path))
