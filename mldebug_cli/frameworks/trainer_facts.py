"""What a training config makes the trainer do, as one framework-neutral record (``TrainerFacts``).

Read as the framework reads its config, with its own defaults at the emulated versions (TRL 1.16.0 on
transformers 5.x, axolotl 0.19.0, LLaMA-Factory 0.9.5; each default below was read from that wheel's config
classes), so that ``memory`` and ``probe`` ask one record and never a framework's name. ``keys`` maps each fact
to the config key that set it, for findings that point at the key to change.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mldebug_cli.core.errors import InputError
from mldebug_cli.core.safe_io import read_text
from mldebug_cli.frameworks import registry, versions
from mldebug_cli.frameworks.axolotl.framework import DEFAULT_SEQUENCE_LEN
from mldebug_cli.frameworks.common import SpecReader
from mldebug_cli.sources.config_file import ConfigFile, load_config

DTYPES = {"bf16": "bf16", "bfloat16": "bf16", "fp16": "fp16", "float16": "fp16", "half": "fp16",
          "fp32": "fp32", "float32": "fp32", "float": "fp32"}


@dataclass(frozen=True)
class PeftFacts:
    method: str  # lora, dora (LoRA with use_dora), ...
    r: int
    alpha: float
    dropout: float
    target_modules: tuple[str, ...] | str  # "all-linear" or module names
    modules_to_save: tuple[str, ...] = ()
    trainable_token_indices: tuple[int, ...] = ()
    use_rslora: bool = False


@dataclass(frozen=True)
class LossTerm:
    name: str  # nll, sigmoid, ipo, hinge, orpo-odds-ratio, kto, grpo-policy, kl, sft ...
    weight: float


@dataclass(frozen=True)
class LossFacts:
    terms: tuple[LossTerm, ...]
    beta: float | None = None
    loss_type: tuple[str, ...] = ()
    label_smoothing: float = 0.0
    desirable_weight: float = 1.0
    undesirable_weight: float = 1.0
    policy: PolicyFacts | None = None  # GRPO's advantage and clipping settings


@dataclass(frozen=True)
class PolicyFacts:
    """GRPOConfig's settings that shape the advantages and the policy term (TRL 1.16 defaults)."""

    scale_rewards: str = "group"  # group, batch, none (True/False read as group/none)
    temperature: float = 1.0
    epsilon: float = 0.2
    epsilon_high: float | None = None
    delta: float | None = None
    importance_sampling_level: str = "token"
    mask_truncated_completions: bool = False


@dataclass(frozen=True)
class SamplerFacts:
    """How the trainer orders and groups its rows into optimizer steps (the batch plan's settings)."""

    order: str = "random"  # random, sequential, group_by_length, batch_rebalance, repeat (GRPO), packed
    seed: int = 42
    data_seed: int | None = None
    drop_last: bool = False
    epochs: float = 3.0
    max_steps: int = -1
    not_replayed: str | None = None  # why the batch plan does not replay this trainer's order (None: it does)


@dataclass(frozen=True)
class DeepSpeedFacts:
    zero_stage: int
    offload_optimizer: bool = False
    offload_param: bool = False


@dataclass(frozen=True)
class FsdpFacts:
    sharding: str  # full, hybrid, shard_grad_op, no_shard
    offload: bool = False


@dataclass(frozen=True)
class TrainerFacts:
    framework: str
    task: str  # sft, dpo, kto, orpo, grpo, pt, rm, ppo
    model: str | None
    micro_batch_size: int
    gradient_accumulation_steps: int
    world_size: int
    max_length: int | None
    max_prompt_length: int | None
    max_completion_length: int | None
    packing: bool
    padding_free: bool
    pad_to_max_length: bool  # every batch padded to max_length (axolotl pad_to_sequence_len)
    gradient_checkpointing: bool
    gradient_checkpointing_kwargs: Mapping[str, Any]
    dtype: str  # the compute dtype: bf16, fp16, fp32
    model_dtype: str | None  # the dtype the weights are loaded in
    quantization: str | None  # None, 8bit, 4bit
    double_quant: bool
    quant_type: str | None
    optimizer: str
    learning_rate: float
    weight_decay: float
    peft: PeftFacts | None
    attn_implementation: str | None
    liger_kernel: bool
    cut_cross_entropy: bool
    fused_lm_head: bool  # the loss through a chunked LM head, never the full logits (TRL 1.16's add_fused_lm_head)
    enables_input_require_grads: bool  # its trainer/loader calls enable_input_require_grads for PEFT + checkpointing
    loss: LossFacts
    num_generations: int | None
    generation_batch_size: int | None
    use_vllm: bool
    vllm_mode: str | None
    vllm_gpu_memory_utilization: float | None
    reference_model: str  # none, copy, adapter-disabled, precomputed
    deepspeed: DeepSpeedFacts | None
    fsdp: FsdpFacts | None
    dataset_num_proc: int | None
    dataloader_num_workers: int | None
    keys: Mapping[str, str] = field(default_factory=dict)
    sampler: SamplerFacts | None = None  # None: the framework's sampling is not read


