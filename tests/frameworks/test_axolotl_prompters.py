"""axolotl's instruction prompters: the same ids and labels as axolotl 0.19.0 itself, from stored goldens."""

from __future__ import annotations

import json

import pytest
import yaml

from mldebug_cli.frameworks.axolotl import framework as axolotl_framework
from mldebug_cli.frameworks.axolotl import prompters as axolotl_prompters
from mldebug_cli.frameworks.axolotl.framework import masking_options as _axolotl_options
from mldebug_cli.pipelines import inspect
from mldebug_cli.sources.config_file import load_config
from mldebug_cli.sources.row_formats import RowProblem
from support import FIXTURES, QWEN25, ROOT, golden_clock

GOLDENS = FIXTURES / "axolotl-0.19.0" / "prompters"


def report_for(cfg: dict, tokenizer: str, tmp_path, **extra):
    """inspect-data's report for the config's first dataset, read by the same reader as preflight."""
    config_path = tmp_path / "axolotl.yml"
    config_path.write_text(yaml.safe_dump({"base_model": tokenizer, "learning_rate": 1e-5, **cfg}))
    plan = axolotl_framework.read_plan(load_config(config_path))
    dataset = plan.datasets[0]
    options = inspect.InspectOptions(
        dataset=dataset.spec, tokenizer=tokenizer, framework="axolotl", data_format=dataset.data_format,
        max_length=plan.max_length.value, chat_template=plan.chat_template.value,
        framework_options=_axolotl_options(dataset), **extra)
    return inspect.build_report(options)


def golden_report(golden, tmp_path):
    expected = json.loads(golden.read_text())
    cfg = expected["axolotl_cfg"]
    cfg["datasets"] = [{**d, "path": str(GOLDENS / d["path"])} for d in cfg["datasets"]]
    n = len(expected["rows"])
    report = report_for(cfg, str(ROOT / expected["tokenizer"]), tmp_path, rows=tuple(range(n)), show=n)
    return expected, {view["row"]: view for view in report.details["rows"]}, report


@pytest.mark.replay
@pytest.mark.parametrize("golden", sorted(GOLDENS.glob("*.*.json")), ids=lambda p: p.name[:-5])
def test_inspect_data_gives_axolotls_own_prompter_ids_and_labels(golden, tmp_path):
    """Goldens written by tools/axolotl_goldens.py from axolotl 0.19.0 (see fixtures/README.md)."""
    expected, got, _ = golden_report(golden, tmp_path)
    for want in expected["rows"]:
        row = got[want["row"]]
        if "rows" in want:  # completion: axolotl splits the row into rows of sequence_len, in order
            assert row["input_ids"] == [i for r in want["rows"] for i in r["input_ids"]], f"row {want['row']}"
            assert row["labels"] == [i for r in want["rows"] for i in r["labels"]], f"row {want['row']}"
            assert all(r["kept"] for r in want["rows"]) == (not row.get("dropped", False))
            continue
        assert row["input_ids"] == want["input_ids"], f"row {want['row']}"
        assert row["labels"] == want["labels"], f"row {want['row']}"
        assert row.get("dropped", False) == (not want["kept"]), f"row {want['row']}"


def test_the_prompter_replaces_the_chat_template_and_says_so(tmp_path):
    golden = GOLDENS / "qwen2.5-instruct.alpaca.json"
    _, got, report = golden_report(golden, tmp_path)
    assert report.context["train_on"] == "completion via axolotl's alpaca prompter (its own prompt text and tokenization; no chat template)"
    assert got[0]["prompt"].startswith("Below is an instruction that describes a task, paired with an input")
    assert "<|im_start|>" not in got[0]["prompt"]
    assert not any(f.code in ("DS015", "DS023", "DS026") for f in report.findings)


def test_a_type_mldebug_does_not_emulate_is_a_finding_saying_what_it_did_instead(tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"instruction": "Which?", "input": "", "output": "This one."}) + "\n")
    report = report_for({"datasets": [{"path": str(rows), "type": "explainchoice"}]}, str(QWEN25), tmp_path)
    finding = next(f for f in report.findings if f.code == "DS026")
    assert "'explainchoice'" in finding.message and "chat template" in finding.message and "may differ" in finding.message
    assert finding.severity.name == "WARNING"


