"""preflight: one training config -> the inspect-data, lr-plot and check-template pipelines -> one Report.

It only composes the other pipelines; findings about setup (tokenizer, template, masking, length)
are pointed back at the config key, with its line, that caused them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from mldebug_cli.core.errors import (
    SETTING_CHAT_TEMPLATE,
    SETTING_DATASET_MERGE,
    SETTING_DATASET_SIZE,
    SETTING_END_OF_TURN_MASKING,
    SETTING_MAX_LENGTH,
    InputError,
    MldebugError,
    UsageError,
)
from mldebug_cli.core.findings import CONTEXT_VERSIONS, ContextValue, Finding, Location, NotKept, Report
from mldebug_cli.core.registry import Code
from mldebug_cli.core.sections.preflight import PartView, PreflightSection
from mldebug_cli.frameworks.framework import Framework
from mldebug_cli.frameworks.registry import PREFLIGHT_NEEDS
from mldebug_cli.sources.config_file import ConfigFile
from mldebug_cli.sources.training_plan import DatasetPlan, Setting, TrainingPlan

if TYPE_CHECKING:
    from mldebug_cli.pipelines.memory import Lengths

COMMAND = "preflight"


@dataclass(frozen=True)
class _Part:
    """One report preflight composes (an inspect-data per dataset, lr-plot, memory, a check-template per deploy
    target) and what it checked."""

    target: str
    report: Report


@dataclass(frozen=True)
class PreflightOptions:
    config: str
    deploy: tuple[str, ...] = ()
    tokenizer: str | None = None  # overrides the config's model / tokenizer
    framework: str | Framework | None = None  # a name (--framework), the one a caller resolved, or None: detected
    sample: int | None = None
    all_rows: bool = False
    engine: str = "local"  # local or ray: where the datasets' rows are checked (inspect.InspectOptions.engine)
    ray_address: str | None = None
    ray_concurrency: int | None = None
    world_size: int = 1
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    allow_outside_paths: bool = False
    target_versions: Mapping[str, str | None] = field(default_factory=dict)  # --<package>-version flags
    configured_versions: Mapping[str, str] = field(default_factory=dict)  # mldebug.toml [versions]
    task: str | None = None  # sft, dpo, kto, orpo, grpo; None: from the config's keys
    reward_columns: tuple[str, ...] = ()  # GRPO: columns the reward functions read, over what the config implies
    model: str | None = None  # a model folder with config.json for the memory estimate (default: the config's)
    gpu: str | None = None  # the GPU the memory estimate is judged against
    gpu_memory: float | None = None  # GiB


def build_report(options: PreflightOptions, progress: Callable[[str], None] | None = None) -> Report:
    from mldebug_cli.pipelines.step_plan import size_from_reports

    config, framework, plan, tokenizer, preference = _read(options)
    data = [_data_section(options, config, plan, tokenizer, d, progress, preference, framework) for d in plan.datasets]
    size = size_from_reports(s.report for s in data)
    task = preference.task if preference else None
    schedule_part = _schedule_section(options, framework, size, progress, task)
    sections = [*data, schedule_part, *_memory_section(options, framework, data, progress,
                                                                _steps_of(options, framework, size, task)),
                *(_template_section(options, tokenizer, plan, d, progress) for d in options.deploy)]
    findings = tuple(f for s in sections for f in s.report.findings)
    not_kept = tuple(n for s in sections for n in s.report.not_kept)
    parts = PreflightSection(tuple(PartView.of_report(s.report, s.target, leave_out=("sequence_lengths",))
                                   for s in sections))
    return Report(
        command=COMMAND,
        findings=findings,
        checks_run=tuple(dict.fromkeys(code for s in sections for code in s.report.checks_run)),
        targets=(config.path, *(d.spec for d in plan.datasets), *options.deploy),
        context={**_context(config, plan, tokenizer, options, preference),
                 CONTEXT_VERSIONS: schedule_part.report.context.get(CONTEXT_VERSIONS)},
        summary=parts.summary(_by_check(findings, not_kept)),
        details=parts.as_details(),
        not_kept=not_kept,
    )


def _read(options: PreflightOptions):
    """The config, its framework (resolved once: ``--framework`` looked up, or detected from the config's keys), training
    plan, tokenizer and preference settings; the tokenizer loaded once and every dataset found, so that an error
    names the config key behind it."""
    from mldebug_cli.frameworks import registry, versions
    from mldebug_cli.frameworks.selector import detected, read_plan, read_preference
    from mldebug_cli.sources.config_file import load_config

    if options.sample is not None and options.sample < 1:
        raise UsageError(f"--sample must be at least 1 (got {options.sample})", hint="--all checks every row")
    if isinstance(options.framework, Framework):
        flagged: Framework | None = registry.checked(options.framework, *PREFLIGHT_NEEDS)
    else:
        flagged = registry.resolve(options.framework, *PREFLIGHT_NEEDS) if options.framework is not None else None
    config = load_config(options.config)
    framework = flagged or detected(config)
    try:
        plan = read_plan(config, framework, options.allow_outside_paths)
        targets = versions.resolve(config.path, options.target_versions, options.configured_versions, framework.name)
        preference = read_preference(config, framework, options.task, targets)
    except InputError as exc:
        raise _with_config_errors(exc, config, framework, options) from None
    tokenizer = options.tokenizer or plan.tokenizer.value
    if not tokenizer:
        raise InputError(f"{config.path}: the config names no model or tokenizer ({plan.tokenizer.key})",
                         hint="pass --tokenizer DIR")
    _require_datasets(config, plan)  # a missing file fails at once, before the tokenizer loads
    _load_tokenizer(config, plan, tokenizer, from_config=options.tokenizer is None)
    return config, framework, plan, tokenizer, preference


def measured_size(options: PreflightOptions, progress: Callable[[str], None] | None = None):
    """The config's datasets measured exactly as preflight measures them for its step count (the same rows, the
    same sample, the framework's own encoding), and the preference trainer the config runs (None: SFT): the
    ``DatasetSize`` lr-plot, memory and probe count steps over,
    so that every command prints preflight's count. Only the length check runs (the counts do not depend on
    the others)."""
    from mldebug_cli.pipelines.step_plan import size_from_reports

    options = replace(options, select=(Code.NO_TRAINABLE_TOKENS,), ignore=())
    config, framework, plan, tokenizer, preference = _read(options)
    size = size_from_reports(_data_section(options, config, plan, tokenizer, d, progress, preference, framework).report
                             for d in plan.datasets)
    return size, preference.task if preference else None


def config_steps(options: PreflightOptions) -> str:
    """The context line of memory and probe: the config's optimizer steps over its datasets, as preflight and
    lr-plot count them, or why they could not be counted."""
    from mldebug_cli.pipelines.step_plan import count_steps

    try:
        size, task = measured_size(options)
        return count_steps(options.config, size, framework=options.framework, world_size=options.world_size,
                           target_versions=options.target_versions, configured_versions=options.configured_versions,
                           task=task).describe()
    except MldebugError as exc:
        return f"not counted: {exc.message}"


def _with_config_errors(exc: InputError, config: ConfigFile, framework: str | Framework,
                        options: PreflightOptions) -> InputError:
    """A config that cannot be read, with the misspelt keys or bad values behind it (CF001/CF002) as the hint."""
    from mldebug_cli.frameworks import versions
    from mldebug_cli.pipelines.schedule import config_findings

    name = framework if isinstance(framework, str) else framework.name
    targets = versions.resolve(config.path, options.target_versions, options.configured_versions, name)
    errors = [f for f in config_findings(config, framework, targets, task=options.task)
              if f.code in (Code.UNKNOWN_CONFIG_KEY, Code.INVALID_CONFIG_VALUE)]
    if not errors:
        return exc
    more = f" (and {len(errors) - 1} more config key errors)" if len(errors) > 1 else ""
    return InputError(exc.message, f"{errors[0].code} {errors[0].message}{more}")


def _data_section(options, config: ConfigFile, plan: TrainingPlan, tokenizer: str, dataset, progress,
                  preference, framework: Framework) -> _Part:
    from mldebug_cli.pipelines import inspect

    framework = _plan_framework(plan, framework)
    if progress:
        progress(f"checking {dataset.spec}")
    if preference:
        inspect_options = _preference_options(options, plan, tokenizer, dataset, preference)
    else:
        inspect_options = _as_configured(inspect.InspectOptions(
            dataset=dataset.spec,
            tokenizer=tokenizer,
            sample=options.sample,
            all_rows=options.all_rows,
            show=1,
            select=options.select,
            ignore=options.ignore,
            **_engine(options),
            sequence_lengths=True,
            transformers_version=(options.target_versions or {}).get("transformers"),
            eval_sets=_eval_sets(plan),
        ), plan, dataset, framework=framework)
    report = _inspected(inspect_options, config, plan, dataset, preference=preference, framework=framework)
    return _Part(dataset.spec, report)


def _plan_framework(plan: TrainingPlan, framework: Framework) -> Framework:
    """The framework the plan's data is read as: the resolved one, unless its reader named another (a bare
    TrainingArguments file read as TRL's script reads it, Unsloth's TRL SFTConfig)."""
    from mldebug_cli.frameworks.registry import framework as by_name

    return framework if framework.name == plan.framework else by_name(plan.framework)


def _as_configured(options, plan: TrainingPlan, dataset: DatasetPlan, given: frozenset[str] = frozenset(),
                   framework: Framework | None = None):
    """``options`` with what the plan sets for ``dataset``, except the settings named in ``given`` (flags);
    ``framework``: the plan's, when the caller resolved it (None: looked up by the plan's name)."""
    settings = {"chat_template": plan.chat_template.value, "data_format": dataset.data_format,
                "framework": plan.framework, "train_on": plan.train_on.value, "max_length": plan.max_length.value,
                "split": dataset.split}
    configured = replace(options, **{name: value for name, value in settings.items() if name not in given})
    if "data_format" not in given and dataset.data_format:
        configured = replace(configured, data_format_from=f"the config's {dataset.key}")
    if configured.framework == plan.framework:
        from mldebug_cli.frameworks.selector import dataset_options

        train_on = configured.train_on if "train_on" in given else None
        configured = replace(configured, framework_options=dataset_options(plan, dataset, train_on, framework))
    return configured


def _inspected(options, config: ConfigFile, plan: TrainingPlan, dataset: DatasetPlan, progress=None,
               preference=None, *, framework: Framework) -> Report:
    """inspect-data on one of the config's datasets, its errors and findings pointed at the config key behind them."""
    from mldebug_cli.pipelines import inspect

    try:
        report = inspect.build_report(replace(options, resolved=framework), progress)
    except InputError as exc:
        key = ((_terminator_key(framework, dataset) or dataset.key) if exc.setting == SETTING_END_OF_TURN_MASKING
               else dataset.key)
        raise InputError(f"{_where(config, key)}: {key}: {exc.message}", exc.hint) from None
    return replace(report, findings=tuple(_point_at_config(f, config, plan, dataset, framework, preference)
                                          for f in report.findings))


