"""The changes that lower the peak, each with its new estimate over the same data: a fused loss first (where the
model's own loss builds the full logits; it changes no number the run computes), then in the order axolotl's
training-stability guide tries them for OOM: smaller micro-batch (more accumulation keeps the effective batch), gradient
checkpointing, LoRA/4-bit, a shorter max_length (with the rows it would cut), flash attention, ZeRO-3."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mldebug_cli.core.numbers import plural
from mldebug_cli.memory.estimate import Estimate
from mldebug_cli.memory.setup import PeftSetup


@dataclass(frozen=True)
class Fix:
    key: str  # the fact the fix changes (trainer-facts name)
    change: str  # "micro_batch_size 8 → 2"
    before: int  # per-GPU bytes
    after: int
    note: str = ""  # "truncates 2 rows (17, 230)"


def fixes(current: Estimate, rerun: Callable[..., Estimate | None], cut_rows: Callable[[int], Sequence[int]],
          limit: float | None) -> list[Fix]:
    """Each fix applied alone to the current setup; ``rerun(**changes)`` re-estimates over the data,
    ``cut_rows(max_length)`` lists the rows a shorter limit would truncate."""
    setup = current.setup
    before = current.per_gpu
    found: list[Fix] = []

    def add(key: str, change: str, note: str = "", **changes) -> None:
        new = rerun(**changes)
        if new is not None and new.per_gpu < before * 0.99:
            found.append(Fix(key, change, before, new.per_gpu, note))

    if setup.loss_kernel == "full":  # first: it changes no number the run computes, only how the loss is tiled
        add("loss_kernel", setup.fused_loss_change, "the logits are never built whole", loss_kernel=setup.fused_loss_kernel)
    batch = setup.micro_batch_size
    if batch > 1:
        for smaller in _halvings(batch):
            new = rerun(micro_batch_size=smaller, gradient_accumulation_steps=setup.gradient_accumulation_steps * batch // smaller)
            if new is None or new.per_gpu >= before * 0.99:
                continue
            if limit is None or new.per_gpu <= limit or smaller == 1:
                found.append(Fix("micro_batch_size", f"micro_batch_size {batch} → {smaller} "
                                 f"(gradient_accumulation_steps {setup.gradient_accumulation_steps} → "
                                 f"{setup.gradient_accumulation_steps * batch // smaller})", before, new.per_gpu))
                break
    if not setup.gradient_checkpointing:
        add("gradient_checkpointing", "gradient_checkpointing off → on", gradient_checkpointing=True)
    if setup.peft is None:
        add("peft", "full fine-tuning → LoRA r=16 on all linear layers",
            peft=PeftSetup("lora", 16, "all-linear"))
    if setup.quantization != "4bit":
        peft = setup.peft or PeftSetup("lora", 16, "all-linear")
        add("quantization", "4-bit QLoRA (bitsandbytes nf4, double quant)" + (" with LoRA r=16" if setup.peft is None else ""),
            quantization="4bit", double_quant=True, peft=peft)
    longest = current.batch.length
    if setup.max_length and longest > 256 and not setup.packing:
        shorter = max(256, _round_down(longest // 2))
        cut = cut_rows(shorter)
        if cut:
            rows = ", ".join(str(r) for r in cut[:5]) + (", ..." if len(cut) > 5 else "")
            add("max_length", f"max_length {setup.max_length} → {shorter}", f"truncates {plural(len(cut), 'row')} ({rows})",
                max_length=shorter)
    if setup.attention == "eager":
        add("attn_implementation", "attn_implementation eager → sdpa (or flash_attention_2)", attention="sdpa")
    if setup.world_size > 1 and setup.zero_stage < 3 and not setup.fsdp:
        add("deepspeed", f"DeepSpeed ZeRO-3 over {setup.world_size} GPUs", zero_stage=3)
    if "8bit" not in setup.optimizer and setup.peft is None:
        add("optimizer", f"optim {setup.optimizer} → adamw_8bit", optimizer="adamw_8bit")
    return found


def _halvings(batch: int) -> list[int]:
    out = []
    n = batch
    while n > 1:
        n //= 2
        out.append(max(1, n))
    return out


def _round_down(n: int) -> int:
    power = 1
    while power * 2 <= n:
        power *= 2
    return power
