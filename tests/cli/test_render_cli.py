"""`mldebug render` end to end, each engine checked against outputs its own project expects.

transformers: ``apply_chat_template`` itself; llama.cpp: its tests/test-chat-template.cpp cases; Ollama:
its template/testdata expected files; TGI: router/src/infer/chat_template.rs ``test_many_chat_templates``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from transformers import AutoTokenizer
from typer.testing import CliRunner

from mldebug_cli.cli import app
from support import CORPUS, CORPUS_GGUF, FIXTURES, HAVE_CORPUS, LLAMACPP_TEMPLATES, PHI3, QWEN25, ROOT, needs_corpus

runner = CliRunner()
STANDARD = [
    {"role": "system", "content": "You are a helpful assistant"},
    {"role": "user", "content": "Hello"},
    {"role": "assistant", "content": "Hi there"},
    {"role": "user", "content": "How are you?"},
]
LLAMACPP_CASES = {c["name"]: c for c in json.loads(
    (CORPUS / "templates" / "llamacpp_test_chat_template_2025-02-20.json").read_text())["cases"]} if HAVE_CORPUS else {}  # fmt: skip
OLLAMA = CORPUS / "templates" / "ollama"
# TGI router/src/infer/chat_template.rs, test_many_chat_templates, item "llama" (template, inputs and target).
TGI_LLAMA_TEMPLATE = (
    r"{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = "
    r"messages[0]['content'] %}{% elif USE_DEFAULT_PROMPT == true and not '<<SYS>>' in messages[0]['content'] %}"
    r"{% set loop_messages = messages %}{% set system_message = 'DEFAULT_SYSTEM_MESSAGE' %}{% else %}{% set "
    r"loop_messages = messages %}{% set system_message = false %}{% endif %}{% for message in loop_messages %}{% if "
    r"(message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate "
    r"user/assistant/user/assistant/...') }}{% endif %}{% if loop.index0 == 0 and system_message != false %}{% set "
    r"content = '<<SYS>>\n' + system_message + '\n<</SYS>>\n\n' + message['content'] %}{% else %}{% set content = "
    r"message['content'] %}{% endif %}{% if message['role'] == 'user' %}{{ bos_token +'[INST] ' + content | trim + "
    r"' [/INST]' }}{% elif message['role'] == 'system' %}{{ '<<SYS>>\n' + content | trim + '\n<</SYS>>\n\n' }}{% "
    r"elif message['role'] == 'assistant' %}{{ ' ' + content | trim + ' ' + eos_token }}{% endif %}{% endfor %}"
)
TGI_LLAMA_MESSAGES = [
    {"role": "system", "content": "You are a friendly chatbot who always responds in the style of a pirate"},
    {"role": "user", "content": "Hello, how are you?"},
    {"role": "assistant", "content": "I'm doing great. How can I help you today?"},
    {"role": "user", "content": "I'd like to show off how chat templating works!"},
]
TGI_LLAMA_TARGET = (
    "<s>[INST] <<SYS>>\nYou are a friendly chatbot who always responds in the style of a pirate\n<</SYS>>\n\nHello, "
    "how are you? [/INST] I'm doing great. How can I help you today? </s><s>[INST] I'd like to show off how chat "
    "templating works! [/INST]"
)


def run(*args: object):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def write_json(path: Path, data) -> Path:
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


def test_transformers_engine_is_apply_chat_template_with_its_input_ids(tmp_path: Path):
    messages = write_json(tmp_path / "m.json", STANDARD)
    tok = AutoTokenizer.from_pretrained(str(QWEN25))
    text = run("render", "--tokenizer", QWEN25, "--messages", messages, "--add-generation-prompt")
    assert text.exit_code == 0, text.stderr
    assert text.stdout == tok.apply_chat_template(STANDARD, tokenize=False, add_generation_prompt=True)
    doc = json.loads(run("render", "-t", QWEN25, "-m", messages, "--add-generation-prompt", "-f", "json").stdout)
    assert set(doc) == {"prompt", "engine", "input_ids"} and doc["engine"] == "transformers"
    assert doc["prompt"] == text.stdout
    expected_ids = tok.apply_chat_template(STANDARD, add_generation_prompt=True, return_dict=True)["input_ids"]
    assert doc["input_ids"] == list(expected_ids)


@needs_corpus
@pytest.mark.parametrize("name", ["teknium/OpenHermes-2.5-Mistral-7B", "Phi-3-mini", "google/gemma-7b-it", "Llama-3",
                                  "ibm-granite/granite-3.0-8b-instruct"])  # fmt: skip
def test_llamacpp_engine_matches_llamacpp_test_expectations(tmp_path: Path, name: str):
    case = LLAMACPP_CASES[name]
    template = tmp_path / "t.jinja"
    template.write_text(case["template"], encoding="utf-8")
    args = ["render", "--template", template, "--messages", write_json(tmp_path / "m.json", case["messages"]),
            "--engine", "llamacpp", "--bos-token", case["bos_token"], "--eos-token", case["eos_token"]]  # fmt: skip
    result = run(*args, "--add-generation-prompt")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == case["expected_output"]


@needs_corpus
def test_gguf_defaults_to_llamacpp_which_merges_the_system_message(tmp_path: Path):
    """llama.cpp's Phi-3 vocab carries the template of llama.cpp's "Phi-3-mini" test case (no system turn)."""
    case = LLAMACPP_CASES["Phi-3-mini"]
    result = run("render", "--gguf", CORPUS_GGUF / "ggml-vocab-phi-3.gguf", "-m", write_json(tmp_path / "m.json", case["messages"]))
    assert result.exit_code == 0, result.stderr
    assert result.stdout == case["expected_output"]  # the template's <s> is stripped: the vocab adds BOS as an id


@needs_corpus
@pytest.mark.parametrize("case", ["user", "user-assistant-user", "system-user-assistant-user"])
def test_ollama_engine_matches_ollama_testdata(tmp_path: Path, case: str):
    conversations = json.loads((OLLAMA / "testdata_conversations.json").read_text(encoding="utf-8"))["conversations"]
    expected = (OLLAMA / "testdata" / "chatml.gotmpl" / case).read_bytes().decode("utf-8")
    template = OLLAMA / "chatml.gotmpl"
    result = run("render", "--template", template, "-m", write_json(tmp_path / "m.json", conversations[case]))
    assert result.exit_code == 0, result.stderr
    assert result.stdout == expected


def test_modelfile_system_is_used_unless_the_request_has_one(tmp_path: Path):
    modelfile = FIXTURES / "deploy" / "qwen3-chatml-system.Modelfile"
    user_only = run("render", "--modelfile", modelfile, "-m", write_json(tmp_path / "u.json", STANDARD[1:2]))
    assert user_only.stdout == ("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
                                "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n")  # fmt: skip
    own = run("render", "--modelfile", modelfile, "-m", write_json(tmp_path / "s.json", STANDARD[:2]), "-f", "json")
    doc = json.loads(own.stdout)
    assert doc["engine"] == "ollama" and doc["prompt"].startswith("<|im_start|>system\nYou are a helpful assistant<|im_end|>")
    assert "input_ids" not in doc  # no tokenizer given


def test_tgi_engine_matches_tgi_router_test(tmp_path: Path):
    pytest.importorskip("minijinja")
    template = tmp_path / "llama.jinja"
    template.write_text(TGI_LLAMA_TEMPLATE, encoding="utf-8")
    result = run("render", "--template", template, "-m", write_json(tmp_path / "m.json", TGI_LLAMA_MESSAGES),
                 "--engine", "tgi", "--bos-token", "<s>", "--eos-token", "</s>")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert result.stdout == TGI_LLAMA_TARGET


@needs_corpus
def test_vars_reach_the_template_and_the_date_is_fixed(tmp_path: Path):
    messages = write_json(tmp_path / "m.json", [{"role": "user", "content": "Hi"}])
    qwen3 = LLAMACPP_TEMPLATES / "Qwen-Qwen3-0.6B.jinja"
    off = run("render", "--template", qwen3, "-m", messages, "--add-generation-prompt", "--var", "enable_thinking=false")
    assert off.stdout.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    llama32 = LLAMACPP_TEMPLATES / "meta-llama-Llama-3.2-3B-Instruct.jinja"
    first = run("render", "--template", llama32, "-m", messages).stdout
    assert "Today Date: 15 Jan 2025" in first and run("render", "--template", llama32, "-m", messages).stdout == first
    assert "Today Date: 02 Mar 2024" in run("render", "--template", llama32, "-m", messages, "--date", "2024-03-02").stdout


@needs_corpus
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path):
    messages = write_json(tmp_path / "m.json", STANDARD)
    broken = tmp_path / "broken.jinja"
    broken.write_text("{% for m in messages %}\n{{ m.content }\n{% endfor %}")
    result = run("render", "--template", broken, "-m", messages)
    assert result.exit_code == 2 and result.stderr.startswith(f"Error: {broken}:2: the chat template does not parse")
    both = run("render", "--gguf", CORPUS_GGUF / "ggml-vocab-phi-3.gguf", "--modelfile", tmp_path / "x", "-m", messages)
    assert both.exit_code == 2 and "give one of --tokenizer DIR" in both.stderr
    wrong = run("render", "--tokenizer", PHI3, "-m", messages, "--engine", "ollama")
    assert wrong.exit_code == 2 and "--engine ollama cannot serve a tokenizer" in wrong.stderr
    var = run("render", "--tokenizer", PHI3, "-m", messages, "--engine", "tgi", "--var", "x=1")
    assert var.exit_code == 2 and "tgi passes no such variable" in var.stderr


def test_help_imports_no_heavy_library():
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from mldebug_cli.cli import app\n"
        "CliRunner().invoke(app, ['--help']); CliRunner().invoke(app, ['render', '--help'])\n"
        "CliRunner().invoke(app, ['check-template', '--help'])\n"
        "heavy = [m for m in ('transformers', 'datasets', 'torch', 'jinja2', 'gguf', 'minijinja') if m in sys.modules]\n"
        "print('HEAVY', heavy)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert "HEAVY []" in result.stdout, result.stdout[-500:] + result.stderr[-500:]
