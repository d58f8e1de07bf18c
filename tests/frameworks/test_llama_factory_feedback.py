"""LLaMA-Factory's KTO path (stage kto: FeedbackDatasetProcessor) as mldebug emulates it, against LLaMA-Factory 0.9.5
itself (fixtures/llamafactory-0.9.5/more/feedback.json, written by tools/llamafactory_feedback_golden.py from our rows
fixtures/llamafactory-rows/feedback.json), and on LLaMA-Factory's own kto_en_demo from the corpus."""

from __future__ import annotations

import json

import pytest

from mldebug_cli.frameworks.llama_factory.framework import LlamaFactoryOptions
from mldebug_cli.pipelines.inspect import InspectOptions, build_report
from support import CORPUS, ROOT, TOKENIZERS, needs_corpus

GOLDEN = ROOT / "fixtures" / "llamafactory-0.9.5" / "more" / "feedback.json"
ROWS = ROOT / "fixtures" / "llamafactory-rows" / "feedback.json"


def _folder(tokenizer: str):
    return CORPUS / "tokenizers" / tokenizer if tokenizer.startswith("phi") else TOKENIZERS / tokenizer


def _cases():
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    for template, case in golden["cases"].items():
        marks = [needs_corpus] if case["tokenizer"].startswith("phi") else []
        for setting in case["settings"]:
            yield pytest.param(template, setting, marks=marks, id=f"{template}-{setting}")


@pytest.mark.parametrize(("template", "setting"), list(_cases()))
def test_kto_rows_match_llama_factorys_feedback_processor(template, setting):
    """input_ids, labels (the end of a long prompt cut by infer_seqlen, never the row dropped for its length) and
    the label, row for row; the row its converter drops (two user turns in a row) is dropped."""
    from mldebug_cli.frameworks.llama_factory.data import InvalidRow
    from mldebug_cli.frameworks.llama_factory.framework import row_profile
    from mldebug_cli.sources.tokenizer import load_tokenizer

    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))["cases"][template]
    case = golden["settings"][setting]
    folder = _folder(golden["tokenizer"])
    options = LlamaFactoryOptions(template=template, **case["overrides"])
    rows = row_profile(InspectOptions(dataset="", tokenizer=str(folder), framework_options=options),
                       load_tokenizer(str(folder)), "sharegpt")
    assert rows.encodes_pairs("kto")
    raw = json.loads(ROWS.read_text(encoding="utf-8"))
    for i, (row, want) in enumerate(zip(raw, case["rows"], strict=True)):
        if want.get("dropped"):
            with pytest.raises(InvalidRow):
                rows.encode_pair(row, "kto")
            continue
        (side,) = rows.encode_pair(row, "kto")
        assert (side.input_ids, side.labels, side.label) == (want["input_ids"], want["labels"], want["kto_tag"]), f"row {i}"


@needs_corpus
def test_llama_factorys_kto_demo_is_prepared_by_its_processor_not_trls():
    """kto_en_demo under --framework llama-factory --task kto: its feedback processor (cutoff_len 2048, no row
    dropped for its length: LLaMA-Factory 0.9.5 keeps all 300 and cuts the end of 8 prompts with the qwen template),
    not TRL's KTOTrainer (max_length 1024, which drops 20 rows): no DP005, DP006 on the 8 cut prompts."""
    options = InspectOptions(dataset=str(CORPUS / "datasets" / "llama-factory" / "kto_en_demo.json"),
                             tokenizer=str(TOKENIZERS / "qwen2.5-instruct"), framework="llama-factory", template="qwen",
                             task="kto", all_rows=True, show=0, workers=1)
    report = build_report(options)
    assert "feedback processor" in report.context["framework"]
    flagged = {f.location.row for f in report.findings if f.code == "DP006"}
    assert flagged == {4, 54, 58, 64, 117, 189, 195, 257}
    assert all("the reply follows the cut prompt" in f.message for f in report.findings if f.code == "DP006")
    assert not [f for f in report.findings if f.code in ("DP005", "DP014")]


def test_typed_content_parts_stop_llama_factorys_supervised_processor(tmp_path):
    """LLaMA-Factory 0.9.5's `llamafactory-cli train` path raises on content given as typed parts (its v1 data
    format; the golden: the supervised processor with template qwen3 raises on every one of our typed-parts rows):
    under --framework llama-factory each such row is an error naming it (DS010), not a reading of the parts that
    LLaMA-Factory never trains (no DS016 "reasoning dropped")."""
    from support import QWEN3

    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))["typed_parts_supervised_qwen3"]
    rows = ROOT / "fixtures" / "llamafactory-rows" / "typed_parts.jsonl"
    assert golden and all(golden), "LLaMA-Factory 0.9.5 raises on every typed-parts row"
    report = build_report(InspectOptions(dataset=str(rows), tokenizer=str(QWEN3), framework="llama-factory",
                                         template="qwen3", all_rows=True, show=0, workers=1))
    refused = {f.location.row for f in report.findings if f.code == "DS010" and "typed parts" in f.message}
    assert refused == set(range(len(golden)))
    assert not [f for f in report.findings if f.code in ("DS016", "DS012")]
    plain = tmp_path / "plain.jsonl"
    plain.write_text(json.dumps({"messages": [{"role": "user", "content": "Hi."},
                                              {"role": "assistant", "content": "Hello."}]}) + "\n")
    clean = build_report(InspectOptions(dataset=str(plain), tokenizer=str(QWEN3), framework="llama-factory",
                                        template="qwen3", all_rows=True, show=0, workers=1))
    assert not [f for f in clean.findings if f.code == "DS010"]
