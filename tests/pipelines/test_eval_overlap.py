"""inspect-data --eval-dataset: every eval row that a training row repeats (DS053) or nearly repeats (DS054), found
over every training row, and nothing on an eval set that shares no row; generated rows in the shapes users have
(case, white space, Unicode forms, prompt-completion and text rows), through the real pipeline."""

from __future__ import annotations

import json
import shutil
import unicodedata
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mldebug_cli.core import registry
from mldebug_cli.pipelines.inspect import InspectOptions, build_report
from mldebug_cli.pipelines.overlap import overlap_findings
from mldebug_cli.sources.dataset import DatasetSource
from mldebug_cli.sources.overlap import EVAL_SIDE, RowReader
from mldebug_cli.sources.row_formats import detect
from support import FIXTURES, QWEN25, write_jsonl

pytest.importorskip("datasketch")
OVERLAP_CHECKS = [registry.load(registry.lookup(code)) for code in ("DS053", "DS054")]
VISION_IMAGES = FIXTURES / "datasets" / "vision" / "images"
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
    findings, line = overlap_findings(inspect, source, RowReader(detection), OVERLAP_CHECKS)
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


def _pair_findings(tmp: Path, train: list, eval_rows: list, task: str, images: Path | None = None) -> list:
    """The overlap findings of preference (``task``) or image rows, as inspect-data reads them."""
    (tmp / "eval").mkdir(exist_ok=True)
    train_path, eval_path = write_jsonl(tmp / "train.jsonl", train), write_jsonl(tmp / "eval" / "eval.jsonl", eval_rows)
    source = DatasetSource(str(train_path))
    if images is None:
        reader = RowReader(task=task)
    else:
        reader = RowReader(detect([r.data for r in source.records(None)], str(train_path)), None, str(images))
    inspect = InspectOptions(dataset=str(train_path), tokenizer=str(QWEN25), eval_dataset=str(eval_path), workers=1)
    return overlap_findings(inspect, source, reader, OVERLAP_CHECKS)[0]


def test_preference_rows_compare_prompt_and_chosen_and_the_rejected_reply_in_the_near_pass(tmp_path):
    long = " ".join(f"step{i}" for i in range(30))
    train = [{"prompt": "What is 2+2?", "chosen": "4", "rejected": "5"},
             {"prompt": f"Explain: {long}", "chosen": f"Because {long}", "rejected": "No idea at all, sorry."},
             {"prompt": "Capital of France?", "chosen": "Paris", "rejected": "Lyon"}]
    eval_rows = [{"prompt": "what is 2+2? ", "chosen": "4", "rejected": "22"},  # prompt and chosen: exact
                 {"prompt": "Capital of France?", "chosen": "Lyon", "rejected": "Paris"},  # the pair swapped: not exact
                 {"prompt": f"Explain: {long}", "chosen": f"Because {long}", "rejected": "I do not know, sorry."},
                 {"prompt": "Unrelated question here", "chosen": "a", "rejected": "b"}]
    found = _pair_findings(tmp_path, train, eval_rows, "dpo")
    assert [(f.code, f.location.row) for f in found] == [("DS053", 0), ("DS053", 2)], [f.message for f in found]
    assert "training row 0 of" in found[0].message and "training row 1 of" in found[1].message


def test_implicit_prompt_kto_and_grpo_rows(tmp_path):
    def turns(user: str, reply: str) -> list:
        return [{"role": "user", "content": user}, {"role": "assistant", "content": reply}]

    train = [{"chosen": turns("Name a colour", "Blue"), "rejected": turns("Name a colour", "Seven")}]
    eval_rows = [{"chosen": turns("name a COLOUR", "blue"), "rejected": turns("name a COLOUR", "Eight")},
                 {"chosen": turns("Name a colour", "Seven"), "rejected": turns("Name a colour", "Blue")}]
    assert [(f.code, f.location.row) for f in _pair_findings(tmp_path, train, eval_rows, "dpo")] == [("DS053", 0)]
    kto = [{"prompt": "Is water wet?", "completion": "Yes.", "label": True}]
    eval_kto = [{"prompt": "Is water wet?", "completion": "Yes.", "label": False}, {"prompt": "Is water wet?",
                "completion": "No.", "label": False}]
    assert [(f.code, f.location.row) for f in _pair_findings(tmp_path, kto, eval_kto, "kto")] == [("DS053", 0)]
    grpo = [{"prompt": [{"role": "user", "content": "Solve 3x = 9"}]}, {"prompt": [{"role": "user", "content": "Solve 2x = 4"}]}]
    eval_grpo = [{"prompt": [{"role": "user", "content": "solve 2x = 4"}]}]
    assert [(f.code, f.location.row) for f in _pair_findings(tmp_path, grpo, eval_grpo, "grpo")] == [("DS053", 0)]


def test_image_rows_are_the_same_only_with_the_same_image_bytes(tmp_path):
    images = tmp_path / "images"
    images.mkdir()
    (tmp_path / "eval").mkdir()
    for name in ("red_ball.png", "blue_ball.png"):
        shutil.copy(VISION_IMAGES / name, images / name)
    shutil.copy(VISION_IMAGES / "red_ball.png", tmp_path / "eval" / "renamed.png")  # the same bytes, another name

    def row(image: str, question: str, answer: str) -> dict:
        return {"images": [image], "messages": [
            {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": question}]},
            {"role": "assistant", "content": answer}]}

    train = [row("images/red_ball.png", "What colour is the ball?", "Red."), row("images/blue_ball.png", "Size?", "Small.")]
    eval_rows = [row("renamed.png", "what colour is the ball?", "Red."),  # same text, same bytes: exact
                 row(str(images / "blue_ball.png"), "What colour is the ball?", "Red.")]  # same text, other image
    found = _pair_findings(tmp_path, train, eval_rows, "sft", images=tmp_path)
    assert [(f.code, f.location.row) for f in found] == [("DS053", 0)], [f.message for f in found]


@pytest.mark.slow  # two whole inspect-data runs (a tokenizer, a processor)
def test_through_inspect_data_preference_and_image_rows(tmp_path):
    pairs = [{"prompt": f"Question {i}?", "chosen": f"Answer {i}.", "rejected": "No."} for i in range(4)]
    write_jsonl(tmp_path / "pairs.jsonl", pairs)
    write_jsonl(tmp_path / "eval.jsonl", [pairs[2]])
    report = build_report(InspectOptions(dataset=str(tmp_path / "pairs.jsonl"), tokenizer=str(QWEN25),
                                         eval_dataset=str(tmp_path / "eval.jsonl")))
    assert [(f.code, f.location.row) for f in report.findings if f.code.startswith("DS")] == [("DS053", 0)]
    assert "DS053" in report.checks_run and report.context["eval overlap"].startswith("1 eval rows of")
    vision = VISION_IMAGES.parent / "trl_vision_sft.jsonl"
    report = build_report(InspectOptions(dataset=str(vision), tokenizer=str(FIXTURES / "processors" / "qwen2-vl"),
                                         eval_dataset=str(vision), select=("DS053",)))
    assert report.findings and all(f.code == "DS053" and f.location.side == EVAL_SIDE for f in report.findings)


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