MAX_WORLD_SIZE = 1_000_000  # processes; past it no step arithmetic is meaningful


def read_trainer_facts(config_path: str | Path, framework: str | None = None, world_size: int = 1) -> TrainerFacts:
    """The facts of one config file; ``framework`` as detected when not given."""
    from mldebug_cli.frameworks import detect_framework

    config = load_config(config_path)
    name = registry.chosen(framework, "trainer") if framework else detect_framework(config)
    if not 1 <= world_size <= MAX_WORLD_SIZE:
        raise InputError(f"--world-size must be from 1 to {MAX_WORLD_SIZE:,}, got {world_size}")
    reader = registry.framework(name).trainer_facts
    if reader is None:
        raise InputError(f"{config.path}: mldebug does not read trainer settings of {name} configs")
    return reader(config, name, world_size)


def compute_dtype(bf16: Any, fp16: Any) -> str:
    return "bf16" if bf16 else "fp16" if fp16 else "fp32"


def dtype_name(value: Any) -> str | None:
    return DTYPES.get(str(value).lower().removeprefix("torch.")) if value is not None else None


# ------------------------------------------------------------------------------------------ TRL / transformers


def _trl(config: ConfigFile, framework: str, world_size: int) -> TrainerFacts:
    """TRL 1.16 config classes on TrainingArguments (transformers 5.x); a plain TrainingArguments file when the
    framework is transformers (no TRL defaults: gradient checkpointing off, no bf16, no max_length)."""
    r = SpecReader(config)
    trl = framework != "transformers"
    task = _task(config, framework) if trl else "sft"
    fp16 = r.flag("fp16", "fp16", False)
    bf16 = r.flag("bf16", "bf16", (not fp16) if trl else False)  # TRL: bf16 unless fp16 is set
    init = r.mapping("model_init_kwargs", "model_init_kwargs")
    model_dtype = dtype_name(init.get("dtype", init.get("torch_dtype", r.text("model_dtype", "dtype", None)
                                                        or r.text("model_dtype", "torch_dtype", None))))
    if model_dtype is None and trl:
        model_dtype = "fp32"  # TRL loads a model named by path in float32 unless model_init_kwargs.dtype says
    beta_default = 0.0 if task == "grpo" else 0.1
    beta = float(r.number("beta", "beta", beta_default)) if task != "sft" else None
    loss = _trl_loss(r, task, beta)
    peft = _trl_peft(r)
    generations = r.integer("num_generations", "num_generations", 8) if task == "grpo" else None
    precompute = r.flag("precompute_ref_log_probs", "precompute_ref_log_probs", False)
    quant = "4bit" if r.flag("quantization", "load_in_4bit", False) else "8bit" if r.flag(
        "quantization", "load_in_8bit", False) else None
    return TrainerFacts(
        framework=framework, task=task, model=r.text("model", "model_name_or_path", None),
        micro_batch_size=r.integer("micro_batch_size", "per_device_train_batch_size", 8),
        gradient_accumulation_steps=r.integer("gradient_accumulation_steps", "gradient_accumulation_steps", 1),
        world_size=world_size,
        max_length=(r.integer("max_length", "max_length", None if task == "grpo" else 1024) if trl else None),
        max_prompt_length=r.integer("max_prompt_length", "max_prompt_length", None),
        max_completion_length=r.integer("max_completion_length", "max_completion_length",
                                        512 if task == "grpo" else None),
        packing=r.flag("packing", "packing", False), padding_free=r.flag("padding_free", "padding_free", False),
        pad_to_max_length=False,
        gradient_checkpointing=r.flag("gradient_checkpointing", "gradient_checkpointing",  # its 5.24 name:
                                      r.flag("gradient_checkpointing", "activation_checkpointing", trl)),
        gradient_checkpointing_kwargs=r.mapping("gradient_checkpointing_kwargs", "gradient_checkpointing_kwargs"),
        dtype=compute_dtype(bf16, fp16), model_dtype=model_dtype, quantization=quant,
        double_quant=r.flag("double_quant", "use_bnb_nested_quant", False),
        quant_type=r.text("quant_type", "bnb_4bit_quant_type", "nf4") if quant == "4bit" else None,
        optimizer=r.text("optimizer", "optim", "adamw_torch_fused"),
        learning_rate=float(r.number("learning_rate", "learning_rate", (2e-5 if task == "sft" else 1e-6) if trl else 5e-5)),
        weight_decay=float(r.number("weight_decay", "weight_decay", 0.0)),
        peft=peft, attn_implementation=r.text("attn_implementation", "attn_implementation", None),
        liger_kernel=r.flag("liger_kernel", "use_liger_kernel", False), cut_cross_entropy=False,
        fused_lm_head=framework == "trl", loss=loss,  # trl/trainer/utils.py add_fused_lm_head, every trainer
        enables_input_require_grads=trl,  # TRL's trainers (and Unsloth's) do; a bare Trainer does not
        num_generations=generations,
        generation_batch_size=r.integer("generation_batch_size", "generation_batch_size", None),
        use_vllm=r.flag("use_vllm", "use_vllm", False), vllm_mode=r.text("vllm_mode", "vllm_mode", "colocate"),
        vllm_gpu_memory_utilization=float(r.number("vllm_gpu_memory_utilization", "vllm_gpu_memory_utilization", 0.3)),
        reference_model=_reference(task, beta, peft is not None, precompute),
        deepspeed=_deepspeed(config, r.raw("deepspeed", "deepspeed")), fsdp=_hf_fsdp(r),
        dataset_num_proc=r.integer("dataset_num_proc", "dataset_num_proc", None),
        dataloader_num_workers=r.integer("dataloader_num_workers", "dataloader_num_workers", 0),
        sampler=_trl_sampler(r, task, r.flag("packing", "packing", False)),
        keys=dict(r.keys),
    )


