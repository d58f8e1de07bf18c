"""`mldebug check-run`: read a run's logs into the metric model, run the RN checks, build the report."""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mldebug_cli.core.errors import InputError, UsageError, in_one_line
from mldebug_cli.core.findings import Finding, Report
from mldebug_cli.core.registry import Code
from mldebug_cli.core.safe_io import read_text
from mldebug_cli.core.sections.runlog import (
    COMPARED,
    FindingRange,
    RunSection,
    RunSummary,
    RunView,
    SeriesStats,
    StepRows,
)

if TYPE_CHECKING:
    from mldebug_cli.checks.run.common import MemoryEstimate
    from mldebug_cli.frameworks.framework import Framework

COMMAND = "check-run"
CONFIG_KEYS = ("gradient_accumulation_steps", "max_completion_length", "num_generations", "beta", "learning_rate",
               "warmup_steps", "warmup_ratio", "max_steps", "logging_steps")
# the subjects of the RN checks: the run's series, its logged completions, the run beside another (--compare)
RUN, COMPLETIONS, COMPARISON = "run", "completions", "comparison"
CHART_POINTS = 400  # per series in the report: enough for a terminal or an SVG panel


def build_report(
    run_path: str,
    fmt: str | None = None,
    config: str | None = None,
    run_id: str | None = None,
    tokenizer: str | None = None,
    vocab_size: int | None = None,
    select: Iterable[str] = (),
    ignore: Iterable[str] = (),
    thresholds: Mapping[str, Mapping[str, float]] | None = None,
    run=None,
    world_size: int = 1,
    gpu: str | None = None,
    gpu_memory: float | None = None,
    compare: str | None = None,
    align: str = "step",
    model: str | None = None,
) -> Report:
    """The RN report of the run log at ``run_path`` (or of ``run``, already read: ``--watch`` follows the log);
    ``gpu``/``gpu_memory``: the GPU the run trained on, that its logged peak memory is judged against (RN042);
    ``model``: the model folder mldebug memory's estimate for ``config`` reads (RN051; default: the config's)."""
    from mldebug_cli.checks.run.common import logged_peak
    from mldebug_cli.core import registry
    from mldebug_cli.memory.gpus import gpu_memory as gpu_size
    from mldebug_cli.sources.runlog import read_run

    if tokenizer is not None and vocab_size is not None:
        raise UsageError("give either --tokenizer or --vocab-size, not both")
    if vocab_size is not None and vocab_size < 2:
        raise UsageError(f"--vocab-size must be at least 2, got {vocab_size}")
    checks = [registry.load(ref) for ref in registry.selected(select, ignore, family="RN")]
    run_config = _run_config(config) if config else None
    vocab = vocab_size or (tokenizer_vocab_size(tokenizer) if tokenizer else None)
    if run is None:
        run = read_run(run_path, fmt, run_id)
    device = gpu_size(gpu, gpu_memory)
    framework = _config_framework(config) if config else None
    estimate, estimate_note = None, None
    if config and any(c.code == Code.LOGGED_MEMORY_VS_ESTIMATE for c in checks) and logged_peak(run) is not None:
        estimate, estimate_note = memory_estimate(config, model, world_size, framework)
    findings = run_checks(run, checks, thresholds, vocab, run_config, device, estimate)
    completions_note = None
    if run_path and any(c.subject == COMPLETIONS for c in checks):
        extra, completions_note = completion_findings(run_path, checks)
        findings += extra
    comparison = None
    if compare is not None:
        from mldebug_cli.sources.runlog.compare import compare as compare_runs

        comparison = compare_runs(run, read_run(compare, None, run_id), align)
        findings += tuple(f for check in checks if check.subject == COMPARISON for f in check.findings(comparison, None))
    lr_codes: tuple[str, ...] = ()
    lr_note = None
    if framework and any(r.code == Code.LOGGED_LR_MISMATCH for r in registry.selected(select, ignore)):
        lr_findings, lr_note = logged_lr_findings(run, str(config), framework)
        findings += lr_findings
        lr_codes = (Code.LOGGED_LR_MISMATCH,) if lr_note is None else ()
    batches: tuple[StepRows, ...] = ()
    batch_note = None
    if framework:
        from mldebug_cli.pipelines.run_batches import rows_behind

        batches, batch_note = rows_behind(findings, run, str(config), world_size, framework)
    return Report(
        command=COMMAND,
        findings=findings,
        checks_run=tuple(check.code for check in checks) + lr_codes,
        targets=(run.path,),
        context={"run": run.path + (f" (eval series from the TensorBoard log {run.meta['evals_from']})"
                                    if run.meta.get("evals_from") else ""), "format": run.format, "kind": run.kind,
                 "steps": _step_span(run), "vocab_size": vocab, "config": config, "logged_lr": lr_note,
                 "batch_plan": batch_note, "completions": completions_note, "memory_estimate": estimate_note,
                 "compared_with": None if comparison is None else f"{comparison.other} (aligned by {comparison.axis})", **({} if device is None else {"gpu": f"{device[0]} ({device[1]:g} GiB)"})},
        summary=_summary(run, findings),
        details=details(run, findings, batches, comparison),
    )


