"""Goldens for vLLM's chat route on image conversations: what vLLM 0.33.0's own code hands the chat template.

vLLM parses an OpenAI request's messages (``vllm.renderers.chat_utils.chat_message.parse_chat_message_content``) in
the content format it detects from the template's Jinja AST (``vllm.renderers.hf._detect_content_format``): "openai"
keeps content a list of parts (an image becomes ``{"type": "image"}``), "string" joins the text parts with "\\n" and
puts the model's image placeholder (its class's ``get_placeholder_str``) in front, once for each image. This tool
runs those functions of the real vLLM 0.33.0 source on hypothesis-drawn conversations (images at every place in
user, system and assistant turns, string and part contents, placeholder literals typed into the text) and on every
template we have, and records what vLLM makes: the detected format, the conversation the template gets, the
prompt transformers renders from it, or the error vLLM raises. A second file records the detected format of every
template of fixtures/ and of the shared corpus (by path and SHA-256: the corpus is never copied).

vLLM's wheel is CUDA-built and its model classes need torchvision: only the parsing modules are imported, from the
wheel's Python files unpacked (no compiled part runs), in a venv over the shared environment:

    pip download --no-deps vllm==0.33.0 -d /work/venvs/wheels
    mkdir -p /work/venvs/vllm-src && cd /work/venvs/vllm-src && unzip -q -o \\
        /work/venvs/wheels/vllm-0.33.0-cp38-abi3-manylinux_2_28_x86_64.whl 'vllm/*.py' 'vllm/*.jinja'
    python -m venv --system-site-packages /work/venvs/vllm-chat
    /work/venvs/vllm-chat/bin/pip install cbor2 pyzmq aiohttp openai-harmony openai pybase64 cachetools \\
        prometheus_client einops msgspec
    PYTHONPATH=/work/venvs/vllm-src /work/venvs/vllm-chat/bin/python tools/vllm_mm_goldens.py --cases 3000

The model's placeholder comes from ``get_placeholder_str`` of its vLLM model class, read from the class's own source
file in the wheel and executed alone (importing the class needs torchvision). The only stand-in is the media parser
(vLLM's ``BaseMultiModalContentParser`` subclassed): it counts an image without fetching it, as vLLM's parser adds
the model's placeholder for each image it is given.
"""

from __future__ import annotations

import argparse
import ast
import gzip
import hashlib
import json
import os
import sys
import warnings
from importlib import metadata
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "fixtures" / "vllm-0.33.0-multimodal"
CORPUS = Path(os.environ.get("MLDEBUG_CORPUS") or ROOT.parent.parent / "shared" / "corpus")
# processor folder -> the vLLM model class serving it (file, class)
MODELS = {"qwen2-vl": ("qwen2_vl.py", "Qwen2VLForConditionalGeneration"),
          "qwen2.5-vl-256": ("qwen2_5_vl.py", "Qwen2_5_VLForConditionalGeneration"),
          "gemma-3": ("gemma3_mm.py", "Gemma3ForConditionalGeneration"),
          "llava-1.5": ("llava.py", "LlavaForConditionalGeneration"),
          "idefics3": ("idefics3.py", "Idefics3ForConditionalGeneration")}
WORDS = ("What is in the picture?", "Describe it.", "A red ball.", " ", "\n", "数字", "[INST]", "{{ x }}",
         "<image>", "<start_of_image>", "<|vision_start|><|image_pad|><|vision_end|>", "<|image_pad|>")
INTERLEAVE = False  # vLLM's --interleave-mm-strings (tools/vllm_mm_interleave_goldens.py turns it on)


def placeholder_of(folder: str) -> str:
    """``get_placeholder_str("image", 1)`` of the folder's vLLM model class, executed from its source file."""
    import vllm

    file, name = MODELS[folder]
    path = Path(vllm.__file__).parent / "model_executor" / "models" / file
    tree = ast.parse(path.read_text(encoding="utf-8"))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)
    method = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "get_placeholder_str")
    method.decorator_list = []
    namespace: dict[str, Any] = {}
    exec(compile(ast.Module([method], []), str(path), "exec"), namespace)  # noqa: S102 - vLLM's own function
    return namespace["get_placeholder_str"](None, "image", 1)


def templates() -> dict[str, tuple[str, Any]]:
    """name -> (template, tokenizer): each processor folder's template (as vLLM resolves it: the processor's first)
    and its tokenizer's own, where they differ."""
    from transformers import AutoTokenizer

    found: dict[str, tuple[str, Any]] = {}
    for folder in MODELS:
        path = ROOT / "fixtures" / "processors" / folder
        tok = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        if (path / "chat_template.jinja").is_file():
            processor_template = (path / "chat_template.jinja").read_text(encoding="utf-8")
        else:
            processor_template = json.loads((path / "chat_template.json").read_text(encoding="utf-8"))["chat_template"]
        found[f"{folder}/processor"] = (processor_template, tok)
        if isinstance(tok.chat_template, str) and tok.chat_template != processor_template:
            found[f"{folder}/tokenizer"] = (tok.chat_template, tok)
    return found


class CountingParser:
    """vLLM's content parser, less the fetch: each image adds the model's placeholder (MultiModalContentParser's
    parse_image: ``tracker.add`` returns the model class's placeholder, then ``_add_placeholder``)."""

    def __new__(cls, placeholder: str) -> Any:
        from vllm.renderers.chat_utils.content_parser import BaseMultiModalContentParser

        class Parser(BaseMultiModalContentParser):
            model_config = SimpleNamespace(enable_prompt_embeds=False)  # type: ignore[assignment]

            def parse_image(self, image_url: str | None, uuid: str | None = None) -> None:
                self._add_placeholder("image", placeholder)

        Parser.__abstractmethods__ = frozenset()  # the other media kinds: never drawn
        return Parser()


