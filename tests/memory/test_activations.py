"""The estimator's model-state and activation terms against real tensors on CPU.

- parameters: transformers' own models built on the meta device (no memory) from the fixture configs, and peft's
  LoRA on them: every count equal;
- activations: the bytes autograd saves for backward in one decoder layer (saved-tensor hooks, unique storages,
  parameters excluded), measured as the difference between a 3-layer and a 2-layer model of the same shape,
  against ``layer_activation_bytes``: equal for bf16 and fp32 weights, full and LoRA, sdpa and eager.
"""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from golden_setups import MODELS  # noqa: E402

from mldebug_cli.memory.batches import uniform_batch  # noqa: E402
from mldebug_cli.memory.estimate import adapter_parameters, layer_activation_bytes  # noqa: E402
from mldebug_cli.memory.setup import MemorySetup, PeftSetup  # noqa: E402
from mldebug_cli.memory.shapes import read_model_shape, shape_from_config  # noqa: E402

CONFIGS = ("qwen2.5-0.5b", "qwen2.5-1.5b", "llama-3.2-1b")
SMALL = (dict(hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2, head_dim=16),
         dict(hidden_size=96, intermediate_size=160, num_attention_heads=2, num_key_value_heads=1, head_dim=32))
BATCH, SEQ = 2, 24


def _config(name: str, layers: int, small: dict) -> dict:
    config = json.loads((MODELS / name / "config.json").read_text())
    config.update(small, num_hidden_layers=layers, vocab_size=512)
    config.pop("layer_types", None)
    return config


@pytest.mark.parametrize("name", CONFIGS)
def test_parameter_count_equals_transformers(name):
    config = transformers.AutoConfig.from_pretrained(MODELS / name)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    assert read_model_shape(MODELS / name).parameters == sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("targets", ["all-linear", ("q_proj", "v_proj")])
def test_lora_parameters_equal_peft(targets):
    peft = pytest.importorskip("peft")
    config = transformers.AutoConfig.from_pretrained(MODELS / "qwen2.5-0.5b")
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    wrapped = peft.get_peft_model(model, peft.LoraConfig(r=16, target_modules=list(targets) if isinstance(targets, tuple)
                                                          else targets, task_type="CAUSAL_LM"))
    trainable = sum(p.numel() for p in wrapped.parameters() if p.requires_grad)
    setup = MemorySetup("trl", "sft", 1, peft=PeftSetup("lora", 16, targets))
    assert adapter_parameters(read_model_shape(MODELS / "qwen2.5-0.5b"), setup) == trainable


def _saved_bytes(config: dict, weights: str, amp: bool, attn: str, lora: bool, padded: bool = False) -> int:
    """Bytes of the distinct non-parameter storages autograd saves in one forward with labels."""
    from torch.autograd.graph import saved_tensors_hooks

    torch.manual_seed(0)
    dtype = {"bf16": torch.bfloat16, "fp32": torch.float32}[weights]
    model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**config), dtype=dtype,
                                                          attn_implementation=attn)
    if lora:
        peft = pytest.importorskip("peft")
        model = peft.get_peft_model(model, peft.LoraConfig(r=8, target_modules="all-linear", task_type="CAUSAL_LM"))
    model.train()
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen: dict[int, int] = {}

    def pack(tensor):
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in params:
            seen[storage.data_ptr()] = storage.nbytes()
        return tensor

    ids = torch.randint(0, config["vocab_size"], (BATCH, SEQ))
    mask = torch.ones_like(ids)
    if padded:  # the second row is 4 tokens shorter: the batch carries a padding mask
        mask[1, -4:] = 0
    with saved_tensors_hooks(pack, lambda t: t), torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
        model(input_ids=ids, attention_mask=mask, labels=ids)
    return sum(seen.values())


def _cast_weight_bytes(config: dict, lora: bool, base: bool) -> int:
    """Autocast's bf16 copies of one layer's weights: the base weights' when they are fp32 (a term of their own in
    the estimate), the fp32 adapters' (per layer, not per token: left out of the activations)."""
    shape = shape_from_config(config)
    copies = shape.layer_linear_parameters * 2 if base else 0
    if lora:
        copies += sum(8 * (x.fan_in + x.fan_out) for x in shape.layer_linears) * 2
    return copies


@pytest.mark.parametrize("small", SMALL, ids=["h64", "h96"])
@pytest.mark.parametrize("weights,amp,attn,lora", [
    ("bf16", True, "sdpa", False), ("bf16", True, "eager", False), ("bf16", True, "sdpa", True),
    ("bf16", True, "eager", True), ("fp32", False, "sdpa", False), ("fp32", True, "sdpa", False),
    ("fp32", True, "sdpa", True),
])
def test_layer_activations_equal_saved_tensors(small, weights, amp, attn, lora):
    measured = (_saved_bytes(_config("qwen2.5-0.5b", 3, small), weights, amp, attn, lora)
                - _saved_bytes(_config("qwen2.5-0.5b", 2, small), weights, amp, attn, lora))
    config = _config("qwen2.5-0.5b", 2, small)
    measured -= _cast_weight_bytes(config, lora, base=amp and weights == "fp32")
    setup = MemorySetup("trl", "sft", BATCH, weights_dtype=weights, compute_dtype="bf16" if amp else weights,
                        attention=attn, peft=PeftSetup("lora", 8, "all-linear") if lora else None)
    estimated = layer_activation_bytes(shape_from_config(config), setup, uniform_batch(BATCH, SEQ))
    assert estimated == pytest.approx(measured, rel=0.01, abs=16 * BATCH * SEQ)


@pytest.mark.parametrize("small", SMALL, ids=["h64", "h96"])
def test_a_padding_mask_makes_sdpa_repeat_k_and_v(small):
    """transformers' sdpa passes grouped k/v to torch only without a mask; with one it repeats them to every head."""
    measured = (_saved_bytes(_config("qwen2.5-0.5b", 3, small), "bf16", True, "sdpa", False, padded=True)
                - _saved_bytes(_config("qwen2.5-0.5b", 2, small), "bf16", True, "sdpa", False, padded=True))
    setup = MemorySetup("trl", "sft", BATCH, weights_dtype="bf16", compute_dtype="bf16", attention="sdpa")
    batch = uniform_batch(BATCH, SEQ)
    padded = type(batch)(batch.sequences, batch.length, batch.tokens, batch.label_tokens, padded=True)
    shape = shape_from_config(_config("qwen2.5-0.5b", 2, small))
    # within 3%: with a mask, torch's CPU attention kernel saves a little more or less than the log-sum-exp
    assert layer_activation_bytes(shape, setup, padded) == pytest.approx(measured, rel=0.03)
    assert layer_activation_bytes(shape, setup, padded) > layer_activation_bytes(shape, setup, batch)
