"""The estimator's rules, term by term, on the published model shapes (no torch)."""

from __future__ import annotations

import json

import pytest
from golden_setups import MODELS

from mldebug_cli.core.errors import InputError, UsageError
from mldebug_cli.memory.batches import micro_batches, pair_batches, sequence_batches, uniform_batch
from mldebug_cli.memory.estimate import GIB, estimate, weight_bytes
from mldebug_cli.memory.gpus import gpu_memory
from mldebug_cli.memory.setup import MemorySetup, PeftSetup
from mldebug_cli.memory.shapes import read_model_shape, shape_from_config

QWEN05 = read_model_shape(MODELS / "qwen2.5-0.5b")
QWEN15 = read_model_shape(MODELS / "qwen2.5-1.5b")
LLAMA1 = read_model_shape(MODELS / "llama-3.2-1b")
FULL = MemorySetup("trl", "sft", 4, weights_dtype="bf16", compute_dtype="bf16", loss_kernel="fused-chunks")


def test_shapes_read_from_published_configs():
    assert (QWEN05.layers, QWEN05.hidden, QWEN05.heads, QWEN05.kv_heads, QWEN05.head_dim) == (24, 896, 14, 2, 64)
    assert QWEN05.tied and QWEN05.qkv_bias and not LLAMA1.qkv_bias
    assert LLAMA1.head_dim == 64 and LLAMA1.vocab == 128256


