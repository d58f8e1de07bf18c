"""check-template: TRAIN and DEPLOY sides -> probe conversations rendered and tokenized on both -> CT findings.

Both sides are tokenized with the train tokenizer: the train side as ``apply_chat_template`` does (no
special tokens added), the deploy side under its runtime's rules (BOS/EOS ids added per the runtime,
special-token text parsed), with the runtime's BOS/EOS mapped to the train tokenizer's ids by their text.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from mldebug_cli.core import registry
from mldebug_cli.core.errors import InputError, UsageError
from mldebug_cli.core.findings import CONTEXT_VERSIONS, ContextValue, Finding, Report
from mldebug_cli.core.sections.probes import ProbesSection, ProbesSummary
from mldebug_cli.engines.registry import deploy_side, engine, train_side
from mldebug_cli.frameworks import versions
from mldebug_cli.pipelines.render import FIXED_NOW, EngineRenderError, render_with_engine, tokenize
from mldebug_cli.render.diff import (
    Hunk,
    HunkContext,
    ImageProbeResult,
    ProbeResult,
    TemplateComparison,
    default_system_prompt,
    generation_prompt,
    text_hunks,
    token_hunks,
)
from mldebug_cli.render.probes import (
    ANSWER,
    QUESTION,
    SYSTEM,
    Probe,
    builtin_probes,
    content_spans,
    image_count,
    image_probes,
    read_conversation,
    without_images,
)
from mldebug_cli.sources.deploy import Side
from mldebug_cli.sources.processor_files import IMAGE_MARKERS

_OTHER_DAY = timedelta(days=400)  # a date with another day, month and year, to see whether a render depends on it


@dataclass(frozen=True)
class CheckTemplateOptions:
    train: str
    deploy: str
    train_tokenizer: str | None = None
    deploy_engine: str | None = None
    messages: str | None = None
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    now: datetime = FIXED_NOW
    trust_remote_code: bool = False
    interleave_mm_strings: bool = False  # the deploy engine serves with vLLM's --interleave-mm-strings


@dataclass(frozen=True)
class _Render:
    text: str | None
    error: str | None = None


class _Renders:
    """Each (side, probe, generation prompt on/off) rendered once."""

    def __init__(self, now: datetime) -> None:
        self.now = now
        self._done: dict[tuple[str, str, bool], _Render] = {}

    def get(self, side: Side, probe: Probe, add_generation_prompt: bool | None = None) -> _Render:
        flag = probe.add_generation_prompt if add_generation_prompt is None else add_generation_prompt
        key = (side.role, probe.name, flag)
        if key not in self._done:
            try:
                text = render_with_engine(side, probe.messages, probe.tools, flag, self.now)
                self._done[key] = _Render(text)
            except EngineRenderError as exc:
                self._done[key] = _Render(None, str(exc))
        return self._done[key]


def build_report(options: CheckTemplateOptions) -> Report:
    checks = [registry.load(ref) for ref in registry.selected(options.select, options.ignore, family="CT")]
    train = train_side(options.train, options.train_tokenizer, options.trust_remote_code)
    deploy = deploy_side(options.deploy, options.deploy_engine, train, options.trust_remote_code)
    if options.interleave_mm_strings:
        deploy = _interleaving(deploy)
    assert train.loaded is not None  # the train side is always a tokenizer
    tok = train.loaded.tokenizer
    end_of_turn = _end_of_turn(train)
    probes = builtin_probes(end_of_turn or tok.eos_token)
    given = read_conversation(options.messages).as_probe() if options.messages else None
    if given is not None and not image_count(given.messages):
        probes = (*probes, given)
    by_name = {p.name: p for p in probes}
    renders = _Renders(options.now)
    if renders.get(train, by_name["user"]).text is None:
        raise InputError(f"{train.template_source}: the train template cannot render a single user message: "
                         f"{renders.get(train, by_name['user']).error}")  # fmt: skip
    defaults = {side.role: _default_system(renders, side, by_name) for side in (train, deploy)}
    tokens = _TokenRules(tok, _train_id(tok, deploy.bos_text, deploy.gguf.bos_id if deploy.gguf else None),
                         _train_id(tok, deploy.eos_text, deploy.gguf.eos_id if deploy.gguf else None))  # fmt: skip
    markers = tuple(dict.fromkeys(t for t in (train.bos_text, train.eos_text, deploy.bos_text, deploy.eos_text) if t))
    results = tuple(
        _compare(probe, train, deploy, renders, tokens, markers, any(d is not None for d in defaults.values()))
        for probe in probes
    )
    comparison = TemplateComparison(
        train=train,
        deploy=deploy,
        results=results,
        train_bos_id=tok.bos_token_id,
        deploy_bos_id=tokens.deploy_bos if deploy.adds_bos else None,
        end_of_turn=end_of_turn,
        train_default_system=defaults["train"],
        deploy_default_system=defaults["deploy"],
        train_generation_prompt=_generation_prompt(renders, train, by_name),
        deploy_generation_prompt=_generation_prompt(renders, deploy, by_name),
        assistant_header=_assistant_header(renders, train, by_name),
        date_dependent={side.role: _depends_on_date(side, by_name["user"], options.now) for side in (train, deploy)},
        train_special_tokens=_special_tokens(tok),
        image_results=_image_results(train, deploy, given, options.now),
    )
    findings = tuple(f for check in checks for f in check.findings(comparison, comparison))
    return Report(
        command="check-template",
        findings=findings,
        checks_run=tuple(check.code for check in checks),
        targets=(train.spec, deploy.spec),
        context=_context(comparison, options.now),
        summary=_summary(results, findings),
        details=ProbesSection((*(r.view() for r in results), *(r.view() for r in comparison.image_results))).as_details(),
    )


def _interleaving(deploy: Side) -> Side:
    """The deploy side served with --interleave-mm-strings (an engine that has no such mode: a usage error)."""
    if not engine(deploy.engine).interleaves_images:
        raise UsageError(f"--interleave-mm-strings is a vLLM server flag: {deploy.engine} has no such mode",
                         hint="drop --interleave-mm-strings, or use --deploy-engine vllm")
    return replace(deploy, interleave_images=True, notes=(*deploy.notes, "served with --interleave-mm-strings: on a "
                   "string-content template each image's marker goes where its part is"))


def _image_results(train: Side, deploy: Side, given: Probe | None, now: datetime) -> tuple[ImageProbeResult, ...]:
    """The image conversations (the built-in ones for a model folder with a processor, and a --messages conversation
    with image parts) rendered on both sides, each also without its image parts."""
    extra = (given,) if given is not None and image_count(given.messages) else ()
    if train.processor_class is None and not extra:
        return ()
    probes = (*image_probes(), *extra) if train.processor_class is not None else extra
    marker = IMAGE_MARKERS.get(train.processor_class or "")
    if marker is None:
        why = (f"processor class {train.processor_class!r}: its image marker is not known to mldebug"
               if train.processor_class else f"{train.spec} has no processor files (preprocessor_config.json or "
               "processor_config.json): the model's image marker is unknown")
        return tuple(ImageProbeResult(p, image_count(p.messages), "", skipped=why) for p in probes)
    return tuple(_image_result(probe, train, deploy, marker, now) for probe in probes)


def _image_result(probe: Probe, train: Side, deploy: Side, marker: str, now: datetime) -> ImageProbeResult:
    bare, images, flag = without_images(probe), image_count(probe.messages), probe.add_generation_prompt
    try:
        trained = render_with_engine(train, probe.messages, probe.tools, flag, now)
        train_bare = render_with_engine(train, bare.messages, bare.tools, flag, now)
    except EngineRenderError as exc:
        return ImageProbeResult(probe, images, marker, skipped=f"the train template cannot render it ({exc})")
    served_by = engine(deploy.engine)
    if served_by.image_messages is None:
        return ImageProbeResult(probe, images, marker, trained, train_bare=train_bare,
                                skipped=f"{deploy.engine}: {served_by.image_refusal}")
    try:
        served = render_with_engine(deploy, served_by.image_messages(deploy, probe.message_list()), probe.tools, flag,
                                    now)
        deploy_bare = render_with_engine(deploy, served_by.image_messages(deploy, bare.message_list()), bare.tools,
                                         flag, now)
    except EngineRenderError as exc:
        return ImageProbeResult(probe, images, marker, trained, train_bare=train_bare, deploy_error=str(exc))
    return ImageProbeResult(probe, images, marker, trained, served, train_bare, deploy_bare)


@dataclass(frozen=True)
class _TokenRules:
    tokenizer: Any
    deploy_bos: int | None  # the deploy runtime's BOS / EOS, as train tokenizer ids
    deploy_eos: int | None

    def train_ids(self, train: Side, text: str) -> tuple[int, ...]:
        return tuple(tokenize(train, text, self.tokenizer))

    def deploy_ids(self, deploy: Side, text: str) -> tuple[int, ...]:
        return tuple(tokenize(deploy, text, self.tokenizer, self.deploy_bos, self.deploy_eos))

    def piece(self) -> Callable[[int], str]:
        return lambda i: str(self.tokenizer.convert_ids_to_tokens(i))


def _compare(
    probe: Probe, train: Side, deploy: Side, renders: _Renders, tokens: _TokenRules, markers: tuple[str, ...],
    default_system_block: bool,
) -> ProbeResult:  # fmt: skip
    trained = renders.get(train, probe)
    if trained.text is None:
        return ProbeResult(probe, skipped=f"the train template cannot render it ({trained.error})")
    if not probe.add_generation_prompt and not deploy.renders_without_generation_prompt:
        return ProbeResult(probe, train_text=trained.text, skipped=f"{deploy.engine} always appends the generation prompt")
    served = renders.get(deploy, probe)
    if served.text is None:
        return ProbeResult(probe, train_text=trained.text, deploy_error=served.error)
    train_ids, deploy_ids = tokens.train_ids(train, trained.text), tokens.deploy_ids(deploy, served.text)
    hunks: tuple[Hunk, ...] = ()
    if trained.text != served.text:
        context = HunkContext(
            messages=probe.messages,
            add_generation_prompt=probe.add_generation_prompt,
            train_spans=content_spans(trained.text, probe.messages),
            deploy_spans=content_spans(served.text, probe.messages),
            train_generation_start=_generation_start(renders, train, probe),
            deploy_generation_start=_generation_start(renders, deploy, probe),
            markers=markers,
            default_system_block=default_system_block,
            tool_names=tuple(t["function"]["name"] for t in probe.tools if isinstance(t.get("function"), dict)),
        )
        hunks = text_hunks(trained.text, served.text, context)
    return ProbeResult(
        probe,
        train_text=trained.text,
        deploy_text=served.text,
        train_ids=train_ids,
        deploy_ids=deploy_ids,
        hunks=hunks,
        token_hunks=token_hunks(train_ids, deploy_ids, tokens.piece()),
    )


def _generation_start(renders: _Renders, side: Side, probe: Probe) -> int | None:
    """Where the generation prompt starts: the length of the same render without it."""
    if not probe.add_generation_prompt or not side.renders_without_generation_prompt:
        return None
    with_prompt, without = renders.get(side, probe), renders.get(side, probe, False)
    if with_prompt.text is None or without.text is None or not with_prompt.text.startswith(without.text):
        return None
    return len(without.text)


def _default_system(renders: _Renders, side: Side, probes: Mapping[str, Probe]) -> str | None:
    user, system_user = renders.get(side, probes["user"]).text, renders.get(side, probes["system+user"]).text
    if user is None or system_user is None:
        return None
    return default_system_prompt(user, system_user, SYSTEM, QUESTION)


def _generation_prompt(renders: _Renders, side: Side, probes: Mapping[str, Probe]) -> str | None:
    if not side.renders_without_generation_prompt:
        return None
    on, off = renders.get(side, probes["user"]).text, renders.get(side, probes["generation-prompt-off"]).text
    return generation_prompt(on, off) if on is not None and off is not None else None


def _assistant_header(renders: _Renders, train: Side, probes: Mapping[str, Probe]) -> str | None:
    """What training put between the user turn and the assistant's content."""
    full, user = renders.get(train, probes["assistant-last"]).text, renders.get(train, probes["generation-prompt-off"]).text
    if full is None or user is None or not full.startswith(user):
        return None
    at = full.find(ANSWER, len(user))
    return full[len(user) : at] if at >= 0 else None


