"""What a training config makes the trainer do, as one framework-neutral record (``TrainerFacts``).

Each framework's folder reads its config into it (``trl/trainer_facts.py``, ``axolotl/trainer_facts.py``,
``llama_factory/trainer_facts.py``), with its own defaults at the emulated versions (TRL 1.16.0 on transformers 5.x,
axolotl 0.19.0, LLaMA-Factory 0.9.5; each default read from that wheel's config classes), so that ``memory`` and
``probe`` ask one record and never a framework's name. ``keys`` maps each fact to the config key that set it, for
findings that point at the key to change. The helpers below are the readers' shared parts.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from mldebug_cli.core.errors import InputError
from mldebug_cli.core.safe_io import read_text
from mldebug_cli.frameworks.common import SpecReader
from mldebug_cli.sources.config_file import ConfigFile

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
    rows_note: str | None = None  # how the planned rows relate to the file's, where they may differ


@dataclass(frozen=True)
class DeepSpeedFacts:
    zero_stage: int
    offload_optimizer: bool = False
    offload_param: bool = False


@dataclass(frozen=True)
class FsdpFacts:
    sharding: str  # full, hybrid, shard_grad_op, no_shard
    offload: bool = False


class FusedLoss(NamedTuple):
    """The fused loss a framework's config can turn on: the change to suggest, and the memory estimator's kernel."""

    change: str
    kernel: str  # liger, cce


LIGER_LOSS = FusedLoss("use_liger_kernel: true (Liger's fused linear cross-entropy)", "liger")  # TrainingArguments'


@dataclass(frozen=True)
class StabilityFacts:
    """The settings the stability guides name, as the trainer receives them (the CF stability checks read them)."""

    max_grad_norm: float = 1.0  # TrainingArguments' default; the Trainer clips only when it is above 0
    eval_split: str | None = None  # the key and value that give the run an eval set; None: the run evaluates nothing
    async_prefetch: bool = False  # axolotl's trl.async_prefetch: rollouts made in a background thread
    eval_split_key: str = "eval_strategy"  # the key that gives the run an eval set, and how the fix sets it
    eval_split_fix: str = "eval_strategy: steps with an eval dataset"
    policy_key_prefix: str = ""  # where the GRPO settings sit in the config (axolotl: under trl.)
    grpo_forces_reentrant: bool = False  # the GRPO trainer sets use_reentrant with PEFT + ZeRO-3 (TRL's GRPOTrainer)


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
    fused_loss: FusedLoss = LIGER_LOSS  # the fused loss its config can turn on
    quantized_adapter_bf16: bool = False  # on a quantized model its trainer casts the trainable adapter weights to bf16
    pad_token_required: bool = False  # its collator stops at the first batch when the tokenizer has no pad token
    stability: StabilityFacts = field(default_factory=StabilityFacts)
    # a vision-language model's parts its trainer freezes (LLaMA-Factory's freeze_vision_tower and
    # freeze_multi_modal_projector; TRL freezes nothing: peft's all-linear adapts the tower's linears too)
    freezes_vision_tower: bool = False
    freezes_projector: bool = False


MAX_WORLD_SIZE = 1_000_000  # processes; past it no step arithmetic is meaningful


def compute_dtype(bf16: Any, fp16: Any) -> str:
    return "bf16" if bf16 else "fp16" if fp16 else "fp32"


def dtype_name(value: Any) -> str | None:
    return DTYPES.get(str(value).lower().removeprefix("torch.")) if value is not None else None


def training_arguments_eval_split(r: SpecReader, split: str | None = None) -> str | None:
    """The Trainer evaluates only when ``eval_strategy`` is not ``no`` (its default); ``split`` is the key that makes
    the eval set where the framework makes one (LLaMA-Factory's ``val_size``), needed too when given ("" : none)."""
    strategy = str(r.text("eval_strategy", "eval_strategy", None) or r.text("eval_strategy", "evaluation_strategy", "no"))
    if strategy == "no" or split == "":
        return None
    return f"eval_strategy: {strategy}" + (f", {split}" if split else "")


def training_arguments_fsdp(r: SpecReader) -> FsdpFacts | None:
    value = r.raw("fsdp", "fsdp")
    words = value.split() if isinstance(value, str) else [str(v) for v in value or ()]
    if not words or words == ["false"]:
        return None
    sharding = next((w.removesuffix("_shard") for w in words if w.endswith("_shard") or w == "shard_grad_op"), "full")
    return FsdpFacts(sharding, offload="offload" in words)


def reference_model(task: str, beta: float | None, peft: bool, precomputed: bool) -> str:
    """How the trainer holds the reference policy: TRL's DPO/KTO (and axolotl's) disable the adapter when the
    model is a PEFT model and copy the model otherwise; GRPO needs one only when beta > 0; ORPO never."""
    if task in ("sft", "orpo", "pt", "rm") or (task == "grpo" and not beta):
        return "none"
    if precomputed:
        return "precomputed"
    return "adapter-disabled" if peft else "copy"


def deepspeed_facts(config: ConfigFile, value: Any) -> DeepSpeedFacts | None:
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


def key_names(value: Any) -> tuple[str, ...]:
    if value in (None, ""):
        return ()
    if isinstance(value, str):
        return tuple(v.strip() for v in value.split(",") if v.strip())
    return tuple(str(v) for v in value)


def target_modules_of(value: Any) -> tuple[str, ...] | str:
    if isinstance(value, str) and value.strip() in ("all-linear", "all"):
        return "all-linear"
    return key_names(value) or ("q_proj", "v_proj")  # peft's default for Llama/Qwen-style models
