"""`mldebug lr-plot`: read the config, count the steps, simulate the LR, run the LR checks, build the report."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from mldebug_cli.core.errors import InputError, MldebugError, UsageError
from mldebug_cli.core.findings import CONTEXT_VERSIONS, ContextValue, Finding, Report, Severity
from mldebug_cli.core.numbers import plural
from mldebug_cli.core.sections.schedule import (
    Explanation,
    LoggedPoint,
    Overlay,
    SchedulePoint,
    ScheduleSection,
    ScheduleSummary,
)
from mldebug_cli.schedule.dataset_size import DatasetSize
from mldebug_cli.schedule.model import Simulation

if TYPE_CHECKING:
    from mldebug_cli.frameworks.framework import Framework

COMMAND = "lr-plot"


def build_report(
    config: str,
    num_rows: int | None = None,
    dataset: str | None = None,
    world_size: int = 1,
    framework: str | Framework | None = None,
    trainer_state: str | None = None,
    plot: str | None = None,
    select: Iterable[str] = (),
    ignore: Iterable[str] = (),
    engine: str = "auto",
    target_versions: Mapping[str, str | None] | None = None,
    configured_versions: Mapping[str, str] | None = None,
    size=None,
    rows_source: str = "--num-rows",
    task: str | None = None,
    measure: Callable[[], tuple[DatasetSize | None, str | None]] | None = None,
) -> Report:
    """``measure``: reads the config's own datasets (preflight's measurement: rows per dataset, length drops, packed
    sequences) when neither ``num_rows`` nor ``dataset`` is given, and says which trainer the config runs;
    ``target_versions``: the ``--<package>-version`` flags; ``configured_versions``: mldebug.toml's;
    ``size``: a DatasetSize the caller already measured (preflight), instead of num_rows/dataset;
    ``rows_source``: where ``num_rows`` came from; ``framework``: --framework (a name, looked up once here) or the
    framework a caller resolved (None: detected from the config); ``task``: the preference trainer preflight found (dpo, kto,
    orpo, grpo), else the config's keys decide."""
    from mldebug_cli.core import registry
    from mldebug_cli.frameworks import versions
    from mldebug_cli.frameworks.framework import Framework
    from mldebug_cli.frameworks.selector import read_spec, resolve
    from mldebug_cli.schedule import dataset_size
    from mldebug_cli.schedule.engine import ENGINE_CHOICES
    from mldebug_cli.schedule.overlay import compare
    from mldebug_cli.schedule.simulation import simulate
    from mldebug_cli.sources.config_file import load_config

    if num_rows is not None and dataset is not None:
        raise UsageError("give either --num-rows or --dataset, not both")
    if engine not in ENGINE_CHOICES:
        raise UsageError(f"unknown engine {engine!r}", hint=f"choose one of {', '.join(ENGINE_CHOICES)}")
    checks = [registry.load(ref) for ref in registry.selected(select, ignore, family="LR")]
    config_file = load_config(config)
    chosen = framework if isinstance(framework, Framework) else resolve(config_file, framework, "schedule")
    targets = versions.resolve(config, target_versions, configured_versions, chosen.name)
    unmeasured = None
    if size is None and num_rows is None and dataset is None and measure is not None:
        try:
            size, found_task = measure()
            task = task or found_task
        except MldebugError as exc:
            unmeasured = exc.message
    try:
        spec = read_spec(config_file, chosen, world_size, targets, task)
    except InputError as exc:  # a typo behind the error is a finding with its line, not a bare refusal
        found = config_findings(config_file, chosen, targets, select, ignore, task=task)
        if not any(f.severity is Severity.ERROR for f in found):
            raise
        return _unsimulated(config, chosen, targets, found, exc)
    if size is None and num_rows is not None:
        size = dataset_size.from_num_rows(num_rows, rows_source)
    elif size is None and dataset is not None:
        size = dataset_size.count_dataset(dataset, spec.packing.sequence_len if spec.packing.enabled else None)
    try:
        sim = simulate(config_file, spec, size, engine)
    except InputError as exc:
        if size is not None or unmeasured is None or spec.max_steps > 0:  # (max_steps: the rows were not needed)
            raise
        raise InputError(f"{exc.message}: the config's datasets could not be read ({unmeasured})", exc.hint,
                         exc.setting) from None
    if trainer_state is not None:
        sim = replace(sim, overlay=compare(sim, trainer_state))
    reported = frozenset(ignored.key for ignored in spec.ignored)
    findings = config_findings(config_file, chosen, targets, select, ignore, reported, task)
    findings += tuple(f for check in checks for f in check.findings(sim, None))
    plot_path = None
    if plot is not None:
        from mldebug_cli.schedule.plot import write_plot

        plot_path = write_plot(sim, plot)
    return Report(
        command=COMMAND,
        findings=findings,
        checks_run=_config_codes(select, ignore) + tuple(check.code for check in checks),
        targets=(config,),
        context={**_context(sim, size, engine), CONTEXT_VERSIONS: targets.describe(chosen.versioned) or None},
        summary=_summary(sim, findings),
        details=details(sim, plot_path),
    )