def vllm_conversation(messages: list[dict[str, Any]], template: str, placeholder: str) -> dict[str, Any]:
    from vllm.renderers.chat_utils.chat_message import _postprocess_messages, parse_chat_message_content
    from vllm.renderers.hf import _detect_content_format

    content_format = _detect_content_format(template, default="string")
    tracker = SimpleNamespace(create_parser=lambda mm_processor_kwargs=None: CountingParser(placeholder),
                              get_num_items=lambda modality: 0)
    request = [{**m, "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}}
                                 if isinstance(p, dict) and p.get("type") == "image" else p for p in m["content"]]}
               if isinstance(m.get("content"), list) else m for m in messages]
    try:
        conversation = [out for m in request for out in
                        parse_chat_message_content(m, tracker, content_format, interleave_strings=INTERLEAVE)]
        _postprocess_messages(conversation)
    except Exception as exc:  # noqa: BLE001 - what vLLM raises is the golden
        return {"format": content_format, "error": f"{type(exc).__name__}: {str(exc).splitlines()[0]}"}
    return {"format": content_format, "conversation": json.loads(json.dumps(conversation))}


def text() -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(WORDS), st.text(max_size=20),
                     st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map("".join))


def content() -> st.SearchStrategy[Any]:
    part = st.one_of(text().map(lambda t: {"type": "text", "text": t}), st.just({"type": "image"}),
                     st.just({"type": "image"}))
    return st.one_of(text(), st.lists(part, min_size=0, max_size=4))


@st.composite
def case(draw: Any, names: tuple[str, ...]) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    if draw(st.integers(0, 3)) == 0:
        messages.append({"role": "system", "content": draw(st.one_of(text(), content()))})
    for _ in range(draw(st.integers(1, 3))):
        messages.append({"role": "user", "content": draw(content())})
        messages.append({"role": "assistant", "content": draw(st.one_of(text(), text(), content()))})
    if draw(st.booleans()):
        messages.pop()  # ends on a user turn: the serving shape
    return {"template": draw(st.sampled_from(names)), "messages": messages,
            "add_generation_prompt": messages[-1]["role"] == "user"}


def render(template: str, tok: Any, conversation: list[dict[str, Any]], add_generation_prompt: bool) -> dict[str, Any]:
    try:  # vLLM renders with the tokenizer's apply_chat_template and the resolved template
        return {"prompt": tok.apply_chat_template(conversation, chat_template=template, tokenize=False,
                                                  add_generation_prompt=add_generation_prompt)}
    except Exception as exc:  # noqa: BLE001 - the template's own failure
        return {"render_error": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"}


def formats() -> list[dict[str, Any]]:
    """The content format vLLM detects for every template of fixtures/ and of the corpus."""
    from vllm.renderers.hf import _detect_content_format

    found = []
    for base, label in ((ROOT / "fixtures", "fixtures"), (CORPUS, "corpus")):
        for path in sorted(base.rglob("*")):
            if "hostile" in path.parts or not path.is_file():
                continue
            template = None
            if path.suffix == ".jinja":
                template = path.read_text(encoding="utf-8", errors="replace")
            elif path.name in ("tokenizer_config.json", "chat_template.json"):
                try:
                    value = json.loads(path.read_text(encoding="utf-8")).get("chat_template")
                except (ValueError, AttributeError):
                    continue
                template = value if isinstance(value, str) else None
            if template:
                found.append({"where": label, "path": str(path.relative_to(base)),
                              "sha256": hashlib.sha256(template.encode()).hexdigest(),
                              "format": _detect_content_format(template, default="string")})
    return found


def write(name: str, document: dict[str, Any]) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    versions = {p: metadata.version(p) for p in ("transformers", "jinja2", "hypothesis")}
    versions["vllm"] = "0.33.0 (the wheel's Python files)"
    with gzip.open(OUT / name, "wt", encoding="utf-8", compresslevel=9) as out:
        json.dump({"versions": versions, **document}, out, ensure_ascii=False, separators=(",", ":"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=3000)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    pool = templates()
    placeholders = {folder: placeholder_of(folder) for folder in MODELS}
    cases: list[dict[str, Any]] = []

    @settings(max_examples=args.cases, database=None, derandomize=True, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(case(tuple(pool)))
    def collect(generated: dict[str, Any]) -> None:
        if len(cases) >= args.cases:
            return
        template, tok = pool[generated["template"]]
        placeholder = placeholders[generated["template"].split("/")[0]]
        out = vllm_conversation(generated["messages"], template, placeholder)
        if "conversation" in out:
            out.update(render(template, tok, out["conversation"], generated["add_generation_prompt"]))
        cases.append({**generated, "placeholder": placeholder, **out})

    collect()
    write("chat-goldens.json.gz", {"function": "parse_chat_message_content + _detect_content_format",
                                   "placeholders": placeholders, "cases": cases})
    found = formats()
    write("content-formats.json.gz", {"function": "vllm.renderers.hf._detect_content_format", "templates": found})
    errors = sum(1 for c in cases if "error" in c)
    print(f"{OUT}: {len(cases)} cases ({errors} refused by vLLM), {len(found)} template formats")


if __name__ == "__main__":
    sys.exit(main())
