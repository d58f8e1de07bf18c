"""LLaMA-Factory's multimodal rows: mldebug's ids and labels for ``mllm`` rows equal LLaMA-Factory 0.9.5's own, case
for case.

The goldens were written by tools/llamafactory_vl_goldens.py, which runs LLaMA-Factory's ShareGPT converter and
supervised processor with the template qwen2_vl (Qwen2VLPlugin) and the real processor on hypothesis-generated rows
(fixtures/llamafactory-0.9.5-vision/). Where LLaMA-Factory raises, mldebug must refuse the row with the check that
names the same failure; where it drops the row, so must mldebug. A fast sample runs by default; every case under
``-m slow``.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from vision_replay import Suite, ids_differ, image_bytes, processor

from mldebug_cli.frameworks.llama_factory import vision as lf_vision
from mldebug_cli.frameworks.llama_factory.framework import LlamaFactoryOptions, Rows, row_profile
from mldebug_cli.frameworks.trl.vision import VisionRow
from mldebug_cli.sources.images import ImageReader
from support import CORPUS, FIXTURES, needs_corpus

GOLDENS = FIXTURES / "llamafactory-0.9.5-vision"


@cache
def rows_for(folder: str, cutoff_len: int, train_on_prompt: bool, mask_history: bool) -> Rows:
    loaded = processor(folder)
    settings = LlamaFactoryOptions(template="qwen2_vl", cutoff_len=cutoff_len, train_on_prompt=train_on_prompt,
                                   mask_history=mask_history)
    options = SimpleNamespace(framework_options=settings, train_on=None, max_length=None, template=None)
    return row_profile(options, SimpleNamespace(tokenizer=loaded.tokenizer, chat_template=loaded.chat_template), "chat")


def mldebug_row(case: dict[str, Any], folder: str) -> VisionRow:
    raw = {"messages": case["messages"], "images": [{"bytes": image_bytes(s), "path": None} for s in case["images"]]}
    settings = case["settings"]
    rows = rows_for(folder, settings["cutoff_len"], settings["train_on_prompt"], settings["mask_history"])
    pixels = lf_vision.Pixels(case["image_max_pixels"], case["image_min_pixels"])
    return lf_vision.encode_row(0, None, raw, processor(folder), rows, ImageReader(Path(".")), pixels)


def disagreement(case: dict[str, Any], folder: str) -> str | None:
    row = mldebug_row(case, folder)
    got = row.refused.code if row.refused else ("DS032" if row.image_problems else None)
    if "error" in case:
        want = SUITE.wanted(case["error"])
        return None if got == want else f"LLaMA-Factory raises {case['error'][:120]!r} ({want}); mldebug: {got}"
    if case.get("dropped"):
        return None if row.dropped else f"LLaMA-Factory drops the row; mldebug: {got or 'trains it'}"
    if got is not None or row.dropped:
        return f"LLaMA-Factory trains the row; mldebug: {got or 'drops it'} ({row.refused.message if row.refused else ''})"
    differ = ids_differ(row.input_ids, case["input_ids"], "LLaMA-Factory")
    if differ:
        return differ
    if row.labels != case["labels"]:
        return "labels differ"
    return None


SUITE = Suite(
    GOLDENS, "goldens-*.json.gz",
    fast=60,
    refusals={  # what LLaMA-Factory raises -> the check mldebug reports it with
        "The number of images does not match the number of <image> tokens": "DS031",
        "The number of videos does not match the number of <video> tokens": "DS031",
        "The number of audios does not match the number of <audio> tokens": "DS031",
    },
    disagreement=disagreement,
)


def test_goldens_record_the_versions_and_every_outcome() -> None:
    assert SUITE.files
    for name in SUITE.files:
        doc = SUITE.goldens(name)
        assert doc["versions"]["llamafactory"] == "0.9.5"
        assert doc["template"] == "qwen2_vl"
        cases = doc["cases"]
        for outcome in ("input_ids", "error", "dropped"):
            assert any(outcome in c for c in cases), outcome
        assert sum(1 for c in cases if "error" in c) < len(cases) // 2
    assert len(SUITE.goldens("goldens-qwen2-vl.json.gz")["cases"]) >= 3000


# every refusal is named; a sample of cases agrees with LLaMA-Factory (fast tier); every case does (-m slow)
test_every_refusal_in_the_goldens_is_named, test_a_sample_of_cases_matches_llama_factory, \
    test_every_case_matches_llama_factory = SUITE.tests()


def test_a_cut_inside_an_image_is_found_where_llama_factory_cuts() -> None:
    """LLaMA-Factory cuts each pair to its share of cutoff_len: the image in the first prompt loses its tail while the
    reply keeps tokens after it (a cut at the row's end would not be seen)."""
    case = {"messages": [{"role": "user", "content": "<image>Describe the picture."},
                         {"role": "assistant", "content": "A grey square, large and plain." * 3}],
            "images": [{"width": 300, "height": 300, "mode": "RGB", "colour": 9}],
            "settings": {"cutoff_len": 60, "train_on_prompt": False, "mask_history": False},
            "image_max_pixels": 768 * 768, "image_min_pixels": 32 * 32}
    row = mldebug_row(case, "qwen2-vl")
    [image] = row.images
    assert image.tokens == 121 and len(row.input_ids) == 60
    assert row.cut_images == [image] and 0 < row.kept_tokens(image) < image.tokens
    assert row.labels[-1] != -100  # the reply is kept after the cut image


@needs_corpus
def test_llama_factorys_own_mllm_demo_reads_as_it_trains_it(tmp_path: Path) -> None:
    """The corpus's mllm_demo.json (LLaMA-Factory's demo rows, read in place) with stand-in images at the paths it
    names, under media_dir: every row's ids and labels equal LLaMA-Factory's (corpus-qwen2-vl.json); without the
    images, each row is one DS032 finding naming the missing file, the rest still checked."""
    from PIL import Image

    golden = json.loads((GOLDENS / "corpus-qwen2-vl.json").read_text(encoding="utf-8"))
    for name, (width, height) in golden["images"].items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (width, height), (90, 140, 200)).save(tmp_path / name, format="JPEG")
    rows = json.loads((CORPUS / golden["dataset"]).read_text(encoding="utf-8"))
    profile = rows_for("qwen2-vl", 2048, False, False)
    for index, (raw, want) in enumerate(zip(rows, golden["rows"], strict=True)):
        row = lf_vision.encode_row(index, None, raw, processor("qwen2-vl"), profile, ImageReader(tmp_path),
                                   lf_vision.Pixels())
        assert (row.input_ids, row.labels) == (want["input_ids"], want["labels"]), index
        assert sum(image.tokens for image in row.images) == want["input_ids"].count(processor("qwen2-vl").image_token_id)
    missing = lf_vision.encode_row(0, None, rows[0], processor("qwen2-vl"), profile, ImageReader(tmp_path / "none"),
                                   lf_vision.Pixels())
    assert missing.image_problems and "does not exist" in missing.image_problems[0][1].what
