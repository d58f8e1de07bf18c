"""`mldebug check-template` end to end on real tokenizers, real templates, real Ollama templates and GGUF vocabs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mldebug_cli.cli import app
from support import CORPUS_GGUF, FIXTURES, LLAMACPP_TEMPLATES, PHI3, PHI3_DEPLOY, QWEN3, QWEN25, needs_corpus

runner = CliRunner()
DEPLOY = FIXTURES / "deploy"
TEMPLATES = LLAMACPP_TEMPLATES


def run(*args: object):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def check(*args: object) -> tuple[int, dict]:
    result = run("check-template", *args, "-f", "json")
    assert result.exit_code in (0, 1), result.stderr
    return result.exit_code, json.loads(result.stdout)


def codes(doc: dict) -> list[str]:
    return sorted({f["code"] for f in doc["findings"]})


def by_code(doc: dict, code: str) -> list[dict]:
    return [f for f in doc["findings"] if f["code"] == code]


# --- the "done when" list --------------------------------------------------------------------------


def test_modelfile_without_the_end_of_turn_stop_word():
    code, doc = check("--train", QWEN3, "--deploy", DEPLOY / "qwen3-chatml-no-stop.Modelfile")
    assert code == 1
    (stop,) = by_code(doc, "CT005")
    assert stop["name"] == "stop-token-missing" and stop["severity"] == "error"
    assert stop["message"] == "the model was trained to end its turns with <|im_end|>, but ollama stops only on <|endoftext|>"
    assert stop["hint"] == 'add PARAMETER stop "<|im_end|>" to the Modelfile'
    assert stop["location"] == {"path": str(DEPLOY / "qwen3-chatml-no-stop.Modelfile"), "side": "deploy"}
    # the same TEMPLATE with Ollama's chatml stop words stops on <|im_end|>
    _, with_stops = check("--train", QWEN3, "--deploy", DEPLOY / "qwen3-chatml-system.Modelfile")
    assert "CT005" not in codes(with_stops)


@needs_corpus
def test_modelfile_template_with_a_literal_bos_on_a_vocab_that_adds_one():
    code, doc = check("--train", PHI3, "--deploy", PHI3_DEPLOY / "phi-3-literal-bos.Modelfile")
    assert code == 1
    (double,) = by_code(doc, "CT003")
    assert double["location"]["probe"] == "user" and double["location"]["side"] == "deploy"
    assert "starts with <s> <s>" in double["message"] and "the template writes <s> and ollama adds" in double["message"]
    user = next(p for p in doc["probes"] if p["name"] == "user")
    assert user["deploy"].startswith("<s><|user|>\n") and user["token_differences"][0]["deploy"] == ["1:<s>", "1:<s>"]
    # the BOS hunks are CT003's alone; only the tool result Ollama's phi-3 template renders is left for CT001
    assert codes(doc) == ["CT001", "CT003"]
    assert [f["location"]["probe"] for f in by_code(doc, "CT001")] == ["tool-call"]


@needs_corpus
def test_deploy_template_with_a_different_default_system_prompt():
    code, doc = check("--train", QWEN25, "--deploy", TEMPLATES / "Qwen-Qwen3-0.6B.jinja")
    assert code == 1
    (default,) = by_code(doc, "CT006")
    assert default["severity"] == "warning" and default["location"]["probe"] == "user"
    assert default["message"] == ('without a system message, training writes the system prompt "You·are·Qwen,·created·'
                                  'by·Alibaba·Cloud.·You·are·a·helpful·assistant." and deploy writes no system block')  # fmt: skip
    # the system block is CT006's: CT001 reports only Qwen3's empty think block in the training-shaped conversation
    assert [f["location"]["probe"] for f in by_code(doc, "CT001")] == ["assistant-last"]
    _, ollama = check("--train", QWEN3, "--deploy", DEPLOY / "qwen3-chatml-system.Modelfile")
    assert 'deploy writes the system prompt "You·are·a·helpful·assistant."' in by_code(ollama, "CT006")[0]["message"]


@needs_corpus
def test_whitespace_only_difference_under_tgi():
    pytest.importorskip("minijinja")
    smollm3 = TEMPLATES / "HuggingFaceTB-SmolLM3-3B.jinja"
    code, doc = check("--train", smollm3, "--train-tokenizer", QWEN25, "--deploy", smollm3, "--deploy-engine", "tgi")
    assert code == 1
    whitespace = by_code(doc, "CT008")
    assert {f["location"]["probe"] for f in whitespace} == {"user", "system+user", "multi-turn", "whitespace", "special-token-text"}
    assert all(f["severity"] == "warning" for f in whitespace)
    assert whitespace[0]["message"] == 'only whitespace differs (1 place); first: train "⟨⟩<|im_start|>system↵#…" vs deploy "⟨↵⟩<|im_start|>system↵#…"'
    # probes whose only differences are whitespace are never CT001's too
    assert {f["location"]["probe"] for f in by_code(doc, "CT001")} <= {"tool-call"}


@needs_corpus
def test_gguf_without_a_template_falls_back_to_chatml():
    code, doc = check("--train", PHI3, "--deploy", PHI3_DEPLOY / "phi-3-no-template.gguf")
    assert code == 1
    (fallback,) = by_code(doc, "CT009")
    assert fallback["message"].startswith("the GGUF has no tokenizer.chat_template, so llama.cpp renders ChatML; 8 of 8")
    # every text difference follows from the fallback; the BOS llama.cpp adds is a separate fact
    assert codes(doc) == ["CT004", "CT009"]
    user = next(p for p in doc["probes"] if p["name"] == "user")
    assert user["deploy"] == "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n"


@needs_corpus
def test_a_different_generation_prompt():
    old = LLAMACPP_TEMPLATES / "older_c392e50" / "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja"
    new = TEMPLATES / "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja"
    code, doc = check("--train", old, "--train-tokenizer", QWEN25, "--deploy", new)
    assert code == 1
    (prompt,) = by_code(doc, "CT007")
    assert prompt["location"]["probe"] == "user"
    assert prompt["message"] == ('deploy ends the prompt with "<｜Assistant｜><think>↵</think>" where the train template\'s '
                                 'generation prompt is "<｜Assistant｜><think>↵"; training put "<｜Assistant｜>" before '
                                 "assistant content")  # fmt: skip
    # generation-prompt hunks are CT007's; the tool-call rendering the new template adds is CT001's
    assert [f["location"]["probe"] for f in by_code(doc, "CT001")] == ["tool-call"]


@needs_corpus
@pytest.mark.parametrize(
    ("train", "deploy"),
    [(PHI3, PHI3_DEPLOY / "phi-3-mini-instruct.gguf"), (QWEN25, TEMPLATES / "Qwen-Qwen2.5-7B-Instruct.jinja")],
    ids=["gguf", "jinja"],
)
def test_nothing_reported_when_deploy_matches_training(train: Path, deploy: Path):
    code, doc = check("--train", train, "--deploy", deploy)
    assert code == 0 and doc["findings"] == []
    assert all(p["identical"] for p in doc["probes"]) and doc["summary"]["identical"] == 8
    text = run("check-template", "--train", train, "--deploy", deploy)
    assert text.exit_code == 0 and "No findings." in text.stdout and "tool-call              identical tokens" in text.stdout


# --- contract and errors ---------------------------------------------------------------------------------


@needs_corpus
def test_json_contract_and_messages_probe(tmp_path: Path):
    messages = tmp_path / "conversation.json"
    messages.write_text(json.dumps({"messages": [{"role": "user", "content": "Bonjour"}, {"role": "assistant", "content": "Salut"}]}))
    code, doc = check("--train", PHI3, "--deploy", CORPUS_GGUF / "ggml-vocab-phi-3.gguf", "--messages", messages)
    assert code == 1 and doc["command"] == "check-template"
    assert set(doc) >= {"tool", "context", "findings", "summary", "probes"}
    assert [p["name"] for p in doc["probes"]][-1] == "messages"
    for probe in doc["probes"]:
        assert set(probe) >= {"name", "train", "deploy", "identical"}
    # llama.cpp merges the system message into the first user turn of Phi-3's first template
    (merged,) = [f for f in by_code(doc, "CT001") if f["location"]["probe"] == "system+user"]
    assert merged["message"].startswith('2 differences (system-block); first (system-block): train "⟨<|system|>⟩')
    assert doc["context"]["deploy_tokenization"] == "adds BOS <s>, adds no EOS, special-token text parsed"
    assert doc["summary"]["by_check"] == {c: len(by_code(doc, c)) for c in codes(doc)}


@needs_corpus
def test_text_report_shows_probes_and_token_differences():
    result = run("check-template", "--train", PHI3, "--deploy", PHI3_DEPLOY / "phi-3-literal-bos.Modelfile", "--color", "never")
    assert result.exit_code == 1
    out = result.stdout
    assert "Probes (train vs deploy" in out and "differs: 1 text difference (bos-eos)" in out
    assert "tokens @0: ∅  →  1:<s> 1:<s>" in out
    assert "error   CT003 deploy-double-bos" in out


def test_fail_on_and_exit_zero():
    code, doc = check("--train", QWEN3, "--deploy", DEPLOY / "qwen3-chatml-system.Modelfile", "--select", "CT006")
    assert code == 1 and codes(doc) == ["CT006"]  # a warning fails by default
    assert run("check-template", "--train", QWEN3, "--deploy", DEPLOY / "qwen3-chatml-system.Modelfile",
               "--select", "CT006", "--fail-on", "error").exit_code == 0  # fmt: skip


def test_fail_on_from_the_config_file_replaces_the_command_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The flag, else the config's fail-on, else check-template's own default (warning), as for every command."""
    monkeypatch.chdir(tmp_path)
    for var in ("MLDEBUG_CONFIG", "MLDEBUG_FAIL_ON", "MLDEBUG_SELECT", "MLDEBUG_IGNORE"):
        monkeypatch.delenv(var, raising=False)
    warning_only = ("check-template", "--train", QWEN3, "--deploy", DEPLOY / "qwen3-chatml-system.Modelfile",
                    "--select", "CT006", "-f", "json")  # fmt: skip
    (tmp_path / "pyproject.toml").write_text('[tool.mldebug]\nignore = ["DS024"]\n', encoding="utf-8")
    assert run(*warning_only).exit_code == 1  # a config without fail-on keeps the command's default
    (tmp_path / "pyproject.toml").write_text('[tool.mldebug]\nfail-on = "error"\n', encoding="utf-8")
    assert run(*warning_only).exit_code == 0
    assert run(*warning_only, "--fail-on", "warning").exit_code == 1  # a flag beats the file
    monkeypatch.setenv("MLDEBUG_FAIL_ON", "warning")  # the environment beats the file
    assert run(*warning_only).exit_code == 1