def _preference_options(options, plan: TrainingPlan, tokenizer: str, dataset: DatasetPlan, preference):
    """inspect-data on preference rows with the trainer's settings: the rows' own columns decide their format; the
    framework and its own settings (LLaMA-Factory's template and cutoff_len) go along, for a framework that
    encodes the pairs itself."""
    from mldebug_cli.pipelines import inspect

    return inspect.InspectOptions(
        framework=plan.framework,
        framework_options=plan.framework_options,
        dataset=dataset.spec,
        tokenizer=tokenizer,
        chat_template=plan.chat_template.value,
        max_length=preference.max_length.value,
        sample=options.sample,
        all_rows=options.all_rows,
        show=1,
        select=options.select,
        ignore=options.ignore,
        split=dataset.split,
        task=preference.task,
        truncation_mode=preference.truncation_mode.value,
        reward_columns=tuple(dict.fromkeys((*preference.reward_columns.value, *options.reward_columns))),
        not_emulated=preference.not_emulated,
        **_engine(options),
        sequence_lengths=True,
        eval_sets=_eval_sets(plan),
    )


def _eval_sets(plan: TrainingPlan) -> tuple[tuple[str, str | None], ...]:
    """The eval sets the config names (each training dataset is compared with every one: DS053, DS054)."""
    return tuple((d.spec, d.split) for d in plan.eval_datasets)


