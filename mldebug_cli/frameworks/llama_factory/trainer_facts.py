"""What a LLaMA-Factory config makes the trainer do: LLaMA-Factory 0.9.5's hparams (``frameworks.trainer_facts``
holds the record)."""

from __future__ import annotations

from mldebug_cli.frameworks.common import SpecReader
from mldebug_cli.frameworks.trainer_facts import (
    FusedLoss,
    LossFacts,
    LossTerm,
    PeftFacts,
    SamplerFacts,
    StabilityFacts,
    TrainerFacts,
    compute_dtype,
    deepspeed_facts,
    key_names,
    training_arguments_eval_split,
    training_arguments_fsdp,
)
from mldebug_cli.sources.config_file import ConfigFile


def llama_factory_trainer_facts(config: ConfigFile, framework: str, world_size: int) -> TrainerFacts:
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
            modules_to_save=key_names(r.raw("modules_to_save", "additional_target")),
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
        deepspeed=deepspeed_facts(config, r.raw("deepspeed", "deepspeed")), fsdp=training_arguments_fsdp(r),
        dataset_num_proc=r.integer("dataset_num_proc", "preprocessing_num_workers", None),
        dataloader_num_workers=r.integer("dataloader_num_workers", "dataloader_num_workers", 0),
        stability=StabilityFacts(float(r.number("max_grad_norm", "max_grad_norm", 1.0)),
                                 training_arguments_eval_split(r, _eval_split(r)), eval_split_key="val_size",
                                 eval_split_fix="val_size: 0.05 with eval_strategy: steps"),
        keys=dict(r.keys),
        fused_loss=FusedLoss("enable_liger_kernel: true (Liger's fused linear cross-entropy)", "liger"),  # ModelArguments
        sampler=_sampler(r, stage),
        # FinetuningArguments (defaults true): model_utils/visual.py get_forbidden_modules freezes them in full and
        # freeze tuning and keeps LoRA's targets off them (patch_target_modules, find_all_linear_modules)
        freezes_vision_tower=bool(r.flag("freeze_vision_tower", "freeze_vision_tower", True)),
        freezes_projector=bool(r.flag("freeze_multi_modal_projector", "freeze_multi_modal_projector", True)),
    )


REPLAYED_STAGES = ("sft", "pt")  # the trainers tools/llamafactory_batch_plan_goldens.py runs


def _sampler(r: SpecReader, stage: str) -> SamplerFacts:
    """The trainers' ``_get_train_sampler`` (train/sft/trainer.py, train/pt/trainer.py): ``disable_shuffling`` gives a
    ``SequentialSampler``, else the Trainer's seeded shuffle; the rows are those LLaMA-Factory hands its trainer, so
    what regroups or reorders them while it prepares the dataset is named, not replayed."""
    order = "sequential" if r.flag("sampler", "disable_shuffling", False) else str(
        r.text("sampler", "train_sampling_strategy", "random"))
    datasets = [d for d in str(r.raw("dataset", "dataset") or "").split(",") if d.strip()]
    why = None
    if r.flag("packing", "packing", False) or r.flag("packing", "neat_packing", False):
        order, why = "packed", "packing/neat_packing packs rows into sequences while the dataset is prepared"
    elif float(r.number("eval_split", "val_size", 0.0) or 0.0) > 0:
        why = "val_size splits the training rows off with a seeded shuffle (train_test_split) before the sampler"
    elif r.flag("streaming", "streaming", False):
        why = "streaming reads the rows as an iterable dataset (no sampler)"
    elif len(datasets) > 1:
        why = f"{len(datasets)} datasets are merged ({r.text('mix_strategy', 'mix_strategy', 'concat')}) before the sampler"
    elif r.has("max_samples"):
        why = "max_samples keeps part of the rows before the sampler"
    elif stage not in REPLAYED_STAGES:
        why = f"stage {stage}: the batch plan is verified against LLaMA-Factory's sft and pt trainers only"
    elif order in ("group_by_length", "batch_rebalance"):
        why = f"train_sampling_strategy {order} draws from the global torch RNG or rebalances by length"
    return SamplerFacts(
        order=order, seed=r.integer("seed", "seed", 42), data_seed=r.integer("data_seed", "data_seed", None),
        drop_last=r.flag("drop_last", "dataloader_drop_last", False),
        epochs=float(r.number("epochs", "num_train_epochs", 3.0)), max_steps=r.integer("max_steps", "max_steps", -1),
        not_replayed=why, rows_note=(
            "row numbers count the rows LLaMA-Factory keeps: each row it drops while converting (flagged by "
            "inspect-data) shifts the rows after it by one"))


def _eval_split(r: SpecReader) -> str:
    """LLaMA-Factory's eval set: ``eval_dataset``, or the ``val_size`` share of the training rows (default 0)."""
    if r.raw("eval_split", "eval_dataset"):
        return "eval_dataset"
    size = float(r.number("eval_split", "val_size", 0.0))
    return f"val_size: {size:g}" if size > 0 else ""
