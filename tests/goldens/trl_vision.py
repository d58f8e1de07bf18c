"""TRL 1.16's vision collators' goldens: the SFT path (tools/vl_goldens.py: DataCollatorForVisionLanguageModeling with
the real processor: Qwen2VLProcessor; Qwen2_5_VLProcessor with max_pixels 200,704; LlavaProcessor; Gemma3Processor;
Idefics3Processor), the DPO path (tools/vl_dpo_goldens.py: DataCollatorForVisionPreference with Qwen2VLProcessor) and
the KTO path (tools/vl_kto_goldens.py: DataCollatorForVisionUnpairedPreference with Qwen2VLProcessor),
on hypothesis-generated rows (fixtures/trl-1.16.0-vision/). Where TRL raises, mldebug must refuse the row with the
check that names the same failure; where a DPO cut leaves fewer image tokens than the grid implies (the model's
forward raises), mldebug must report DS033."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from goldens.suite import GoldenSuite
from goldens.vision import TRL_REFUSALS, VisionSuite, ids_differ, image_bytes, processor, refusal_code
from mldebug_cli.frameworks.trl.vision import VisionRow, encode_row
from mldebug_cli.frameworks.trl.vision_preference import encode_pair
from mldebug_cli.frameworks.trl.vision_unpaired import encode_unpaired
from mldebug_cli.render.labels import IGNORE_INDEX
from mldebug_cli.sources.images import ImageReader
from support import FIXTURES

GOLDENS = FIXTURES / "trl-1.16.0-vision"


def sft_row(case: dict[str, Any], folder: str) -> VisionRow:
    raw = {"images": [{"bytes": image_bytes(s)} for s in case["images"]], "messages": case["messages"]}
    return encode_row(0, None, raw, processor(folder), ImageReader(Path(".")), case["max_length"])


def sft_disagreement(case: dict[str, Any], folder: str) -> str | None:
    row = sft_row(case, folder)
    got = refusal_code(row)
    if "error" in case:
        want = SFT.wanted(case["error"])
        if got != want:
            return f"TRL raises {case['error']!r} (expected {want}); mldebug: {got or 'trains the row'}"
        return None
    if got is not None:
        return f"TRL trains the row; mldebug refuses it ({got}: {row.refused.message if row.refused else ''})"
    labels = case["input_ids"] if case["labels"] == "input_ids" else case["labels"]
    differ = ids_differ(row.input_ids, case["input_ids"], "TRL")
    if differ:
        return differ
    if row.labels != labels:
        return "labels differ"
    return None


SFT = VisionSuite(
    GOLDENS, "goldens-*.json.gz",  # one per processor folder under fixtures/processors
    fast=60,
    refusals={**TRL_REFUSALS, "Invalid role": "DS011", "Mismatch in `image` token count": "DS033",
              "Conversation roles must alternate": "DS009",  # Gemma 3's template raises (jinja2 TemplateError)
              # Idefics3Processor: a cut inside an image's tiles leaves char_to_token None (TypeError)
              "unsupported operand type(s) for -: 'NoneType'": "DS033",
              "list object has no element 0": "DS009"},  # Idefics3's template reads an empty content list
    disagreement=sft_disagreement,
    # the Gemma 3 tokenizer (262k tokens) takes seconds to load: these are replayed in the slow tier only
    slow_only=frozenset({"goldens-gemma-3.json.gz", "goldens-idefics3.json.gz"}),
)


def preference_row(case: dict[str, Any], folder: str, encode: Callable[..., VisionRow]) -> VisionRow:
    """The golden's row, its images in the column it names, read by ``encode`` (the DPO or KTO reader)."""
    images = [{"bytes": image_bytes(s)} for s in case["images"]]
    raw = dict(case["row"])
    if case["column"] == "image":
        raw["image"] = images[0]
    else:
        raw["images"] = images
    return encode(0, None, raw, processor(folder), ImageReader(Path(".")), case["max_length"])


