"""inspect-data --eval-dataset: every eval row that a training row repeats (DS053) or nearly repeats (DS054), found
over every training row, and nothing on an eval set that shares no row; generated rows in the shapes users have
(case, white space, Unicode forms, prompt-completion and text rows), through the real pipeline."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mldebug_cli.core import registry
from mldebug_cli.pipelines.inspect import InspectOptions, build_report
from mldebug_cli.pipelines.overlap import overlap_findings
from mldebug_cli.sources.dataset import DatasetSource
from mldebug_cli.sources.overlap import EVAL_SIDE
from mldebug_cli.sources.row_formats import detect
from support import QWEN25, write_jsonl

pytest.importorskip("datasketch")
OVERLAP_CHECKS = [registry.load(registry.lookup(code)) for code in ("DS053", "DS054")]
_WORDS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=3, max_size=9)


def _chat(user: str, reply: str) -> dict:
    return {"messages": [{"role": "user", "content": user}, {"role": "assistant", "content": reply}]}


def _findings(tmp: Path, train: list, eval_rows: list, **options) -> list:
    """The overlap findings of ``train`` against ``eval_rows`` (the pass alone, as inspect-data runs it)."""
    train_path, eval_path = write_jsonl(tmp / "train.jsonl", train), write_jsonl(tmp / "eval.jsonl", eval_rows)
    source = DatasetSource(str(train_path))
    detection = detect([r.data for r in source.records(list(range(50)))], str(train_path))
    inspect = InspectOptions(dataset=str(train_path), tokenizer=str(QWEN25), eval_dataset=str(eval_path), workers=1,
                             **options)
    findings, line = overlap_findings(inspect, source, detection, OVERLAP_CHECKS)
    assert f"against every one of the {len(train):,} training rows" in line["eval overlap"]
    return findings


def _disguised(text: str, how: int) -> str:
    """The same text as a user would have it again: other case, other white space, another Unicode form."""
    return [text.upper(), "  " + text.replace(" ", "\n ") + "\t", unicodedata.normalize("NFKD", text.title())][how % 3]


@pytest.mark.slow  # 25 generated datasets (5 s)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    sentences=st.lists(st.lists(_WORDS, min_size=1, max_size=30), min_size=4, max_size=40, unique_by=lambda w: tuple(w)),
    copied=st.sets(st.integers(0, 39), max_size=6),
    how=st.integers(0, 2),
)
def test_every_disguised_copy_is_found_and_nothing_else(sentences, copied, how, tmp_path):
    train = [_chat(f"question {i}: " + " ".join(words), " ".join(reversed(words)) + f" (answer {i})")
             for i, words in enumerate(sentences)]
    copied = sorted(c for c in copied if c < len(train))
    fresh = [_chat("Zyx qwv 0 9 8?", "Vwq zyx 7 6 5.")]  # digits and letters no training row holds in this order
    eval_rows = fresh + [_chat(_disguised(train[c]["messages"][0]["content"], how),
                               _disguised(train[c]["messages"][1]["content"], how + 1)) for c in copied]
    found = _findings(tmp_path, train, eval_rows)
    exact = {f.location.row: f for f in found if f.code == "DS053"}
    assert sorted(exact) == list(range(1, len(copied) + 1)), [f.message for f in found]
    for eval_row, train_row in zip(range(1, len(copied) + 1), copied):
        assert f"training row {train_row} of" in exact[eval_row].message
        assert exact[eval_row].location.side == EVAL_SIDE
    assert not [f for f in found if f.location.row == 0]


def test_a_near_copy_is_ds054_with_its_real_similarity(tmp_path):
    words, reply = " ".join(f"w{i}" for i in range(40)), " ".join(f"r{i}" for i in range(20))
    train = [_chat("Summarise: " + words, reply), _chat("Other", "row")]
    near = _chat("Summarise: " + words.replace("w30", "changed"), reply)  # 5 of 58 5-grams differ: 53/63 = 84%
    further = _chat("Summarise: " + words.replace("w30", "x").replace("w10", "y"), reply)  # 10 differ: 48/68 = 71%
    found = _findings(tmp_path, train, [near, further])
    assert [(f.code, f.location.row) for f in found] == [("DS054", 0)]
    assert "training row 0 of" in found[0].message and "(84% of their word 5-grams shared)" in found[0].message


def test_prompt_completion_and_text_rows(tmp_path):
    train = [{"prompt": "Translate 'dog'.", "completion": "chien"}, {"prompt": "Translate 'cat'.", "completion": "chat"}]
    found = _findings(tmp_path, train, [{"prompt": "translate 'CAT'.", "completion": " chat"}])
    assert [(f.code, f.location.row) for f in found] == [("DS053", 0)]
    texts = [{"text": f"Document {i} says {i * 3}."} for i in range(5)]
    found = _findings(tmp_path, texts, [{"text": "document 4 says 12."}, {"text": "Document 4 says 13."}])
    assert [(f.code, f.location.row) for f in found] == [("DS053", 0)]


def test_a_row_repeated_in_training_is_counted_and_its_first_rows_named(tmp_path):
    row = _chat("Repeat me", "Repeated reply")
    train = [row] * 5 + [_chat("x", "y")]
    (found,) = _findings(tmp_path, train, [row])
    assert "training rows 0, 1, 2 and 2 more of" in found.message


@pytest.mark.slow  # a whole inspect-data run (the case files run DS053/DS054 through it in the fast tier)
def test_through_inspect_data_rows_shown_are_not_tagged_with_eval_findings(tmp_path):
    train = [_chat(f"Question {i}?", f"Answer {i}.") for i in range(6)]
    write_jsonl(tmp_path / "train.jsonl", train)
    write_jsonl(tmp_path / "eval.jsonl", [train[0]])
    report = build_report(InspectOptions(dataset=str(tmp_path / "train.jsonl"), tokenizer=str(QWEN25),
                                         eval_dataset=str(tmp_path / "eval.jsonl"), select=("DS053",), sample=2))
    (finding,) = report.findings
    assert (finding.location.path, finding.location.row) == (str(tmp_path / "eval.jsonl"), 0)
    assert report.context["eval overlap"].startswith("1 eval rows of")  # every training row, not the sample of 2
    from mldebug_cli.formats.text_inspect_data import _codes_of_row

    assert _codes_of_row(report.findings, 0) == []


def test_preference_rows_are_refused_by_name(tmp_path):
    from mldebug_cli.core.errors import UsageError

    write_jsonl(tmp_path / "pairs.jsonl", [{"prompt": "p", "chosen": "a", "rejected": "b"}])
    with pytest.raises(UsageError, match="--eval-dataset: the train/eval overlap checks"):
        build_report(InspectOptions(dataset=str(tmp_path / "pairs.jsonl"), tokenizer=str(QWEN25),
                                    eval_dataset=str(tmp_path / "pairs.jsonl")))


def test_an_eval_file_that_is_not_there_is_one_line_before_any_row_is_read(tmp_path):
    from mldebug_cli.core.errors import InputError

    write_jsonl(tmp_path / "train.jsonl", [_chat("a", "b")])
    with pytest.raises(InputError, match="eval.jsonl: no such file or folder"):
        build_report(InspectOptions(dataset=str(tmp_path / "train.jsonl"), tokenizer=str(QWEN25),
                                    eval_dataset=str(tmp_path / "eval.jsonl")))


@pytest.mark.slow  # a whole inspect-data run
def test_unreadable_eval_rows_are_counted_not_fatal(tmp_path):
    row = _chat("Repeat me", "Repeated reply")
    write_jsonl(tmp_path / "train.jsonl", [row, _chat("x", "y")])
    (tmp_path / "eval.jsonl").write_text(json.dumps(row) + "\nnot json\n")
    report = build_report(InspectOptions(dataset=str(tmp_path / "train.jsonl"), tokenizer=str(QWEN25),
                                         eval_dataset=str(tmp_path / "eval.jsonl"), select=("DS053",)))
    assert [f.location.row for f in report.findings] == [0]
    assert "1 unreadable eval rows left out" in report.context["eval overlap"]