def config_findings(config_file, framework: str | Framework, targets, select: Iterable[str] = (), ignore: Iterable[str] = (),
                    reported: frozenset[str] = frozenset(), task: str | None = None) -> tuple[Finding, ...]:
    """The CF checks on a config: its keys and values against the framework's schema at the target versions."""
    from mldebug_cli.core import registry
    from mldebug_cli.frameworks.schema import ConfigReview
    from mldebug_cli.frameworks.selector import key_schema

    checks = [registry.load(ref) for ref in registry.selected(select, ignore, family="CF")]
    if not checks:
        return ()
    name = framework if isinstance(framework, str) else framework.name
    review = ConfigReview(config_file, name, key_schema(config_file, framework, targets, task), targets, reported,
                          _trainer_facts(config_file, framework))
    return tuple(f for check in checks for f in check.findings(review, None))


def _trainer_facts(config_file, framework: str | Framework):
    """The trainer settings the stability checks read; None where the framework's are not read or the config cannot
    be (the CF001/CF002 findings and the schedule's own error say why)."""
    from mldebug_cli.frameworks import registry
    from mldebug_cli.frameworks.framework import Framework

    found = framework if isinstance(framework, Framework) else registry.framework(framework)
    reader = found.trainer_facts
    if reader is None:
        return None
    try:
        return reader(config_file, found.name, 1)
    except (InputError, UsageError):
        return None


def _config_codes(select: Iterable[str], ignore: Iterable[str]) -> tuple[str, ...]:
    from mldebug_cli.core import registry

    return tuple(ref.code for ref in registry.selected(select, ignore, family="CF"))


def merge_refused(config: str, framework: Framework, error: InputError, select: Iterable[str] = (),
                  ignore: Iterable[str] = (), target_versions: Mapping[str, str | None] | None = None,
                  configured_versions: Mapping[str, str] | None = None, task: str | None = None) -> Report:
    """The schedule part when the framework's loader raises while it merges or splits the config's datasets
    (schedule.merging): not simulated, with DS070 saying the run will not start, and the config findings."""
    from mldebug_cli.checks.data.loader_refuses_datasets import MergeRefusal
    from mldebug_cli.core import registry
    from mldebug_cli.frameworks import versions
    from mldebug_cli.sources.config_file import load_config

    targets = versions.resolve(config, target_versions, configured_versions, framework.name)
    found = config_findings(load_config(config), framework, targets, select, ignore, task=task)
    refusal = MergeRefusal(error.message, error.hint, config)
    found += tuple(f for ref in registry.selected(select, ignore, family="DS") if ref.code == registry.Code.LOADER_REFUSES_DATASETS
                   for f in registry.load(ref).findings(refusal, None))
    return _unsimulated(config, framework, targets, found, error)


def _unsimulated(config: str, framework: Framework, targets, findings: tuple[Finding, ...], error: InputError) -> Report:
    """The config findings alone, when the config cannot be simulated (e.g. learning_rate misspelt)."""
    return Report(
        command=COMMAND,
        findings=findings,
        checks_run=tuple(dict.fromkeys(f.code for f in findings)),
        targets=(config,),
        context={"config": config, "framework": framework.name, CONTEXT_VERSIONS: targets.describe(framework.versioned) or None,
                 "schedule": f"not simulated: {error.message}"},
        summary=ScheduleSummary(findings=len(findings), simulated=False).as_dict(),
        details=ScheduleSection(simulated=False).as_details(),
    )