def _engine(options: PreflightOptions) -> dict[str, Any]:
    """Where the rows are checked, as inspect-data takes it."""
    return {"engine": options.engine, "ray_address": options.ray_address, "ray_concurrency": options.ray_concurrency}


# --- inspect-data --config: one dataset as the training config trains it ---------------------------------

# the settings a config decides, with the flag that overrides each (a flag the user gives wins)
FLAGS = {"tokenizer": "--tokenizer", "chat_template": "--chat-template", "data_format": "--data-format",
         "framework": "--framework", "train_on": "--train-on", "max_length": "--max-length", "split": "--split"}


@dataclass(frozen=True)
class ConfiguredInspect:
    """inspect-data's options completed from a training config, and where each setting came from."""

    options: Any  # inspect.InspectOptions
    config: ConfigFile
    plan: TrainingPlan  # settings a flag replaced have no key, so findings do not point at the config for them
    dataset: DatasetPlan
    context: dict[str, ContextValue]
    preference: Any = None  # frameworks.preference_config.PreferenceConfig of a DPO/KTO/ORPO/GRPO config
    framework: Framework | None = None  # the plan's framework, resolved (None: looked up by the plan's name)
    reader: Framework | None = None  # the framework that read the config (None: a name it does not know)


def configured_inspect(config_path: str, dataset: str | None, options, given: frozenset[str],
                       allow_outside_paths: bool = False, framework: Framework | None = None) -> ConfiguredInspect:
    """``options`` (inspect.InspectOptions from the flags; ``given`` names the flags the user passed) with the
    tokenizer, template, format, framework, masking and max length the config sets for ``dataset`` (a path or
    name of one of its datasets; None: its first), read by the reader preflight uses. ``framework``: the one the
    command resolved (memory, probe), whose reader reads the config; None: ``--framework`` when given, else the one
    detected from the config's keys."""
    from mldebug_cli.frameworks import versions
    from mldebug_cli.frameworks.selector import read_plan, read_preference
    from mldebug_cli.sources.config_file import load_config

    config = load_config(config_path)
    found, source = _config_framework(config, options, given) if framework is None else (framework, _RESOLVED)
    name = found if isinstance(found, str) else found.name
    try:
        plan = read_plan(config, found, allow_outside_paths)
        preference = read_preference(config, found, options.task, versions.resolve(config.path, framework=name))
    except InputError as exc:
        raise _with_config_errors(exc, config, found, PreflightOptions(config=config_path)) from None
    reader = found if isinstance(found, Framework) else None  # read_plan refused a name it does not know
    chosen, note = _chosen_dataset(config, plan, dataset)
    if "tokenizer" not in given:
        _require_config_tokenizer(config, plan)
    if preference:  # a DPO/KTO/ORPO/GRPO config: its rows as the preference trainer prepares them
        settings = _preference_options(options, plan, options.tokenizer, chosen, preference)
        configured = replace(options, **{name: getattr(settings, name) for name in (
            "framework", "framework_options", "dataset", "chat_template", "max_length", "split", "task",
            "truncation_mode", "reward_columns", "not_emulated") if name not in given})
    else:
        configured = _as_configured(replace(options, dataset=chosen.spec), plan, chosen, given, reader)
    if "tokenizer" not in given:
        configured = replace(configured, tokenizer=plan.tokenizer.value)
    flags_given: dict[str, Any] = {name: Setting(getattr(plan, name).value) for name in (
        "tokenizer", "chat_template", "train_on", "max_length") if name in given}
    pointing = replace(plan, **flags_given)
    context: dict[str, str | int | None] = {
        "config": f"{config.path} ({configured.framework}: {source})",
        "from_config": _from_config(config, plan, chosen, given) or None,
        "flags_over_config": _overridden(config, plan, chosen, given) or None,
        "config_notes": "; ".join((*plan.notes, *([note] if note else []))) or None,
    }
    return ConfiguredInspect(configured, config, pointing, chosen, context, preference,
                             _plan_framework(plan, reader) if reader is not None else None, reader)


