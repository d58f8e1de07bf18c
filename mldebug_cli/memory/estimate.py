"""The GPU memory of one training step, term by term, for one micro-batch.

Every term is ``Term(name, bytes, formula, source)``; the peak is the largest of the moments a step goes
through (docs/memory.md has each formula with its source):

- ``backward start``: everything resident + every activation saved by the forward + the loss's transient
  tensors (the logits, or the fused kernel's tile and fp32 gradients);
- ``backward end``: everything resident + the gradients of every trainable parameter (+ one recomputed layer
  under gradient checkpointing; + the optimizer's temporaries when it is not fused);
- ``generation`` (GRPO without vLLM): everything resident + the KV cache of the completions generated at once.

Resident: weights (+ quantisation constants), adapters, optimizer states, master copies, a reference model that
is a second copy, vLLM's share of the GPU; all divided over the GPUs where ZeRO/FSDP shards them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mldebug_cli.memory.batches import MicroBatch
from mldebug_cli.memory.setup import BYTES, MemorySetup
from mldebug_cli.memory.shapes import ModelShape

GIB = 1024**3
CUDA_CONTEXT = int(0.51 * GIB)  # CUDA context outside PyTorch's allocator (measured: goldens, H200, torch 2.11)
ALLOCATOR_RESERVE = 0.10  # max_memory_reserved over max_memory_allocated on the goldens: median 1.10 (1.01-1.22)
FUSED_TOKEN_CHUNK = 4096  # trl/kernels/chunked_logprob.py TOKEN_CHUNK_SIZE
FUSED_VOCAB_CHUNK = 32768  # trl/trainer/utils.py _CHUNKED_LOGPROB_CHUNK_SIZE
BNB_BLOCK_4BIT = 64  # bitsandbytes quantize_4bit blocksize (transformers' default for bnb_4bit)
BNB_DOUBLE_QUANT_BLOCK = 256  # bitsandbytes nested quantisation of the absmax, per 256 blocks
BNB_OPTIM_BLOCK = 256  # bitsandbytes 8-bit optimizers: blockwise quantisation, one fp32 absmax per 256 values
BNB_MIN_8BIT_SIZE = 4096  # bitsandbytes keeps a tensor's state in 32-bit below this many elements
ZERO3_LIVE_LAYERS = 2  # ZeRO-3/FSDP: the layer running and the one prefetched are gathered in full


@dataclass(frozen=True)
class Term:
    name: str
    bytes: int
    formula: str
    source: str
    moment: str = "resident"  # resident, saved, loss, layer-backward, backward-end, forward-end, optimizer-step, generation

    @property
    def gib(self) -> float:
        return self.bytes / GIB


@dataclass(frozen=True)
class Estimate:
    terms: tuple[Term, ...]
    moments: dict  # moment name -> bytes allocated at that moment
    peak_moment: str
    batch: MicroBatch
    setup: MemorySetup
    host_bytes: int = 0  # CPU memory for offloaded states

    @property
    def allocated(self) -> int:
        """The peak of PyTorch's allocated memory (what torch.cuda.max_memory_allocated reports)."""
        return self.moments[self.peak_moment]

    @property
    def per_gpu(self) -> int:
        """What the process needs on the GPU: the allocated peak, the allocator's reserve and the CUDA context."""
        return int(self.allocated * (1 + ALLOCATOR_RESERVE)) + CUDA_CONTEXT

    @property
    def largest(self) -> Term:
        return max(self.terms, key=lambda t: t.bytes)

    def term(self, name: str) -> Term | None:
        return next((t for t in self.terms if t.name == name), None)


def gib(n: float) -> str:
    return f"{n / GIB:.2f} GiB"


def _m(n: float) -> str:
    return f"{n / 1e6:.1f}M" if n < 1e9 else f"{n / 1e9:.2f}B"


# ------------------------------------------------------------------------------------------------ parameters


def lora_modules(shape: ModelShape, setup: MemorySetup) -> list:
    """The linear modules of one layer that carry an adapter (``all-linear``: every one but the LM head)."""
    if setup.peft is None:
        return []
    targets = setup.peft.targets
    if targets == "all-linear" or targets == ("all-linear",):
        return list(shape.layer_linears)
    names = {targets} if isinstance(targets, str) else set(targets)
    return [x for x in shape.layer_linears if x.name in names or x.name.removesuffix("_proj") in names]