def _depends_on_date(side: Side, probe: Probe, now: datetime) -> bool:
    try:
        first = render_with_engine(side, probe.messages, probe.tools, True, now)
        second = render_with_engine(side, probe.messages, probe.tools, True, now + _OTHER_DAY)
    except EngineRenderError:
        return False
    return first != second


def _end_of_turn(train: Side) -> str | None:
    """The special token that closes assistant turns in the train template (else None)."""
    from mldebug_cli.render.chat import ChatRenderer
    from mldebug_cli.render.probe import probe_template

    assert train.loaded is not None and train.template is not None  # the train side is a tokenizer with its template
    tok = train.loaded.tokenizer
    facts = probe_template(ChatRenderer.for_tokenizer(tok, train.template), tok.bos_token, list(tok.get_added_vocab()))
    return facts.end_of_turn or tok.eos_token


def _train_id(tok: Any, text: str | None, fallback: int | None) -> int | None:
    """The train tokenizer's id for a deploy-side special token text (the deploy id when train lacks it)."""
    if not text:
        return None
    found = tok.convert_tokens_to_ids(text)
    return found if isinstance(found, int) and found != tok.unk_token_id else fallback


def _special_tokens(tok: Any) -> dict[str, int]:
    texts = {t.content for t in tok.added_tokens_decoder.values() if t.special}
    texts.update(t for t in tok.all_special_tokens if t)
    ids = {text: tok.convert_tokens_to_ids(text) for text in sorted(texts) if text.strip()}
    return {text: i for text, i in ids.items() if isinstance(i, int)}