def test_alpaca_rows_without_a_config_take_axolotls_alpaca_prompter(tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"instruction": "Hi", "output": "Hello!"}) + "\n")
    options = inspect.InspectOptions(dataset=str(rows), tokenizer=str(QWEN25), framework="axolotl", train_on="all")
    report = inspect.build_report(options)
    view = report.details["rows"][0]
    assert view["prompt"].startswith("Below is an instruction that describes a task. Write")
    assert view["labels"] == view["input_ids"]  # --train-on all: train_on_inputs


def test_styles_system_prompts_and_the_dict_form():
    row = {"instruction": "Fix {this}", "input": "", "output": "ok", "system": "Be brief."}
    chatml = axolotl_prompters.read(axolotl_prompters.prompter("alpaca:chatml", {}), row)
    assert chatml.prompt.endswith("<|im_start|>user\nFix {this}<|im_end|>\n<|im_start|>assistant\n")
    with_system = axolotl_prompters.read(axolotl_prompters.prompter("alpaca_w_system", {}), row)
    assert with_system.prompt == "SYSTEM: Be brief.\nUSER: Fix {this}\nASSISTANT:"
    custom = axolotl_prompters.prompter("user_defined", {"field_instruction": "q", "format": "Q: {instruction} {input}"})
    assert axolotl_prompters.read(custom, {"q": "why", "input": "x", "output": "y"}).prompt == "Q: why x"
    assert axolotl_prompters.prompter("alpaca:nope", {}) is None and axolotl_prompters.prompter("explainchoice", {}) is None
    with pytest.raises(RowProblem, match="no 'instruction' field"):
        axolotl_prompters.read(axolotl_prompters.prompter("alpaca", {}), {"output": "y"})


CHAT_GOLDENS = FIXTURES / "axolotl-0.19.0" / "chat"


@pytest.mark.replay
@pytest.mark.parametrize("golden", sorted(CHAT_GOLDENS.glob("*.*.json")), ids=lambda p: p.name[:-5])
def test_chat_template_reading_settings_give_axolotls_own_ids_and_labels(golden, tmp_path):
    """field_messages, message_property_mappings (and the older keys), roles, per-message train, split_thinking."""
    expected = json.loads(golden.read_text())
    cfg = expected["axolotl_cfg"]
    cfg["datasets"] = [{**d, "path": str(CHAT_GOLDENS / d["path"])} for d in cfg["datasets"]]
    n = len(expected["rows"])
    report = report_for(cfg, str(ROOT / expected["tokenizer"]), tmp_path, rows=tuple(range(n)), show=n)
    got = {view["row"]: view for view in report.details["rows"]}
    for want in expected["rows"]:
        assert got[want["row"]]["input_ids"] == want["input_ids"], f"row {want['row']}"
        assert got[want["row"]]["labels"] == want["labels"], f"row {want['row']}"


NAMED_GOLDENS = FIXTURES / "axolotl-0.19.0" / "named"


@pytest.mark.replay
@pytest.mark.parametrize("golden", sorted(NAMED_GOLDENS.glob("*.*.json")), ids=lambda p: p.name[:-5])
def test_axolotls_named_chat_templates_give_its_own_ids_and_labels(golden, tmp_path):
    """chat_template: chatml / qwen_25 / qwen3 / llama3 / mistral_v7_tekken / phi_3 / gemma3, from the installed
    axolotl or the stored copy of 0.19.0's templates."""
    expected = json.loads(golden.read_text())
    cfg = expected["axolotl_cfg"]
    cfg["datasets"] = [{**d, "path": str((NAMED_GOLDENS / d["path"]).resolve())} for d in cfg["datasets"]]
    n = len(expected["rows"])
    with golden_clock(expected):  # mistral_v7_tekken writes today's date into the system prompt
        report = report_for(cfg, str(ROOT / expected["tokenizer"]), tmp_path, rows=tuple(range(n)), show=n)
    assert report.context["chat_template"].startswith(f"axolotl's {cfg['chat_template']!r} template, from axolotl ")
    got = {view["row"]: view for view in report.details["rows"]}
    for want in expected["rows"]:
        row = got[want["row"]]
        if "error" in want:  # the template raises on the row: axolotl stops, mldebug reports it (DS009)
            assert row["input_ids"] == [] and row.get("error")
            continue
        assert row["input_ids"] == want["input_ids"], f"row {want['row']}"
        assert row["labels"] == want["labels"], f"row {want['row']}"


