"""LLaMA-Factory 0.9.5's goldens: the supervised and pairwise processors' ids and labels (tools/llamafactory_goldens.py,
on the project's rows in fixtures/llamafactory-rows/), the multimodal rows (tools/llamafactory_vl_goldens.py:
template qwen2_vl, Qwen2VLPlugin and the real processor on hypothesis-generated rows; where it raises, mldebug refuses
the row with the check that names the same failure; where it drops the row, so does mldebug), content parts, and the
rows its trainers put in each optimizer step (batch_plans.py)."""

from __future__ import annotations

import json
from dataclasses import replace
from functools import cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from _pytest.mark import ParameterSet

from goldens import batch_plans, content_parts
from goldens.suite import GoldenSuite
from goldens.vision import VisionSuite, ids_differ, image_bytes, processor
from mldebug_cli.core.errors import InputError
from mldebug_cli.frameworks.llama_factory import vision as lf_vision
from mldebug_cli.frameworks.llama_factory.data import InvalidRow
from mldebug_cli.frameworks.llama_factory.framework import LlamaFactoryOptions, Rows, row_profile
from mldebug_cli.frameworks.trl.vision import VisionRow
from mldebug_cli.pipelines.inspect import InspectOptions, build_report
from mldebug_cli.sources.images import ImageReader
from mldebug_cli.sources.tokenizer import load_tokenizer
from support import CORPUS, FIXTURES, ROOT, TOKENIZERS, first_difference, needs_corpus

GOLDENS = ROOT / "fixtures" / "llamafactory-0.9.5"
ROWS = ROOT / "fixtures" / "llamafactory-rows"
FORMATS = {"lf_alpaca": ("alpaca.json", "alpaca"), "lf_sharegpt": ("sharegpt.json", "sharegpt")}
TOOL = "tools/llamafactory_goldens.py"
COMMAND = "HF_HUB_OFFLINE=1 /tmp/lf/bin/python tools/llamafactory_goldens.py [--corpus ../shared/corpus]"


def row_cases() -> list[ParameterSet]:
    cases = []
    for path in sorted(GOLDENS.glob("*.json")):
        golden = json.loads(path.read_text(encoding="utf-8"))
        marks = [needs_corpus] if golden["tokenizer_origin"] == "corpus" else []
        for setting in golden["settings"]:
            for dataset in FORMATS:
                cases.append(pytest.param((path.name, setting, dataset), marks=marks, id=f"{path.stem}-{setting}-{dataset}"))
    return cases


def compare(name: str, setting: str, dataset: str) -> tuple[int, int, list[str]]:
    """(matched rows, rows, first differences) of mldebug against one golden case."""
    golden = json.loads((GOLDENS / name).read_text(encoding="utf-8"))
    folder = TOKENIZERS / golden["tokenizer"] if golden["tokenizer_origin"] == "npm" else CORPUS / "tokenizers" / golden["tokenizer"]
    overrides = golden["settings"][setting]["overrides"]
    expected = golden["settings"][setting]["datasets"]
    file, row_format = FORMATS[dataset]
    options = LlamaFactoryOptions(template=golden["template"], tool_date=golden["tool_date"], **overrides)
    inspect = InspectOptions(dataset=str(ROWS / file), tokenizer=str(folder), data_format=row_format,
                             framework="llama-factory", framework_options=options, all_rows=True, show=100)
    if "refused" in expected:  # LLaMA-Factory refuses the settings before reading a row: so does mldebug
        with pytest.raises(InputError, match="LLaMA-Factory refuses these settings"):
            build_report(inspect)
        return 1, 1, []
    expected = expected[dataset]
    views = {v["row"]: v for v in build_report(replace(inspect, all_rows=False, rows=tuple(range(len(expected))))).details["rows"]}
    matched, problems = 0, []
    for i, want in enumerate(expected):
        view = views[i]
        if want.get("dropped"):
            same = "error" in view and "drops the row" in view["error"]
        elif want.get("error"):  # its template raises on the row
            same = want["error"].rstrip(".") in view.get("error", "")
        else:
            same = view["input_ids"] == want["input_ids"] and view["labels"] == want["labels"]
        matched += same
        if not same:
            problems.append(f"row {i}: {view.get('error') or first_difference(view, want)}")
    return matched, len(expected), problems


def replay_rows(case: tuple[str, str, str], tmp_path: Path) -> None:
    matched, total, problems = compare(*case)
    assert matched == total, problems[:3]


def pair_cases() -> list[ParameterSet]:
    cases = []
    for path in sorted(GOLDENS.glob("*.json")):
        golden = json.loads(path.read_text(encoding="utf-8"))
        marks = [needs_corpus] if golden["tokenizer_origin"] == "corpus" else []
        for setting in golden.get("pairwise", {}):
            cases.append(pytest.param((path.name, setting), marks=marks, id=f"{path.stem}-{setting}"))
    return cases


