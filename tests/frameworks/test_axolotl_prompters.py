"""axolotl's instruction prompters and chat_template reading settings: what mldebug says of them (axolotl 0.19.0's
own ids and labels, from its goldens, are replayed by tests/goldens/: suites axolotl-prompters, -chat and -named)."""

from __future__ import annotations

import json

import pytest
from goldens.axolotl import PROMPTERS, golden_report, report_for

from mldebug_cli.frameworks.axolotl import prompters as axolotl_prompters
from mldebug_cli.pipelines import inspect
from mldebug_cli.sources.row_formats import RowProblem
from support import QWEN25


def test_the_prompter_replaces_the_chat_template_and_says_so(tmp_path):
    golden = PROMPTERS / "qwen2.5-instruct.alpaca.json"
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