def _trl_sampler(r: SpecReader, task: str, packing: bool) -> SamplerFacts:
    """TrainingArguments' sampling keys (transformers 5.24 defaults: seed 42, 3 epochs, ``random``)."""
    order = str(r.text("sampler", "train_sampling_strategy", "random"))
    why = None
    if task == "grpo":
        order, why = "repeat", "GRPO's RepeatSampler repeats each prompt num_generations times across ranks"
    elif packing:
        order, why = "packed", "TRL packs rows into sequences before the sampler (its bfd packing is not replayed)"
    elif order in ("group_by_length", "batch_rebalance"):
        why = f"train_sampling_strategy {order} draws from the global torch RNG or rebalances by length"
    return SamplerFacts(
        order=order, seed=r.integer("seed", "seed", 42), data_seed=r.integer("data_seed", "data_seed", None),
        drop_last=r.flag("drop_last", "dataloader_drop_last", False),
        epochs=float(r.number("epochs", "num_train_epochs", 3.0)), max_steps=r.integer("max_steps", "max_steps", -1),
        not_replayed=why)


def _trl_loss(r: SpecReader, task: str, beta: float | None) -> LossFacts:
    if task == "sft":
        return LossFacts((LossTerm("nll", 1.0),))
    if task == "dpo":
        types = _names(r.raw("loss_type", "loss_type")) or ("sigmoid",)
        weights = r.raw("loss_weights", "loss_weights") or [1.0] * len(types)
        if len(weights) != len(types):
            raise r.error("loss_weights", f"has {len(weights)} weights for {len(types)} loss types: DPOConfig refuses it")
        terms = tuple(LossTerm(t, float(w)) for t, w in zip(types, weights))
        return LossFacts(terms, beta, types, float(r.number("label_smoothing", "label_smoothing", 0.0)))
    if task == "orpo":
        return LossFacts((LossTerm("nll", 1.0), LossTerm("orpo-odds-ratio", beta or 0.1)), beta, ("orpo",))
    if task == "kto":
        return LossFacts((LossTerm("kto", 1.0),), beta, (str(r.text("loss_type", "loss_type", "kto")),),
                         desirable_weight=float(r.number("desirable_weight", "desirable_weight", 1.0)),
                         undesirable_weight=float(r.number("undesirable_weight", "undesirable_weight", 1.0)))
    terms = (LossTerm("grpo-policy", 1.0),) + ((LossTerm("kl", beta),) if beta else ())
    scale = r.raw("scale_rewards", "scale_rewards")
    policy = PolicyFacts(
        scale_rewards={True: "group", False: "none", None: "group"}.get(scale, scale) if isinstance(scale, (bool, type(None)))
        else str(scale), temperature=float(r.number("temperature", "temperature", 1.0)),
        epsilon=float(r.number("epsilon", "epsilon", 0.2)), epsilon_high=_float(r.number("epsilon_high", "epsilon_high", None)),
        delta=_float(r.number("delta", "delta", None)),
        importance_sampling_level=str(r.text("importance_sampling_level", "importance_sampling_level", "token")),
        mask_truncated_completions=r.flag("mask_truncated_completions", "mask_truncated_completions", False))
    return LossFacts(terms, beta, (str(r.text("loss_type", "loss_type", "dapo")),), policy=policy)


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def _trl_peft(r: SpecReader) -> PeftFacts | None:
    if not r.flag("peft", "use_peft", False):
        return None
    dora = r.flag("use_dora", "use_dora", False)
    targets = r.raw("lora_target_modules", "lora_target_modules")
    return PeftFacts(
        method="dora" if dora else "lora", r=r.integer("lora_r", "lora_r", 16),
        alpha=float(r.number("lora_alpha", "lora_alpha", 32)), dropout=float(r.number("lora_dropout", "lora_dropout", 0.05)),
        target_modules=_targets(targets), modules_to_save=_names(r.raw("modules_to_save", "lora_modules_to_save")),
        use_rslora=r.flag("use_rslora", "use_rslora", False),
    )


