"""A model folder's processor files, read without transformers: the processor class it names and its chat template.

Processors render image conversations with their own chat template (``chat_template.jinja`` beside a processor
config, else ``chat_template.json``), which may differ from the tokenizer's text-only one (Qwen2-VL's
tokenizer_config.json carries Qwen2's text template; its chat_template.json writes image parts).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from mldebug_cli.core.errors import InputError
from mldebug_cli.core.safe_io import read_text

PROCESSOR_CONFIGS = ("preprocessor_config.json", "processor_config.json")
# What a model's prompt carries for each image, by processor class: the string its processor expands into the
# image's tokens, as vLLM 0.33.0's model classes write it for an image (``get_placeholder_str``; held to them by
# tests/engines/test_vllm_multimodal.py)
IMAGE_MARKERS = {
    "Qwen2VLProcessor": "<|vision_start|><|image_pad|><|vision_end|>",
    "Qwen2_5_VLProcessor": "<|vision_start|><|image_pad|><|vision_end|>",
    "Gemma3Processor": "<start_of_image>",
    "LlavaProcessor": "<image>",
    "Idefics3Processor": "<image>",
}


@dataclass(frozen=True)
class ProcessorFiles:
    processor_class: str
    template: str | None  # the processor's own chat template (None: it has none, the tokenizer's is used)
    template_source: str | None

    @property
    def image_marker(self) -> str | None:
        return IMAGE_MARKERS.get(self.processor_class)


def processor_files(folder: Path) -> ProcessorFiles | None:
    """The processor of a model folder, or None where it has no processor config (a text model)."""
    config: dict[str, object] = {}
    for name in PROCESSOR_CONFIGS:
        path = folder / name
        if path.is_file():
            data = _json(path)
            if isinstance(data, dict):
                config.update(data)
    if not config:
        return None
    template, source = None, None
    jinja, json_file = folder / "chat_template.jinja", folder / "chat_template.json"
    if jinja.is_file():
        template, source = read_text(jinja), str(jinja)
    elif json_file.is_file():
        data = _json(json_file)
        value = data.get("chat_template") if isinstance(data, dict) else None
        if not isinstance(value, str):
            raise InputError(f"{json_file}: no chat_template string in it")
        template, source = value, str(json_file)
    return ProcessorFiles(str(config.get("processor_class") or ""), template, source)


def _json(path: Path) -> object:
    try:
        return json.loads(read_text(path))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise InputError(f"{path}: not readable JSON ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"
                         ) from None
