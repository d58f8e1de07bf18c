"""inspect-data: dataset + tokenizer + template -> rendered rows, tokens, labels -> findings -> Report."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from mldebug_cli.core import registry
from mldebug_cli.core.errors import InputError, UsageError
from mldebug_cli.core.findings import (
    CONTEXT_VERSIONS,
    KEPT_PER_CHECK,
    ContextValue,
    Finding,
    FindingKeeper,
    Hit,
    Location,
    Report,
)
from mldebug_cli.core.numbers import plural
from mldebug_cli.core.registry import Code
from mldebug_cli.core.sections.rows import LengthHistogram, LengthPercentiles, RowsSection, RowsSummary, RowView
from mldebug_cli.frameworks import versions
from mldebug_cli.frameworks.framework import Framework
from mldebug_cli.frameworks.hf import tokenizer_resolution
from mldebug_cli.frameworks.registry import DEFAULT_ROWS, checked, frameworks, load, resolve, serving
from mldebug_cli.frameworks.rows import EncodedRow, RowDropped, RowProfile, end_texts
from mldebug_cli.frameworks.selector import row_profile
from mldebug_cli.frameworks.subjects import Row, Setup, TurnTokens
from mldebug_cli.pipelines.overlap import SUBJECT as OVERLAP_SUBJECT
from mldebug_cli.pipelines.overlap import image_base, overlap_findings
from mldebug_cli.pipelines.row_batches import (
    RowSource,
    batch_results,
    engine_line,
    first_records,
    open_rows,
    rows_past_the_end,
    sample_indices,
    unreadable_shards,
    workers_for,
)
from mldebug_cli.render.chat import ChatRenderer, TemplateRenderError, template_syntax_error
from mldebug_cli.render.labels import IGNORE_INDEX, labels_from_encoding, token_range
from mldebug_cli.render.masking import TRAIN_ON, layout_chat, layout_completion
from mldebug_cli.render.probe import probe_template
from mldebug_cli.sources.dataset import Record
from mldebug_cli.sources.hub import require_local_or_cached
from mldebug_cli.sources.overlap import RowReader
from mldebug_cli.sources.preference_rows import preference_task
from mldebug_cli.sources.row_formats import (
    ROW_FORMATS,
    Chat,
    PromptCompletion,
    RowProblem,
    Sample,
    Text,
    Tokens,
    detect,
    to_sample,
)
from mldebug_cli.sources.tokenizer import LoadedTokenizer, load_tokenizer, single_id, special_texts

ENGINES = ("local", "ray")
TASKS = ("sft", "dpo", "kto", "orpo", "grpo")
DEFAULT_SHOWN = 2
HISTOGRAM_BINS = 40


MAX_RAY_CONCURRENCY = 10_000  # actors: each holds a tokenizer; 10**9 of them would exhaust any cluster


@dataclass(frozen=True)
class InspectOptions:
    dataset: str
    tokenizer: str
    chat_template: str | None = None
    data_format: str | None = None
    data_format_from: str = "--data-format"  # who set data_format: the flag, or the config key preflight read it from
    framework: str = DEFAULT_ROWS
    train_on: str | None = None  # None: the framework's default
    max_length: int | None = None
    rows: tuple[int, ...] | None = None
    sample: int | None = None
    all_rows: bool = False
    findings_kept: int | None = KEPT_PER_CHECK  # per check, in row order; the rest are counted (None: keep all)
    show: int = DEFAULT_SHOWN
    token_table: bool = False  # the text view's per-token table (always with --rows); JSON and HTML have every token
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    split: str | None = None
    trust_remote_code: bool = False
    workers: int | None = None  # None: one per available core for large runs
    framework_options: Any = None  # the framework's own settings from a config (axolotl: AxolotlOptions); None: its defaults
    template: str | None = None  # the framework's own template by name (LLaMA-Factory's registry)
    task: str | None = None  # sft, dpo, kto, grpo; None: from the rows' columns
    truncation_mode: str | None = None  # TRL SFT and DPO: keep_start (the default) or keep_end
    reward_columns: tuple[str, ...] = ()  # GRPO: columns the reward functions read
    framework_flags: Any = None  # the settings of the framework's own flags (Framework.read_flags); None: none given
    not_emulated: tuple[str, ...] = ()  # preflight: what the config's trainer does to the rows that mldebug does not
    engine: str = "local"  # local: this process (and forked workers); ray: Ray Data (pipelines.ray_engine)
    ray_address: str | None = None  # --engine ray: the cluster (auto, host:port, ray://...); None: RAY_ADDRESS or a new local one
    ray_concurrency: int | None = None  # --engine ray: actors in the pool; None: one per CPU of the cluster
    sequence_lengths: bool = False  # RowsSection.sequence_lengths: every kept row's sequence lengths (memory)
    model: str | None = None  # a model folder or its config.json: its embedding rows (DS030); None: the tokenizer folder's
    transformers_version: str | None = None  # the transformers the run uses (None: the framework's pin decides, else installed)
    eval_dataset: str | None = None  # the eval set: every training row is compared with it (DS053, DS054)
    eval_split: str | None = None  # the eval set's split (a hub dataset or a folder of splits)
    eval_sets: tuple[tuple[str, str | None], ...] = ()  # more eval sets and their splits (preflight: each one a config names)
    # the Framework named ``framework`` when the caller resolved it (preflight, memory, probe): not looked up again
    resolved: Framework | None = field(default=None, compare=False, repr=False)

    @cached_property
    def rows_framework(self) -> Framework:
        """``framework``'s object: the one the caller resolved, else looked up once (a UsageError when mldebug does
        not emulate its rows); every step of the command asks this object."""
        if self.resolved is not None and self.resolved.name == self.framework:
            return checked(self.resolved, "rows")
        return resolve(self.framework, "rows")


def build_report(options: InspectOptions, progress: Callable[[int, int], None] | None = None) -> Report:
    _validate(options)
    options = replace(options, resolved=options.rows_framework)  # what every copy of the options carries along
    require_local_or_cached(options.tokenizer, "tokenizer")  # a typo fails at once, before the dataset is read
    if options.eval_dataset is not None:
        require_local_or_cached(options.eval_dataset, "eval dataset", repo_type="dataset")
    source = open_rows(options)
    vision_task = _vision_task(source, options)
    if vision_task is not None:
        from mldebug_cli.pipelines import vision

        report = vision.build_report(replace(options, task=vision_task), source, progress)
        head = [r.data for r in first_records(source, 50) if r.error is None]
        reader = RowReader(_overlap_detection(head, source.display), vision_task if vision_task != "sft" else None,
                           str(image_base(options.dataset)))
        return _with_overlap(report, options, source, reader)
    task = _preference_task(source, options)
    if task is not None:
        from mldebug_cli.pipelines import preference

        report = preference.build_report(options, task, progress, source)
        return _with_overlap(report, options, source, RowReader(task=task))
    checks = [registry.load(ref) for ref in registry.selected(options.select, options.ignore, family="DS")]
    file_rows = len(source)
    detection = _detection(source, options)
    loaded = load_tokenizer(options.tokenizer, options.chat_template, options.trust_remote_code)
    target = versions.resolve(None, {"transformers": options.transformers_version}, framework=options.framework)
    run_tokenizer, loaded = tokenizer_resolution.run_tokenizer(loaded, target.get("transformers"), options.framework)
    rows = row_profile(options.rows_framework, options, loaded, detection.row_format)
    cap = rows.first_rows  # the loader reads only the file's first rows (LLaMA-Factory max_samples): only those train
    total = file_rows if cap is None else min(file_rows, cap[0])
    indices = sample_indices(options, total)
    if indices is None and total < file_rows:
        indices = list(range(total))
    train_on = rows.train_on(options.train_on, detection.row_format)
    loaded, training_template = rows.training_template(loaded, detection.row_format, train_on)
    first = next((r.data for r in first_records(source, 1) if r.error is None), None)
    text_rows = detection.row_format == "prompt-completion" and isinstance(first, dict) and isinstance(first.get("prompt"), str)
    setup = replace(_setup(options, source, loaded, detection.row_format, train_on, rows), training_template=training_template,
                    refusal=rows.refusal(first), text_rows=text_rows, run_tokenizer=run_tokenizer)
    renderer = ChatRenderer.for_tokenizer(loaded.tokenizer, setup.template) if setup.template else None
    if renderer is not None:
        setup = replace(setup, render=lambda messages, tools, add_generation_prompt=False:
                        renderer.render(messages, tools, add_generation_prompt).text)
    locator = rows.locator(renderer, setup) if renderer is not None else None

    findings = FindingKeeper(options.findings_kept)  # the driver stays flat in rows: past the first K, counted
    for check in checks:
        if check.subject == "setup":
            findings.extend(check.findings(setup, setup))
    findings.extend(unreadable_shards(source, checks, Code.INVALID_MESSAGES))
    engine = _RowEngine(
        detection, setup, rows, renderer, locator, loaded.tokenizer, source.display,
        row_checks=[c for c in checks if c.subject == "row"],
        wanted=frozenset(options.rows) if options.rows else None,
        show=options.show,
        keep_lengths=options.sequence_lengths,
    )
    stats = _Stats(setup.max_length, options.sequence_lengths)
    views: list[_View] = []
    checked_total = total if indices is None else len(indices)
    workers = workers_for(options.workers, checked_total) if options.engine == "local" else 1
    for result in batch_results(engine, source, indices, options, workers):
        findings.extend(result.findings)
        stats.merge(result.stats)
        views = _keep_shown(views + result.views, options)
        if progress is not None:
            progress(stats.rows, checked_total)
    findings.extend(run_will_not_start(findings, rows, checks, source.display, checked_total))
    findings.extend(nothing_left(stats, rows, checks, source.display, total, file_rows))
    overlap, overlap_line = overlap_findings(options, source, RowReader(detection), checks)
    findings.extend(overlap)
    return Report(
        command="inspect-data",
        findings=tuple(findings.kept),
        not_kept=findings.not_kept(),
        checks_run=tuple(c.code for c in checks),
        targets=(source.display,),
        context=_context(setup, rows, detection, loaded, train_on, options, checked_total, total, workers)
        | _capped_line(rows, checked_total, total, file_rows) | engine_line(options)
        | overlap_line | _versions_line(target),
        summary=stats.summary(total, findings.by_code),
        details=RowsSection(tuple(_with_pieces(view, loaded.tokenizer) for view in _shown(views, options)),
                            options.token_table or bool(options.rows),
                            sorted(stats.sequences) if options.sequence_lengths else None).as_details(),
    )


def _versions_line(target: versions.TargetVersions) -> dict[str, str]:
    """The transformers the rows are read for, where it is not the installed one (a flag, a pin beside the config,
    or the newest release the framework's own pin allows): the header says which and why."""
    chosen = target.get("transformers")
    return {} if chosen.source == versions.INSTALLED else {CONTEXT_VERSIONS: chosen.describe()}


def _with_overlap(report: Report, options: InspectOptions, source: RowSource, reader: RowReader) -> Report:
    """A preference or image rows' report with the train/eval overlap checks (DS053, DS054) added, when
    ``--eval-dataset`` asks for them."""
    if options.eval_dataset is None and not options.eval_sets:
        return report
    checks = [registry.load(ref) for ref in registry.selected(options.select, options.ignore, family="DS")]
    checks = [c for c in checks if c.subject == OVERLAP_SUBJECT]
    found, line = overlap_findings(options, source, reader, checks)
    return replace(report, findings=report.findings + tuple(found), context={**report.context, **line},
                   checks_run=report.checks_run + tuple(c.code for c in checks if c.code not in report.checks_run))


def _overlap_detection(head: list[Any], display: str):
    """Image rows' format for the overlap comparison (None when no text format fits: each row is compared whole)."""
    try:
        return detect(head, display)
    except InputError:
        return None


def _vision_task(source, options: InspectOptions) -> str | None:
    """The task of image rows (the first row has an image or images column, TRL's test) for TRL's vision collators or
    LLaMA-Factory's mm_plugin (None: no image rows); refused by name where mldebug does not emulate them, never read as
    text."""
    from mldebug_cli.frameworks.trl.vision import has_processor, is_vision_row

    first = next((r.data for r in first_records(source, 1) if r.error is None), None)
    if not is_vision_row(first):
        return None
    task = _preference_task(source, options) or "sft"
    vision = options.rows_framework.vision
    if vision is not None and task in vision.refused:
        raise InputError(f"{source.display}: the rows have images, and {options.framework}'s {task} run does not start "
                         f"on them: {vision.refused[task]}", hint="train on image rows with a framework that takes "
                         "them (mldebug emulates TRL's SFT, DPO and KTO collators), or drop the image columns")
    if vision is None or task not in vision.tasks:
        emulating = [f for f in frameworks() if f.vision and f.vision.tasks]
        what = " and ".join(f.vision.emulated for f in emulating if f.vision)
        use = " or ".join(f"--framework {f.name} ({'/'.join(t.upper() for t in f.vision.tasks)})"
                          for f in emulating if f.vision)
        does = f" ({vision.not_emulated[task]}: not emulated)" if vision and task in vision.not_emulated else ""
        raise UsageError(f"the rows have images: mldebug emulates image rows for {what} only, not "
                         f"{options.framework} {task}{does}", hint=f"use {use}, or drop the "
                         "image columns to check the text alone")
    if not has_processor(options.tokenizer):
        raise InputError(f"{options.tokenizer}: the rows have images, and this folder has no processor files "
                         "(preprocessor_config.json)", hint="point --tokenizer at the model folder with its processor "
                         "files (preprocessor_config.json, chat_template.json, tokenizer files)")
    return task



def run_will_not_start(findings: FindingKeeper, rows: RowProfile, checks: list, path: str, checked: int) -> list[Finding]:
    """One dataset-level DS009 finding when the framework renders every row before the first step and the template
    raises on some: that one row stops the run (the per-row findings say where). The rows come in order, so the
    first DS009 row is among the kept findings; every per-row DS009 finding counts, kept or not."""
    check = next((c for c in checks if c.code == Code.TEMPLATE_ERROR), None)
    raised = [f.location.row for f in findings.kept if f.code == Code.TEMPLATE_ERROR and f.location.row is not None]
    if check is None or not raised or rows.template_error_stops_run is None:
        return []
    dataset_level = sum(1 for f in findings.kept if f.code == Code.TEMPLATE_ERROR and f.location.row is None)
    count = findings.by_code[Code.TEMPLATE_ERROR] - dataset_level
    return [check.finding(Hit(
        f"the run will not start: {rows.template_error_stops_run}, and the template raises on {count:,} of the "
        f"{checked:,} rows checked (first: row {min(raised)}); one such row stops it",
        "fix or drop every row the template raises on before training (they are listed under this check), or use a "
        "template that accepts them", Location(path=path)))]


def nothing_left(stats: _Stats, rows: RowProfile, checks: list, path: str, total: int,
                 file_rows: int | None = None) -> list[Finding]:
    """One dataset-level DS010 finding when the framework's reader drops every row the loader reads (the dataset's,
    or the first ``max_samples`` of them) and its loader then raises (LLaMA-Factory: no valid sample, or a dataset
    with none left that cannot be merged with the others)."""
    check = next((c for c in checks if c.code == Code.INVALID_MESSAGES), None)
    if check is None or rows.no_rows_left_stops_run is None or not stats.rows or stats.rows != total:
        return []
    if stats.dropped != stats.rows:
        return []
    cap = rows.first_rows
    if cap is not None and file_rows is not None and total < file_rows:
        return [check.finding(Hit(
            f"the run will not start: {cap[1]} keeps the first {plural(total, 'row')} of the {file_rows:,} and every "
            f"one is dropped, and {rows.no_rows_left_stops_run}",
            f"fix those rows' turns (each needs a prompt and a reply), raise {cap[1].split()[0]}, or leave the dataset "
            "out", Location(path=path)))]
    return [check.finding(Hit(f"the run will not start: every one of the {total:,} rows is dropped, and "
                              f"{rows.no_rows_left_stops_run}",
                              "fix the rows' turns (each needs a prompt and a reply), or leave the dataset out",
                              Location(path=path)))]


@dataclass(frozen=True)
class _View:
    row: int
    flagged: bool  # the row has an error or warning finding
    ok: bool  # the row was rendered
    view: RowView | None  # built last for flagged candidates (None until then)
    seriousness: tuple[int, int, int] = (0, 0, 0)  # larger first: see _seriousness


def _seriousness(findings: list[Finding]) -> tuple[int, int, int]:
    """How serious a row's findings are: the worst severity, then the lowest code at that severity (the catalogue
    puts the most basic failures first: DS001, nothing trained, before DS011), then how many findings."""
    if not findings:
        return (0, 0, 0)
    worst = max(f.severity.rank for f in findings)
    lowest = min(int(f.code[2:]) if f.code[2:].isdigit() else 999 for f in findings if f.severity.rank == worst)
    return (worst, -lowest, len(findings))


def _worst_code(view: _View) -> int:
    return -view.seriousness[1]


def _most_serious(views: list[_View], limit: int) -> list[_View]:
    """The ``limit`` most serious flagged views, one per worst check first (so four DS011 rows do not hide a DS001
    row), then by seriousness; ties by row order."""
    ranked = sorted(views, key=lambda v: (tuple(-x for x in v.seriousness), v.row))
    chosen: list[_View] = []
    seen: set[int] = set()
    for view in ranked:
        if len(chosen) < limit and _worst_code(view) not in seen:
            chosen.append(view)
            seen.add(_worst_code(view))
    chosen += [v for v in ranked if all(v is not c for c in chosen)][: limit - len(chosen)]
    return sorted(chosen, key=lambda v: (tuple(-x for x in v.seriousness), v.row))


@dataclass
class _BatchResult:
    findings: list[Finding]
    stats: _Stats
    views: list[_View]


@dataclass
class _RowEngine:
    """Everything a batch needs: runs in this process, or in forked workers that inherit it."""

    detection: Any
    setup: Setup
    profile: RowProfile  # the framework's row handling (the checks see only its answers, in ``setup.facts`` and the rows)
    renderer: ChatRenderer | None
    locator: Any  # where chat turns are (per-shape caches; from the row profile)
    tokenizer: Any
    path: str
    row_checks: list
    wanted: frozenset[int] | None
    show: int
    keep_lengths: bool = False

    def process(self, batch: list[Record]) -> _BatchResult:
        rows = _process(batch, self.detection, self.setup, self.profile, self.renderer, self.locator, self.tokenizer, self.path)
        result = _BatchResult([], _Stats(self.setup.max_length, self.keep_lengths), [])
        shown_ok = 0
        candidates: list[tuple[_View, Any]] = []  # flagged rows: the most serious are kept, their views built last
        for row in rows:
            row_findings = [f for c in self.row_checks for f in c.findings(row, self.setup)]
            result.findings.extend(row_findings)
            result.stats.add(row)
            flagged = any(f.severity.rank >= 1 for f in row_findings)
            seriousness = _seriousness(row_findings)
            if self.wanted is not None:
                if row.index in self.wanted:
                    result.views.append(_View(row.index, flagged, row.ok, _row_view(row), seriousness))
            elif flagged:
                candidates.append((_View(row.index, True, row.ok, None, seriousness), row))
            elif row.ok and shown_ok < self.show:
                shown_ok += 1
                result.views.append(_View(row.index, False, True, _row_view(row), seriousness))
        kept = _most_serious([view for view, _ in candidates], self.show)
        rows_by_index = {view.row: row for view, row in candidates}
        result.views += [replace(view, view=_row_view(rows_by_index[view.row])) for view in kept]
        return result


def _keep_shown(views: list[_View], options: InspectOptions) -> list[_View]:
    """The candidates that can still be shown (so memory does not grow with the dataset), whatever order the
    batches come in."""
    if options.rows:
        return views
    limit = max(options.show, 1) if options.show else 0
    clean = sorted((v for v in views if v.ok and not v.flagged), key=lambda v: v.row)
    return _most_serious([v for v in views if v.flagged], limit) + clean[:limit]


def _shown(views: list[_View], options: InspectOptions) -> list[RowView]:
    """--rows: those rows in order; otherwise the most serious flagged rows first, topped up with clean ones."""
    if options.rows:
        return [v.view for v in sorted(views, key=lambda v: v.row) if v.view is not None]
    limit = max(options.show, 1) if options.show else 0
    chosen = _most_serious([v for v in views if v.flagged], limit)
    chosen += sorted((v for v in views if v.ok and not v.flagged), key=lambda v: v.row)[: limit - len(chosen)]
    return [v.view for v in chosen if v.view is not None]


def _validate(options: InspectOptions) -> None:
    if options.engine not in ENGINES:
        raise UsageError(f"--engine: unknown engine {options.engine!r}", hint=f"one of {', '.join(ENGINES)}")
    if options.engine != "ray" and (options.ray_address is not None or options.ray_concurrency is not None):
        raise UsageError("--ray-address and --ray-concurrency need --engine ray")
    if options.ray_concurrency is not None and not 1 <= options.ray_concurrency <= MAX_RAY_CONCURRENCY:
        raise UsageError(f"--ray-concurrency must be from 1 to {MAX_RAY_CONCURRENCY:,}, got {options.ray_concurrency}",
                         hint="an actor per CPU of the cluster is the default")
    if options.data_format is not None and options.data_format not in ROW_FORMATS:
        raise UsageError(f"--data-format: unknown format {options.data_format!r}", hint=f"one of {', '.join(ROW_FORMATS)}")
    rows = options.rows_framework.rows
    if options.template is not None and not (rows and rows.own_templates):
        owners = " or ".join(f"--framework {line.name}" for line in serving("rows") if _own_templates(load(line)))
        raise UsageError(f"--template names a framework's own template, and {options.framework} has none",
                         hint=f"pass {owners} to use its template, or the template file with --chat-template")
    if options.train_on is not None and options.train_on not in TRAIN_ON:
        raise UsageError(f"--train-on: unknown value {options.train_on!r}", hint=f"one of {', '.join(TRAIN_ON)}")
    if options.max_length is not None and options.max_length < 1:
        raise UsageError("--max-length must be at least 1")
    if options.task is not None and options.task not in TASKS:
        raise UsageError(f"--task: unknown task {options.task!r}", hint=f"one of {', '.join(TASKS)}")
    if options.sample is not None and options.sample < 1:
        raise UsageError(f"--sample must be at least 1 (got {options.sample})", hint="--all checks every row")
    if sum(bool(x) for x in (options.rows, options.sample, options.all_rows)) > 1:
        raise UsageError("--rows, --sample and --all exclude each other")


def _own_templates(framework: Framework) -> bool:
    return bool(framework.rows and framework.rows.own_templates)


def _preference_task(source: RowSource, options: InspectOptions) -> str | None:
    """dpo, kto or grpo when --task says so or the rows' columns do (and --data-format does not say otherwise)."""
    if options.data_format is not None and options.task is None:
        return None
    return preference_task([r.data for r in first_records(source, 1) if r.error is None], options.task)


def _detection(source: RowSource, options: InspectOptions):
    from mldebug_cli.sources.row_formats import Detection

    head = [r.data for r in first_records(source, 50) if r.error is None]
    try:
        detected = detect(head, source.display)
    except InputError:  # columns no format claims (or a preference dataset): only --data-format can decide
        if options.data_format is None:
            raise
        detected = Detection("", "no format detected")
    if options.data_format is None or options.data_format == detected.row_format:
        return detected
    key = detected.messages_key if options.data_format in ("messages", "sharegpt") else "messages"
    if options.data_format in ("messages", "sharegpt") and head and isinstance(head[0], dict):
        key = next((k for k in ("messages", "conversations", "conversation") if k in head[0]), key)
    return Detection(options.data_format, options.data_format_from, key)


def _setup(options: InspectOptions, source: RowSource, loaded: LoadedTokenizer, row_format: str, train_on: str,
           rows: RowProfile) -> Setup:
    tok = loaded.tokenizer
    template = loaded.chat_template
    needs_template = rows.renders_chat(row_format)
    if needs_template and not template and not rows.own_templates:
        raise InputError(
            f"{loaded.source}: the tokenizer has no chat template, and {row_format} rows need one",
            hint="pass --chat-template FILE",
        )
    if template:
        problem = template_syntax_error(template)
        if problem:
            where = options.chat_template or str(Path(loaded.source) / "tokenizer_config.json")
            raise InputError(f"{where}: the chat template does not compile: {problem}")
    added = [t for t in tok.get_added_vocab()]
    specials = special_texts(tok)
    facts = None
    if template:
        facts = probe_template(ChatRenderer.for_tokenizer(tok, template), tok.bos_token, added)
    end_of_turn_id = single_id(tok, facts.end_of_turn) if facts and facts.end_of_turn else None
    stop_ids = {i for i in (tok.eos_token_id, end_of_turn_id, *loaded.generation_eos_ids) if i is not None}
    return Setup(
        dataset_path=source.display,
        tokenizer_source=loaded.source,
        template_source=loaded.template_source,
        template_file=options.chat_template,
        row_format=row_format,
        framework=options.framework,
        train_on=train_on,
        max_length=rows.max_length(options.max_length),
        bos_id=tok.bos_token_id,
        bos_text=tok.bos_token,
        eos_id=tok.eos_token_id,
        eos_text=tok.eos_token,
        pad_id=tok.pad_token_id,
        pad_text=tok.pad_token,
        end_of_turn_id=end_of_turn_id,
        stop_ids=frozenset(stop_ids),
        generation_eos_ids=loaded.generation_eos_ids,
        tokenizer_adds_bos=_adds_bos(tok),
        template=template,
        template_facts=facts,
        has_generation_markers=ChatRenderer(template, {}).has_generation_markers if template else False,
        special_texts=tuple(specials),
        special_pattern=re.compile("|".join(map(re.escape, sorted(specials, key=len, reverse=True)))) if specials else None,
        id_to_piece=tok.convert_ids_to_tokens,
        encode=lambda text: tok.encode(text, add_special_tokens=False),
        facts=rows.facts(row_format),
        vocab_size=len(tok),
        **_embedding_rows(options.model or loaded.source),
    )


def _embedding_rows(source: str) -> dict[str, Any]:
    """The model's embedding rows (its config.json's vocab_size): ``source`` is a model folder (the tokenizer
    folder often is one) or the config.json itself."""
    path = Path(source) if source.endswith(".json") else Path(source) / "config.json"
    try:
        config = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
    except (OSError, ValueError):
        return {}
    if not isinstance(config, dict):
        return {}
    text_config = config.get("text_config")
    text = text_config if isinstance(text_config, dict) else config
    rows = text.get("vocab_size")
    return {"embedding_rows": rows, "model_config": str(path)} if isinstance(rows, int) and rows > 0 else {}


def _adds_bos(tok) -> bool:
    if tok.bos_token_id is None:
        return False
    ids = tok("a").input_ids
    return bool(ids) and ids[0] == tok.bos_token_id


def _process(batch: list[Record], detection, setup: Setup, profile: RowProfile, renderer, locator, tokenizer,
             path: str) -> list[Row]:
    """Convert, render and lay out every row of a batch, then tokenize the batch in one call (rows the framework
    encodes itself: in one call of its own)."""
    rows = [_prepare(record, detection, setup, profile, renderer, locator, path) for record in batch]
    own = [row for row in rows if row.ok and profile.encodes(_sample(row))]
    for row, encoded in zip(own, profile.encode_batch([_sample(row) for row in own], setup)):
        if isinstance(encoded, TemplateRenderError):
            row.render_error = str(encoded)
        elif isinstance(encoded, RowProblem):
            row.problem = encoded
        else:
            _store_encoded(row, encoded)
    _tokenize(rows, setup, profile, tokenizer)
    for row in rows:
        if row.ok and row.input_ids and not row.trained_before_truncation and not isinstance(row.sample, Tokens):
            row.untrained_cause = profile.untrained_cause(row)
    return rows


def _prepare(record: Record, detection, setup: Setup, profile: RowProfile, renderer, locator, path: str) -> Row:
    record = record.parsed()  # JSON Lines rows reach the batch as raw lines: parsing happens in the workers
    row = Row(index=record.index, line=record.line, path=record.path or path, raw=record.data)
    if record.error is not None:
        row.problem = RowProblem(Code.INVALID_MESSAGES, record.error)
        return row
    try:
        row.sample = profile.own_sample(record.data) or to_sample(record.data, detection, profile.requires_assistant)
    except RowProblem as problem:
        row.problem = problem
        return row
    except (TypeError, ValueError, AttributeError, KeyError) as exc:  # a row shape no converter foresaw: one finding, not a crash
        row.problem = RowProblem(Code.INVALID_MESSAGES, f"the row does not fit the {detection.row_format} format ({type(exc).__name__}: {exc})")
        return row
    try:
        row.sample = profile.reads(row.sample, record.data)
    except ValueError as exc:
        row.problem = RowProblem(Code.INVALID_MESSAGES, str(exc), dropped=isinstance(exc, RowDropped))
        return row
    if profile.encodes(row.sample):
        return row  # encoded with the batch's other such rows (_process)
    try:
        _lay_out(row, setup, profile, renderer, locator)
    except TemplateRenderError as exc:
        row.render_error = str(exc)
    except RowProblem as problem:
        row.problem = problem
    return row


def _sample(row: Row) -> Sample:
    """The converted row of a row that converted (``row.ok``)."""
    assert row.sample is not None, row.index
    return row.sample


def _lay_out(row: Row, setup: Setup, profile: RowProfile, renderer, locator) -> None:
    sample = _sample(row)
    own = profile.lay_out(sample, setup, renderer, locator) if renderer is not None else None
    if own is not None:
        row.layout = own
    elif isinstance(sample, Chat):
        row.layout = layout_chat(renderer, sample.messages, sample.tools, setup.train_on, end_texts(setup), locator,
                                 _turn_end(setup))
    elif isinstance(sample, PromptCompletion):
        eos = setup.eos_text if profile.appends_eos else None
        if sample.conversational and renderer is None:
            raise TemplateRenderError("conversational prompt/completion rows need a chat template")
        row.layout = layout_completion(renderer, sample.prompt, sample.completion, sample.tools, eos)
        if setup.train_on == "all":
            row.layout = replace(row.layout, trained_spans=((0, len(row.layout.text)),), method="all")
    elif isinstance(sample, Text):
        text = sample.text
        if profile.appends_eos and setup.eos_text and not text.endswith(setup.eos_text):
            text += setup.eos_text
            row.appended_eos = True
        row.text = text
        return
    if row.layout is not None:
        row.text = row.layout.text


def _turn_end(setup: Setup) -> str | None:
    return setup.template_facts.end_of_turn if setup.template_facts else None


def _tokenize(rows: list[Row], setup: Setup, profile: RowProfile, tokenizer) -> None:
    """One batched call to the Rust tokenizer per special-token setting, as the fast tokenizer's __call__ makes."""
    backend = tokenizer.backend_tokenizer
    backend.encode_special_tokens = bool(getattr(tokenizer, "split_special_tokens", False))
    text_rows = [r for r in rows if r.ok and not r.encoded and not isinstance(r.sample, Tokens)]
    for add_special in (True, False):
        group = [r for r in text_rows if _adds_special_tokens(r, setup) == add_special]
        if group:
            for row, encoding in zip(group, backend.encode_batch([r.text for r in group], add_special_tokens=add_special)):
                _label(row, encoding, setup, profile)
    for r in rows:
        if r.ok and isinstance(r.sample, Tokens):
            _label_pretokenized(r, setup, profile)


def _adds_special_tokens(row: Row, setup: Setup) -> bool:
    """Chat renders are tokenized without special tokens (as apply_chat_template does); text with them."""
    sample = row.sample
    return isinstance(sample, Text) or (isinstance(sample, PromptCompletion) and not sample.conversational)


def _label(row: Row, encoding, setup: Setup, profile: RowProfile) -> None:
    ids = encoding.ids
    row.encoding = encoding
    layout = row.layout
    own = profile.label(row, encoding, ids, setup)
    if own is not None:
        labels, straddles, ranges = own
        row.turns = [TurnTokens(t.message_index, start, end, t.trained, t.located_by, True)
                     for t, (start, end) in zip(layout.turns if layout is not None else (), ranges)]
        _store(row, ids, labels, straddles, setup, profile)
        return
    trains_everything = layout is None or layout.method == "all" or (layout.method == "completion" and setup.train_on == "all")
    if trains_everything:
        labels, straddles = list(ids), []
    else:
        assert layout is not None  # no layout trains everything
        labels, straddles = labels_from_encoding(encoding, layout.trained_spans, ids)
    if layout is not None:
        for turn in layout.turns:
            start, end = token_range(encoding, turn.start, turn.end)
            row.turns.append(TurnTokens(turn.message_index, start, end, turn.trained, turn.located_by, turn.prefix_preserved))
    _store(row, ids, labels, straddles, setup, profile)


def _label_pretokenized(row: Row, setup: Setup, profile: RowProfile) -> None:
    sample = row.sample
    assert isinstance(sample, Tokens)  # called for pre-tokenized rows
    labels = sample.labels if sample.labels is not None else list(sample.input_ids)
    _store(row, list(sample.input_ids), list(labels), [], setup, profile)


def _store(row: Row, ids: list[int], labels: list[int], straddles: list[int], setup: Setup, profile: RowProfile) -> None:
    row.full_length = len(ids)
    row.trained_before_truncation = len(labels) - labels.count(IGNORE_INDEX)
    row.first_trained = _first_trained(labels) if row.trained_before_truncation else None
    mode = profile.truncation
    cut = profile.truncated(ids, labels, setup.max_length, [(t.start, t.end) for t in row.turns])
    row.dropped, row.dropped_by = cut.dropped, cut.dropped_by
    row.cut_ids, row.cut_labels = cut.cut_ids, cut.cut_labels
    if cut.cut_ids:
        kept = len(cut.ids)
        straddles = [p for p in straddles if p < kept] if mode == "keep_start" else []
        if mode != "keep_start":
            row.turns = []  # positions moved: turn ranges no longer apply
    row.input_ids, row.labels, row.straddles = cut.ids, cut.labels, straddles
    row.trained = len(cut.labels) - cut.labels.count(IGNORE_INDEX)


def _store_encoded(row: Row, encoded: EncodedRow) -> None:
    """A row the framework's own data code encoded (its templates or prompters): ids and labels as it made them."""
    row.encoded = True
    row.text = encoded.text
    row.full_length = encoded.full_length
    row.trained_before_truncation = encoded.trained_before_truncation
    row.input_ids, row.labels = encoded.input_ids, encoded.labels
    row.first_trained = _first_trained(encoded.labels) if encoded.trained_before_truncation else None
    row.trained = len(encoded.labels) - encoded.labels.count(IGNORE_INDEX)
    row.dropped, row.dropped_by = encoded.dropped, encoded.dropped_by
    row.cut_ids, row.cut_labels = encoded.cut_ids, encoded.cut_labels
    row.turns = [TurnTokens(t.message_index, t.start, t.end, t.trained, t.located_by, True, t.cut) for t in encoded.turns]
    row._offsets = list(encoded.offsets)
    row.masking = encoded.method


def _first_trained(labels: list[int]) -> int:
    for pos, label in enumerate(labels):
        if label != IGNORE_INDEX:
            return pos
    return -1


def _row_view(row: Row) -> RowView:
    masking = row.masking or (row.layout.method if row.layout is not None else None)
    error = None if row.ok else row.problem.message if row.problem else row.render_error
    dropped = bool(row.dropped or (row.problem and row.problem.dropped))  # left out by the trainer or its reader
    return RowView(row.index, row.text, row.input_ids, row.labels, None, [list(o) for o in row.offsets],
                   row.full_length if row.truncated else None, row.line, dropped, masking, error)


def _with_pieces(view: RowView, tokenizer) -> RowView:
    from mldebug_cli.sources.tokenizer import token_pieces

    return replace(view, pieces=token_pieces(tokenizer, view.input_ids))


class _Stats:
    """Running statistics; lengths are kept as a histogram so memory stays flat as the dataset grows."""

    def __init__(self, max_length: int | None, keep_lengths: bool = False) -> None:
        self.max_length = max_length
        self.keep_lengths = keep_lengths
        self.sequences: list[tuple[int, tuple[int, ...], int]] = []  # (row, sequence lengths, trained tokens)
        self.rows = self.tokens = self.trainable = self.truncated = self.failed = self.dropped = 0
        self.lengths: Counter[int] = Counter()
        self.kept_lengths: Counter[int] = Counter()  # after truncation, of the rows that train (for packing)
        self.untrained_lengths: Counter[int] = Counter()  # after truncation, of rows dropped with nothing trained

    def add(self, row: Row) -> None:
        self.rows += 1
        if not row.ok:  # a row the framework's reader drops is left out, the run goes on; any other stops or is unread
            left_out = bool(row.problem and row.problem.dropped)
            self.dropped += left_out
            self.failed += not left_out
            return
        self.truncated += row.truncated and not (row.dropped and row.dropped_by == "length")  # left out, not cut
        self.lengths[row.full_length] += 1
        if row.dropped:  # the trainer leaves it out: none of its tokens is trained
            self.dropped += 1
            if row.dropped_by == "nothing-trained":
                self.untrained_lengths[len(row.input_ids)] += 1
            return
        self.kept_lengths[len(row.input_ids)] += 1
        if self.keep_lengths:
            self.sequences.append((row.index, (len(row.input_ids),), row.trained))
        self.tokens += len(row.input_ids)
        self.trainable += row.trained

    def merge(self, other: _Stats) -> None:
        self.rows += other.rows
        self.failed += other.failed
        self.tokens += other.tokens
        self.trainable += other.trainable
        self.truncated += other.truncated
        self.dropped += other.dropped
        self.lengths.update(other.lengths)
        self.kept_lengths.update(other.kept_lengths)
        self.untrained_lengths.update(other.untrained_lengths)
        self.sequences.extend(other.sequences)

    def summary(self, total: int, by_check: Mapping[str, int]) -> dict[str, Any]:
        return RowsSummary(
            rows=total,
            rows_checked=self.rows,
            rows_failed=self.failed,
            tokens=self.tokens,
            trainable_tokens=self.trainable,
            trainable_fraction=round(self.trainable / self.tokens, 4) if self.tokens else 0.0,
            length_percentiles=_percentiles(self.lengths),
            length_histogram=_histogram(self.lengths, self.max_length),
            max_length=self.max_length,
            rows_truncated=self.truncated,
            rows_dropped=self.dropped,
            tokens_kept=self.tokens,
            lengths_kept=sorted(self.kept_lengths.items()),
            lengths_untrained=sorted(self.untrained_lengths.items()),
            by_check=dict(sorted(by_check.items())),
        ).as_dict()


def _percentiles(lengths: Counter[int]) -> LengthPercentiles | None:
    """Nearest-rank percentiles from a length histogram."""
    total = sum(lengths.values())
    if not total:
        return None
    out: dict[str, int] = {}
    wanted = [("p50", 0.5), ("p90", 0.9), ("p99", 0.99)]
    seen = 0
    for length in sorted(lengths):
        seen += lengths[length]
        while wanted and seen >= min(total, int(wanted[0][1] * (total - 1) + 0.5) + 1):
            out[wanted.pop(0)[0]] = length
    return LengthPercentiles(out["p50"], out["p90"], out["p99"], max(lengths))


def _histogram(lengths: Counter[int], max_length: int | None) -> LengthHistogram | None:
    """Token lengths (before truncation) in equal bins from 0: bin i counts lengths in [i*width, (i+1)*width).

    At most HISTOGRAM_BINS bins, wide enough to reach ``max_length`` too so it can be drawn against them.
    """
    if not lengths:
        return None
    top = max(max(lengths), max_length or 0)
    width = -(-(top + 1) // HISTOGRAM_BINS)
    counts = [0] * (top // width + 1)
    for length, n in lengths.items():
        counts[length // width] += n
    return LengthHistogram(width, counts)


def _context(setup: Setup, rows: RowProfile, detection, loaded, train_on: str, options, checked: int, total: int, workers: int) -> dict[str, ContextValue]:
    method = None
    if rows.masking_method is not None:
        method = rows.masking_method
    elif setup.chat and train_on in ("assistant", "last"):
        method = "generation-markers" if setup.has_generation_markers else "turn-diff (per-turn prefix renders)"
    return {
        "dataset": setup.dataset_path,
        "format": f"{detection.row_format} ({('from ' if detection.reason == options.data_format_from else 'assumed from ') + detection.reason})",
        "tokenizer": loaded.source,
        "chat_template": rows.chat_template_line(setup.template_source),
        "framework": rows.describe(),
        "train_on": train_on + (f" via {method}" if method else ""),
        "max_length": setup.max_length,
        "rows_checked": f"{checked} of {total}" + _which_rows(options, checked, total),
        "workers": workers if workers > 1 else None,
        "tokenizer_built_as": _built_as(setup),
    }


def _capped_line(rows: RowProfile, checked: int, total: int, file_rows: int) -> dict[str, ContextValue]:
    """The rows-checked line where the loader reads only the file's first rows (LLaMA-Factory max_samples)."""
    cap = rows.first_rows
    if cap is None or total >= file_rows:
        return {}
    return {"rows_checked": f"{checked} of {total} ({cap[1]} keeps the first {total:,} of the {file_rows:,} rows; "
                           "the rest never train)"}


def _built_as(setup: Setup) -> str | None:
    """How the run's transformers builds the tokenizer, where some release builds it otherwise than the file says."""
    run = setup.run_tokenizer
    if run is None:
        return None
    resolution = run.resolution
    if not resolution.disagrees:
        return f"{resolution.loaded_as}, as tokenizer.json says, by transformers {run.target}"
    shown = "ids below are that tokenizer's" if run.round_trip else "not emulated: ids below are the file's"
    return (f"{resolution.loaded_as} with a {resolution.class_pre_tokenizer} pre-tokenizer over a "
            f"{resolution.file_pre_tokenizer} tokenizer.json, by transformers {run.target} ({shown})")


def _which_rows(options: InspectOptions, checked: int, total: int) -> str:
    if checked == total and not rows_past_the_end(options, total):
        return ""
    return f" (--rows{rows_past_the_end(options, total)})" if options.rows else \
        " (evenly spaced sample; --all checks every row)"
