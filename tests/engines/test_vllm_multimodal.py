"""vLLM 0.33.0's chat route on image conversations, held to vLLM's own code (tools/vllm_mm_goldens.py: its
parse_chat_message_content and _detect_content_format on 3,000 hypothesis-drawn conversations and on every
template of the fixtures and the corpus; fixtures/vllm-0.33.0-multimodal/): the content format mldebug detects, the
conversation its vLLM engine hands the template, the prompt rendered from it, the refusals, and the image markers
of the processor classes."""

from __future__ import annotations

import gzip
import hashlib
import json
from dataclasses import replace
from functools import cache
from typing import Any

import pytest

from mldebug_cli.engines.errors import EngineRenderError
from mldebug_cli.engines.vllm import image_messages
from mldebug_cli.render.content_format import content_format
from mldebug_cli.sources.deploy import Side
from mldebug_cli.sources.processor_files import IMAGE_MARKERS, processor_files
from support import CORPUS, FIXTURES, HAVE_CORPUS

GOLDENS = FIXTURES / "vllm-0.33.0-multimodal"
FOLDERS = ("qwen2-vl", "qwen2.5-vl-256", "gemma-3", "llava-1.5", "idefics3")


@cache
def document(name: str) -> dict[str, Any]:
    with gzip.open(GOLDENS / name, "rt", encoding="utf-8") as stream:
        return json.load(stream)


def template_text(where: str, path: str) -> str:
    file = (FIXTURES if where == "fixtures" else CORPUS) / path
    if file.suffix == ".jinja":
        return file.read_text(encoding="utf-8", errors="replace")
    return json.loads(file.read_text(encoding="utf-8"))["chat_template"]


@cache
def side(name: str) -> Side:
    """The deploy side a golden case's template names: folder/processor or folder/tokenizer."""
    from mldebug_cli.sources.tokenizer import load_tokenizer

    folder, which = name.split("/")
    path = FIXTURES / "processors" / folder
    loaded = load_tokenizer(str(path))
    found = processor_files(path)
    assert found is not None
    template = found.template if which == "processor" else loaded.chat_template
    tok = loaded.tokenizer
    return Side(role="deploy", spec=str(path), kind="tokenizer", engine="vllm", template=template,
                template_source=name, bos_text=tok.bos_token, eos_text=tok.eos_token,
                special_tokens=dict(tok.special_tokens_map), adds_bos=False, adds_eos=False, stop_token_texts=(),
                loaded=loaded, processor_class=found.processor_class)


def test_the_image_markers_are_vllms_placeholders():
    placeholders = document("chat-goldens.json.gz")["placeholders"]
    classes = {folder: processor_files(FIXTURES / "processors" / folder).processor_class for folder in FOLDERS}
    assert {folder: IMAGE_MARKERS[classes[folder]] for folder in FOLDERS} == placeholders


@pytest.mark.parametrize("where", ["fixtures", pytest.param("corpus", marks=[pytest.mark.slow, pytest.mark.skipif(
    not HAVE_CORPUS, reason=f"needs the shared corpus at {CORPUS}")])])
def test_the_content_format_is_vllms_on_every_template(where):
    wrong, seen = [], 0
    for golden in document("content-formats.json.gz")["templates"]:
        if golden["where"] != where:
            continue
        text = template_text(where, golden["path"])
        if hashlib.sha256(text.encode()).hexdigest() != golden["sha256"]:
            continue  # the file changed since the goldens were made
        seen += 1
        if content_format(text) != golden["format"]:
            wrong.append((golden["path"], golden["format"]))
    assert seen > (10 if where == "fixtures" else 60) and not wrong, wrong


