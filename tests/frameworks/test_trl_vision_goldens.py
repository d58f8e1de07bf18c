"""TRL's vision SFT path: mldebug's ids and labels for image rows equal TRL 1.16's own collator's, case for case.

The goldens were written by tools/vl_goldens.py, which runs TRL's DataCollatorForVisionLanguageModeling with the real
processor (Qwen2VLProcessor; Qwen2_5_VLProcessor with max_pixels 200,704; LlavaProcessor; Gemma3Processor;
Idefics3Processor) on hypothesis-generated rows (fixtures/trl-1.16.0-vision/). Where TRL raises, mldebug must refuse the
row with the check that names the same failure. A fast sample runs by default; every case under ``-m slow``.
"""

from __future__ import annotations

import gzip
import io
import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from mldebug_cli.frameworks.trl.vision import VisionProcessor, VisionRow, encode_row, load_processor
from mldebug_cli.sources.images import ImageReader
from support import FIXTURES

GOLDENS = FIXTURES / "trl-1.16.0-vision"
FILES = sorted(p.name for p in GOLDENS.glob("goldens-*.json.gz"))  # one per processor folder under fixtures/processors
FAST = 60  # cases per file replayed without -m slow
# processor folders whose tokenizer takes seconds to load (Gemma 3: 262k tokens): replayed in the slow tier only
SLOW_ONLY = {"goldens-gemma-3.json.gz", "goldens-idefics3.json.gz"}
# what TRL raises -> the check mldebug reports it with
REFUSALS = {
    "does not match number of image placeholders": "DS031",
    "tokens in the prompts should be the same as the number of images": "DS031",
    "tokens in the text but no images were passed": "DS031",
    "Invalid role": "DS011",
    "Conversation roles must alternate": "DS009",  # Gemma 3's template raises (jinja2 TemplateError)
    # Idefics3Processor: a cut inside an image's tiles leaves char_to_token None (TypeError)
    "unsupported operand type(s) for -: 'NoneType'": "DS033",
    "list object has no element 0": "DS009",  # Idefics3's template reads an empty content list (jinja2 UndefinedError)
    "Mismatch in `image` token count": "DS033",
    "aspect ratio must be smaller than 200": "DS032",
}


@cache
def goldens(name: str) -> dict[str, Any]:
    with gzip.open(GOLDENS / name, "rt", encoding="utf-8") as file:
        return json.load(file)


@cache
def processor(folder: str) -> VisionProcessor:
    return load_processor(str(FIXTURES / "processors" / folder))


def image_bytes(spec: dict[str, Any]) -> dict[str, bytes]:
    from PIL import Image

    colour = spec["colour"]
    fill: Any = {"RGB": (colour, 255 - colour, colour // 2), "RGBA": (colour, 10, 200, 128), "LA": (colour, 200),
                 "CMYK": (colour, 0, 50, 0)}.get(spec["mode"], colour)
    image = Image.new(spec["mode"], (spec["width"], spec["height"]), fill)
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG" if spec["mode"] == "CMYK" else "PNG")
    return {"bytes": buffer.getvalue()}


def mldebug_row(case: dict[str, Any], folder: str) -> VisionRow:
    raw = {"images": [image_bytes(s) for s in case["images"]], "messages": case["messages"]}
    return encode_row(0, None, raw, processor(folder), ImageReader(Path(".")), case["max_length"])


def refusal_code(row: VisionRow) -> str | None:
    if row.refused is not None:
        return row.refused.code
    if row.image_problems:
        return "DS032"
    if row.cut_images or row.cut_literal > 0:
        return "DS033"
    return None


def disagreement(case: dict[str, Any], folder: str) -> str | None:
    row = mldebug_row(case, folder)
    got = refusal_code(row)
    if "error" in case:
        want = next((code for words, code in REFUSALS.items() if words in case["error"]), "unnamed")
        if got != want:
            return f"TRL raises {case['error']!r} (expected {want}); mldebug: {got or 'trains the row'}"
        return None
    if got is not None:
        return f"TRL trains the row; mldebug refuses it ({got}: {row.refused.message if row.refused else ''})"
    labels = case["input_ids"] if case["labels"] == "input_ids" else case["labels"]
    if row.input_ids != case["input_ids"]:
        first = next((i for i, (a, b) in enumerate(zip(row.input_ids, case["input_ids"])) if a != b),
                     min(len(row.input_ids), len(case["input_ids"])))
        return f"input_ids differ at {first} (mldebug {len(row.input_ids)} tokens, TRL {len(case['input_ids'])})"
    if row.labels != labels:
        return "labels differ"
    return None


def _indices(name: str, slow: bool) -> list[int]:
    total = len(goldens(name)["cases"])
    if slow:
        return list(range(total))
    step = max(1, total // FAST)
    return list(range(0, total, step))[:FAST]


def _problems(name: str, slow: bool) -> list[str]:
    doc = goldens(name)
    return [f"{name} case {i}: {d}" for i in _indices(name, slow) if (d := disagreement(doc["cases"][i], doc["processor"]))]


def test_goldens_record_the_versions_and_enough_cases() -> None:
    assert FILES
    for name in FILES:
        doc = goldens(name)
        assert doc["versions"]["trl"] == "1.16.0"
        refused = sum(1 for c in doc["cases"] if "error" in c)
        assert refused > 0 and len(doc["cases"]) - refused >= len(doc["cases"]) // 3  # both outcomes exercised
    assert len(goldens("goldens-qwen2-vl.json.gz")["cases"]) >= 3000
    assert len(goldens("goldens-gemma-3.json.gz")["cases"]) >= 3000
    assert len(goldens("goldens-idefics3.json.gz")["cases"]) >= 3000


@pytest.mark.parametrize("name", FILES)
def test_every_refusal_in_the_goldens_is_named(name: str) -> None:
    cases = goldens(name)["cases"]
    unnamed = {c["error"] for c in cases if "error" in c and not any(w in c["error"] for w in REFUSALS)}
    assert not unnamed


@pytest.mark.parametrize("name", [name for name in FILES if name not in SLOW_ONLY])
def test_a_sample_of_cases_matches_trl(name: str) -> None:
    problems = _problems(name, slow=False)
    assert not problems, "\n".join(problems[:10])


@pytest.mark.slow
@pytest.mark.parametrize("name", FILES)
def test_every_case_matches_trl(name: str) -> None:
    problems = _problems(name, slow=True)
    assert not problems, f"{len(problems)} disagreements:\n" + "\n".join(problems[:20])