def _hf_fsdp(r: SpecReader) -> FsdpFacts | None:
    value = r.raw("fsdp", "fsdp")
    words = value.split() if isinstance(value, str) else [str(v) for v in value or ()]
    if not words or words == ["false"]:
        return None
    sharding = next((w.removesuffix("_shard") for w in words if w.endswith("_shard") or w == "shard_grad_op"), "full")
    return FsdpFacts(sharding, offload="offload" in words)


# ---------------------------------------------------------------------------------------------------- axolotl


def _axolotl(config: ConfigFile, framework: str, world_size: int) -> TrainerFacts:
    """axolotl 0.19.0's schema defaults (utils/schemas/config.py, training.py, peft.py, trl.py)."""
    r = SpecReader(config)
    rl = str(config.get("rl") or "").lower()
    task = {"dpo": "dpo", "ipo": "dpo", "kto": "kto", "orpo": "orpo", "grpo": "grpo", "gdpo": "grpo"}.get(rl, "sft")
    fp16 = r.flag("fp16", "fp16", False)
    bf16_value = r.raw("bf16", "bf16")
    bf16 = (not fp16) if bf16_value in (None, "auto") else bool(bf16_value)  # "auto": bf16 where the GPU has it
    adapter = str(r.text("adapter", "adapter", "") or "")
    peft = None
    if adapter in ("lora", "qlora"):
        for key in ("lora_r", "lora_alpha"):  # no default in its schema (peft.py): None goes to peft's LoraConfig
            if r.raw(key, key) is None:
                raise r.error(key, "is not set: axolotl has no default for it and passes None to peft's LoraConfig, "
                              "so the model fails to load (TypeError: '<=' not supported between 'NoneType' and "
                              "'int'); set lora_r and lora_alpha (e.g. 16 and 32)")
        dora = r.flag("use_dora", "peft_use_dora", False)
        targets = "all-linear" if r.flag("lora_target_linear", "lora_target_linear", False) else _targets(
            r.raw("lora_target_modules", "lora_target_modules"))
        peft = PeftFacts(
            method="dora" if dora else "lora", r=r.integer("lora_r", "lora_r", None),
            alpha=float(r.number("lora_alpha", "lora_alpha", None)), dropout=float(r.number("lora_dropout", "lora_dropout", 0.0)),
            target_modules=targets, modules_to_save=_names(r.raw("modules_to_save", "lora_modules_to_save")),
            trainable_token_indices=_indices(r.raw("trainable_token_indices", "peft_trainable_token_indices")),
            use_rslora=r.flag("use_rslora", "peft_use_rslora", False),
        )
    quant = "4bit" if adapter == "qlora" or r.flag("quantization", "load_in_4bit", False) else "8bit" if r.flag(
        "quantization", "load_in_8bit", False) else None
    trl = config.get("trl") if isinstance(config.get("trl"), Mapping) else {}
    beta = config.get("rl_beta", trl.get("beta")) if task != "sft" else None
    beta = float(beta) if beta is not None else (0.1 if task in ("dpo", "kto", "orpo") else 0.0 if task == "grpo" else None)
    if task == "orpo":
        beta = float(r.number("orpo_alpha", "orpo_alpha", beta or 0.1))
    loss = _axolotl_loss(r, task, rl, beta)
    plugins = " ".join(str(p) for p in config.get("plugins") or ())
    attn = r.text("attn_implementation", "attn_implementation", None) or (
        "flash_attention_2" if r.flag("attn", "flash_attention", False) else "sdpa" if r.flag(
            "attn", "sdp_attention", False) else "eager" if r.flag("attn", "eager_attention", False) else None)
    generations = int(trl.get("num_generations") or 8) if task == "grpo" else None
    return TrainerFacts(
        framework=framework, task=task, model=r.text("model", "base_model", None),
        micro_batch_size=r.integer("micro_batch_size", "micro_batch_size", 1),
        gradient_accumulation_steps=r.integer("gradient_accumulation_steps", "gradient_accumulation_steps", 1),
        world_size=world_size, max_length=r.integer("max_length", "sequence_len", DEFAULT_SEQUENCE_LEN),
        max_prompt_length=None,
        max_completion_length=int(trl["max_completion_length"]) if trl.get("max_completion_length") else (
            512 if task == "grpo" else None),  # axolotl passes None on: GRPOConfig's 512
        packing=r.flag("packing", "sample_packing", False), padding_free=False,
        # validation.py: sample_packing turns pad_to_sequence_len on unless it is set false
        pad_to_max_length=r.flag("pad_to_max_length", "pad_to_sequence_len", bool(config.get("sample_packing"))),
        gradient_checkpointing=bool(r.raw("gradient_checkpointing", "gradient_checkpointing") or False),
        gradient_checkpointing_kwargs=r.mapping("gradient_checkpointing_kwargs", "gradient_checkpointing_kwargs")
        or ({"use_reentrant": True} if config.get("gradient_checkpointing") else {}),
        dtype=compute_dtype(bf16, fp16), model_dtype=compute_dtype(bf16, fp16), quantization=quant,
        double_quant=quant == "4bit", quant_type="nf4" if quant == "4bit" else None,
        optimizer=r.text("optimizer", "optimizer", "adamw_torch_fused"),
        learning_rate=float(r.number("learning_rate", "learning_rate", 0.0)),
        weight_decay=float(r.number("weight_decay", "weight_decay", 0.0)),
        peft=peft, attn_implementation=attn,
        liger_kernel="liger" in plugins.lower() and bool(config.get("liger_fused_linear_cross_entropy")),
        cut_cross_entropy="cut_cross_entropy" in plugins.lower() and bool(config.get("cut_cross_entropy")),
        fused_lm_head=False, enables_input_require_grads=True,  # its model loader does
        loss=loss, num_generations=generations, generation_batch_size=None,
        use_vllm=bool(trl.get("use_vllm", False)), vllm_mode=trl.get("vllm_mode"),
        vllm_gpu_memory_utilization=float(config.get("vllm", {}).get("gpu_memory_utilization", 0.9))
        if isinstance(config.get("vllm"), Mapping) else None,
        reference_model=_reference(task, beta, peft is not None, bool(config.get("precompute_ref_log_probs"))),
        deepspeed=_deepspeed(config, r.raw("deepspeed", "deepspeed")),
        fsdp=FsdpFacts("full", bool((config.get("fsdp_config") or {}).get("offload_params")))
        if config.get("fsdp") or config.get("fsdp_config") else None,
        dataset_num_proc=r.integer("dataset_num_proc", "dataset_processes", None),
        dataloader_num_workers=r.integer("dataloader_num_workers", "dataloader_num_workers", None),
        keys=dict(r.keys),
    )


