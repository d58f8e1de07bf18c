"""What a TRL (or plain TrainingArguments) config makes the trainer do: TRL 1.16's config classes on transformers
5.x TrainingArguments, each default read from those wheels (``frameworks.trainer_facts`` holds the record)."""

from __future__ import annotations

from typing import Any

from mldebug_cli.frameworks import versions
from mldebug_cli.frameworks.common import SpecReader
from mldebug_cli.frameworks.trainer_facts import (
    LossFacts,
    LossTerm,
    PeftFacts,
    PolicyFacts,
    SamplerFacts,
    StabilityFacts,
    TrainerFacts,
    compute_dtype,
    deepspeed_facts,
    dtype_name,
    key_names,
    reference_model,
    target_modules_of,
    training_arguments_eval_split,
    training_arguments_fsdp,
)
from mldebug_cli.frameworks.trl.config_classes import config_task
from mldebug_cli.sources.config_file import ConfigFile


def trl_trainer_facts(config: ConfigFile, framework: str, world_size: int) -> TrainerFacts:
    """As TRL's trainers read the config (its config classes' defaults)."""
    return _facts(config, framework, world_size, trl=True)


def transformers_trainer_facts(config: ConfigFile, framework: str, world_size: int) -> TrainerFacts:
    """As a plain transformers Trainer reads the config (TrainingArguments' defaults, no TRL ones)."""
    return _facts(config, framework, world_size, trl=False)


def _facts(config: ConfigFile, framework: str, world_size: int, trl: bool) -> TrainerFacts:
    """TRL 1.16 config classes on TrainingArguments (transformers 5.x); a plain TrainingArguments file when the
    framework is transformers (no TRL defaults: gradient checkpointing off, no bf16, no max_length)."""
    r = SpecReader(config)
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
        # trl/trainer/utils.py add_fused_lm_head: SFT, DPO, KTO and GRPO (the experimental ORPOTrainer keeps the logits)
        fused_lm_head=trl and task != "orpo", loss=loss,
        enables_input_require_grads=trl,  # TRL's trainers (and Unsloth's) do; a bare Trainer does not
        num_generations=generations,
        generation_batch_size=r.integer("generation_batch_size", "generation_batch_size", None),
        use_vllm=r.flag("use_vllm", "use_vllm", False), vllm_mode=r.text("vllm_mode", "vllm_mode", "colocate"),
        vllm_gpu_memory_utilization=float(r.number("vllm_gpu_memory_utilization", "vllm_gpu_memory_utilization", 0.3)),
        reference_model=reference_model(task, beta, peft is not None, precompute),
        deepspeed=deepspeed_facts(config, r.raw("deepspeed", "deepspeed")), fsdp=training_arguments_fsdp(r),
        dataset_num_proc=r.integer("dataset_num_proc", "dataset_num_proc", None),
        dataloader_num_workers=r.integer("dataloader_num_workers", "dataloader_num_workers", 0),
        sampler=_trl_sampler(r, task, r.flag("packing", "packing", False)),
        # GRPOTrainer.__init__ sets use_reentrant for PEFT + ZeRO-3 + checkpointing (a plain Trainer does not)
        stability=StabilityFacts(float(r.number("max_grad_norm", "max_grad_norm", 1.0)), training_arguments_eval_split(r),
                                 grpo_forces_reentrant=trl),
        keys=dict(r.keys),
        # trl/trainer/sft_trainer.py (1.16): on a quantized model the trainable adapter weights go to bf16
        quantized_adapter_bf16=trl,
        # trl/experimental/utils.py (1.16): ORPO's collator pads with padding_value, else the tokenizer's pad token,
        # and raises "Padding is enabled, but the tokenizer is not configured with a padding token" without one
        # (the DPO, KTO and GRPO trainers set a missing pad token to eos themselves)
        pad_token_required=task == "orpo" and r.raw("padding_value", "padding_value") is None,
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
        types = key_names(r.raw("loss_type", "loss_type")) or ("sigmoid",)
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
        scale_rewards="none" if scale is False else "group" if scale is None or scale is True else str(scale), temperature=float(r.number("temperature", "temperature", 1.0)),
        epsilon=float(r.number("epsilon", "epsilon", 0.2)), epsilon_high=_float(r.number("epsilon_high", "epsilon_high", None)),
        delta=_float(r.number("delta", "delta", None)),
        importance_sampling_level=str(r.text("importance_sampling_level", "importance_sampling_level", "token")),
        mask_truncated_completions=r.flag("mask_truncated_completions", "mask_truncated_completions", False))
    return LossFacts(terms, beta, (str(r.text("loss_type", "loss_type", "dapo")),), policy=policy)


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def _trl_targets(value: Any) -> tuple[str, ...] | str:
    """``lora_target_modules`` as TRL's ModelConfig hands it to peft: a one-item list becomes its item
    (trl/trainer/model_config.py:177, TRL 1.16), and peft reads a string other than "all-linear" as a regular
    expression over the full module name, so ``[qkv_proj]`` matches no module and get_peft_model refuses the run."""
    if isinstance(value, (list, tuple)) and len(value) == 1:
        value = value[0]
    if isinstance(value, str):
        return "all-linear" if value.strip() == "all-linear" else value
    return target_modules_of(value)


def _trl_peft(r: SpecReader) -> PeftFacts | None:
    if not r.flag("peft", "use_peft", False):
        return None
    dora = r.flag("use_dora", "use_dora", False)
    targets = r.raw("lora_target_modules", "lora_target_modules")
    return PeftFacts(
        method="dora" if dora else "lora", r=r.integer("lora_r", "lora_r", 16),
        alpha=float(r.number("lora_alpha", "lora_alpha", 32)), dropout=float(r.number("lora_dropout", "lora_dropout", 0.05)),
        target_modules=_trl_targets(targets), modules_to_save=key_names(r.raw("modules_to_save", "lora_modules_to_save")),
        use_rslora=r.flag("use_rslora", "use_rslora", False),
    )




def _task(config: ConfigFile, framework: str) -> str:
    return config_task(config, versions.resolve(config.path, framework=framework))