def replay_pairs(case: tuple[str, str], tmp_path: Path) -> None:
    """The pairwise processor (stage dpo/orpo): chosen and rejected ids and labels, rows it drops."""
    name, setting = case
    golden = json.loads((GOLDENS / name).read_text(encoding="utf-8"))
    folder = TOKENIZERS / golden["tokenizer"] if golden["tokenizer_origin"] == "npm" else CORPUS / "tokenizers" / golden["tokenizer"]
    pairwise = golden["pairwise"][setting]
    options = LlamaFactoryOptions(template=golden["template"], tool_date=golden["tool_date"], **pairwise["overrides"])
    rows = row_profile(InspectOptions(dataset="", tokenizer=str(folder), framework_options=options),
                       load_tokenizer(str(folder)), "sharegpt")
    raw = json.loads((ROWS / "pairwise.json").read_text(encoding="utf-8"))
    for i, (row, want) in enumerate(zip(raw, pairwise["rows"], strict=True)):
        if want.get("dropped"):
            with pytest.raises(InvalidRow):
                rows.encode_pair(row)
            continue
        chosen, rejected = rows.encode_pair(row)
        got = {"chosen_input_ids": chosen.input_ids, "chosen_labels": chosen.labels,
               "rejected_input_ids": rejected.input_ids, "rejected_labels": rejected.labels}
        assert got == want, f"row {i}"


VISION_GOLDENS = FIXTURES / "llamafactory-0.9.5-vision"


@cache
def rows_for(folder: str, cutoff_len: int, train_on_prompt: bool, mask_history: bool) -> Rows:
    loaded = processor(folder)
    settings = LlamaFactoryOptions(template="qwen2_vl", cutoff_len=cutoff_len, train_on_prompt=train_on_prompt,
                                   mask_history=mask_history)
    options = SimpleNamespace(framework_options=settings, train_on=None, max_length=None, template=None)
    return row_profile(options, SimpleNamespace(tokenizer=loaded.tokenizer, chat_template=loaded.chat_template), "chat")


def vision_row(case: dict[str, Any], folder: str) -> VisionRow:
    raw = {"messages": case["messages"], "images": [{"bytes": image_bytes(s), "path": None} for s in case["images"]]}
    settings = case["settings"]
    rows = rows_for(folder, settings["cutoff_len"], settings["train_on_prompt"], settings["mask_history"])
    pixels = lf_vision.Pixels(case["image_max_pixels"], case["image_min_pixels"])
    return lf_vision.encode_row(0, None, raw, processor(folder), rows, ImageReader(Path(".")), pixels)


def vision_disagreement(case: dict[str, Any], folder: str) -> str | None:
    row = vision_row(case, folder)
    got = row.refused.code if row.refused else ("DS032" if row.image_problems else None)
    if "error" in case:
        want = VISION.wanted(case["error"])
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


VISION = VisionSuite(
    VISION_GOLDENS, "goldens-*.json.gz",
    fast=60,
    refusals={  # what LLaMA-Factory raises -> the check mldebug reports it with
        "The number of images does not match the number of <image> tokens": "DS031",
        "The number of videos does not match the number of <video> tokens": "DS031",
        "The number of audios does not match the number of <audio> tokens": "DS031",
    },
    disagreement=vision_disagreement,
)


def replay_content_parts(case: str, tmp_path: Path) -> None:
    """`llamafactory-cli train` (v0 data path): any list content stops the run (its template formatters, or
    datasets' loader on mixed content types); a string row's loss_weight is never read (DS066)."""
    template, tokenizer = case.split(":")
    doc = content_parts.inspect("llama-factory", tokenizer, "--template", template)
    content_parts.agree(doc, content_parts.golden("llamafactory")[case])
    assert content_parts.weighted_rows(doc) == {6}


SUITES = (
    GoldenSuite("llama-factory-rows", "llama-factory", TOOL, COMMAND, GOLDENS, row_cases, replay_rows),
    GoldenSuite("llama-factory-pairs", "llama-factory", TOOL, COMMAND, GOLDENS, pair_cases, replay_pairs),
    GoldenSuite("llama-factory-vision", "llama-factory", "tools/llamafactory_vl_goldens.py",
                "HF_HUB_OFFLINE=1 /work/venvs/lf-vision/bin/python tools/llamafactory_vl_goldens.py --cases 750 --seed K "
                "(K = 1..4), then --merge", VISION_GOLDENS, VISION.cases, VISION.replay, keep=None),
    GoldenSuite("llama-factory-content-parts", "llama-factory", content_parts.TOOL,
                "HF_HUB_OFFLINE=1 /work/venvs/lf-vision/bin/python tools/content_parts_goldens.py llamafactory",
                content_parts.GOLDENS, lambda: content_parts.cases("llamafactory"), replay_content_parts),
    GoldenSuite("llama-factory-batch-plan", "llama-factory", batch_plans.LLAMA_FACTORY_TOOL,
                batch_plans.LLAMA_FACTORY_COMMAND, batch_plans.LLAMA_FACTORY_GOLDENS,
                lambda: batch_plans.cases(batch_plans.LLAMA_FACTORY_GOLDENS), batch_plans.replay_llama_factory),
)
