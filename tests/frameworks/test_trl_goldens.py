"""`inspect-data --framework trl` beside TRL 1.16.0: the training template it picks, its default max_length, the rows
it drops, and what is said without trl installed. The goldens of TRL's own ids, labels and dropped rows
(tools/trl_goldens.py) are replayed by tests/goldens/ (suite trl-sft)."""

from __future__ import annotations

import json
import sys

import pytest
from typer.testing import CliRunner

from mldebug_cli.cli import app
from support import FIXTURES, TOKENIZERS, write_jsonl

GOLDENS = FIXTURES / "trl-1.16.0"


def run(args: list[str]) -> dict:
    return json.loads(CliRunner().invoke(app, [*args, "-f", "json"], catch_exceptions=False).stdout)


def test_training_template_is_the_one_trls_own_function_picks_for_every_template_it_ships():
    """mldebug's pick (from the installed trl's files) against get_training_chat_template itself."""
    pytest.importorskip("trl")
    from importlib import resources

    from transformers import AutoTokenizer
    from trl.chat_template_utils import get_training_chat_template

    from mldebug_cli.frameworks.trl import framework as trl
    from mldebug_cli.render.chat import ChatRenderer

    tok = AutoTokenizer.from_pretrained(str(TOKENIZERS / "qwen2.5-instruct"))
    folder = resources.files("trl").joinpath("chat_templates")
    shipped = sorted(p for p in folder.iterdir() if p.name.endswith(".jinja"))
    swapped = 0
    for path in shipped:
        template = path.read_text(encoding="utf-8")
        tok.chat_template = template
        markers = ChatRenderer(template, {}).has_generation_markers
        picked = trl.training_template(template, markers)
        if markers:  # SFTTrainer keeps a template that has markers (it never calls get_training_chat_template)
            assert picked.outcome == "own", path.name
            continue
        try:
            expected = get_training_chat_template(tok)
        except ValueError:
            assert picked.outcome == "refused", path.name
            continue
        assert picked.outcome == "swapped" and picked.text == expected, path.name
        swapped += 1
    assert swapped >= 25  # TRL 1.16 pairs 31 shipped templates with a training variant


def test_without_trl_installed_ds015_says_the_result_may_differ_and_what_mldebug_did(monkeypatch):
    monkeypatch.setitem(sys.modules, "trl", None)  # how Python marks a package that cannot be imported
    doc = run(["inspect-data", str(GOLDENS / "rows-messages.json"), "-t", str(TOKENIZERS / "qwen2.5-instruct"),
               "--train-on", "assistant", "--rows", "0"])
    [finding] = [f for f in doc["findings"] if f["code"] == "DS015"]
    assert finding["severity"] == "warning"
    assert "trl is not installed" in finding["message"] and "may differ" in finding["message"]
    assert "per-turn prefix renders" in finding["message"]
    assert "_training.jinja" not in doc["context"]["chat_template"]


def test_trls_default_max_length_1024_applies_when_none_is_given(tmp_path):
    text = " ".join(f"word{i}" for i in range(900))  # ~2,700 tokens
    data = write_jsonl(tmp_path / "long.jsonl", [{"text": text}])
    trl_doc = run(["inspect-data", str(data), "-t", str(TOKENIZERS / "qwen2.5-instruct"), "--framework", "trl"])
    assert trl_doc["context"]["max_length"] == 1024
    assert len(trl_doc["rows"][0]["input_ids"]) == 1024 and trl_doc["rows"][0]["truncated_from"] > 2000
    assert any(f["code"] == "DS007" for f in trl_doc["findings"])
    bare = run(["inspect-data", str(data), "-t", str(TOKENIZERS / "qwen2.5-instruct"), "--framework", "transformers"])
    assert bare["context"]["max_length"] is None and bare["rows"][0]["truncated_from"] is None


def test_rows_trl_drops_are_reported_as_dropped_and_not_counted_as_trained():
    doc = run(["inspect-data", str(GOLDENS / "rows-messages.json"), "-t", str(TOKENIZERS / "qwen2.5-instruct"),
               "--framework", "trl", "--train-on", "assistant", "--max-length", "64", "--rows", "0-6"])
    dropped = [r["row"] for r in doc["rows"] if r.get("dropped")]
    assert dropped == [2, 5, 6]
    assert doc["summary"]["rows_dropped"] == 3
    kept = [r for r in doc["rows"] if not r.get("dropped")]
    assert doc["summary"]["tokens"] == sum(len(r["input_ids"]) for r in kept)
    assert doc["summary"]["trainable_tokens"] == sum(sum(1 for x in r["labels"] if x != -100) for r in kept)
    says_dropped = {f["location"]["row"] for f in doc["findings"] if f["code"] == "DS008" and "trl drops the row" in f["message"]}
    assert says_dropped == {2, 5, 6}
    assert not any(f["code"] == "DS007" and f["location"]["row"] in says_dropped for f in doc["findings"])