@needs_corpus
def test_bad_inputs_are_one_line_errors_with_exit_2(tmp_path: Path):
    broken = tmp_path / "broken.jinja"
    broken.write_text("{% for message in messages %}\n{{ message.content }}\n{% endfor")
    result = run("check-template", "--train", broken, "--train-tokenizer", QWEN25, "--deploy", PHI3_DEPLOY / "phi-3-mini-instruct.gguf")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == f"Error: {broken}:3: the chat template does not parse: unexpected end of template, expected 'end of statement block'."
    missing = tmp_path / "Modelfile"
    missing.write_text('FROM ./model.gguf\nTEMPLATE """{{ .Prompt }}"""\n')
    result = run("check-template", "--train", QWEN25, "--deploy", missing)
    assert result.exit_code == 2 and result.stderr.startswith(f"Error: {missing}:1: FROM ./model.gguf: no such file or folder")
    corrupt = tmp_path / "corrupt.gguf"
    corrupt.write_bytes((PHI3_DEPLOY / "phi-3-mini-instruct.gguf").read_bytes()[:5000])
    result = run("check-template", "--train", PHI3, "--deploy", corrupt)
    assert result.exit_code == 2 and result.stderr.startswith(f"Error: {corrupt}: corrupt GGUF")
    assert len(result.stderr.strip().splitlines()) <= 2
    unknown = run("check-template", "--train", PHI3, "--deploy", PHI3_DEPLOY / "phi-3-mini-instruct.gguf", "--deploy-engine", "tgi")
    assert unknown.exit_code == 2 and "--deploy-engine tgi cannot serve a gguf" in unknown.stderr


@pytest.mark.parametrize("folder", ["tokenizers/mistral-nemo-instruct",  # Gemma 3: 25 s, slow
                                    pytest.param("processors/gemma-3", marks=pytest.mark.slow)])
def test_a_tokenizer_compared_with_itself_has_every_special_token_including_unk(folder):
    # <unk> is id 0 (Mistral-Nemo) or 3 (Gemma 3) on both sides: the unk id is a token of the vocabulary, not "missing"
    nemo = FIXTURES / folder
    result = run("check-template", "--train", nemo, "--deploy", nemo, "--deploy-engine", "vllm-completions", "-f", "json")
    codes = {f["code"] for f in json.loads(result.stdout)["findings"]}
    assert "CT011" not in codes and "CT003" in codes  # the completions route's own BOS on a rendered <s>: real