def test_an_unknown_named_template_is_refused_with_the_closest_name(tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]}) + "\n")
    from mldebug_cli.core.errors import InputError

    with pytest.raises(InputError, match="no chat template named 'chatmll'") as caught:
        report_for({"chat_template": "chatmll", "datasets": [{"path": str(rows), "type": "chat_template"}]}, str(QWEN25), tmp_path)
    assert caught.value.hint == "did you mean 'chatml'?"


def test_chat_settings_mldebug_does_not_emulate_are_findings_too(tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]}) + "\n")
    entry = {"path": str(rows), "type": "chat_template", "drop_system_message": True}
    report = report_for({"datasets": [entry]}, str(QWEN25), tmp_path)
    finding = next(f for f in report.findings if f.code == "DS026")
    assert "datasets.0.drop_system_message" in finding.message and "may differ" in finding.message
    plain = report_for({"datasets": [{"path": str(rows), "type": "chat_template"}]}, str(QWEN25), tmp_path)
    assert not any(f.code == "DS026" for f in plain.findings)


def test_the_config_reader_refuses_malformed_reading_settings(tmp_path):
    from mldebug_cli.core.errors import InputError

    rows = tmp_path / "rows.jsonl"
    rows.write_text("{}\n")
    for bad, says in (({"roles": {"user": "human"}}, "roles must map each role"),
                      ({"message_property_mappings": ["role"]}, "message_property_mappings must map"),
                      ({"split_thinking": "yes"}, "split_thinking must be true or false")):
        with pytest.raises(InputError, match=says):
            report_for({"datasets": [{"path": str(rows), "type": "chat_template", **bad}]}, str(QWEN25), tmp_path)


def test_tokenizer_default_fallback_takes_the_named_template_only_when_the_tokenizer_has_none(tmp_path):
    import shutil

    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]}) + "\n")
    bare = tmp_path / "bare"
    shutil.copytree(QWEN25, bare)
    config = json.loads((bare / "tokenizer_config.json").read_text())
    config.pop("chat_template", None)
    (bare / "tokenizer_config.json").write_text(json.dumps(config))
    for chat_template in (bare / "chat_template.jinja", bare / "chat_template.json"):
        chat_template.unlink(missing_ok=True)
    cfg = {"chat_template": "tokenizer_default_fallback_chatml", "datasets": [{"path": str(rows), "type": "chat_template"}]}
    fallback = report_for(cfg, str(bare), tmp_path, rows=(0,), show=1)
    assert fallback.context["chat_template"].startswith("axolotl's 'chatml' template, from axolotl ")
    assert fallback.details["rows"][0]["prompt"] == "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello<|im_end|>\n"
    own = report_for(cfg, str(QWEN25), tmp_path, rows=(0,), show=1)
    assert own.context["chat_template"] == report_for({"datasets": cfg["datasets"]}, str(QWEN25), tmp_path).context["chat_template"]
    assert own.details["rows"][0]["prompt"].startswith("<|im_start|>system\nYou are Qwen")  # the tokenizer's own


def test_the_stored_named_templates_are_axolotls_own():
    """The stored copy against the installed axolotl 0.19.0 (skipped without it: it pins another transformers)."""
    from mldebug_cli.frameworks import schema, versions
    from mldebug_cli.frameworks.axolotl import framework as profile

    table = schema.stored(profile.STORED_TEMPLATES)
    assert {"chatml", "llama3", "qwen_25", "qwen3", "mistral_v7_tekken", "gemma3", "phi_3"} <= set(table["templates"])
    if versions.installed("axolotl") != table["version"]:
        pytest.skip(f"axolotl {table['version']} is not installed: nothing to compare the stored templates with")
    for name, text in table["templates"].items():
        path, _ = profile.named_template(name)
        assert path.read_text(encoding="utf-8") == text, name