def run_checks(run, checks, thresholds=None, vocab=None, run_config=None, gpu=None, estimate=None) -> tuple[Finding, ...]:
    return tuple(f for check in checks if check.subject == RUN
                 for f in check.findings(run, _context(check, thresholds, vocab, run_config, gpu, estimate)))


_ESTIMATES: dict[tuple[str, str | None, int], tuple[MemoryEstimate | None, str]] = {}


def memory_estimate(config: str, model: str | None, world_size: int,
                    framework: Callable[[], Framework] | None = None) -> tuple[MemoryEstimate | None, str]:
    """mldebug memory's peak per GPU for ``config`` on its rows (as ``mldebug memory --config`` makes it), and the
    report's line saying what it is, or why it was not made; ``framework``: the config's, detected once by the caller
    (None: detected by memory). Kept per (config, model, world size): ``--watch`` rebuilds the report each poll and
    the estimate does not change."""
    key = (config, model, world_size)
    if key not in _ESTIMATES:
        if len(_ESTIMATES) >= 4:
            _ESTIMATES.pop(next(iter(_ESTIMATES)))
        _ESTIMATES[key] = _memory_estimate(config, model, world_size, framework)
    return _ESTIMATES[key]


def _memory_estimate(config: str, model: str | None, world_size: int,
                     framework: Callable[[], Framework] | None) -> tuple[MemoryEstimate | None, str]:
    from mldebug_cli.checks.run.common import MemoryEstimate
    from mldebug_cli.core.errors import MldebugError
    from mldebug_cli.memory.estimate import ALLOCATOR_RESERVE
    from mldebug_cli.pipelines import memory
    from mldebug_cli.pipelines.preflight import memory_lengths

    try:
        report = memory.build_report(memory.MemoryOptions(config=config, model=model, world_size=world_size,
                                                         framework=None if framework is None else framework()),
                                     read_lengths=memory_lengths)
    except MldebugError as exc:
        return None, f"RN051 not run: mldebug memory could not estimate {config}: {exc.message} (--model DIR names the model)"
    allocated = int(report.summary["peak_allocated_bytes"])
    estimate = MemoryEstimate(allocated, int(allocated * (1 + ALLOCATOR_RESERVE)), str(report.summary["largest_term"]),
                              config)
    return estimate, (f"{allocated / 2**30:.2f} GiB allocated per GPU (mldebug memory: {report.context['model']}; "
                      f"{report.context['lengths']})")


def completion_findings(run_path: str, checks) -> tuple[tuple[Finding, ...], str | None]:
    """The completions checks on the tables TRL's ``log_completions`` wrote beside the run log, and the report's
    line saying what was read (None when the run has no such folder)."""
    from mldebug_cli.sources.runlog.completions import completions_folder, read_completions

    folder = completions_folder(run_path)
    if folder is None:
        return (), None
    tables = read_completions(folder)
    found = tuple(f for check in checks if check.subject == COMPLETIONS for f in check.findings(tables, None))
    return found, f"{tables.completions:,} completions in {len(tables.groups):,} prompt groups, {tables.files} tables of {folder}"