def refusal_disagreement(row: VisionRow, case: dict[str, Any], suite: VisionSuite) -> str | None:
    """Where TRL or mldebug refuses the row: how they differ ("" where both refuse alike; None: neither refuses)."""
    got = row.refused.code if row.refused is not None else "DS032" if row.image_problems else None
    if "error" in case:
        want = suite.wanted(case["error"])
        return f"TRL raises {case['error']!r} (expected {want}); mldebug: {got or 'trains the row'}" if got != want else ""
    if got is not None:
        return f"TRL collates the row; mldebug refuses it ({got}: {row.refused.message if row.refused else ''})"
    return None


def dpo_disagreement(case: dict[str, Any], folder: str) -> str | None:
    row = preference_row(case, folder, encode_pair)
    refused = refusal_disagreement(row, case, DPO)
    if refused is not None:
        return refused or None
    assert row.rejected is not None
    for side, mine in (("chosen", row), ("rejected", row.rejected)):
        want = case[side]
        differ = ids_differ(mine.input_ids, want["input_ids"], "TRL")
        if differ:
            return f"{side}: {differ}"
        trained = [int(label != IGNORE_INDEX) for label in mine.labels]
        if trained != want["completion_mask"]:
            return f"{side}: trained tokens differ from TRL's completion_mask"
        kept = sum(1 for t in mine.input_ids if t == processor(folder).image_token_id)
        forward_fails = kept != case["image_tokens"]
        if forward_fails != bool(mine.cut_images) and refusal_code(mine) != "DS031":
            return f"{side}: {kept} of {case['image_tokens']} image tokens kept, mldebug cut images {mine.cut_images}"
    return None


DPO = VisionSuite(
    GOLDENS, "dpo-goldens-*.json.gz",
    fast=12,  # the processor's load is shared with the SFT suite (cached)
    refusals={
        **TRL_REFUSALS,
        "Invalid role in message": "DS011",
        "Invalid role in the last message": "DS011",
        "KeyError: 'prompt'": "DS010",
    },
    disagreement=dpo_disagreement,
)


def kto_disagreement(case: dict[str, Any], folder: str) -> str | None:
    row = preference_row(case, folder, encode_unpaired)
    refused = refusal_disagreement(row, case, KTO)
    if refused is not None:
        return refused or None
    differ = ids_differ(row.input_ids, case["input_ids"], "TRL")
    if differ:
        return differ
    if [int(label != IGNORE_INDEX) for label in row.labels] != case["completion_mask"]:
        return "trained tokens differ from TRL's completion_mask"
    if not case["kl_is_row"]:  # one row a batch: its KL sequence is its own prompt + completion
        return "TRL's KL sequence differs from the row's"
    kept = sum(1 for t in row.input_ids if t == processor(folder).image_token_id)
    if (kept != case["image_tokens"]) != bool(row.cut_images) and refusal_code(row) != "DS031":
        return f"{kept} of {case['image_tokens']} image tokens kept, mldebug cut images {row.cut_images}"
    return None


KTO = VisionSuite(
    GOLDENS, "kto-goldens-*.json.gz",
    fast=4,  # the processor's load is shared with the SFT suite (cached)
    refusals={
        **TRL_REFUSALS,
        "Invalid role in message": "DS011",
        "Invalid role in the last message": "DS011",
        "KeyError: 'prompt'": "DS010",
        "KeyError: 'completion'": "DS010",
        "KeyError: 'label'": "DS010",
        "too many dimensions 'str'": "DS010",  # torch.tensor of a string label
        "Could not infer dtype of NoneType": "DS010",  # torch.tensor of a null label
        "Vision datasets must be in unpaired format": "DS010",  # KTOTrainer, on chosen/rejected columns
    },
    disagreement=kto_disagreement,
)

SUITES = (
    GoldenSuite("trl-vision-sft", "trl", "tools/vl_goldens.py",
                "python tools/vl_goldens.py --cases 3000 [--processor qwen2.5-vl-256|gemma-3|idefics3]", GOLDENS,
                SFT.cases, SFT.replay, keep=None),
    GoldenSuite("trl-vision-dpo", "trl", "tools/vl_dpo_goldens.py", "python tools/vl_dpo_goldens.py --cases 3000",
                GOLDENS, DPO.cases, DPO.replay, keep=None),
    GoldenSuite("trl-vision-kto", "trl", "tools/vl_kto_goldens.py", "python tools/vl_kto_goldens.py --cases 3000",
                GOLDENS, KTO.cases, KTO.replay, keep=None),
)