def adapter_parameters(shape: ModelShape, setup: MemorySetup) -> int:
    """LoRA: r × (fan_in + fan_out) per targeted module; DoRA adds a magnitude vector of fan_out; a vision tower's
    and projector's linears too where they train (peft's ``all-linear`` adapts every Linear but the LM head)."""
    if setup.peft is None:
        return 0
    per_layer = sum(setup.peft.r * (x.fan_in + x.fan_out) + (x.fan_out if setup.peft.method == "dora" else 0)
                    for x in lora_modules(shape, setup))
    return per_layer * shape.layers + vision_adapter_parameters(shape, setup)


def vision_adapter_parameters(shape: ModelShape, setup: MemorySetup) -> int:
    if setup.peft is None or shape.vision is None:
        return 0
    targets = setup.peft.targets
    names = None if targets in ("all-linear", ("all-linear",)) else {targets} if isinstance(targets, str) else set(targets)
    return shape.vision.lora_parameters(setup.peft.r, setup.vision_tower_trains, setup.projector_trains,
                                        setup.peft.method == "dora", names)


def vision_trainable_parameters(shape: ModelShape, setup: MemorySetup) -> int:
    """A full fine-tune's trainable vision parameters: the tower and the projector unless frozen."""
    vision = shape.vision
    if vision is None:
        return 0
    return (vision.tower_parameters if setup.vision_tower_trains else 0) + (
        vision.projector_parameters if setup.projector_trains else 0)


def saved_modules_parameters(shape: ModelShape, setup: MemorySetup) -> int:
    """``modules_to_save``: peft keeps a trainable copy of each named module beside the frozen original."""
    if setup.peft is None:
        return 0
    total = 0
    for name in setup.peft.modules_to_save:
        if name in ("embed_tokens", "wte", "word_embeddings"):
            total += shape.embedding_parameters
        elif name in ("lm_head", "output", "embed_out"):
            total += shape.vocab * shape.hidden
    return total


def trainable_parameters(shape: ModelShape, setup: MemorySetup) -> int:
    if setup.peft is None:
        return shape.parameters + vision_trainable_parameters(shape, setup)
    return adapter_parameters(shape, setup) + saved_modules_parameters(shape, setup)


def weight_bytes(shape: ModelShape, setup: MemorySetup) -> tuple[int, str, str]:
    """The base weights: dtype bytes per parameter, or bitsandbytes' packed layout for the layers' linears."""
    p = shape.parameters + shape.vision_parameters
    wb = setup.weight_bytes
    if setup.quantization is None:
        vision = f" (vision tower and projector {_m(shape.vision_parameters)})" if shape.vision is not None else ""
        return (p * wb, f"{_m(p)} params{vision} × {wb} B ({setup.weights_dtype})",
                "parameter count from config.json")
    linear = shape.layers * shape.layer_linear_parameters
    rest = p - linear
    # bitsandbytes leaves embeddings, norms and the LM head in the load dtype (TRL: float32 by default)
    cb = BYTES[setup.unquantized_dtype] if setup.unquantized_dtype else setup.compute_bytes
    if setup.quantization == "4bit":
        per = 0.5 + (1 / BNB_BLOCK_4BIT + 4 / (BNB_BLOCK_4BIT * BNB_DOUBLE_QUANT_BLOCK) if setup.double_quant
                     else 4 / BNB_BLOCK_4BIT)
        rule = ("0.5 B + absmax uint8/64 + fp32/(64·256) (double quant)" if setup.double_quant
                else "0.5 B + fp32 absmax/64")
        return (int(linear * per + rest * cb), f"{_m(linear)} linear params × {per:.4f} B ({rule}) + {_m(rest)} × {cb} B",
                "bitsandbytes Linear4bit: 4-bit pairs per byte, one absmax per 64-value block")
    rows = shape.layers * sum(x.fan_out for x in shape.layer_linears)
    return (linear + rows * 4 + rest * cb, f"{_m(linear)} linear params × 1 B + fp32 scale per row ({_m(rows)}) + {_m(rest)} × {cb} B",
            "bitsandbytes Linear8bitLt: int8 weights, one fp32 scale (SCB) per output row")


