"""The deploy engines, one line each: the only place that lists them.

Each line names a module of this package that exports one ``ENGINE`` (an :class:`engine.Engine`), and says which
kinds of artefact the engine serves as a DEPLOY (check-template) and renders (``mldebug render``), each with a
preference: the lowest is that kind's default engine. The command line reads these before any engine module is
imported: which engines serve or render a kind, which is the default, and the help texts saying so, are generated
from here; the spec -> kind detection stays in ``sources.deploy``.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple

from mldebug_cli.core.errors import InputError, UsageError
from mldebug_cli.engines.errors import EngineRenderError

__all__ = ["ENGINES", "FIXED_NOW", "EngineRenderError", "choose_engine", "deploy_side", "engine", "render_source_side",
           "render_with_engine", "train_side"]

if TYPE_CHECKING:
    from mldebug_cli.engines.engine import Engine
    from mldebug_cli.sources.deploy import Side

class Entry(NamedTuple):
    """One registry line: the engine's name (--deploy-engine, --engine), its module, and the kinds it serves and
    renders."""

    name: str
    module: str  # mldebug_cli.engines.<module> exports ENGINE
    serves: Mapping[str, int]  # kind of DEPLOY artefact -> preference (the lowest is that kind's default engine)
    renders: Mapping[str, int]  # kind of `mldebug render` source -> preference (its ENGINE has a render_side)


REGISTRY = (
    Entry("transformers", "hf", serves={"tokenizer": 1, "jinja": 1}, renders={"tokenizer": 0, "jinja": 0, "gguf": 2}),
    Entry("vllm", "vllm", serves={"tokenizer": 0, "jinja": 0}, renders={}),
    Entry("llamacpp", "llamacpp", serves={"gguf": 0, "tokenizer": 3, "jinja": 3},
          renders={"gguf": 0, "tokenizer": 1, "jinja": 1}),
    Entry("ollama", "ollama", serves={"gguf": 1, "modelfile": 0}, renders={"gotemplate": 0, "gguf": 1, "modelfile": 0}),
    Entry("tgi", "tgi", serves={"tokenizer": 2, "jinja": 2}, renders={"tokenizer": 2, "jinja": 2, "gguf": 3}),
    Entry("vllm-completions", "vllm_completions", serves={"tokenizer": 4, "jinja": 4}, renders={"tokenizer": 3, "jinja": 3}),
)
# the kinds of artefact (sources.deploy tells them apart), as help text names them
KINDS = {"tokenizer": "a tokenizer folder", "jinja": "a .jinja", "gguf": "a GGUF", "modelfile": "a Modelfile",
         "gotemplate": "a Go template"}
ENGINES = tuple(entry.name for entry in REGISTRY)
DEPLOY_ENGINES = tuple(entry.name for entry in REGISTRY if entry.serves)
RENDER_ENGINES = tuple(entry.name for entry in REGISTRY if entry.renders)
TRAIN_ENGINE = "transformers"  # the training side renders as transformers' apply_chat_template does
FIXED_NOW = datetime(2025, 1, 15, 12, 0)  # differs from the dates templates hard-code (e.g. Llama 3.1's 26 Jul 2024)


def engine(name: str) -> Engine:
    """The ENGINE object of ``name`` (its module is imported on first use)."""
    found = next((entry for entry in REGISTRY if entry.name == name), None)
    if found is None:
        raise UsageError(f"unknown engine {name!r}", hint=f"one of {', '.join(ENGINES)}")
    return importlib.import_module(f"mldebug_cli.engines.{found.module}").ENGINE


def engines_for(kind: str, purpose: str = "serves") -> tuple[str, ...]:
    """The engines that serve (``purpose`` "serves") or render ("renders") ``kind``, the default first."""
    ranked = [(getattr(entry, purpose)[kind], i, entry.name) for i, entry in enumerate(REGISTRY)
              if kind in getattr(entry, purpose)]
    return tuple(name for _, _, name in sorted(ranked))


def defaults(purpose: str = "serves") -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Each default engine with the kinds (KINDS' words) it is the default for, in registry order:
    ``(("vllm", ("a tokenizer folder", "a .jinja")), ("llamacpp", ("a GGUF",)), ...)``."""
    chosen: dict[str, list[str]] = {}
    for kind, words in KINDS.items():
        ranked = engines_for(kind, purpose)
        if ranked:
            chosen.setdefault(ranked[0], []).append(words)
    return tuple((name, tuple(chosen[name])) for name in ENGINES if name in chosen)


