"""What it finds
A tokenizer whose declared class (`tokenizer_class` in tokenizer_config.json) builds a different pre-tokenizer
than its tokenizer.json holds, so that some transformers releases load it as the file describes and others do not.
The finding names the releases that load it differently (read from the transformers wheels) and whether the release
the run uses is one of them (then DS060 shows the damage on the rows).

Why it matters for training
From transformers 5.0 a declared class with its own pipeline rebuilds it from its defaults and keeps only the
vocabulary of tokenizer.json. The same folder trains right under one release and ruins every row under another;
nothing fails, and the run's transformers is often not the one installed where you check (a framework pins it).

Example
DeepSeek-V3: `LlamaTokenizerFast` declared over a byte-level BPE tokenizer.json; transformers 5.0 to 5.21 load a
Metaspace `LlamaTokenizer`.

Fix
Set `"tokenizer_class": "PreTrainedTokenizerFast"` in tokenizer_config.json (every release then loads the file as
it is), or run a release that loads it right.
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
    from mldebug_cli.frameworks.hf.tokenizer_resolution import rebuilt_by, span

    run_tokenizer = setup.run_tokenizer
    if run_tokenizer is None:
        return
    resolution = run_tokenizer.resolution
    wrong = rebuilt_by(resolution)
    if not wrong:
        return
    now = (f"the run's transformers {run_tokenizer.target} is one of them" + (
        " (DS060 shows the rows)" if run_tokenizer.round_trip else " (mldebug does not build that tokenizer: "
        "its ids are not shown)")) if resolution.disagrees else (
        f"the run's transformers {run_tokenizer.target} refuses to load it (DS062)" if resolution.refused_without
        else f"the run's transformers {run_tokenizer.target} loads it as the file says")
    yield Hit(
        f"tokenizer_config.json declares {resolution.declared} but tokenizer.json is "
        f"{resolution.file_pre_tokenizer}: transformers {span(wrong)} build "
        f"the class's own pipeline instead of the file's; {now}",
        run_tokenizer.fix(),
        setup.location(),
    )