def check_history(history: list, meta: Mapping[str, Any], select: Iterable[str] = (), ignore: Iterable[str] = (),
                  vocab_size: int | None = None) -> tuple[Finding, ...]:
    """The RN findings for a ``log_history`` held in memory (the training callback's view of a live run)."""
    from mldebug_cli.core import registry
    from mldebug_cli.sources.runlog.model import build_run
    from mldebug_cli.sources.runlog.trainer_state import read_history

    checks = [registry.load(ref) for ref in registry.selected(select, ignore, family="RN")]
    run = build_run(Path("log_history"), "trainer-state", lambda sink: read_history(history, dict(meta), sink))
    return run_checks(run, checks, vocab=vocab_size)


def _config_framework(config: str) -> Callable[[], Framework]:
    """The config's framework, detected on first use and then kept: LR009's schedule and the rows behind a flagged
    step ask the one object (a run whose checks need neither detects nothing)."""

    def detect() -> Framework:
        from mldebug_cli.frameworks.selector import detected
        from mldebug_cli.sources.config_file import load_config

        return detected(load_config(config))

    return functools.cache(detect)


def logged_lr_findings(run, config: str, framework: Callable[[], Framework] | None = None) -> tuple[tuple[Finding, ...], str | None]:
    """LR009 from lr-plot: the run's logged LR against the config's simulated schedule (trainer_state.json runs);
    ``framework``: the config's, detected once by the caller (None: detected here).

    The simulation needs the training rows; they are taken as the rows that give the run's own step count
    (max_steps / epochs × batch × accumulation), which is all the schedule depends on.
    """
    from mldebug_cli.core.errors import MldebugError
    from mldebug_cli.frameworks.registry import checked
    from mldebug_cli.pipelines import schedule
    from mldebug_cli.sources.config_file import load_config

    if run.format != "trainer-state":
        return (), "LR009 needs a trainer_state.json run"
    values = load_config(config)
    max_steps, epochs = run.meta.get("max_steps"), run.meta.get("num_train_epochs") or values.get("num_train_epochs")
    batch = values.get("per_device_train_batch_size") or values.get("micro_batch_size") or run.meta.get("train_batch_size")
    accumulation = values.get("gradient_accumulation_steps") or 1
    if not all(isinstance(v, (int, float)) and v > 0 for v in (max_steps, epochs, batch, accumulation)):
        return (), "LR009 not run: the run's max_steps, epochs or batch size is unknown"
    rows = math.ceil(max_steps / epochs) * int(batch) * int(accumulation)
    try:
        found = None if framework is None else checked(framework(), "schedule")
        report = schedule.build_report(config=config, num_rows=rows, trainer_state=run.path, select=[Code.LOGGED_LR_MISMATCH],
                                       engine="builtin", framework=found)
    except MldebugError as exc:
        return (), f"LR009 not run: {exc.message}"
    return report.findings, None


def _context(check, thresholds, vocab, run_config, gpu=None, estimate=None):
    from mldebug_cli.checks.run.common import RunContext

    limits = dict(check.thresholds)
    limits.update((thresholds or {}).get(check.code, {}))
    return RunContext(limits=limits, vocab_size=vocab, config=run_config, gpu=gpu, memory_estimate=estimate)


def _run_config(path: str):
    from mldebug_cli.checks.run.common import RunConfig
    from mldebug_cli.sources.config_file import load_config

    config = load_config(path)
    values = {key: config.get(key) for key in CONFIG_KEYS if config.has(key)}
    lines = {key: line for key in values if (line := config.line(key)) is not None}
    return RunConfig(path=path, values=values, lines=lines)