_RESOLVED = "as the command resolved it"  # memory and probe: the command resolved the framework (--framework or detected)


def _config_framework(config: ConfigFile, options, given: frozenset[str]) -> tuple[Framework | str, str]:
    """The framework whose reader reads the config (``--framework``, when given and known: an unknown name stays a
    name, which the reader refuses), and how it was chosen, for the report: one detection and at most one look-up."""
    from mldebug_cli.frameworks import registry
    from mldebug_cli.frameworks.selector import detected

    found = detected(config)
    if "framework" not in given:
        return found, _framework_source(found.name, found.name, given)
    line = registry.entry(options.framework)
    return (registry.load(line) if line is not None else options.framework,
            _framework_source(found.name, options.framework, given))


def _framework_source(detected: str, framework: str, given: frozenset[str]) -> str:
    if "framework" not in given:
        return "detected from its keys"
    return "--framework, as its keys say" if framework == detected else f"--framework, over {detected} detected from its keys"


def inspect_with_config(configured: ConfiguredInspect, progress=None) -> Report:
    """inspect-data's report for a ConfiguredInspect: findings point at the config key behind them, and the
    context says which settings the config decided."""
    from mldebug_cli.frameworks.registry import framework as by_name

    framework = configured.framework
    if framework is None or framework.name != configured.plan.framework:
        framework = by_name(configured.plan.framework)
    report = _inspected(configured.options, configured.config, configured.plan, configured.dataset, progress,
                        configured.preference, framework=framework)
    return replace(report, context={**report.context, **configured.context})


