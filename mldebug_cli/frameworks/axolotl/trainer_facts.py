"""What an axolotl config makes the trainer do: axolotl 0.19.0's schema defaults (``frameworks.trainer_facts`` holds
the record)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mldebug_cli.frameworks.common import SpecReader
from mldebug_cli.frameworks.trainer_facts import (
    FsdpFacts,
    FusedLoss,
    LossFacts,
    LossTerm,
    PeftFacts,
    PolicyFacts,
    SamplerFacts,
    StabilityFacts,
    TrainerFacts,
    compute_dtype,
    deepspeed_facts,
    key_names,
    reference_model,
    target_modules_of,
)
from mldebug_cli.sources.config_file import ConfigFile

DEFAULT_SEQUENCE_LEN = 512  # axolotl 0.19.0 utils/schemas/config.py: sequence_len Field(default=512)


def axolotl_trainer_facts(config: ConfigFile, framework: str, world_size: int) -> TrainerFacts:
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
        targets = "all-linear" if r.flag("lora_target_linear", "lora_target_linear", False) else target_modules_of(
            r.raw("lora_target_modules", "lora_target_modules"))
        peft = PeftFacts(
            method="dora" if dora else "lora", r=r.integer("lora_r", "lora_r", None),
            alpha=float(r.number("lora_alpha", "lora_alpha", None)), dropout=float(r.number("lora_dropout", "lora_dropout", 0.0)),
            target_modules=targets, modules_to_save=key_names(r.raw("modules_to_save", "lora_modules_to_save")),
            trainable_token_indices=token_indices(r.raw("trainable_token_indices", "peft_trainable_token_indices")),
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
        or _checkpointing(config, rl),
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
        reference_model=reference_model(task, beta, peft is not None, bool(config.get("precompute_ref_log_probs"))),
        deepspeed=deepspeed_facts(config, r.raw("deepspeed", "deepspeed")),
        fsdp=FsdpFacts("full", bool((config.get("fsdp_config") or {}).get("offload_params")))
        if config.get("fsdp") or config.get("fsdp_config") else None,
        dataset_num_proc=r.integer("dataset_num_proc", "dataset_processes", None),
        dataloader_num_workers=r.integer("dataloader_num_workers", "dataloader_num_workers", None),
        stability=StabilityFacts(float(r.number("max_grad_norm", "max_grad_norm", 1.0)), _eval_split(r),
                                 bool(trl.get("async_prefetch", False)), eval_split_key="val_set_size",
                                 eval_split_fix="val_set_size: 0.05", policy_key_prefix="trl."),
        keys=dict(r.keys),
        fused_loss=FusedLoss("plugins: [axolotl.integrations.cut_cross_entropy.CutCrossEntropyPlugin] + "
                             "cut_cross_entropy: true", "cce"),
        sampler=_sampler(config),
    )


def _sampler(config: ConfigFile) -> SamplerFacts:
    """axolotl's trainer order is replayed over the dataset it prepares (``frameworks.axolotl.batch_plan``, verified
    on its own trainer), but that dataset is not the file's rows in order: axolotl shuffles the merged rows
    (``shuffle_merged_datasets``, on by default) and drops rows outside ``[2, sequence_len]`` tokens before its
    sampler, and with ``sample_packing`` the batches depend on every prepared row's token count. ``inspect-data
    --step``, ``check-run --config`` and ``memory`` replay that preparation over the rows as mldebug encodes them
    (``Framework.prepared_plan``); a plan from the row count alone is named, not given."""
    packing = bool(config.get("sample_packing"))
    order = "packed" if packing else "sequential" if config.get("curriculum_sampling") else "random"
    why = ("axolotl prepares its dataset before its sampler (merged rows shuffled unless shuffle_merged_datasets is "
           "false, rows outside [2, sequence_len] tokens dropped" + (", rows packed by token count" if packing else "")
           + "): from the row count alone mldebug cannot name the file's rows (inspect-data --config --step replays "
           "the preparation over the encoded rows)")
    seed = config.get("seed")
    epochs = config.get("num_epochs")
    max_steps = config.get("max_steps")
    return SamplerFacts(order=order, seed=seed if isinstance(seed, int) else 42,
                        drop_last=bool(config.get("dataloader_drop_last")),
                        epochs=float(epochs) if isinstance(epochs, int | float) else 1.0,
                        max_steps=max_steps if isinstance(max_steps, int) and max_steps > 0 else -1, not_replayed=why)


def _checkpointing(config: ConfigFile, rl: str) -> dict[str, Any]:
    """axolotl (utils/config normalize_config, core/builders/base.py): gradient checkpointing without kwargs is
    reentrant unless the config is an RL one or names ``unfrozen_parameters``; then its builder passes non-reentrant."""
    if not config.get("gradient_checkpointing"):
        return {}
    return {"use_reentrant": not rl and config.get("unfrozen_parameters") is None}


def _eval_split(r: SpecReader) -> str | None:
    """axolotl evaluates on ``test_datasets`` or on the ``val_set_size`` share it splits off (default 0.0)."""
    if str(r.text("eval_strategy", "eval_strategy", "") or "") == "no":
        return None
    if r.raw("eval_split", "test_datasets"):
        return "test_datasets"
    size = float(r.number("eval_split", "val_set_size", 0.0))
    return f"val_set_size: {size:g}" if size > 0 else None


def _axolotl_loss(r: SpecReader, task: str, rl: str, beta: float | None) -> LossFacts:
    if task == "sft":
        return LossFacts((LossTerm("nll", 1.0),))
    if task == "dpo":
        types = key_names(r.raw("loss_type", "dpo_loss_type")) or (("ipo",) if rl == "ipo" else ("sigmoid",))
        weights = r.raw("loss_weights", "dpo_loss_weights") or [1.0] * len(types)
        return LossFacts(tuple(LossTerm(t, float(w)) for t, w in zip(types, weights)), beta, types,
                         float(r.number("label_smoothing", "dpo_label_smoothing", 0.0)))
    if task == "orpo":
        return LossFacts((LossTerm("nll", 1.0), LossTerm("orpo-odds-ratio", beta or 0.1)), beta, ("orpo",))
    if task == "kto":
        return LossFacts((LossTerm("kto", 1.0),), beta, ("kto",))
    trl = r.config.get("trl") if isinstance(r.config.get("trl"), Mapping) else {}
    epsilon_high = trl.get("epsilon_high")
    policy = PolicyFacts(temperature=float(trl.get("temperature") or 1.0),  # None: GRPOConfig's 1.0
                         epsilon=float(trl.get("epsilon") or 0.2),
                         epsilon_high=None if epsilon_high is None else float(epsilon_high))
    return LossFacts((LossTerm("grpo-policy", 1.0),) + ((LossTerm("kl", beta),) if beta else ()), beta, (), policy=policy)




def token_indices(value: Any) -> tuple[int, ...]:
    if isinstance(value, Mapping):
        return tuple(int(i) for ids in value.values() for i in ids)
    return tuple(int(i) for i in value or ())
