"""What the memory estimator needs to know about a run, framework-neutral (built from ``TrainerFacts``)."""

from __future__ import annotations

from dataclasses import dataclass, replace

BYTES = {"fp32": 4, "bf16": 2, "fp16": 2}


@dataclass(frozen=True)
class PeftSetup:
    method: str  # lora, dora
    r: int
    targets: tuple[str, ...] | str  # module names, or "all-linear"
    modules_to_save: tuple[str, ...] = ()


@dataclass(frozen=True)
class MemorySetup:
    framework: str
    task: str  # sft, dpo, kto, orpo, grpo, pt, ...
    micro_batch_size: int
    world_size: int = 1
    gradient_checkpointing: bool = False
    compute_dtype: str = "bf16"  # the dtype matmuls run in (mixed precision flag, or the weights' own)
    weights_dtype: str = "bf16"  # the dtype the weights are held in
    quantization: str | None = None  # None, 8bit, 4bit (bitsandbytes)
    double_quant: bool = False
    optimizer: str = "adamw_torch_fused"
    peft: PeftSetup | None = None
    attention: str = "sdpa"  # eager, sdpa, flash_attention_2, ...
    loss_kernel: str = "full"  # full (the model's own fp32 cross-entropy), fused-chunks (TRL), liger, cce
    reference: str = "none"  # none, copy, adapter-disabled, precomputed
    max_length: int | None = None
    packing: bool = False
    padding_free: bool = False
    pad_to_max_length: bool = False
    num_generations: int | None = None
    generation_batch_size: int | None = None  # completions generated at once, all processes together
    gradient_accumulation_steps: int = 1
    max_prompt_length: int | None = None
    max_completion_length: int | None = None
    use_vllm: bool = False
    vllm_mode: str | None = None
    vllm_gpu_memory_utilization: float | None = None
    zero_stage: int = 0
    offload_optimizer: bool = False
    offload_param: bool = False
    fsdp: str | None = None  # full, hybrid, shard_grad_op, no_shard
    fsdp_offload: bool = False
    dataloader_num_workers: int = 0
    dataset_num_proc: int = 0
    seed: int = 42
    shuffle: bool = True
    adapter_dtype: str = "fp32"  # peft's autocast_adapter_dtype; TRL casts them to bf16 on a quantized model
    unquantized_dtype: str | None = None  # embeddings, norms, LM head beside bitsandbytes layers (None: compute)
    transformers_version: tuple[int, ...] = (5, 24)  # the model's own loss: <= 4.45 keeps an fp32 copy, >= 4.46 not
    drop_last: bool = False  # dataloader_drop_last
    # the fused loss the framework's config can turn on: the change to suggest, and its loss kernel
    fused_loss_change: str = "use_liger_kernel: true (Liger's fused linear cross-entropy)"
    fused_loss_kernel: str = "liger"
    vision_tower_trains: bool = True  # a vision-language model's tower (or its adapters) trains
    projector_trains: bool = True

    @property
    def weight_bytes(self) -> int:
        return BYTES[self.weights_dtype]

    @property
    def compute_bytes(self) -> int:
        return BYTES[self.compute_dtype]

    @property
    def mixed_precision(self) -> bool:
        """Weights held in fp32, matmuls autocast to bf16/fp16: autocast keeps a low-precision copy of each weight."""
        return self.weights_dtype == "fp32" and self.compute_dtype != "fp32" and self.quantization is None

    @property
    def completions_per_generation(self) -> int:
        """GRPO: completions this process generates in one ``generate`` call (TRL: generation_batch_size over
        the processes, which defaults to micro_batch_size × gradient_accumulation_steps per process)."""
        total = self.generation_batch_size or self.micro_batch_size * self.gradient_accumulation_steps * self.world_size
        return max(1, total // self.world_size)

    def changed(self, **changes) -> MemorySetup:
        return replace(self, **changes)


def setup_from_facts(facts, seed: int = 42) -> MemorySetup:
    """The estimator's view of ``TrainerFacts`` (mldebug_cli.frameworks.trainer_facts)."""
    peft = None
    if facts.peft is not None:
        peft = PeftSetup(method=facts.peft.method, r=int(facts.peft.r), targets=facts.peft.target_modules,
                         modules_to_save=tuple(facts.peft.modules_to_save or ()))
    compute = facts.dtype if facts.dtype in ("bf16", "fp16", "fp32") else "bf16"
    weights = facts.model_dtype if facts.model_dtype in ("bf16", "fp16", "fp32") else compute
    if facts.fused_lm_head:
        kernel = "fused-chunks"  # TRL 1.16 patches every trainer's LM head (trl/trainer/utils.py add_fused_lm_head)
    elif facts.cut_cross_entropy:
        kernel = "cce"
    elif facts.liger_kernel:
        kernel = "liger"
    else:
        kernel = "full"
    ds = facts.deepspeed
    fsdp = facts.fsdp
    adapter_dtype, unquantized = "fp32", None
    if facts.quantization and facts.quantized_adapter_bf16:
        # the trainable adapter weights go to bf16, and the layers bitsandbytes leaves alone keep the load dtype
        # (float32 unless model_init_kwargs.dtype says)
        adapter_dtype, unquantized = "bf16", weights
    sampler = getattr(facts, "sampler", None)
    return MemorySetup(
        framework=facts.framework, task=facts.task, micro_batch_size=facts.micro_batch_size,
        world_size=facts.world_size, gradient_checkpointing=facts.gradient_checkpointing, compute_dtype=compute,
        weights_dtype=weights, quantization=facts.quantization, double_quant=facts.double_quant,
        optimizer=str(facts.optimizer), peft=peft, attention=facts.attn_implementation or "sdpa", loss_kernel=kernel,
        reference=facts.reference_model, max_length=facts.max_length, packing=facts.packing,
        padding_free=facts.padding_free, pad_to_max_length=facts.pad_to_max_length,
        num_generations=facts.num_generations, generation_batch_size=facts.generation_batch_size,
        gradient_accumulation_steps=facts.gradient_accumulation_steps, max_prompt_length=facts.max_prompt_length,
        max_completion_length=facts.max_completion_length, use_vllm=facts.use_vllm, vllm_mode=facts.vllm_mode,
        vllm_gpu_memory_utilization=facts.vllm_gpu_memory_utilization,
        zero_stage=ds.zero_stage if ds else 0, offload_optimizer=bool(ds and ds.offload_optimizer),
        offload_param=bool(ds and ds.offload_param), fsdp=fsdp.sharding if fsdp else None,
        fsdp_offload=bool(fsdp and fsdp.offload), dataloader_num_workers=facts.dataloader_num_workers or 0,
        dataset_num_proc=facts.dataset_num_proc or 0, adapter_dtype=adapter_dtype, unquantized_dtype=unquantized,
        seed=seed if sampler is None else sampler.data_seed if sampler.data_seed is not None else sampler.seed,
        shuffle=sampler is None or sampler.order != "sequential", drop_last=bool(sampler and sampler.drop_last),
        fused_loss_change=facts.fused_loss.change, fused_loss_kernel=facts.fused_loss.kernel,
        vision_tower_trains=not facts.freezes_vision_tower, projector_trains=not facts.freezes_projector,
    )