def _chosen_dataset(config: ConfigFile, plan: TrainingPlan, wanted: str | None) -> tuple[DatasetPlan, str | None]:
    """The dataset to inspect: the one ``wanted`` names (by path or name), else the config's first."""
    names = ", ".join(_dataset_label(config, d) for d in plan.datasets)
    if wanted is None:
        if not plan.datasets:
            raise InputError(f"{config.path}: the config names no dataset", hint="pass the dataset to inspect: inspect-data DATASET --config CONFIG")
        more = f"the first of the config's {len(plan.datasets)} datasets ({names}); pass DATASET to choose another" \
            if len(plan.datasets) > 1 else None
        return plan.datasets[0], more
    matches = [d for d in plan.datasets if _names_dataset(config, d, wanted)]
    if matches:
        return matches[0], None
    if len(plan.datasets) > 1:
        raise InputError(f"{config.path}: {wanted} is none of the config's datasets: {names}",
                         hint="name one of them by path or name, or use a config with one dataset")
    if not plan.datasets:
        return DatasetPlan(wanted, "DATASET"), None
    only = plan.datasets[0]
    note = f"{wanted} is not the config's dataset ({_dataset_label(config, only)}): inspected with that dataset's settings"
    return DatasetPlan(wanted, only.key, only.data_format, only.split, only.masking), note


def _names_dataset(config: ConfigFile, dataset: DatasetPlan, wanted: str) -> bool:
    from pathlib import Path

    written = config.get(dataset.key)
    if wanted in (dataset.name, dataset.spec, written if isinstance(written, str) else None, Path(dataset.spec).name):
        return True
    here, there = Path(wanted), Path(dataset.spec)
    return here.exists() and there.exists() and here.resolve() == there.resolve()


def _dataset_label(config: ConfigFile, dataset: DatasetPlan) -> str:
    line = config.line(dataset.key)
    return f"{dataset.name or dataset.spec} ({dataset.key}{f', line {line}' if line else ''})"


def _require_config_tokenizer(config: ConfigFile, plan: TrainingPlan) -> None:
    """The config's model must be a local folder (or cached) to serve as the tokenizer."""
    from mldebug_cli.sources.hub import require_local_or_cached

    key = plan.tokenizer.key
    if not plan.tokenizer.value:
        raise InputError(f"{config.path}: the config names no model or tokenizer ({key})", hint="pass --tokenizer DIR")
    try:
        require_local_or_cached(str(plan.tokenizer.value), "tokenizer")
    except InputError as exc:
        raise InputError(f"{_where(config, key)}: {key}: {exc.message}",
                         hint="pass --tokenizer DIR (the model's tokenizer folder)") from None


def _config_settings(plan: TrainingPlan, dataset: DatasetPlan) -> dict[str, tuple[Any, str | None]]:
    """setting -> (value, config key) for what the plan decides (key None: the framework's default)."""
    return {
        "tokenizer": (plan.tokenizer.value, plan.tokenizer.key),
        "chat_template": (plan.chat_template.label or plan.chat_template.value, plan.chat_template.key),
        "data_format": (dataset.data_format, dataset.key if dataset.data_format else None),
        "train_on": (plan.train_on.value, plan.train_on.key),
        "max_length": (plan.max_length.value, plan.max_length.key),
        "split": (dataset.split, dataset.key if dataset.split else None),
    }


