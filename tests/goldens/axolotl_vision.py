"""axolotl 0.19.0's multimodal collator's goldens (tools/axolotl_vl_goldens.py: MultiModalChatDataCollator and
get_processing_strategy, at the transformers 5.16.1 axolotl pins, with the real processors of fixtures/processors) on
hypothesis-generated rows and settings (fixtures/axolotl-0.19.0-vision/). Where axolotl raises, mldebug must refuse
the row with the check that names the same failure; where axolotl trains a row whose image placeholder has no image
(the model's forward fails), mldebug must report it (DS031)."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from goldens.suite import GoldenSuite
from goldens.vision import TRL_REFUSALS, VisionSuite, ids_differ, image_bytes, processor, refusal_code
from mldebug_cli.frameworks.axolotl.framework import named_template
from mldebug_cli.frameworks.axolotl.vision import FORWARD_FAILS, MultimodalSettings, Strategy, encode_row, strategy
from mldebug_cli.frameworks.trl.vision import VisionRow
from mldebug_cli.sources.images import ImageReader
from support import FIXTURES

GOLDENS = FIXTURES / "axolotl-0.19.0-vision"


@cache
def template(name: str | None) -> str | None:
    if name is None:
        return None
    path, _ = named_template(name)
    assert path is not None, name
    return Path(path).read_text(encoding="utf-8")


@cache
def masking(name: str | None, folder: str) -> Strategy:
    return strategy(name, processor(folder))


def mldebug_row(case: dict[str, Any], folder: str) -> VisionRow:
    raw = dict(case["row"])
    if case["column"]:
        raw[case["column"]] = [{"bytes": image_bytes(s)} for s in case["images"]]
    given = case["settings"]
    roles = given["roles_to_train"]
    settings = MultimodalSettings(given["chat_template"], template(given["chat_template"]), given["train_on_inputs"],
                                  ("assistant",) if roles is None else tuple(roles), given["train_on_eos"] or "turn")
    return encode_row(0, None, raw, processor(folder), settings, masking(given["chat_template"], folder),
                      ImageReader(Path(".")))


def disagreement(case: dict[str, Any], folder: str) -> str | None:
    row = mldebug_row(case, folder)
    got = refusal_code(row)
    if "error" in case:
        want = SUITE.wanted(case["error"])
        if got != want:
            return f"axolotl raises {case['error']!r} (expected {want}); mldebug: {got or 'trains the row'}"
        return None
    if got == "DS031" and row.refused is not None and FORWARD_FAILS in row.refused.message:
        # axolotl trains it with the placeholder as one token: that token is in its ids
        placeholder = processor(folder).tokenizer.convert_tokens_to_ids(processor(folder).image_placeholder)
        return None if placeholder in case["input_ids"] else "mldebug says the forward fails; axolotl has no placeholder"
    if got is not None:
        return f"axolotl trains the row; mldebug refuses it ({got}: {row.refused.message if row.refused else ''})"
    differ = ids_differ(row.input_ids, case["input_ids"], "axolotl")
    if differ:
        return differ
    if row.labels != case["labels"]:
        first = next(i for i, (a, b) in enumerate(zip(row.labels, case["labels"])) if a != b)
        return f"labels differ at {first}"
    return None


SUITE = VisionSuite(
    GOLDENS, "goldens-*.json.gz",  # one per processor folder under fixtures/processors
    fast=12,  # the processor is loaded once for the TRL suites too (cached)
    refusals={**TRL_REFUSALS,
              # the tokenizer's own (text-only) template on content parts (chat_template unset)
              "can only concatenate str (not \"list\") to str": "DS009",
              # transformers runs out of images for the placeholders (a literal image token beside the image)
              "StopIteration": "DS031",
              "image tokens but received": "DS031"},  # Gemma3Processor: more <start_of_image> than images
    disagreement=disagreement,
    # the Gemma 3 tokenizer and the LLaVA processor take seconds to load: replayed in the slow tier only
    slow_only=frozenset({"goldens-gemma-3.json.gz", "goldens-llava-1.5.json.gz"}),
)


SUITES = (
    # qwen2-vl, gemma-3 and llava-1.5: --cases 3000 each (--processor gemma-3, --processor llava-1.5)
    GoldenSuite("axolotl-vision", "axolotl", "tools/axolotl_vl_goldens.py",
                "/work/venvs/axolotl-mm/bin/python tools/axolotl_vl_goldens.py --cases 3000 --processor qwen2-vl",
                GOLDENS, SUITE.cases, SUITE.replay, keep=None),
)
