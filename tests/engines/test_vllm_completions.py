"""vLLM's /v1/completions route (engines/vllm_completions.py): a prompt rendered with the chat template is tokenized
with add_special_tokens=true, so a template that writes BOS reaches the model with two."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from mldebug_cli.cli import app
from mldebug_cli.engines.registry import deploy_side, render_with_engine, train_side
from mldebug_cli.pipelines.render import tokenize
from support import NEMO, QWEN3

runner = CliRunner()
MESSAGES = [{"role": "user", "content": "Hi"}]


def test_the_ids_are_the_tokenizers_own_with_special_tokens_added():
    train = train_side(str(NEMO))
    side = deploy_side(str(NEMO), "vllm-completions", train)
    prompt = render_with_engine(side, MESSAGES, (), True)
    tok = side.loaded.tokenizer
    assert tokenize(side, prompt, tok) == tok(prompt, add_special_tokens=True).input_ids
    assert tokenize(side, prompt, tok)[:2] == [tok.bos_token_id, tok.bos_token_id]  # the template wrote <s> too
    chat = deploy_side(str(NEMO), "vllm", train)
    assert tokenize(chat, prompt, tok) == tok(prompt, add_special_tokens=False).input_ids


def test_check_template_reports_the_doubled_bos_with_the_routes_own_fix():
    result = runner.invoke(app, ["check-template", "--train", str(NEMO), "--deploy", str(NEMO), "--deploy-engine",
                                 "vllm-completions", "-f", "json"], catch_exceptions=False)
    doc = json.loads(result.stdout)
    doubled = [f for f in doc["findings"] if f["code"] == "CT003"]
    assert doubled and "<s> <s>" in doubled[0]["message"]
    assert doubled[0]["hint"] == "send the prompt with add_special_tokens: false, or send the messages to /v1/chat/completions"
    chat = runner.invoke(app, ["check-template", "--train", str(NEMO), "--deploy", str(NEMO), "-f", "json"],
                         catch_exceptions=False)
    assert "CT003" not in {f["code"] for f in json.loads(chat.stdout)["findings"]}


def test_a_tokenizer_that_adds_no_bos_gets_none_on_this_route_either():
    side = deploy_side(str(QWEN3), "vllm-completions", train_side(str(QWEN3)))
    assert not side.adds_bos and not side.adds_eos