def _from_config(config: ConfigFile, plan: TrainingPlan, dataset: DatasetPlan, given: frozenset[str]) -> str:
    """``max_length 64 (sequence_len, line 12); ...``: each setting the config decided, with its key and line."""
    parts = [f"dataset {dataset.spec} ({_key_at(config, dataset.key)})"] if dataset.key != "DATASET" else []
    for name, (value, key) in _config_settings(plan, dataset).items():
        if name in given or key is None or value is None:
            continue
        parts.append(f"{name} {_shown(value)} ({_key_at(config, key)})")
    parts += [f"{name} {_shown(setting.value)} ({_key_at(config, setting.key)})" for name, setting in dataset.masking
              if setting.key is not None and ("train_on" not in given or name != "train_on_inputs")]
    return "; ".join(parts)


def _overridden(config: ConfigFile, plan: TrainingPlan, dataset: DatasetPlan, given: frozenset[str]) -> str:
    """``--max-length over sequence_len 2048 (line 12)``: each flag that replaced what the config sets."""
    settings = _config_settings(plan, dataset)
    parts = []
    for name in sorted(given & set(settings)):
        value, key = settings[name]
        if value is None and key is None:
            continue
        line = config.line(key)
        parts.append(f"{FLAGS[name]} over " + (f"{key}: {_shown(value)}" + (f" (line {line})" if line else "") if key
                                               else f"the framework's default {name} {_shown(value)}"))
    return "; ".join(parts)


def _key_at(config: ConfigFile, key: str | None) -> str:
    if key is None:
        return "the framework's default"
    line = config.line(key)
    return f"{key}, line {line}" if line else key


def _shown(value: Any) -> str:
    return ", ".join(map(str, value)) if isinstance(value, (tuple, list)) else str(value)


def _require_datasets(config: ConfigFile, plan: TrainingPlan) -> None:
    from mldebug_cli.sources.hub import require_local_or_cached

    for dataset in (*plan.datasets, *plan.eval_datasets):
        try:
            require_local_or_cached(dataset.spec, "dataset", repo_type="dataset")
        except InputError as exc:
            raise InputError(f"{_where(config, dataset.key)}: {dataset.key}: {exc.message}", exc.hint) from None


def _load_tokenizer(config: ConfigFile, plan: TrainingPlan, tokenizer: str, from_config: bool) -> None:
    """Load the tokenizer once up front (it is cached) so an error names the config key behind it."""
    from mldebug_cli.sources.tokenizer import load_tokenizer

    try:
        load_tokenizer(tokenizer, plan.chat_template.value)
    except InputError as exc:
        if not from_config:
            raise
        key = plan.chat_template.key if plan.chat_template.value and exc.setting == SETTING_CHAT_TEMPLATE else plan.tokenizer.key
        raise InputError(f"{_where(config, key)}: {key}: {exc.message}", exc.hint or "pass --tokenizer DIR") from None


def _schedule_section(options, framework: Framework, size, progress, task: str | None = None) -> _Part:
    from mldebug_cli.core import registry
    from mldebug_cli.pipelines import schedule

    if progress:
        progress("simulating the LR schedule")
    try:
        report = schedule.build_report(
            config=options.config, framework=framework, world_size=options.world_size,
            select=options.select, ignore=options.ignore, size=size,
            target_versions=options.target_versions, configured_versions=options.configured_versions, task=task,
        )
    except InputError as exc:  # lr-plot's hint names its own flags; preflight counts the config's datasets
        if exc.setting == SETTING_DATASET_MERGE:  # the loader raises on the datasets together: DS070, not an error
            return _Part(options.config, schedule.merge_refused(
                options.config, framework, exc, options.select, options.ignore, options.target_versions,
                options.configured_versions, task))
        if exc.setting != SETTING_DATASET_SIZE:
            raise
        raise InputError(f"{options.config}: {exc.message}: no dataset of the config was read, or none has rows "
                         "that train", "name local or cached datasets in the config, check them with "
                         "`mldebug inspect-data --config CONFIG`, or set max_steps",
                         exc.setting) from None
    if size is not None and size.loaded and _merges(options, framework, task) and any(
            r.code == Code.LOADER_REFUSES_DATASETS for r in registry.selected(options.select, options.ignore, "DS")):
        report = replace(report, checks_run=(*report.checks_run, Code.LOADER_REFUSES_DATASETS))  # merged: none raised
    return _Part(options.config, report)


