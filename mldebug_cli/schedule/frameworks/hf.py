"""transformers TrainingArguments, TRL SFTConfig and LLaMA-Factory YAML: all run the HF Trainer.

Defaults are TrainingArguments' (transformers 5.23); SFTConfig overrides ``learning_rate`` (2e-5)
and ``logging_steps`` (10); LLaMA-Factory adds ``val_size``, ``max_samples``, ``packing`` and
``cutoff_len``.
"""

from __future__ import annotations

from mldebug_cli.schedule import versions
from mldebug_cli.schedule.formulas import (
    HF_IGNORES_WARMUP,
    HF_KWARGS_DROPPED,
    HF_METRIC_DRIVEN,
    HF_SCHEDULER_TYPES,
)
from mldebug_cli.schedule.frameworks.common import SpecReader
from mldebug_cli.schedule.model import HF_FAMILY, Packing, RunSpec, SchedulerChoice
from mldebug_cli.sources.config_file import ConfigFile

TRL_DEFAULT_LR = 2e-5
TRL_DEFAULT_LOGGING_STEPS = 10
TRL_DEFAULT_MAX_LENGTH = 1024
LLAMA_FACTORY_DEFAULT_CUTOFF = 2048


def read_spec(config: ConfigFile, framework: str, world_size: int, transformers_version: str | None) -> RunSpec:
    r = SpecReader(config)
    trl = framework == "trl"
    kwargs = r.mapping("scheduler_kwargs", "lr_scheduler_kwargs")
    scheduler = hf_scheduler_choice(r, "lr_scheduler_type", "linear", kwargs)
    warmup_steps = r.number("warmup", "warmup_steps", 0)
    warmup_ratio = _warmup_ratio(r, warmup_steps, transformers_version)
    _note_warmup_effects(r, scheduler, warmup_steps, warmup_ratio)
    packing = _packing(r, framework)
    return RunSpec(
        framework=framework,
        learning_rate=float(r.number("learning_rate", "learning_rate", TRL_DEFAULT_LR if trl else 5e-5)),
        scheduler=scheduler,
        warmup_steps=float(warmup_steps),
        warmup_ratio=warmup_ratio,
        num_epochs=float(r.number("epochs", "num_train_epochs", 3.0)),
        max_steps=r.integer("max_steps", "max_steps", -1),
        batch_size=r.integer("batch_size", "per_device_train_batch_size", 8),
        grad_accum=r.integer("grad_accum", "gradient_accumulation_steps", 1),
        world_size=world_size,
        drop_last=r.flag("drop_last", "dataloader_drop_last", False),
        logging_strategy=str(r.text("logging_strategy", "logging_strategy", "steps")),
        logging_steps=r.number("logging_steps", "logging_steps", TRL_DEFAULT_LOGGING_STEPS if trl else 500),
        logging_first_step=r.flag("logging_first_step", "logging_first_step", False),
        eval_strategy=str(r.text("eval_strategy", "eval_strategy", "no")),
        log_offset=1 if versions.logs_next_step_lr(transformers_version) else 0,
        packing=packing,
        validation_split=r.number("validation_split", "val_size", None) if framework == "llama-factory" else None,
        max_samples=r.integer("max_samples", "max_samples", None) if framework == "llama-factory" else None,
        deepspeed=r.raw("deepspeed", "deepspeed"),
        transformers_version=transformers_version,
        keys=r.keys,
        ignored=tuple(r.ignored),
        notes=tuple(r.notes),
    )


def hf_scheduler_choice(r: SpecReader, key: str, default: str, kwargs: dict) -> SchedulerChoice:
    """A transformers SchedulerType by name, with the kwargs get_scheduler will pass on."""
    name = str(r.text("scheduler", key, default))
    if name not in HF_SCHEDULER_TYPES:
        raise r.error(key, f"names no transformers scheduler: {name!r} (choose one of {', '.join(HF_SCHEDULER_TYPES)})")
    if kwargs and name in HF_KWARGS_DROPPED:
        r.ignore(
            r.keys.get("scheduler_kwargs", "lr_scheduler_kwargs"),
            f"get_scheduler passes no kwargs to the {name} scheduler: {', '.join(sorted(kwargs))} "
            f"{'has' if len(kwargs) == 1 else 'have'} no effect",
            "remove them, or pick a scheduler that takes them",
        )
        kwargs = {}
    return SchedulerChoice(
        name=name,
        family=HF_FAMILY,
        kwargs=kwargs,
        ignores_warmup=name in HF_IGNORES_WARMUP,
        metric_driven=name in HF_METRIC_DRIVEN,
    )


def _warmup_ratio(r: SpecReader, warmup_steps: float, transformers_version: str | None) -> float | None:
    if not r.has("warmup_ratio"):
        return None
    ratio = float(r.number(None, "warmup_ratio", 0.0))
    shown = transformers_version or f"{versions.NEWEST_CHECKED_TRANSFORMERS} (assumed)"
    if versions.warmup_ratio_removed(transformers_version):
        r.ignore(
            "warmup_ratio",
            f"warmup_ratio is not a TrainingArguments field in transformers {shown} (removed in 5.2): "
            "HfArgumentParser rejects the file, and where extra keys are allowed it is dropped, "
            f"so warmup is {'warmup_steps' if warmup_steps else '0'}",
            f"use warmup_steps: {ratio} (a float below 1 is a ratio of the total steps, rounded up)",
        )
        return None
    if warmup_steps:
        r.ignore("warmup_ratio", f"warmup_steps ({warmup_steps}) is set, so warmup_ratio is not used",
                 "keep only one of them")
        return None
    r.keys["warmup"] = "warmup_ratio"
    if versions.warmup_ratio_deprecated(transformers_version):
        r.notes.append(f"warmup_ratio is deprecated in transformers {shown} and removed in 5.2")
    return ratio


def _note_warmup_effects(r: SpecReader, scheduler: SchedulerChoice, warmup_steps: float, ratio: float | None) -> None:
    """Schedulers driven by eval metrics take no warmup (constant has its own check, LR013)."""
    if scheduler.metric_driven and (warmup_steps or ratio):
        r.ignore(
            r.keys.get("warmup", "warmup_steps"),
            f"the {scheduler.name} scheduler takes no warmup: the LR starts at its full value",
            "drop the warmup, or use a scheduler with warmup",
        )


def _packing(r: SpecReader, framework: str) -> Packing:
    if framework == "trl":
        enabled = r.flag("packing", "packing", False)
        seq_key = "max_length" if r.has("max_length") or not r.has("max_seq_length") else "max_seq_length"
        return Packing(bool(enabled), "packing", r.integer(None, seq_key, TRL_DEFAULT_MAX_LENGTH))
    if framework == "llama-factory":
        stage = r.text(None, "stage", "sft")
        neat = r.flag(None, "neat_packing", False)
        enabled = r.flag("packing", "packing", None)
        key = "packing" if r.has("packing") else ("neat_packing" if neat else "stage")
        on = bool(neat or (enabled if enabled is not None else stage == "pt"))  # pre-training packs by default
        if on and "packing" not in r.keys:
            r.keys["packing"] = key
        return Packing(on, key, r.integer(None, "cutoff_len", LLAMA_FACTORY_DEFAULT_CUTOFF))
    return Packing(False)