def tokenizer_vocab_size(folder: str) -> int:
    """The vocabulary size of a tokenizer folder: the highest token id in tokenizer.json plus one."""
    path = Path(folder)
    path = path / "tokenizer.json" if path.is_dir() else path
    try:
        data = json.loads(read_text(path))
    except FileNotFoundError:
        raise InputError(f"{path}: no tokenizer.json (pass --vocab-size instead)") from None
    except (OSError, ValueError, RecursionError) as exc:  # ValueError: not UTF-8, not JSON, a number too long
        raise InputError(f"{path}: cannot read the tokenizer ({in_one_line(exc, 200)})") from None
    vocab = (data.get("model") or {}).get("vocab") if isinstance(data, dict) else None
    ids = list(vocab.values()) if isinstance(vocab, dict) else list(range(len(vocab))) if isinstance(vocab, list) else []
    ids += [t.get("id", 0) for t in data.get("added_tokens") or [] if isinstance(t, dict)]
    ids = [i for i in ids if isinstance(i, int)]
    if not ids:
        raise InputError(f"{path}: no vocabulary in tokenizer.json (pass --vocab-size instead)")
    return max(ids) + 1


def _step_span(run) -> str | None:
    last = run.last_step
    return None if last is None else f"up to {last}" + (f" of {run.meta['max_steps']}" if run.meta.get("max_steps") else "")


def _summary(run, findings: tuple[Finding, ...]) -> dict[str, Any]:
    loss = run.get("loss")
    return RunSummary(
        format=run.format,
        kind=run.kind,
        metrics=len(run.series),
        logged_points=max((len(s) for s in run.series.values()), default=0),
        last_step=run.last_step,
        final_loss=_clean(loss.values[-1]) if loss is not None else None,
        findings=len(findings),
    ).as_dict()


def details(run, findings: tuple[Finding, ...], batches: tuple[StepRows, ...] = (), comparison=None) -> dict[str, Any]:
    """The command's JSON contract: each series' statistics and thinned points of the series with findings."""
    flagged = list(dict.fromkeys(f.location.key for f in findings if f.location.key))  # in finding order (a set's
    # order changes with the process's hash seed, and so did the charts)
    names = {run.original_keys.get(k, k): k for k in run.series}
    charted = [names[k] for k in flagged if k in names]
    for key in ("loss", "eval_loss", "grad_norm", "learning_rate", "reward"):
        if key in run.series and key not in charted and len(charted) < 4:
            charted.append(key)
    return RunSection(
        run=RunView(run.path, run.format, run.kind, _plain(run.meta)),
        series={key: _stats(s) for key, s in sorted(run.series.items())},
        charts={key: _thin(run.series[key]) for key in charted} | _compared_charts(comparison),
        ranges=tuple(FindingRange(f.code, f.location.key, f.location.step,
                                  f.location.step_end if f.location.step_end is not None else f.location.step)
                     for f in findings if f.location.step is not None),
        batches=batches,
    ).as_details()


def _compared_charts(comparison) -> dict[str, list[list[Any]]]:
    """The compared run's metrics beside the run's own (by step only: the charts' axis is the step)."""
    if comparison is None or comparison.axis != "step":
        return {}
    out = {}
    for aligned in comparison.metrics:
        stride = max(1, math.ceil(len(aligned.points) / CHART_POINTS))
        out[f"{aligned.metric} {COMPARED}"] = [[int(x), _clean(b)] for x, _, b in aligned.points[::stride]]
    return out


def _stats(series) -> SeriesStats:
    low, high, finite = math.inf, -math.inf, 0
    for value in series.values:
        if math.isfinite(value):
            finite += 1
            low, high = min(low, value), max(high, value)
    return SeriesStats(
        points=len(series),
        first_step=series.steps[0] if len(series) else None,
        last_step=series.steps[-1] if len(series) else None,
        min=low if finite else None,
        max=high if finite else None,
        last=_clean(series.values[-1]) if len(series) else None,
        non_finite=len(series) - finite,
    )


def _thin(series) -> list[list[Any]]:
    stride = max(1, math.ceil(len(series) / CHART_POINTS))
    return [[series.steps[i], _clean(series.values[i])] for i in range(0, len(series), stride)]


def _clean(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _plain(meta: Mapping[str, Any]) -> dict[str, Any]:
    return {k: (_clean(v) if isinstance(v, float) else v) for k, v in meta.items()
            if isinstance(v, (int, float, str, type(None)))}
