"""Fuzz targets: each takes arbitrary bytes and must return, or raise only the error mldebug reports for bad input.

Anything else (an unexpected exception, a hang, a crash) is a bug. ``TARGETS`` maps names to
(function, seed folders); seeds are the small files in fixtures/ the target reads.
"""

from __future__ import annotations

import functools
import json
import tempfile
from collections.abc import Callable
from datetime import date
from pathlib import Path

from mldebug_cli.core.errors import InputError
from mldebug_cli.render.chat import ChatRenderer, RenderLimits, TemplateRenderError
from mldebug_cli.render.gotemplate import Limits, TemplateError
from mldebug_cli.render.ollama import render as render_ollama
from mldebug_cli.sources.dataset import DatasetSource
from mldebug_cli.sources.gguf_file import read_gguf_vocab
from mldebug_cli.sources.modelfile import parse_modelfile
from mldebug_cli.sources.row_formats import RowProblem, detect, to_sample

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
CONVERSATION = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "What is 2 + 2?"},
    {"role": "assistant", "content": "4"},
]
SPLIT = b"\n---conversation---\n"  # template bytes, then optionally a JSON conversation
JINJA_LIMITS = RenderLimits(seconds=2.0, output_chars=1_000_000, memory_bytes=256 * 2**20)
GO_LIMITS = Limits(max_output_chars=1_000_000, max_steps=200_000, max_depth=16)


def dataset_reader(data: bytes) -> None:
    """The file as .jsonl and as .json: row count, every record (parsed here and as workers parse), detection, conversion."""
    for suffix in (".jsonl", ".json"):
        path = _scratch_file(suffix, data)
        try:
            source = DatasetSource(str(path))
            len(source)
            records = list(source.records())
            raw = [r.parsed() for r in source.records(parse=False)]  # what the workers parse
            assert repr(raw) == repr(records), "records(parse=False) parsed differs from records()"  # repr: NaN != NaN
            detection = detect([r.data for r in records if r.error is None], str(path))
        except InputError:
            continue
        for record in records:
            try:
                to_sample(record.data, detection) if record.error is None else None
            except RowProblem:
                pass


def jinja_template(data: bytes) -> None:
    """A chat template (and a conversation) rendered by transformers' renderer within mldebug's limits."""
    template, conversation = _template_and_conversation(data)
    renderer = ChatRenderer(template, {"bos_token": "<s>", "eos_token": "</s>"}, limits=JINJA_LIMITS)
    for add_generation_prompt in (False, True):
        try:
            renderer.render(conversation, add_generation_prompt=add_generation_prompt, with_generation_spans=True)
        except TemplateRenderError:
            return


def go_template(data: bytes) -> None:
    """An Ollama Go template (and a conversation) rendered by the Go-template interpreter."""
    template, conversation = _template_and_conversation(data)
    try:
        render_ollama(template, conversation, system="Be brief.", today=date(2025, 1, 15), limits=GO_LIMITS)
    except (TemplateError, InputError):
        pass


def modelfile(data: bytes) -> None:
    try:
        parse_modelfile(data.decode("utf-8", errors="replace"), _scratch() / "Modelfile")
    except InputError:
        pass


def gguf(data: bytes) -> None:
    try:
        read_gguf_vocab(_scratch_file(".gguf", data))
    except InputError:
        pass


def _template_and_conversation(data: bytes) -> tuple[str, list]:
    template, _, rest = data.partition(SPLIT)
    conversation = CONVERSATION
    if rest:
        try:
            parsed = json.loads(rest)
        except (ValueError, RecursionError):
            parsed = None
        if isinstance(parsed, list) and all(isinstance(m, dict) for m in parsed):
            conversation = parsed
    return template.decode("utf-8", errors="replace"), conversation


def _scratch_file(suffix: str, data: bytes) -> Path:
    path = _scratch() / f"input{suffix}"
    path.write_bytes(data)
    return path


@functools.cache
def _scratch() -> Path:
    """Made on first use, so listing the targets creates nothing."""
    return Path(tempfile.mkdtemp(prefix="mldebug-fuzz-"))


TARGETS: dict[str, tuple[Callable[[bytes], None], tuple[Path, ...]]] = {
    "dataset_reader": (dataset_reader, (FIXTURES / "hostile" / "datasets", FIXTURES / "datasets" / "demo")),
    "jinja_template": (jinja_template, (FIXTURES / "hostile" / "templates", FIXTURES / "templates")),
    "go_template": (go_template, (FIXTURES / "templates" / "go", FIXTURES / "hostile" / "ollama")),
    "modelfile": (modelfile, (FIXTURES / "hostile" / "ollama",)),
    "gguf": (gguf, (FIXTURES / "hostile" / "gguf",)),
}