def test_shape_errors_name_the_file(tmp_path):
    with pytest.raises(InputError, match="no model config.json"):
        read_model_shape(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert"}))
    with pytest.raises(InputError, match="no hidden_size"):
        read_model_shape(tmp_path)
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(InputError, match="not a readable config.json"):
        read_model_shape(tmp_path)


def test_text_config_of_a_multimodal_model():
    config = json.loads((MODELS / "llama-3.2-1b" / "config.json").read_text())
    wrapped = {"model_type": "llava", "text_config": config, "tie_word_embeddings": True}
    assert shape_from_config(wrapped).parameters == LLAMA1.parameters


def test_weights_by_dtype_and_bitsandbytes_layout():
    p = QWEN15.parameters
    assert weight_bytes(QWEN15, FULL)[0] == 2 * p
    assert weight_bytes(QWEN15, FULL.changed(weights_dtype="fp32"))[0] == 4 * p
    linear = QWEN15.layers * QWEN15.layer_linear_parameters
    rest = p - linear
    four = weight_bytes(QWEN15, FULL.changed(quantization="4bit"))[0]
    assert four == int(linear * (0.5 + 4 / 64) + rest * 2)  # one fp32 absmax per 64-value block
    nested = weight_bytes(QWEN15, FULL.changed(quantization="4bit", double_quant=True))[0]
    assert nested == int(linear * (0.5 + 1 / 64 + 4 / (64 * 256)) + rest * 2)
    rows = QWEN15.layers * sum(x.fan_out for x in QWEN15.layer_linears)
    assert weight_bytes(QWEN15, FULL.changed(quantization="8bit"))[0] == linear + 4 * rows + rest * 2


def test_lora_keeps_adapters_and_their_states_in_fp32():
    lora = FULL.changed(peft=PeftSetup("lora", 16, "all-linear"))
    e = estimate(QWEN15, lora, uniform_batch(4, 512))
    adapters = e.term("adapters").bytes
    assert adapters == 4 * 16 * QWEN15.layers * sum(x.fan_in + x.fan_out for x in QWEN15.layer_linears)
    assert e.term("gradients").bytes == adapters
    assert e.term("optimizer states").bytes == 2 * adapters
    assert e.term("weights").bytes == 2 * QWEN15.parameters


def test_optimizers():
    b = uniform_batch(1, 128)
    adam = estimate(QWEN05, FULL, b).term("optimizer states").bytes
    assert adam == 2 * 2 * QWEN05.parameters  # bf16 parameters: torch keeps bf16 states
    eight = estimate(QWEN05, FULL.changed(optimizer="paged_adamw_8bit"), b).term("optimizer states")
    assert eight.bytes == int(QWEN05.parameters * 2 * (1 + 4 / 256)) and "paged" in eight.formula
    assert estimate(QWEN05, FULL.changed(optimizer="sgd"), b).term("optimizer states").bytes == 0
    foreach = estimate(QWEN05, FULL.changed(optimizer="adamw_torch"), b)
    assert foreach.term("optimizer step").bytes == 2 * QWEN05.parameters


def test_zero_and_fsdp_shard_per_gpu():
    b = uniform_batch(1, 128)
    single = estimate(QWEN15, FULL, b)
    z2 = estimate(QWEN15, FULL.changed(world_size=8, zero_stage=2), b)
    z3 = estimate(QWEN15, FULL.changed(world_size=8, zero_stage=3), b)
    assert z2.term("weights").bytes == 2 * QWEN15.parameters
    assert z2.term("gradients").bytes == 2 * QWEN15.parameters // 8
    assert z2.term("master weights").bytes == 4 * QWEN15.parameters // 8
    assert z3.term("weights").bytes == 2 * QWEN15.parameters // 8
    assert z3.allocated < z2.allocated < single.allocated + z2.term("master weights").bytes
    offload = estimate(QWEN15, FULL.changed(world_size=8, zero_stage=3, offload_optimizer=True), b)
    assert offload.term("optimizer states").bytes == 0 and offload.host_bytes > 0
    fsdp = estimate(QWEN15, FULL.changed(world_size=4, fsdp="full"), b)
    assert fsdp.term("weights").bytes == 2 * QWEN15.parameters // 4


def test_logits_full_loss_against_fused_chunks():
    batch = uniform_batch(8, 2048)
    full = estimate(QWEN05, FULL.changed(loss_kernel="full"), batch).term("logits and loss")
    assert full.bytes == 12 * 8 * 2048 * QWEN05.vocab
    fused = estimate(QWEN05, FULL, batch).term("logits and loss")
    assert fused.bytes < full.bytes / 20 and "never built" in fused.formula
    liger = estimate(QWEN05, FULL.changed(loss_kernel="liger"), batch).term("logits and loss")
    assert liger.bytes < full.bytes / 4


def test_eager_attention_keeps_heads_times_length_squared():
    short, long = uniform_batch(1, 1024), uniform_batch(1, 4096)
    sdpa = [estimate(LLAMA1, FULL, b).term("activations").bytes for b in (short, long)]
    eager = [estimate(LLAMA1, FULL.changed(attention="eager"), b).term("activations").bytes for b in (short, long)]
    assert sdpa[1] == pytest.approx(4 * sdpa[0], rel=0.01)  # linear in length
    assert eager[1] - sdpa[1] > 12 * (eager[0] - sdpa[0])  # the s² part grows 16×


def test_checkpointing_keeps_layer_inputs_only():
    batch = uniform_batch(8, 1024)
    off = estimate(QWEN05, FULL, batch)
    on = estimate(QWEN05, FULL.changed(gradient_checkpointing=True), batch)
    assert on.term("activations").bytes < off.term("activations").bytes / 10
    assert on.term("recomputed layer").bytes == pytest.approx(off.term("activations").bytes / QWEN05.layers, rel=0.05)


def test_reference_copy_and_grpo_generation():
    dpo = estimate(QWEN05, FULL.changed(task="dpo", reference="copy"), uniform_batch(8, 512))
    assert dpo.term("reference model").bytes == 2 * QWEN05.parameters
    grpo = FULL.changed(task="grpo", num_generations=8, max_prompt_length=256, max_completion_length=2048,
                        gradient_accumulation_steps=2)
    e = estimate(QWEN05, grpo, uniform_batch(4, 256 + 2048, 4 * 2048))
    kv = e.term("generation KV cache")
    # completions generated at once: micro_batch 4 × accumulation 2 (TRL's steps_per_generation default)
    per_token = 2 * QWEN05.layers * QWEN05.kv_heads * QWEN05.head_dim * 2
    assert kv.bytes == 8 * (256 + 2048) * per_token + 8 * QWEN05.vocab * 8
    assert "generation" in e.moments


def test_padding_to_the_longest_names_the_step():
    lengths = [100] * 10 + [3000] + [100] * 5
    order = list(range(16))[::-1]
    batches = micro_batches(lengths, 4, max_length=4096, order=order, gradient_accumulation_steps=2)
    peak = max(batches, key=lambda b: b.tokens)
    assert peak.length == 3000 and 10 in peak.rows and peak.step == 1 and peak.tokens == 4 * 3000
    packed = micro_batches(lengths, 4, max_length=1024, packing=True)
    assert packed[0].tokens == min(sum(min(n, 1024) for n in lengths), 4 * 1024)
    free = micro_batches(lengths, 4, max_length=4096, padding_free=True)
    assert max(b.tokens for b in free) == 3000 + 300


def test_preference_pairs_pad_both_sides_together():
    (batch,) = pair_batches([(10, 50, 20), (30, 5, 90)], 2)
    assert (batch.sequences, batch.length, batch.label_tokens) == (4, 120, 165)
    (same,) = sequence_batches([(0, (60, 30), 70), (1, (35, 120), 95)], 2)
    assert (same.sequences, same.length, same.label_tokens, same.rows) == (4, 120, 165, (0, 1))


def test_gpu_table_and_flags():
    assert gpu_memory("h100-80gb", None) == ("H100-80GB", 79.6)
    assert gpu_memory("A100-40", None)[0] == "A100-40GB"
    assert gpu_memory(None, 40) == ("40 GiB", 40.0)
    assert gpu_memory(None, None) is None
    with pytest.raises(UsageError):
        gpu_memory("A100", None)  # ambiguous
    with pytest.raises(UsageError):
        gpu_memory("H100-80GB", 80)


def test_peak_is_the_largest_moment():
    e = estimate(QWEN05, FULL, uniform_batch(4, 512))
    assert e.allocated == max(e.moments.values())
    assert e.per_gpu > e.allocated
    assert e.allocated > 4 * QWEN05.parameters * 2 / GIB


def test_defaults_come_from_the_config_class_not_the_keys_present():
    # gemma-3-1b's published config.json omits tie_word_embeddings; Gemma3TextConfig ties by default
    gemma = {"model_type": "gemma3_text", "vocab_size": 262144, "hidden_size": 1152, "num_hidden_layers": 26,
             "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 256, "intermediate_size": 6912}
    shape = shape_from_config(gemma)
    assert shape.tied and shape.parameters == 999_885_952
    assert shape.defaults == "defaults of transformers Gemma3TextConfig"
    assert not shape_from_config(gemma, class_defaults=False).tied  # the keys alone would count the head twice


def test_loss_by_transformers_version_and_grpo_scores_completions_only():
    batch = uniform_batch(4, 512)
    full = FULL.changed(loss_kernel="full")
    new = estimate(QWEN05, full, batch).term("logits and loss")
    old = estimate(QWEN05, full.changed(transformers_version=(4, 44)), batch).term("logits and loss")
    assert new.bytes == 12 * 4 * 512 * QWEN05.vocab and old.bytes == 16 * 4 * 512 * QWEN05.vocab
    assert "<= 4.45" in old.source and ">= 4.46" in new.source
    # GRPO without the fused head: model(..., logits_to_keep=completion + 1) on per_device_train_batch_size
    # completions (TRL 1.16 GRPOTrainer._get_per_token_logps_and_entropies; axolotl 0.19 passes micro_batch_size)
    grpo = full.changed(task="grpo", num_generations=8, max_prompt_length=45, max_completion_length=2048)
    completions = uniform_batch(8, 45 + 2048, 8 * 2048)
    logits = estimate(QWEN05, grpo, completions).term("logits and loss")
    assert logits.bytes == 12 * 8 * (2048 + 1) * QWEN05.vocab


def test_trl_qlora_keeps_adapters_bf16_and_the_rest_in_the_load_dtype():
    qlora = FULL.changed(quantization="4bit", double_quant=True, weights_dtype="fp32", peft=PeftSetup("lora", 16, "all-linear"),
                         adapter_dtype="bf16", unquantized_dtype="fp32")
    e = estimate(LLAMA1, qlora, uniform_batch(2, 1024))
    linear = LLAMA1.layers * LLAMA1.layer_linear_parameters
    rest = LLAMA1.parameters - linear
    assert e.term("weights").bytes == int(linear * (0.5 + 1 / 64 + 4 / (64 * 256)) + rest * 4)
    adapters = e.term("adapters")
    assert "(bf16)" in adapters.formula and e.term("gradients").bytes == adapters.bytes
    widest = max(x.fan_in * x.fan_out for x in LLAMA1.layer_linears)
    assert e.term("dequantised weight").bytes == widest * 2
    assert e.term("LM head cast").bytes == LLAMA1.vocab * LLAMA1.hidden * 2


def test_8bit_lora_counts_the_weight_its_backward_dequantises():
    # bitsandbytes MatMul8bitLt.backward: CB.to(dtype_A, copy=True) * SCB / 127 for the input's gradient, one at a time
    eight = FULL.changed(quantization="8bit", peft=PeftSetup("lora", 16, "all-linear"))
    e = estimate(LLAMA1, eight, uniform_batch(2, 1024))
    widest = max(x.fan_in * x.fan_out for x in LLAMA1.layer_linears)
    term = e.term("dequantised weight")
    assert term.bytes == widest * 2 and "MatMul8bitLt" in term.source and term.moment == "layer-backward"
    assert not any(t.name == "dequantised weight" for t in estimate(LLAMA1, FULL, uniform_batch(2, 1024)).terms)


def test_the_fused_loss_fix_is_re_estimated_and_can_fit_alone():
    from mldebug_cli.pipelines.memory import Lengths, memory_review

    setup = MemorySetup("transformers", "sft", 16, weights_dtype="bf16", compute_dtype="bf16", loss_kernel="full",
                        gradient_checkpointing=True, peft=PeftSetup("lora", 16, "all-linear"), max_length=2048)
    rows = [(i, (2048,), 2048) for i in range(32)]
    before = memory_review(QWEN05, setup, Lengths(rows), None, None, {}).peak
    limit = int(before.per_gpu * 0.6)
    review = memory_review(QWEN05, setup, Lengths(rows), ("test", limit / GIB), limit, {})
    fused = review.fixes[0]
    assert fused.key == "loss_kernel" and fused.change.startswith("use_liger_kernel: true")
    assert fused.after <= limit < fused.before  # alone it makes the run fit, and the hint names it
    from mldebug_cli.checks.memory import first_fitting_fix

    assert first_fitting_fix(review) is fused
