"""What it finds
Rows whose text the run's tokenizer cannot carry: the transformers release the run uses (the framework's pin decides,
or `--transformers-version`) builds a different tokenizer from the folder's files than the one the files describe,
and encoding a message then decoding its ids loses characters. The finding shows the first damaged text, before and
after, on every affected row; the ids and labels shown are the ones that release makes.

Why it matters for training
DeepSeek-V3's `tokenizer_config.json` declares `LlamaTokenizerFast` while its `tokenizer.json` is byte-level BPE.
transformers 5.0 to 5.21 build `LlamaTokenizer` from its own defaults (a Metaspace pre-tokenizer), keeping only the
vocabulary: no space or newline maps to a token, so `"saddle\\nspoke and the chain"` trains as
`saddlespokeandthechain`. LLaMA-Factory 0.9.5 allows transformers up to 5.6.0 only. The run starts, the loss falls,
and the model learns text without whitespace.

Example
`mldebug inspect-data --framework llama-factory --template deepseek3 --dataset alpaca.json --tokenizer
DeepSeek-V3/` (LLaMA-Factory 0.9.5 allows transformers <= 5.6.0, so 5.6.0 is assumed).

Fix
Run a transformers release that loads tokenizer.json as it is (4.57 and older, or 5.22 and newer; inside the
framework's pin where one does), or set `"tokenizer_class": "PreTrainedTokenizerFast"` in tokenizer_config.json.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.core.findings import Hit

if TYPE_CHECKING:
    from mldebug_cli.frameworks.subjects import Row, Setup

SEVERITY = "error"
SUBJECT = "row"
WINDOW = 24  # characters shown either side of the first loss


def run(row: Row, setup: Setup) -> Iterator[Hit]:
    run_tokenizer = setup.run_tokenizer
    if run_tokenizer is None or run_tokenizer.round_trip is None or not row.ok:
        return
    texts = [m["content"] for m in row.messages if isinstance(m.get("content"), str) and m["content"]] or \
        ([row.text] if row.text else [])
    for text in texts:
        after = run_tokenizer.round_trip(text)
        if after == text:
            continue
        lost = Counter(text) - Counter(after)
        resolution = run_tokenizer.resolution
        yield Hit(
            f"transformers {run_tokenizer.target} loads this tokenizer as {resolution.loaded_as} "
            f"({resolution.class_pre_tokenizer} over a {resolution.file_pre_tokenizer} tokenizer.json): "
            f"{_before_after(text, after)}; {sum(lost.values())} of {len(text)} characters lost "
            f"({_shown(lost)})",
            run_tokenizer.fix(),
            row.location(),
        )
        return


def _before_after(text: str, after: str) -> str:
    first = next((i for i, (a, b) in enumerate(zip(text, after)) if a != b), min(len(text), len(after)))
    start = max(0, first - WINDOW // 2)
    return f"{text[start:start + WINDOW]!r} becomes {after[start:start + WINDOW]!r}"


def _shown(lost: Counter) -> str:
    return ", ".join(f"{char!r} x{count}" for char, count in lost.most_common(4))