def _merges(options: PreflightOptions, framework: Framework, task: str | None) -> bool:
    """Whether the framework's loader merges and splits the datasets before dropping rows (DS070 applies)."""
    from mldebug_cli.frameworks import versions
    from mldebug_cli.frameworks.selector import read_spec
    from mldebug_cli.sources.config_file import load_config

    targets = versions.resolve(options.config, options.target_versions, options.configured_versions, framework.name)
    return read_spec(load_config(options.config), framework, options.world_size, targets, task).merge is not None


def _steps_of(options: PreflightOptions, framework: Framework, size, task: str | None) -> Callable[[Any], str]:
    """The memory section's step line: the count of the schedule section (one plan for both)."""
    from mldebug_cli.pipelines.step_plan import count_steps

    def count(_) -> str:
        try:
            return count_steps(options.config, size, framework=framework, world_size=options.world_size,
                               target_versions=options.target_versions,
                               configured_versions=options.configured_versions, task=task).describe()
        except MldebugError as exc:
            return f"not counted: {exc.message}"
    return count


def _memory_section(options, framework: Framework, data: list[_Part], progress,
                    count: Callable[[Any], str] | None = None) -> list[_Part]:
    """The memory estimate on the rows the data sections read, when the model's config.json is readable locally."""
    from mldebug_cli.frameworks.selector import read_trainer_facts
    from mldebug_cli.pipelines import memory

    try:
        facts = read_trainer_facts(options.config, framework, options.world_size)
        memory.model_config(options.model, facts.model, options.config, options.allow_outside_paths)
    except MldebugError:  # no trainer facts for this framework, or no config.json at hand: no estimate
        return []
    if progress:
        progress("estimating GPU memory")
    report = memory.build_report(
        memory.MemoryOptions(config=options.config, model=options.model, gpu=options.gpu, gpu_memory=options.gpu_memory,
                             world_size=options.world_size, framework=framework, select=options.select,
                             ignore=options.ignore, allow_outside_paths=options.allow_outside_paths),
        lengths=memory.preflight_lengths([s.report for s in data]), count_steps=count,
    )
    return [_Part(options.config, report)]


def _template_section(options, tokenizer: str, plan: TrainingPlan, deploy: str, progress) -> _Part:
    from mldebug_cli.pipelines import template_check

    if progress:
        progress(f"comparing the template with {deploy}")
    report = template_check.build_report(template_check.CheckTemplateOptions(
        train=plan.chat_template.value or tokenizer,
        train_tokenizer=tokenizer if plan.chat_template.value else None,
        deploy=deploy,
        select=options.select,
        ignore=options.ignore,
    ))
    return _Part(deploy, report)


# Which config key a data finding is about: the length limit for truncation, the model for its
# tokenizer, the template or masking switch for masking findings.
def _config_key(code: str, plan: TrainingPlan, dataset: DatasetPlan, framework: Framework) -> str | None:
    by_code = {
        Code.STOP_TOKEN_NOT_TRAINED: _terminator_key(framework, dataset),
        Code.NO_TRAINABLE_TOKENS: plan.max_length.key,
        Code.RESPONSE_TRUNCATED: plan.max_length.key,
        Code.PROMPT_EXCEEDS_MAX_LENGTH: plan.max_length.key,
        Code.PAD_IS_EOS: plan.tokenizer.key,
        Code.NO_GENERATION_MARKERS: plan.chat_template.key or plan.train_on.key,
        Code.SPECIAL_TOKEN_NOT_ATOMIC: plan.chat_template.key or plan.tokenizer.key,
        Code.EOS_MISMATCH: plan.tokenizer.key,
    }
    return by_code.get(code)


def _terminator_key(framework: Framework, dataset: DatasetPlan) -> str | None:
    """The dataset's key that decides which end-of-turn tokens are trained, when the config sets one."""
    masking = dict(dataset.masking)
    keys = framework.end_of_turn_keys
    return next((masking[k].key for k in keys if k in masking), None)


def _preference_key(code: str, preference) -> str | None:
    """The key behind a DP finding: the length limit for dropped and cut rows, the reward functions, the trainer."""
    return {Code.ROW_DROPPED: preference.max_length.key, Code.SIDE_TRUNCATED: preference.max_length.key,
            Code.REWARD_COLUMNS_MISSING: preference.reward_columns.key,
            Code.PREPARATION_NOT_EMULATED: preference.decided_by if preference.decided_by != "--task" else None}.get(code)