def optimizer_bytes(setup: MemorySetup, trainable: int, state_bytes: int) -> tuple[int, str, str]:
    name = setup.optimizer.lower()
    if "8bit" in name:
        per = 2 * (1 + 4 / BNB_OPTIM_BLOCK)
        paged = " (paged: may spill to host memory)" if "paged" in name else ""
        return (int(trainable * per), f"{_m(trainable)} × 2 states × (1 B + fp32 absmax/{BNB_OPTIM_BLOCK}){paged}",
                "bitsandbytes 8-bit blockwise optimizer states")
    if "adafactor" in name:
        # factored second moment: one row and one column vector per matrix; no first moment (beta1 None)
        return (int(trainable * state_bytes * 0.01), f"≈ rows + columns of each matrix × {state_bytes} B (no first moment)",
                "transformers Adafactor: factored second moment, beta1=None")
    if "sgd" in name:
        return 0, "no state (momentum 0)", "torch.optim.SGD with the Trainer's defaults"
    if "lion" in name:
        return trainable * state_bytes, f"{_m(trainable)} × 1 state × {state_bytes} B", "Lion: one momentum buffer"
    return (2 * trainable * state_bytes, f"{_m(trainable)} × 2 states (exp_avg, exp_avg_sq) × {state_bytes} B",
            "torch.optim.AdamW: states in the parameters' dtype")


# ----------------------------------------------------------------------------------------------- activations


def layer_activation_bytes(shape: ModelShape, setup: MemorySetup, batch: MicroBatch) -> int:
    """Bytes one decoder layer saves for backward on this batch (no checkpointing).

    Counted per op from what autograd saves (verified against saved-tensor hooks on CPU,
    tests/memory/test_activations.py), per token:
    - each RMSNorm: its fp32 input (4h); its normalised output (2h bf16, 4h fp32 residual) when its weight trains;
    - when the weights train (not under autocast of fp32 weights): two more h-wide tensors in the compute
      dtype (measured; absent with LoRA);
    - attention, sdpa/flash: rotated q (2·q_dim), k and v (2·kv_dim each; 2·q_dim each when sdpa gets a padding
      mask, since transformers then repeats them to every head), the output (2·q_dim), the log-sum-exp (4 per head); eager instead: q and the repeated k, v (2·q_dim each), the probabilities per key position
      in fp32 (softmax) and bf16 (for P·V): 6 bytes per head per key, and o_proj's input when it trains;
    - gated MLP: gate and up outputs, the SiLU output (2·I each), the down projection's input (2·I) when it trains;
    - linear inputs saved for the weight gradient when the weight trains (the normalised input is shared by
      q/k/v and by gate/up); under mixed precision with fp32 weights each linear keeps its own bf16 cast of
      the input;
    - LoRA (adapters in fp32, autocast): each adapted module keeps a bf16 cast of its input (2·fan_in) and the
      r-wide output of lora_A (2·r).
    """
    h, mlp = shape.hidden, shape.intermediate
    q, kv = shape.heads * shape.head_dim, shape.kv_heads * shape.head_dim
    cb = setup.compute_bytes
    full = setup.peft is None
    fp32_residual = setup.weights_dtype == "fp32"
    rb = 4 if fp32_residual else cb
    per_token = 0.0
    # RMSNorms (input_layernorm, post_attention_layernorm): fp32 input, and the normalised output for the weight
    per_token += 2 * (4 * h + (rb * h if full else 0))
    if setup.mixed_precision and full:
        per_token += 3 * cb * h + 2 * cb * h  # q/k/v and gate/up each cast the fp32 normalised input
    if full and not setup.mixed_precision:
        per_token += 2 * cb * h  # measured: two more h-wide tensors in the compute dtype when the weights train
    # attention core
    if setup.attention == "eager":
        per_token += 3 * cb * q + 6 * shape.heads * batch.length  # q, repeated k and v; fp32 + bf16 probabilities
    else:
        # with a padding mask, transformers' sdpa repeats k and v to every head (use_gqa_in_sdpa needs no mask)
        repeated = setup.attention == "sdpa" and batch.padded and shape.kv_heads < shape.heads
        per_token += cb * (2 * q + 2 * (q if repeated else kv)) + 4 * shape.heads  # q, k, v, output; fp32 lse
    if full and setup.attention == "eager":
        per_token += cb * q  # o_proj's input (a contiguous copy of P·V) for its weight gradient
    # gated MLP: gate and up outputs, SiLU output; the down projection's input for its weight gradient
    per_token += 3 * cb * mlp + (cb * mlp if full else 0)
    # LoRA: each adapted module's bf16 cast of its input and lora_A's r-wide output
    rank = setup.peft.r if setup.peft is not None else 0  # no adapted modules without peft
    for module in lora_modules(shape, setup):
        per_token += cb * module.fan_in + cb * rank
    per_token += 8  # the two RMSNorms' fp32 rsqrt
    per_token *= max(1, shape.experts_per_token) if shape.experts else 1
    return int(per_token * batch.tokens)


