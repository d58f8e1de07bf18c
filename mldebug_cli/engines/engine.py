"""What one deploy engine is: the object each engine module exports as ``ENGINE``."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mldebug_cli.sources.deploy import Side

# (side, messages, tools, add_generation_prompt, now, variables) -> the prompt text; raises InputError
Renderer = Callable[["Side", list, Sequence[Mapping[str, Any]], bool, datetime, dict], str]
# (side, messages with {"type": "image"} parts) -> the messages its template is given; raises EngineRenderError
ImageMessages = Callable[["Side", list], list]


@dataclass(frozen=True)
class RenderSource:
    """The source of ``mldebug render``: its kind, the paths given, and the tokenizer loaded for it."""

    kind: str  # tokenizer, jinja, gotemplate, gguf, modelfile
    tokenizer: str | None
    template: str | None
    gguf: str | None
    modelfile: str | None
    loaded: Any  # sources.tokenizer.LoadedTokenizer | None


@dataclass(frozen=True)
class Engine:
    """One deploy engine, as plain callables and facts."""

    name: str
    deploy_side: Callable[[str, str, Side, bool], Side]  # (spec, kind, train side, trust_remote_code) -> its side
    render_side: Callable[[RenderSource], Side] | None  # None: `mldebug render` does not emulate it
    render: Renderer
    variables: tuple[str, ...] | None = None  # the template variables it passes (None: any --var)
    syntax: str = "jinja"  # the template language it renders: jinja or go
    always_opens_reply: bool = False  # its chat route always ends the prompt for a reply (no add_generation_prompt switch)
    serve_hint: str = "serve with the template the model was trained with (vLLM: --chat-template FILE)"
    stop_hint: str = "add {eot}'s id to eos_token_id in generation_config.json"  # {eot}: the end-of-turn text
    double_bos_hint: str = "remove the BOS text from the template or the runtime's added BOS"
    # how its chat route hands an image conversation to the template (it then renders a model folder with the
    # processor's template); None: image conversations are not emulated, for the reason image_refusal gives
    image_messages: ImageMessages | None = None
    image_refusal: str = "its handling of image parts is not emulated"
    interleaves_images: bool = False  # it can put each image's marker where its part is (vLLM --interleave-mm-strings)

    def side_facts(self) -> dict[str, Any]:
        """The Side fields every side this engine builds carries."""
        return {"engine": self.name, "syntax": self.syntax, "renders_without_generation_prompt": not self.always_opens_reply}