def _context(c: TemplateComparison, now: datetime) -> dict[str, ContextValue]:
    deploy = c.deploy
    stops = ", ".join(deploy.stop_token_texts) or "none known"
    if deploy.stop_strings:
        stops += "; stop strings: " + ", ".join(repr(s) for s in deploy.stop_strings)
    bos = f"adds BOS {deploy.bos_text}" if deploy.adds_bos and deploy.bos_text else "adds no BOS"
    return {
        "train": f"{c.train.spec} (template: {c.train.template_source}; rendered by transformers)",
        "deploy": f"{deploy.spec} (served by {deploy.engine}; template: {deploy.template_source})",
        "deploy_tokenization": f"{bos}, {'adds EOS' if deploy.adds_eos else 'adds no EOS'}, special-token text parsed",
        "deploy_stops_on": stops,
        "trained_end_of_turn": c.end_of_turn,
        "date": f"{now:%Y-%m-%d} (fixed, so date-dependent templates render reproducibly)",
        "assumptions": "; ".join(deploy.notes) or None,
        "images": _images_line(c),
        CONTEXT_VERSIONS: _versions_line(),
    }


def _images_line(c: TemplateComparison) -> str | None:
    if not c.image_results:
        return None
    compared = [r for r in c.image_results if r.compared]
    if not compared:
        return f"image conversations not compared: {c.image_results[0].skipped or c.image_results[0].deploy_error}"
    marker = compared[0].marker
    return (f"{len(compared)} of {len(c.image_results)} image conversations compared (the model's image marker "
            f"{marker}; {c.train.processor_class})")


def _versions_line() -> str:
    """The releases both sides are rendered and tokenized with, and why those: the installed ones, as the
    comparison runs them (no framework's pin, as LLaMA-Factory's on transformers, chooses others here)."""
    return (versions.TargetVersions().describe(("transformers", "tokenizers"))
            + ": both templates rendered and tokenized by these; the comparison assumes no framework's pin")


def _summary(results: tuple[ProbeResult, ...], findings: tuple[Finding, ...]) -> dict[str, Any]:
    by_check: dict[str, int] = {}
    for finding in findings:
        by_check[finding.code] = by_check.get(finding.code, 0) + 1
    return ProbesSummary(len(results), sum(r.compared for r in results), sum(r.identical for r in results),
                         dict(sorted(by_check.items()))).as_dict()