def head_activation_bytes(shape: ModelShape, setup: MemorySetup, batch: MicroBatch) -> int:
    """Outside the layers: the final norm (fp32 input and output), rotary cos/sin, the attention mask."""
    per_token = 8 * shape.hidden + 4 * shape.head_dim
    mask = 0
    if batch.padded and setup.attention == "eager":
        mask = batch.sequences * batch.length * batch.length * setup.compute_bytes
    elif batch.padded and setup.attention == "sdpa":
        mask = batch.sequences * batch.length * batch.length  # a boolean 4D mask
    return int(per_token * batch.tokens + mask)


def checkpoint_bytes(shape: ModelShape, setup: MemorySetup, batch: MicroBatch) -> int:
    """Gradient checkpointing keeps each layer's input (the residual stream) and recomputes the rest."""
    rb = 4 if setup.weights_dtype == "fp32" else setup.compute_bytes
    return shape.layers * batch.tokens * shape.hidden * rb


# -------------------------------------------------------------------------------------------- logits / loss


def logits_bytes(shape: ModelShape, setup: MemorySetup, batch: MicroBatch, lm_head_trains: bool) -> tuple[int, str, str]:
    """The loss's tensors at the start of backward, by kernel."""
    V, h, n = shape.vocab, shape.hidden, batch.tokens
    cb = setup.compute_bytes
    head_grad = V * h * 4 if lm_head_trains else 0
    if setup.loss_kernel == "fused-chunks":
        scored = batch.label_tokens
        tile = min(scored, FUSED_TOKEN_CHUNK) * min(V, FUSED_VOCAB_CHUNK) * cb
        total = tile + scored * h * (cb + 4) + head_grad
        full = n * V * 4
        return (total, f"tile min({scored:,}, {FUSED_TOKEN_CHUNK}) × {min(V, FUSED_VOCAB_CHUNK):,} × {cb} B"
                       f" + scored hidden {scored:,} × {h} × ({cb} + 4 fp32 grad) B"
                       + (f" + fp32 LM-head grad {V:,} × {h} × 4 B" if head_grad else "")
                       + f"; the full fp32 logits {n:,} × {V:,} × 4 B = {gib(full)} are never built",
                "TRL 1.16 add_fused_lm_head/ChunkedLogProbFunction: log-probs in tiles, never the full logits")
    if setup.loss_kernel == "liger":
        chunk = 2 ** math.ceil(math.log2(max(1, math.ceil(n / max(1, math.ceil(V / h))))))
        total = chunk * V * (cb + 4) + n * h * cb + (V * h * setup.weight_bytes if lm_head_trains else 0)
        return (total, f"chunk {chunk:,} × {V:,} × ({cb} + 4) B + grad_input {n:,} × {h} × {cb} B",
                "Liger fused_linear_cross_entropy: chunks of ⌈N / ⌈V/h⌉⌉ rows")
    if setup.loss_kernel == "cce":
        return (2 * n * h * cb + (V * h * setup.weight_bytes if lm_head_trains else 0),
                f"{n:,} × {h} × {cb} B × 2 (no logits)", "cut cross-entropy: logits never materialised")
    if setup.loss_kernel == "compute-dtype":
        # model code that runs cross-entropy on the logits in the compute dtype (Qwen(1)'s remote modeling_qwen.py):
        # the logits kept as the output, log_softmax saved, its 2 gradients, the shifted slice's gradient
        return (5 * cb * n * V, f"{n:,} tokens × {V:,} vocab × {5 * cb} B (5 copies in the compute dtype)",
                "a model's own code computing cross-entropy on compute-dtype logits (no fp32 upcast)")
    if setup.task == "grpo":
        # TRL without the fused head: model(..., logits_to_keep=completion + 1), only the completions' logits
        n = batch.label_tokens + batch.sequences
    if setup.transformers_version < (4, 46):
        # transformers <= 4.45 (LlamaForCausalLM.forward): logits.float() is returned as the output, and the loss
        # runs on a shifted .contiguous() copy: the fp32 logits stay beside log_softmax and its 2 gradients
        return (16 * n * V, f"{n:,} tokens × {V:,} vocab × 16 B (fp32 logits kept as the output + fp32 "
                            "log-softmax saved + 2 fp32 gradients)",
                "transformers <= 4.45: logits.float() in forward, shift_logits.contiguous(), CrossEntropyLoss")
    # the model's own loss (transformers >= 4.46 ForCausalLMLoss): logits upcast to fp32 inside the loss,
    # log_softmax saved, and at the start of backward its gradient and the gradient of its input: 3 fp32 copies
    return (12 * n * V, f"{n:,} tokens × {V:,} vocab × 12 B (fp32 log-softmax saved + 2 fp32 gradients)",
            "transformers >= 4.46 ForCausalLMLoss: logits.float() in the loss, labels shifted, cross_entropy")