def _axolotl_loss(r: SpecReader, task: str, rl: str, beta: float | None) -> LossFacts:
    if task == "sft":
        return LossFacts((LossTerm("nll", 1.0),))
    if task == "dpo":
        types = _names(r.raw("loss_type", "dpo_loss_type")) or (("ipo",) if rl == "ipo" else ("sigmoid",))
        weights = r.raw("loss_weights", "dpo_loss_weights") or [1.0] * len(types)
        return LossFacts(tuple(LossTerm(t, float(w)) for t, w in zip(types, weights)), beta, types,
                         float(r.number("label_smoothing", "dpo_label_smoothing", 0.0)))
    if task == "orpo":
        return LossFacts((LossTerm("nll", 1.0), LossTerm("orpo-odds-ratio", beta or 0.1)), beta, ("orpo",))
    if task == "kto":
        return LossFacts((LossTerm("kto", 1.0),), beta, ("kto",))
    return LossFacts((LossTerm("grpo-policy", 1.0),) + ((LossTerm("kl", beta),) if beta else ()), beta, ())


# ---------------------------------------------------------------------------------------------- LLaMA-Factory


def _llama_factory(config: ConfigFile, framework: str, world_size: int) -> TrainerFacts:
    """LLaMA-Factory 0.9.5's hparams (finetuning_args.py, model_args.py, data_args.py) on Seq2SeqTrainingArguments;
    it turns gradient checkpointing on (reentrant) unless ``disable_gradient_checkpointing``."""
    r = SpecReader(config)
    stage = str(r.text("stage", "stage", "sft"))
    pref_loss = str(r.text("pref_loss", "pref_loss", "sigmoid"))
    task = {"dpo": "orpo" if pref_loss == "orpo" else "dpo", "kto": "kto"}.get(stage, stage)
    fp16 = r.flag("fp16", "fp16", False)
    bf16 = r.flag("bf16", "bf16", False)
    finetuning = str(r.text("finetuning_type", "finetuning_type", "lora"))
    peft = None
    if finetuning == "lora":
        rank = r.integer("lora_r", "lora_rank", 8)
        target = str(r.text("lora_target", "lora_target", "all"))
        peft = PeftFacts(
            method="dora" if r.flag("use_dora", "use_dora", False) else "lora", r=rank,
            alpha=float(r.number("lora_alpha", "lora_alpha", rank * 2)),
            dropout=float(r.number("lora_dropout", "lora_dropout", 0.0)),
            target_modules="all-linear" if target == "all" else tuple(t.strip() for t in target.split(",")),
            modules_to_save=_names(r.raw("modules_to_save", "additional_target")),
            use_rslora=r.flag("use_rslora", "use_rslora", False),
        )
    bits = r.integer("quantization", "quantization_bit", None)
    beta = float(r.number("beta", "pref_beta", 0.1)) if task in ("dpo", "orpo", "kto") else None
    ftx = float(r.number("pref_ftx", "pref_ftx", 0.0))
    if task == "dpo":
        loss = LossFacts((LossTerm(pref_loss, 1.0),) + ((LossTerm("sft", ftx),) if ftx else ()), beta, (pref_loss,))
    elif task == "orpo":
        loss = LossFacts((LossTerm("nll", 1.0), LossTerm("orpo-odds-ratio", beta or 0.1)), beta, ("orpo",))
    elif task == "kto":
        loss = LossFacts((LossTerm("kto", 1.0),) + ((LossTerm("sft", ftx),) if ftx else ()), beta, ("kto",))
    else:
        loss = LossFacts((LossTerm("nll", 1.0),))
    attn = {"fa2": "flash_attention_2", "sdpa": "sdpa", "disabled": "eager", "eager": "eager"}.get(
        str(r.text("attn_implementation", "flash_attn", "auto")))
    has_ref_model = r.has("ref_model")
    reference = "none" if task in ("orpo", "sft", "pt", "rm") or pref_loss in ("orpo", "simpo") else (
        "copy" if has_ref_model or peft is None else "adapter-disabled")
    gc_off = r.flag("gradient_checkpointing", "disable_gradient_checkpointing", False)
    return TrainerFacts(
        framework=framework, task=task, model=r.text("model", "model_name_or_path", None),
        micro_batch_size=r.integer("micro_batch_size", "per_device_train_batch_size", 8),
        gradient_accumulation_steps=r.integer("gradient_accumulation_steps", "gradient_accumulation_steps", 1),
        world_size=world_size, max_length=r.integer("max_length", "cutoff_len", 2048),
        max_prompt_length=None, max_completion_length=None,
        packing=bool(r.flag("packing", "packing", False) or r.flag("packing", "neat_packing", False)),
        padding_free=False, pad_to_max_length=False, gradient_checkpointing=not gc_off,
        gradient_checkpointing_kwargs={} if gc_off else {"use_reentrant": r.flag(
            "gradient_checkpointing_kwargs", "use_reentrant_gc", True)},
        dtype=compute_dtype(bf16, fp16), model_dtype=compute_dtype(bf16, fp16),
        quantization={4: "4bit", 8: "8bit"}.get(bits) if bits else None,
        double_quant=bool(bits == 4 and r.flag("double_quant", "double_quantization", True)),
        quant_type=r.text("quant_type", "quantization_type", "nf4") if bits == 4 else None,
        optimizer=r.text("optimizer", "optim", "adamw_torch_fused"),
        learning_rate=float(r.number("learning_rate", "learning_rate", 5e-5)),
        weight_decay=float(r.number("weight_decay", "weight_decay", 0.0)),
        peft=peft, attn_implementation=attn,
        liger_kernel=r.flag("liger_kernel", "enable_liger_kernel", False), cut_cross_entropy=False, fused_lm_head=False,
        enables_input_require_grads=True, loss=loss,  # model/model_utils/checkpointing.py
        num_generations=None, generation_batch_size=None, use_vllm=False, vllm_mode=None,
        vllm_gpu_memory_utilization=None, reference_model=reference,
        deepspeed=_deepspeed(config, r.raw("deepspeed", "deepspeed")), fsdp=_hf_fsdp(r),
        dataset_num_proc=r.integer("dataset_num_proc", "preprocessing_num_workers", None),
        dataloader_num_workers=r.integer("dataloader_num_workers", "dataloader_num_workers", 0),
        keys=dict(r.keys),
    )