def disagreement(case: dict[str, Any], interleave: bool = False) -> str | None:
    from mldebug_cli.engines.hf import render

    deploy = replace(side(case["template"]), interleave_images=interleave)
    try:
        conversation = image_messages(deploy, json.loads(json.dumps(case["messages"])))
    except EngineRenderError as exc:
        refused = "error" in case and str(exc).split("'")[1:2] == case["error"].split("'")[1:2]  # the same marker
        return None if refused else f"mldebug refuses it: {exc}"
    if "error" in case:
        return f"vLLM refuses it ({case['error']}); mldebug hands the template {conversation}"
    if conversation != case["conversation"]:
        return f"conversation {conversation} != vLLM's {case['conversation']}"
    try:
        prompt = render(deploy, conversation, [], case["add_generation_prompt"], None, {})
    except EngineRenderError as exc:
        return None if "render_error" in case else f"mldebug cannot render it: {exc}"
    return None if prompt == case.get("prompt") else f"prompt {prompt!r} != {case.get('prompt')!r}"


@pytest.mark.parametrize("index", [0])  # one in the fast tier (a tokenizer load); all of them in the slow one
def test_a_golden_conversation_replays(index):
    assert disagreement(document("chat-goldens.json.gz")["cases"][index]) is None


@pytest.mark.slow
def test_every_golden_conversation_replays():
    found = document("chat-goldens.json.gz")["cases"]
    wrong = [(i, d) for i, c in enumerate(found) if (d := disagreement(c))]
    assert len(found) == 3000 and not wrong, wrong[:3]


def test_the_goldens_hold_both_formats_and_vllms_refusal():
    found = document("chat-goldens.json.gz")["cases"]
    assert {c["format"] for c in found} == {"string", "openai"}
    assert any("error" in c and "placeholders in input prompt" in c["error"] for c in found)


INTERLEAVED = "chat-goldens-interleave.json.gz"  # tools/vllm_mm_interleave_goldens.py: --interleave-mm-strings


@pytest.mark.parametrize("index", [0])  # one in the fast tier; all of them in the slow one
def test_a_golden_interleaved_conversation_replays(index):
    assert disagreement(document(INTERLEAVED)["cases"][index], interleave=True) is None


@pytest.mark.slow
def test_every_golden_interleaved_conversation_replays():
    found = document(INTERLEAVED)["cases"]
    wrong = [(i, d) for i, c in enumerate(found) if (d := disagreement(c, interleave=True))]
    assert len(found) == 3000 and not wrong, wrong[:3]


def test_the_interleaved_goldens_place_markers_inside_the_text_and_hold_vllms_refusals():
    found = document(INTERLEAVED)["cases"]
    assert document(INTERLEAVED)["function"].startswith("parse_chat_message_content(interleave_strings=True)")
    inside = [c for c in found if c["format"] == "string" and "conversation" in c
              and any(isinstance(m["content"], str) and c["placeholder"] in m["content"]
                      and not m["content"].startswith(c["placeholder"]) for m in c["conversation"])]
    assert inside  # a marker placed after text: what interleaving changes
    assert any("'<##IMAGE##>' placeholders" in c.get("error", "") for c in found)  # a typed sentinel past the images


def test_interleaving_puts_each_marker_where_its_image_part_is():
    deploy = replace(side("qwen2-vl/tokenizer"), interleave_images=True)
    image = "<|vision_start|><|image_pad|><|vision_end|>"
    messages = [{"role": "user", "content": [{"type": "text", "text": "Left:"}, {"type": "image"},
                                             {"type": "text", "text": "Right:"}, {"type": "image"}]}]
    assert deploy.template is not None and content_format(deploy.template) == "string"
    assert image_messages(deploy, messages)[0]["content"] == f"Left:\n{image}\nRight:\n{image}"
    assert image_messages(replace(deploy, interleave_images=False), messages)[0]["content"] == \
        f"{image}\n{image}\nLeft:\nRight:"


def test_interleave_mm_strings_on_an_engine_without_it_is_a_usage_error():
    from mldebug_cli.core.errors import UsageError
    from mldebug_cli.pipelines.template_check import CheckTemplateOptions, build_report

    folder = str(FIXTURES / "processors" / "qwen2-vl")
    with pytest.raises(UsageError, match="--interleave-mm-strings is a vLLM server flag: transformers has no such mode"):
        build_report(CheckTemplateOptions(train=folder, deploy=folder, deploy_engine="transformers", interleave_mm_strings=True))