# -------------------------------------------------------------------------------------------------- estimate


def estimate(shape: ModelShape, setup: MemorySetup, batch: MicroBatch, gpu_bytes: float | None = None) -> Estimate:
    terms: list[Term] = []
    n_gpu = max(1, setup.world_size)
    trainable = trainable_parameters(shape, setup)
    # peft keeps adapters in fp32 (autocast_adapter_dtype); TRL 1.16 casts them to bf16 on a quantized model
    tb = BYTES[setup.adapter_dtype] if setup.peft is not None else setup.weight_bytes
    cb = setup.compute_bytes

    # sharding: (param, grad, optimizer) divisors
    shard_p = shard_g = shard_o = 1
    if setup.zero_stage >= 1 or setup.fsdp in ("full", "hybrid", "shard_grad_op"):
        shard_o = n_gpu
    if setup.zero_stage >= 2 or setup.fsdp in ("full", "hybrid", "shard_grad_op"):
        shard_g = n_gpu
    if setup.zero_stage >= 3 or setup.fsdp in ("full", "hybrid"):
        shard_p = n_gpu
    shard_note = f" / {n_gpu} GPUs" if n_gpu > 1 else ""

    weights, formula, source = weight_bytes(shape, setup)
    if setup.zero_stage or setup.fsdp:
        everything = shape.parameters + shape.vision_parameters
        weights = everything * (cb if setup.zero_stage else setup.weight_bytes)
        formula = f"{_m(everything)} params × {cb if setup.zero_stage else setup.weight_bytes} B"
    offload_params = setup.offload_param or setup.fsdp_offload
    host = 0
    if offload_params:
        host += weights
        weights = 0
        formula += " → offloaded to CPU"
    terms.append(Term("weights", weights // shard_p, formula + (shard_note if shard_p > 1 else ""), source))
    if shard_p > 1 and not offload_params:
        terms.append(Term("gathered layers", ZERO3_LIVE_LAYERS * shape.layer_parameters * cb,
                          f"{ZERO3_LIVE_LAYERS} layers × {_m(shape.layer_parameters)} × {cb} B",
                          "ZeRO-3/FSDP gather the running and the prefetched layer", "saved"))

    adapters = adapter_parameters(shape, setup)
    saved = saved_modules_parameters(shape, setup)
    # peft's ModulesToSaveWrapper copies the module as loaded: its copy, gradient and states are in the weights' dtype
    sb = setup.weight_bytes if setup.quantization is None else cb
    if adapters:
        terms.append(Term("adapters", adapters * tb, f"{_m(adapters)} params × {tb} B ({setup.adapter_dtype})",
                          "peft get_peft_model(autocast_adapter_dtype=True) keeps adapters in float32"
                          if tb == 4 else "TRL 1.16 casts the adapters of a quantized model to bf16"))
    if saved:
        terms.append(Term("modules to save", saved * sb, f"{_m(saved)} params × {sb} B (a trainable copy)",
                          "peft ModulesToSaveWrapper: a deep copy of each named module, in its dtype"))

    grad_bytes = (trainable - saved) * tb + saved * sb
    grads = grad_bytes // shard_g
    terms.append(Term("gradients", grads, f"{_m(trainable - saved)} trainable × {tb} B"
                      + (f" + {_m(saved)} saved-module params × {sb} B" if saved else "")
                      + (shard_note if shard_g > 1 else ""),
                      "one gradient per trainable parameter, in its dtype", "gradients"))

    master = 0
    if setup.zero_stage and setup.peft is None and cb < 4:
        master = trainable * 4
        terms.append(Term("master weights", 0 if setup.offload_optimizer else master // shard_o,
                          f"{_m(trainable)} × 4 B fp32" + (" → CPU" if setup.offload_optimizer else shard_note),
                          "DeepSpeed keeps fp32 master weights beside bf16/fp16 ones"))
    state_bytes = tb if setup.peft is not None else 4 if setup.zero_stage else setup.weight_bytes
    optim, oformula, osource = optimizer_bytes(setup, trainable - saved, state_bytes)
    if saved:
        saved_optim, sformula, _ = optimizer_bytes(setup, saved, sb)
        optim, oformula = optim + saved_optim, f"{oformula} + saved modules: {sformula}"
    if setup.offload_optimizer or setup.fsdp_offload:
        host += optim + master
        terms.append(Term("optimizer states", 0, oformula + " → offloaded to CPU", osource))
    else:
        terms.append(Term("optimizer states", optim // shard_o, oformula + (shard_note if shard_o > 1 else ""), osource))
    # DeepSpeed steps its fp32 partition with its own FusedAdam (CPUAdam when offloaded): no foreach temporaries
    if "fused" not in setup.optimizer and "8bit" not in setup.optimizer and optim and not setup.zero_stage:
        terms.append(Term("optimizer step", ((trainable - saved) * state_bytes + saved * sb) // shard_o,
                          f"{_m(trainable)} × {state_bytes} B (foreach temporaries)",
                          "torch.optim.AdamW(foreach=True): one full-size temporary per step", "optimizer-step"))

    if setup.reference == "copy":
        ref, rformula, _ = weight_bytes(shape, setup)
        terms.append(Term("reference model", ref // shard_p, "a second copy of the weights: " + rformula,
                          "TRL DPO/KTO/GRPO create_model_from_path for the reference policy"))

    if setup.mixed_precision and not (setup.gradient_checkpointing and setup.peft is not None):
        cast = shape.layers * shape.layer_linear_parameters + shape.vocab * shape.hidden
        # saved by each matmul for backward; under checkpointing only autocast's cache of trainable weights,
        # which lives until the forward's autocast exits
        moment = "forward-end" if setup.gradient_checkpointing else "saved"
        terms.append(Term("autocast weight copies", cast * cb // shard_p, f"{_m(cast)} linear params × {cb} B",
                          "torch.autocast casts each fp32 weight to bf16/fp16 and keeps the cast for backward", moment))

    if setup.quantization in ("4bit", "8bit"):
        widest = max(x.fan_in * x.fan_out for x in shape.layer_linears)
        terms.append(Term("dequantised weight", widest * cb,
                          f"the widest linear {_m(widest)} × {cb} B, one at a time",
                          "bitsandbytes MatMul4Bit dequantises the weight for each forward and backward matmul "
                          "(it saves only the packed weight, not its input)" if setup.quantization == "4bit" else
                          "bitsandbytes MatMul8bitLt's backward dequantises the int8 weight (CB × SCB / 127) in the "
                          "input's dtype for the input's gradient (bitsandbytes 0.50.2 autograd/_functions.py)",
                          "layer-backward"))

    if setup.quantization and setup.unquantized_dtype and BYTES[setup.unquantized_dtype] > cb:
        terms.append(Term("LM head cast", shape.vocab * shape.hidden * cb, f"{shape.vocab:,} × {shape.hidden} × {cb} B",
                          "autocast casts the fp32 LM head to the compute dtype; the cast is saved for the input's "
                          "gradient", "saved"))

    layer_acts = layer_activation_bytes(shape, setup, batch)
    if setup.gradient_checkpointing:
        kept = checkpoint_bytes(shape, setup, batch)
        terms.append(Term("activations", kept + head_activation_bytes(shape, setup, batch),
                          f"checkpointed: {shape.layers} layers × {batch.tokens:,} tokens × {shape.hidden} × "
                          f"{4 if setup.weights_dtype == 'fp32' else cb} B + final norm",
                          "gradient checkpointing keeps each layer's input", "saved"))
        terms.append(Term("recomputed layer", layer_acts, f"one layer's activations, {batch.tokens:,} tokens",
                          "the layer being recomputed in backward", "layer-backward"))
    else:
        terms.append(Term("activations", shape.layers * layer_acts + head_activation_bytes(shape, setup, batch),
                          f"{shape.layers} layers × {layer_acts / batch.tokens:,.0f} B/token × {batch.tokens:,} tokens"
                          f" ({batch.describe()})", "saved-for-backward tensors per op (layer_activation_bytes)",
                          "saved"))
    if shape.vision is not None and batch.images:
        terms.append(vision_activation_term(shape, setup, batch))
    mlp = shape.intermediate * max(1, shape.experts_per_token if shape.experts else 1)
    flowing = batch.tokens * (3 * mlp * cb + shape.hidden * (4 + cb))
    terms.append(Term("layer backward", flowing,
                      f"{batch.tokens:,} tokens × (3 × {mlp} × {cb} B MLP gradients + {shape.hidden} × {4 + cb} B "
                      "incoming gradient)", "the gradients a layer's backward holds at once (measured on the goldens)",
                      "layer-backward"))

    lm_head_trains = setup.peft is None or any(m in ("lm_head", "embed_tokens") for m in setup.peft.modules_to_save)
    lbytes, lformula, lsource = logits_bytes(shape, setup, batch, lm_head_trains and setup.loss_kernel == "fused-chunks")
    terms.append(Term("logits and loss", lbytes, lformula, lsource, "loss"))
    if lm_head_trains and shape.tied:
        terms.append(Term("tied embedding gradient", shape.vocab * shape.hidden * tb // shard_g,
                          f"{shape.vocab:,} × {shape.hidden} × {tb} B",
                          "the input embedding's gradient, added to the LM head's at the end of backward",
                          "backward-end"))

    if setup.task == "grpo" and not setup.use_vllm:
        terms.append(generation_term(shape, setup))
    if setup.task == "grpo" and setup.use_vllm and setup.vllm_mode == "colocate" and gpu_bytes:
        share = setup.vllm_gpu_memory_utilization or 0.3
        terms.append(Term("vLLM colocate", int(gpu_bytes * share), f"{share} × {gib(gpu_bytes)}",
                          "vLLM reserves gpu_memory_utilization of the GPU in the training process"))

    moments = _moments(terms)
    peak = max(moments, key=lambda moment: moments[moment])
    return Estimate(tuple(terms), moments, peak, batch, setup, host)


def vision_activation_term(shape: ModelShape, setup: MemorySetup, batch: MicroBatch) -> Term:
    """What the vision tower saves for backward on the batch's images (memory.vision, per patch, held to
    saved-tensor hooks): every layer's tensors when the tower or its adapters train (each layer's input alone under
    gradient checkpointing, one layer recomputed at a time), the projector's inputs when only it trains, nothing
    when both are frozen (no tensor of the tower needs a gradient)."""
    vision = shape.vision
    assert vision is not None
    cb = setup.compute_bytes
    images = len(batch.images)
    patches = sum(vision.patches(t) for t in batch.images)
    tower = setup.vision_tower_trains
    projector = setup.projector_trains
    fixed = vision.fixed_bytes(cb, images, patches, tower, projector)
    what = f"{images} images, {patches:,} patches"
    if not tower:
        return Term("vision activations", fixed, f"{what}: tower frozen, " + (
            "the projector's inputs" if projector else "projector frozen: nothing saved"),
                    "a frozen tower's tensors need no gradient (LLaMA-Factory freeze_vision_tower)", "saved")
    eager = setup.attention == "eager"
    groups = [g for t in batch.images for g in vision.attention_groups(t)]
    layer = vision.layer_bytes_per_patch(cb, eager) * patches + (vision.eager_probability_bytes(groups) if eager else 0)
    if setup.gradient_checkpointing:
        kept = vision.layers * patches * vision.width * cb
        return Term("vision activations", kept + layer + fixed,
                    f"{what}: checkpointed, {vision.layers} layer inputs × {vision.width} × {cb} B + one recomputed "
                    f"layer ({layer / patches:,.0f} B/patch) + pixels, norms and projector",
                    "gradient checkpointing covers the vision blocks too (transformers)", "saved")
    return Term("vision activations", vision.layers * layer + fixed,
                f"{what}: {vision.layers} layers × {layer / patches:,.0f} B/patch + pixels, norms and projector",
                "saved-for-backward tensors per op (memory.vision, equal to saved-tensor hooks on CPU)", "saved")


def generation_term(shape: ModelShape, setup: MemorySetup) -> Term:
    """GRPO without vLLM: transformers ``generate`` keeps a KV cache for every completion generated at once."""
    n = setup.completions_per_generation
    prompt = setup.max_prompt_length or 512
    completion = setup.max_completion_length or 256
    per_token = 2 * shape.layers * shape.kv_heads * shape.head_dim * setup.compute_bytes
    kv = n * (prompt + completion) * per_token
    logits = n * shape.vocab * 4 * 2  # the last position's fp32 logits and the processed scores
    return Term("generation KV cache", kv + logits,
                f"{n} completions × ({prompt} + {completion}) tokens × 2 × {shape.layers} layers × "
                f"{shape.kv_heads * shape.head_dim} × {setup.compute_bytes} B",
                "transformers generate: DynamicCache of keys and values per layer", "generation")


def _moments(terms: list[Term]) -> dict:
    """Allocated bytes at each moment of a step.

    - forward end: resident + saved activations + autocast's weight cache + the loss's forward tensors;
    - backward start: resident + saved activations + the loss's backward tensors;
    - last layer's backward: resident + saved activations (+ the recomputed layer) + a layer's gradients in
      flight + the LM head's gradient;
    - backward end: resident + every gradient + the larger of the first layer's backward and the tied embedding's
      gradient being added;
    - optimizer step: resident + every gradient + the optimizer's temporaries;
    - generation: resident + the KV cache.
    """
    by = {t.name: t.bytes for t in terms}
    of = lambda moment: sum(t.bytes for t in terms if t.moment == moment)  # noqa: E731
    resident, saved = of("resident"), of("saved")
    loss = by.get("logits and loss", 0)
    grads = by.get("gradients", 0)
    head_grad = by.get("tied embedding gradient", 0)
    moments = {
        "backward start": resident + saved + loss,
        "last layer's backward": resident + saved + of("layer-backward") + head_grad,
        "backward end": resident + grads + max(of("layer-backward"), head_grad),
    }
    forward = of("forward-end")
    if forward:
        formula = next((t.formula for t in terms if t.name == "logits and loss"), "")
        per = 12 if "× 12 B" in formula else 16 if "× 16 B" in formula else 0
        moments["forward end"] = resident + saved + forward + (loss * (per - 2) // per if per else loss)
    if by.get("optimizer step"):
        moments["optimizer step"] = resident + grads + by["optimizer step"]
    if "generation KV cache" in by:
        moments["generation"] = resident + by["generation KV cache"]
    return moments