# ------------------------------------------------------------------------------------------------------ shared


def _task(config: ConfigFile, framework: str) -> str:
    from mldebug_cli.frameworks.preference_config import read_preference

    preference = read_preference(config, framework, None, versions.resolve(config.path, framework=framework))
    return preference.task if preference is not None else "sft"


def _reference(task: str, beta: float | None, peft: bool, precomputed: bool) -> str:
    """How the trainer holds the reference policy: TRL's DPO/KTO (and axolotl's) disable the adapter when the
    model is a PEFT model and copy the model otherwise; GRPO needs one only when beta > 0; ORPO never."""
    if task in ("sft", "orpo", "pt", "rm") or (task == "grpo" and not beta):
        return "none"
    if precomputed:
        return "precomputed"
    return "adapter-disabled" if peft else "copy"


def _deepspeed(config: ConfigFile, value: Any) -> DeepSpeedFacts | None:
    """A DeepSpeed config inline or as a JSON file beside the config; an unreadable file is an error at the key."""
    if value in (None, "", False):
        return None
    data = value
    if isinstance(value, str):
        path = Path(value) if Path(value).is_absolute() else Path(config.path).parent / value
        try:
            data = json.loads(read_text(path))
        except (OSError, ValueError, RecursionError) as exc:  # ValueError: not UTF-8, not JSON, a number too long
            raise InputError(f"{config.path}: deepspeed: cannot read {value} ({exc.__class__.__name__})") from None
    zero = data.get("zero_optimization", {}) if isinstance(data, Mapping) else {}
    if not isinstance(zero, Mapping):
        zero = {}
    stage = zero.get("stage", 0)
    device = lambda key: str((zero.get(key) or {}).get("device", "none")).lower() in ("cpu", "nvme")  # noqa: E731
    return DeepSpeedFacts(int(stage) if str(stage).isdigit() else 0, device("offload_optimizer"), device("offload_param"))


def _names(value: Any) -> tuple[str, ...]:
    if value in (None, ""):
        return ()
    if isinstance(value, str):
        return tuple(v.strip() for v in value.split(",") if v.strip())
    return tuple(str(v) for v in value)


def _targets(value: Any) -> tuple[str, ...] | str:
    if isinstance(value, str) and value.strip() in ("all-linear", "all"):
        return "all-linear"
    return _names(value) or ("q_proj", "v_proj")  # peft's default for Llama/Qwen-style models


def _indices(value: Any) -> tuple[int, ...]:
    if isinstance(value, Mapping):
        return tuple(int(i) for ids in value.values() for i in ids)
    return tuple(int(i) for i in value or ())

