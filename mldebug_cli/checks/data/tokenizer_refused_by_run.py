"""What it finds
A tokenizer folder the transformers release the run uses refuses to load, so the run stops before its first step.
transformers 4.x builds `LlamaTokenizerFast` from the slow tokenizer whenever `add_prefix_space` is set in
tokenizer_config.json (any value), and the slow tokenizer needs `tokenizer.model`; a folder that has only
tokenizer.json (a byte-level file declared as Llama) is refused. Which classes do this, and in which releases, is
read from the transformers wheels.

Why it matters for training
mldebug, on its own transformers, loads the folder and shows the rows; the user's run, on the release its framework
pins or allows, raises `ValueError: Cannot instantiate this tokenizer from a slow version` while loading the
tokenizer. Nothing trains.

Example
Qwen2.5's tokenizer.json and its `"add_prefix_space": false` under `"tokenizer_class": "LlamaTokenizerFast"`, run at
transformers 4.57.1.

Fix
Set `"tokenizer_class": "PreTrainedTokenizerFast"` in tokenizer_config.json (every release then loads tokenizer.json
as it is), or remove `add_prefix_space` from it, or add the `tokenizer.model` the class needs.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.core.findings import Hit

if TYPE_CHECKING:
    from mldebug_cli.frameworks.subjects import Setup

SEVERITY = "error"
SUBJECT = "setup"


def run(setup: Setup, ctx: Setup) -> Iterator[Hit]:
    from mldebug_cli.frameworks.hf.tokenizer_resolution import REFUSAL

    run_tokenizer = setup.run_tokenizer
    if run_tokenizer is None or run_tokenizer.resolution.refused_without is None:
        return
    resolution = run_tokenizer.resolution
    yield Hit(
        f"transformers {run_tokenizer.target} refuses to load this tokenizer, so the run stops before training: "
        f"{resolution.declared} with add_prefix_space in tokenizer_config.json is built from the slow tokenizer, "
        f"which needs {resolution.refused_without} (absent) ({REFUSAL})",
        "set \"tokenizer_class\": \"PreTrainedTokenizerFast\" in tokenizer_config.json, or remove add_prefix_space "
        f"from it, or add {resolution.refused_without}",
        setup.location(),
    )
