"""mldebug's LLaMA-Factory emulation against LLaMA-Factory 0.9.5 itself (fixtures/llamafactory-0.9.5/, written by
tools/llamafactory_goldens.py from the project's rows in fixtures/llamafactory-rows/): input_ids and labels row for row."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from mldebug_cli.core.errors import InputError
from mldebug_cli.frameworks.llama_factory.framework import LlamaFactoryOptions
from mldebug_cli.pipelines.inspect import InspectOptions, build_report
from support import CORPUS, ROOT, TOKENIZERS, first_difference, needs_corpus

GOLDENS = ROOT / "fixtures" / "llamafactory-0.9.5"
ROWS = ROOT / "fixtures" / "llamafactory-rows"
FORMATS = {"lf_alpaca": ("alpaca.json", "alpaca"), "lf_sharegpt": ("sharegpt.json", "sharegpt")}


def _cases():
    for path in sorted(GOLDENS.glob("*.json")):
        golden = json.loads(path.read_text(encoding="utf-8"))
        marks = [needs_corpus] if golden["tokenizer_origin"] == "corpus" else []
        for setting in golden["settings"]:
            for dataset in FORMATS:
                yield pytest.param(path.name, setting, dataset, marks=marks, id=f"{path.stem}-{setting}-{dataset}")


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


@pytest.mark.parametrize(("name", "setting", "dataset"), list(_cases()))
def test_rows_match_llama_factory(name, setting, dataset):
    matched, total, problems = compare(name, setting, dataset)
    assert matched == total, problems[:3]


def _pairwise_cases():
    for path in sorted(GOLDENS.glob("*.json")):
        golden = json.loads(path.read_text(encoding="utf-8"))
        marks = [needs_corpus] if golden["tokenizer_origin"] == "corpus" else []
        for setting in golden.get("pairwise", {}):
            yield pytest.param(path.name, setting, marks=marks, id=f"{path.stem}-{setting}")


@pytest.mark.parametrize(("name", "setting"), list(_pairwise_cases()))
def test_pairs_match_llama_factory(name, setting):
    """The pairwise processor (stage dpo/orpo): chosen and rejected ids and labels, rows it drops."""
    from mldebug_cli.frameworks.llama_factory.data import InvalidRow
    from mldebug_cli.frameworks.llama_factory.framework import row_profile
    from mldebug_cli.sources.tokenizer import load_tokenizer

    golden = json.loads((GOLDENS / name).read_text(encoding="utf-8"))
    folder = TOKENIZERS / golden["tokenizer"] if golden["tokenizer_origin"] == "npm" else CORPUS / "tokenizers" / golden["tokenizer"]
    case = golden["pairwise"][setting]
    options = LlamaFactoryOptions(template=golden["template"], tool_date=golden["tool_date"], **case["overrides"])
    rows = row_profile(InspectOptions(dataset="", tokenizer=str(folder), framework_options=options),
                       load_tokenizer(str(folder)), "sharegpt")
    raw = json.loads((ROWS / "pairwise.json").read_text(encoding="utf-8"))
    for i, (row, want) in enumerate(zip(raw, case["rows"], strict=True)):
        if want.get("dropped"):
            with pytest.raises(InvalidRow):
                rows.encode_pair(row)
            continue
        chosen, rejected = rows.encode_pair(row)
        got = {"chosen_input_ids": chosen.input_ids, "chosen_labels": chosen.labels,
               "rejected_input_ids": rejected.input_ids, "rejected_labels": rejected.labels}
        assert got == want, f"row {i}"