def _point_at_config(finding: Finding, config: ConfigFile, plan: TrainingPlan, dataset: DatasetPlan,
                     framework: Framework, preference=None) -> Finding:
    """Row findings keep their row and name the config key behind them; setup findings point at that key's line."""
    dataset_key = dataset.key
    key = (_preference_key(finding.code, preference) if preference
           else _config_key(finding.code, plan, dataset, framework))
    if finding.code == Code.NO_TRAINABLE_TOKENS and finding.setting != SETTING_MAX_LENGTH:
        key = None
    if finding.location.row is not None:
        return replace(finding, location=replace(finding.location, key=key or dataset_key))
    key = key or finding.location.key or dataset_key  # a setup finding that names its own key (DS026) keeps it
    return replace(finding, location=Location(path=config.path, line=config.line(key), key=key))


def _where(config: ConfigFile, key: str | None) -> str:
    line = config.line(key)
    return f"{config.path}:{line}" if line else config.path


def _context(config: ConfigFile, plan: TrainingPlan, tokenizer: str, options: PreflightOptions,
             preference=None) -> dict[str, ContextValue]:
    notes = preference.notes if preference else plan.notes  # the plan's notes are about supervised rows
    trainer = {"trainer": f"{preference.trainer} (from {preference.decided_by})"} if preference else {}
    return {
        "config": config.path,
        "framework": plan.framework,
        **trainer,
        "tokenizer": tokenizer + (" (--tokenizer)" if options.tokenizer else f" ({plan.tokenizer.key})"),
        "chat_template": _template_line(plan),
        "datasets": ", ".join(d.spec for d in plan.datasets) or None,
        "train_on": None if preference else plan.train_on.value or "the framework's default",
        "max_length": preference.max_length.value if preference else plan.max_length.value,
        "deploy": ", ".join(options.deploy) or None,
        "eval_sets": ", ".join(f"{d.spec} ({d.key})" for d in plan.eval_datasets) or None,
        "eval_not_compared": "; ".join(plan.eval_not_compared) or None,
        "notes": "; ".join(notes) or None,
    }


def _template_line(plan: TrainingPlan) -> str:
    """The template the rows are rendered with: the framework's own by name (LLaMA-Factory's ``template:``), a file,
    or the tokenizer's."""
    own = getattr(plan.framework_options, "template", None)
    if own:
        return f"{plan.framework}'s own template {own!r}"
    return plan.chat_template.label or plan.chat_template.value or "the tokenizer's"


def _by_check(findings: tuple[Finding, ...], not_kept: tuple[NotKept, ...] = ()) -> dict[str, int]:
    counts: dict[str, int] = {}
    for f in findings:
        counts[f.code] = counts.get(f.code, 0) + 1
    for n in not_kept:
        counts[n.code] = counts.get(n.code, 0) + n.count
    return dict(sorted(counts.items()))


def memory_lengths(options) -> Lengths:
    """For ``memory.MemoryOptions``: every row's sequence lengths as mldebug's inspect-data encodes them for this
    config (its framework's tokenization, template, masking and truncation): the same ids preflight checks. Its
    ``framework``, when resolved (memory's build_report resolves it), reads the config."""
    return encoded_lengths(options.config, options.framework if isinstance(options.framework, Framework) else None,
                           options.sample, getattr(options, "allow_outside_paths", False))


def encoded_lengths(config: str, framework: Framework | None = None, sample: int | None = None,
                    allow_outside_paths: bool = False) -> Lengths:
    """The sequence lengths of the config's (first) dataset's rows as mldebug's inspect-data encodes them for the
    config (``sample``: that many rows, evenly spaced; None: every row), or why they were not read."""
    from mldebug_cli.pipelines.inspect import InspectOptions
    from mldebug_cli.pipelines.memory import Lengths, lengths_of

    wanted = InspectOptions(dataset="", tokenizer="", sample=sample, all_rows=sample is None,
                            show=0, select=(Code.NO_TRAINABLE_TOKENS,), sequence_lengths=True)
    try:
        configured = configured_inspect(config, None, wanted, frozenset({"select", "sample", "all_rows",
                                                                         "show", "sequence_lengths"}),
                                        allow_outside_paths, framework)
        report = inspect_with_config(configured)
    except InputError as error:
        reason = error.message + (f" ({error.hint})" if error.hint else "")
        return Lengths([], f"every sequence at max_length (the rows were not read: {reason})", not_read=reason)
    return lengths_of(report)