def _context(sim: Simulation, size, engine: str = "auto") -> dict[str, ContextValue]:
    from mldebug_cli.schedule.engine import BUILTIN_ENGINE, torch_importable

    spec = sim.spec
    fallback = engine == "auto" and sim.engine == BUILTIN_ENGINE and not torch_importable()
    return {
        "config": sim.config_path,
        "framework": spec.framework + (f" {sim.framework_version}" if sim.framework_version else " (not installed)"),
        "engine": sim.engine + (" (torch is not installed; pip install 'mldebug[schedule]' to run the framework's own "
                                "schedulers)" if fallback else ""),
        "scheduler": spec.scheduler.name,
        "dataset": None if size is None else f"{plural(size.rows, 'row')} ({size.source})" + _one_total(spec, size),
        "world_size": spec.world_size,
        "notes": "; ".join(spec.notes) or None,
    }


def _one_total(spec, size) -> str:
    """A total from --num-rows or one file under a cap that applies to each dataset (LLaMA-Factory's max_samples)."""
    if spec.max_samples is None or size.per_dataset or size.rows <= spec.max_samples:
        return ""  # a total within the cap: every dataset is within it too, so the count is the same
    return (f"; {spec.key('max_samples') or 'max_samples'} caps each of the config's datasets on its own, and this "
            "total is capped as one dataset: leave out --num-rows/--dataset to count each as preflight does")


def _summary(sim: Simulation, findings: tuple[Finding, ...]) -> dict[str, Any]:
    lrs = sim.lrs
    return ScheduleSummary(sim.plan.total_steps, sim.plan.warmup_steps, max(lrs) if lrs else None,
                           lrs[-1] if lrs else None, len(findings)).as_dict()


def details(sim: Simulation, plot_path: str | None = None) -> dict[str, Any]:
    """The command's JSON contract (merged into the report's top level)."""
    spec, plan = sim.spec, sim.plan
    batching = spec.generation
    return ScheduleSection(
        framework=spec.framework,
        framework_version=sim.framework_version,
        engine=sim.engine,
        scheduler=spec.scheduler.name,
        scheduler_kwargs=dict(spec.scheduler.kwargs),
        learning_rate=spec.learning_rate,
        train_rows=plan.train_rows,
        world_size=spec.world_size,
        gradient_accumulation_steps=spec.grad_accum,
        total_optimizer_steps=plan.total_steps,
        optimizer_steps_run=plan.steps_run,
        warmup_steps=plan.warmup_steps,
        micro_batches_per_epoch=plan.micro_batches_per_epoch,
        optimizer_steps_per_epoch=plan.optimizer_steps_per_epoch,
        epochs=plan.epochs_run,
        epochs_requested=plan.epochs_requested,
        epoch_loops=plan.epoch_loops,
        total_optimizer_steps_range=list(plan.total_steps_range) if plan.total_steps_range else None,
        packing=plan.packing_basis,
        log_offset=spec.log_offset,
        schedule=tuple(SchedulePoint(p.step, p.lr, p.epoch, p.micro_batch) for p in sim.schedule),
        scheduler_error=sim.scheduler_error,
        scheduler_fails_after_step=sim.scheduler_fails_after,
        generation_batching=None if batching is None else {
            "num_generations": batching.num_generations, "generation_batch_size": batching.generation_batch_size,
            "prompts_per_generation": batching.prompts_per_generation,
            "steps_per_generation": batching.steps_per_generation, "num_iterations": batching.num_iterations},
        overlay=None if sim.overlay is None else _overlay(sim),
        plot=plot_path,
    ).as_details()


def _overlay(sim: Simulation) -> Overlay:
    overlay = sim.overlay
    explanation = overlay.explanation
    return Overlay(
        trainer_state=overlay.path,
        run_max_steps=overlay.run_max_steps,
        mismatched=overlay.mismatched,
        logged=tuple(LoggedPoint(p.step, p.lr, e) for p, e in zip(overlay.logged, overlay.expected)),
        explanation=None if explanation is None else Explanation(explanation.kind, explanation.message,
                                                                 explanation.matched, explanation.total),
    )
