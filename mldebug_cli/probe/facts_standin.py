"""A stand-in for ``mldebug_cli.frameworks.trainer_facts`` until it lands on main (same names and shape; TRL keys).

Removed once ``read_trainer_facts`` is on main: the probe pipeline imports that first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mldebug_cli.frameworks import detect_framework
from mldebug_cli.sources.config_file import load_config


@dataclass(frozen=True)
class LossTerm:
    name: str
    weight: float


@dataclass(frozen=True)
class LossFacts:
    terms: tuple[LossTerm, ...] = ()
    beta: float | None = None
    loss_type: tuple[str, ...] = ()
    rpo_alpha: float | None = None
    label_smoothing: float = 0.0
    desirable_weight: float = 1.0
    undesirable_weight: float = 1.0


@dataclass(frozen=True)
class PeftFacts:
    method: str = "lora"
    r: int = 16
    alpha: float = 32
    dropout: float = 0.05
    target_modules: Any = None
    modules_to_save: tuple[str, ...] = ()
    trainable_token_indices: Any = None
    use_rslora: bool = False


@dataclass(frozen=True)
class TrainerFacts:
    framework: str
    task: str
    model: str | None
    micro_batch_size: int = 8
    gradient_accumulation_steps: int = 1
    world_size: int = 1
    max_length: int | None = 1024
    gradient_checkpointing: bool = False
    gradient_checkpointing_kwargs: dict = field(default_factory=dict)
    dtype: str = "fp32"
    model_dtype: str | None = None
    optimizer: str = "adamw_torch"
    learning_rate: float = 5e-5
    weight_decay: float = 0.0
    peft: PeftFacts | None = None
    loss: LossFacts = field(default_factory=LossFacts)
    reference_model: str = "none"
    keys: dict = field(default_factory=dict)


def read_trainer_facts(config_path: Path, framework: str | None = None, world_size: int = 1) -> TrainerFacts:
    config = load_config(config_path)
    get = config.get
    keys: dict[str, str] = {}

    def pick(name: str, *candidates: str, default: Any = None) -> Any:
        for key in candidates:
            if config.has(key):
                keys[name] = key
                return get(key)
        keys.setdefault(name, candidates[0])
        return default

    task = "sft"
    if config.has("rl"):
        task = str(get("rl"))
    elif config.has("loss_type") or config.has("beta"):
        task = "orpo" if config.has("max_completion_length") and not config.has("loss_type") else "dpo"
    elif config.has("num_generations") or config.has("reward_funcs"):
        task = "grpo"
    loss_type = pick("loss_type", "loss_type", default=["sigmoid"])
    loss_type = tuple([loss_type] if isinstance(loss_type, str) else loss_type)
    weights = pick("loss_weights", "loss_weights", default=None) or [1.0] * len(loss_type)
    beta = pick("beta", "beta", "rl_beta", "orpo_alpha", default=0.1)
    rpo_alpha = pick("rpo_alpha", "rpo_alpha", default=None)
    if task == "dpo":
        terms = tuple(LossTerm(t, float(w)) for t, w in zip(loss_type, weights))
        if rpo_alpha:
            terms += (LossTerm("sft", float(rpo_alpha)),)
    elif task == "orpo":
        terms = (LossTerm("nll", 1.0), LossTerm("odds_ratio", float(beta)))
    else:
        terms = (LossTerm("nll", 1.0),)
    peft = None
    if get("use_peft") or get("adapter") in ("lora", "qlora"):
        targets = pick("lora_target_modules", "lora_target_modules", default=None)
        peft = PeftFacts(
            r=int(pick("lora_r", "lora_r", default=16)), alpha=float(pick("lora_alpha", "lora_alpha", default=32)),
            dropout=float(pick("lora_dropout", "lora_dropout", default=0.05)),
            target_modules=tuple(targets) if isinstance(targets, list) else targets,
            modules_to_save=tuple(pick("lora_modules_to_save", "lora_modules_to_save", default=None) or ()),
            trainable_token_indices=pick("trainable_token_indices", "trainable_token_indices", default=None),
        )
    dtype = "bf16" if get("bf16") else "fp16" if get("fp16") else "fp32"
    keys["dtype"] = "bf16" if config.has("bf16") else "fp16"
    return TrainerFacts(
        framework=framework or detect_framework(config),
        task=task,
        model=pick("model", "model_name_or_path", "base_model", default=None),
        micro_batch_size=int(pick("micro_batch_size", "per_device_train_batch_size", "micro_batch_size", default=8)),
        max_length=pick("max_length", "max_length", "sequence_len", default=1024),
        gradient_checkpointing=bool(pick("gradient_checkpointing", "gradient_checkpointing", default=False)),
        gradient_checkpointing_kwargs=dict(pick("gradient_checkpointing_kwargs", "gradient_checkpointing_kwargs",
                                                default=None) or {}),
        dtype=dtype,
        optimizer=str(pick("optimizer", "optim", "optimizer", default="adamw_torch")),
        learning_rate=float(pick("learning_rate", "learning_rate", default=5e-5)),
        weight_decay=float(pick("weight_decay", "weight_decay", default=0.0)),
        peft=peft,
        loss=LossFacts(terms=terms, beta=float(beta), loss_type=loss_type,
                       rpo_alpha=None if rpo_alpha is None else float(rpo_alpha)),
        reference_model="adapter-disabled" if peft else "copy",
        keys=keys,
    )