def choose_engine(kind: str, name: str | None, flag: str, purpose: str = "serves") -> str:
    """The engine for a kind of source: its default engine, else ``name`` if it can serve it."""
    allowed = engines_for(kind, purpose)
    if name is None:
        return allowed[0]
    known = [entry.name for entry in REGISTRY if getattr(entry, purpose)]
    if name not in known:
        raise UsageError(f"{flag}: unknown engine {name!r}", hint=f"one of {', '.join(known)}")
    if name not in allowed:
        raise UsageError(f"{flag} {name} cannot serve a {kind}", hint=f"for a {kind}: {', '.join(allowed)}")
    return name


def train_side(spec: str, train_tokenizer: str | None = None, trust_remote_code: bool = False) -> Side:
    """TRAIN: a tokenizer folder (its own template), or a ``.jinja`` with ``--train-tokenizer DIR``."""
    from mldebug_cli.engines.sides import train_side as side

    return side(engine(TRAIN_ENGINE), spec, train_tokenizer, trust_remote_code)


def deploy_side(spec: str, name: str | None, train: Side, trust_remote_code: bool = False) -> Side:
    """DEPLOY resolved for engine ``name`` (default: the kind's default engine, ``defaults()``)."""
    from mldebug_cli.sources.deploy import deploy_kind

    kind = deploy_kind(spec)
    chosen = choose_engine(kind, name, "--deploy-engine")
    return engine(chosen).deploy_side(spec, kind, train, trust_remote_code)


def render_source_side(*, tokenizer: str | None, template: str | None, gguf: str | None, modelfile: str | None,
                       engine: str | None, trust_remote_code: bool = False) -> Side:
    """The source of ``mldebug render``: one of --template, --gguf, --modelfile, or --tokenizer alone.

    ``--tokenizer`` may join any of them: it gives a template's special tokens and the prompt's input ids.
    """
    from mldebug_cli.engines.engine import RenderSource
    from mldebug_cli.sources.deploy import is_jinja, render_kind
    from mldebug_cli.sources.tokenizer import load_tokenizer

    given = [flag for flag, value in (("--template", template), ("--gguf", gguf), ("--modelfile", modelfile)) if value]
    if len(given) > 1 or not (given or tokenizer):
        raise UsageError("give one of --tokenizer DIR, --template FILE, --gguf FILE or --modelfile FILE",
                         hint="--tokenizer may join --template, --gguf or --modelfile to give input ids")  # fmt: skip
    kind = render_kind(template, gguf, modelfile)
    chosen = choose_engine(kind, engine, "--engine", "renders")  # before anything loads
    loaded = load_tokenizer(tokenizer, template if is_jinja(template) else None, trust_remote_code) if tokenizer else None
    render_side = _engine(chosen).render_side
    assert render_side is not None  # choose_engine keeps only engines that render
    return render_side(RenderSource(kind, tokenizer, template, gguf, modelfile, loaded))


_engine = engine  # render_source_side's ``engine`` parameter hides the function


def render_with_engine(side: Side, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]],
                       add_generation_prompt: bool, now: datetime = FIXED_NOW,
                       variables: Mapping[str, Any] | None = None) -> str:
    """The prompt text ``side.engine`` builds from ``messages``; raises ``EngineRenderError``."""
    import json

    variables = dict(variables or {})
    fresh = json.loads(json.dumps(list(messages)))  # renderers may rewrite the messages they are given
    chosen = engine(side.engine)
    try:
        if chosen.variables is not None:
            _only_variables(variables, chosen.variables, chosen.name)
        return chosen.render(side, fresh, tools, add_generation_prompt, now, variables)
    except InputError as exc:  # the engines' own render failures
        raise EngineRenderError(exc.message) from None


def _only_variables(variables: Mapping[str, Any], allowed: tuple[str, ...], name: str) -> None:
    unknown = sorted(set(variables) - set(allowed))
    if unknown:
        raise UsageError(f"--var {unknown[0]}: {name} passes no such variable to templates",
                         hint=f"{name} takes only: {', '.join(allowed)}")  # fmt: skip
