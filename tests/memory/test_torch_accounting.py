"""The estimator's parameter, gradient and optimizer-state bytes equal torch's own accounting.

For random tiny configs of seven architectures (hypothesis), a real transformers model is built from the config
(random init), trained one step on CPU, and torch is asked what it holds: the bytes of every parameter, of every
``.grad`` after backward, and of AdamW's ``exp_avg``/``exp_avg_sq`` after ``step()``. The estimator reads the same
config (as a dict, through transformers' config class defaults) and must give exactly those bytes. LoRA runs go
through peft's ``get_peft_model`` (all-linear or named targets, DoRA too). AdamW's per-tensor ``step`` counter is a
0-d host tensor outside the GPU states and is not compared.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
peft = pytest.importorskip("peft")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from mldebug_cli.memory.estimate import (  # noqa: E402
    adapter_parameters,
    optimizer_bytes,
    trainable_parameters,
    weight_bytes,
)
from mldebug_cli.memory.setup import MemorySetup, PeftSetup  # noqa: E402
from mldebug_cli.memory.shapes import shape_from_config  # noqa: E402

ARCHITECTURES = ("llama", "qwen2", "qwen3", "mistral", "gemma2", "gemma3_text", "phi3")
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


@st.composite
def tiny_configs(draw):
    model_type = draw(st.sampled_from(ARCHITECTURES))
    kv = draw(st.sampled_from((1, 2)))
    heads = kv * draw(st.sampled_from((1, 2)))
    head_dim = draw(st.sampled_from((8, 16)))
    config = {
        "model_type": model_type,
        "vocab_size": draw(st.integers(32, 96)),
        "hidden_size": draw(st.sampled_from((16, 32, 48))),
        "num_hidden_layers": draw(st.integers(1, 3)),
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "intermediate_size": draw(st.sampled_from((24, 40, 64))),
        "max_position_embeddings": 64,
    }
    if model_type != "phi3" or draw(st.booleans()):
        config["head_dim"] = head_dim
    if model_type == "phi3":
        config["head_dim"] = config["hidden_size"] // heads  # Phi3Attention derives head_dim from hidden/heads
        config["pad_token_id"] = 0
    if draw(st.booleans()):  # some configs say whether they tie; the rest take the class default
        config["tie_word_embeddings"] = draw(st.booleans())
    return config


def _model(config: dict, dtype: str):
    from transformers import AutoConfig, AutoModelForCausalLM

    built = AutoConfig.for_model(**config)
    built.attn_implementation = "eager"
    torch.manual_seed(0)
    return AutoModelForCausalLM.from_config(built, dtype=DTYPES[dtype])


def _one_step(model, vocab: int):
    ids = torch.randint(0, vocab, (2, 6))
    model(input_ids=ids, labels=ids).loss.backward()
    trainable = [p for p in model.parameters() if p.requires_grad]
    grads = sum(p.grad.nbytes for p in trainable if p.grad is not None)
    optimizer = torch.optim.AdamW(trainable, lr=1e-3, foreach=False)
    optimizer.step()
    states = sum(state[key].nbytes for state in optimizer.state.values() for key in ("exp_avg", "exp_avg_sq"))
    return grads, states


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(config=tiny_configs(), dtype=st.sampled_from(("fp32", "bf16")))
def test_full_fine_tuning_bytes_equal_torch(config, dtype):
    model = _model(config, dtype)
    shape = shape_from_config(dict(config))
    setup = MemorySetup("transformers", "sft", 2, weights_dtype=dtype, compute_dtype=dtype, optimizer="adamw_torch")
    unique = {id(p): p for p in model.parameters()}.values()
    assert shape.parameters == sum(p.numel() for p in unique), config
    assert shape.tied == (model.get_output_embeddings().weight is model.get_input_embeddings().weight)
    assert weight_bytes(shape, setup)[0] == sum(p.nbytes for p in unique)
    grads, states = _one_step(model, config["vocab_size"])
    trainable = trainable_parameters(shape, setup)
    assert trainable * setup.weight_bytes == grads
    assert optimizer_bytes(setup, trainable, setup.weight_bytes)[0] == states


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(config=tiny_configs(), r=st.sampled_from((1, 2, 4, 8)), dora=st.booleans(),
       targets=st.sampled_from(("all-linear", ("q_proj", "v_proj"), ("o_proj", "down_proj"))))
def test_lora_adapter_bytes_equal_torch(config, r, dora, targets):
    from peft import LoraConfig, get_peft_model

    if config["model_type"] == "phi3" and targets == ("q_proj", "v_proj"):
        targets = ("qkv_proj",)  # Phi-3 has no q_proj/v_proj to target
    model = _model(config, "bf16")
    wrapped = get_peft_model(model, LoraConfig(r=r, target_modules=targets if isinstance(targets, str) else list(targets),
                                               use_dora=dora, lora_dropout=0.0))
    shape = shape_from_config(dict(config))
    setup = MemorySetup("transformers", "sft", 2, weights_dtype="bf16", compute_dtype="bf16", optimizer="adamw_torch",
                        peft=PeftSetup("dora" if dora else "lora", r, targets))
    trainable = [p for p in wrapped.parameters() if p.requires_grad]
    assert adapter_parameters(shape, setup) == sum(p.numel() for p in trainable), (config, targets)
    assert all(p.dtype == torch.float32 for p in trainable)  # peft's autocast_adapter_dtype keeps them fp32
    grads, states = _one_step(wrapped, config["vocab_size"])
    assert trainable_parameters(shape, setup) * 4 == grads
    assert optimizer_bytes(setup, trainable_parameters(shape, setup), 4)[0] == states


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(config=tiny_configs(), r=st.sampled_from((2, 4)))
def test_modules_to_save_are_copies_in_the_weights_dtype(config, r):
    from peft import LoraConfig, get_peft_model

    config = {**config, "tie_word_embeddings": False}
    model = _model(config, "bf16")
    wrapped = get_peft_model(model, LoraConfig(r=r, target_modules="all-linear", modules_to_save=["lm_head"],
                                               lora_dropout=0.0))
    shape = shape_from_config(dict(config))
    setup = MemorySetup("transformers", "sft", 2, weights_dtype="bf16", compute_dtype="bf16", optimizer="adamw_torch",
                        peft=PeftSetup("lora", r, "all-linear", ("lm_head",)))
    from mldebug_cli.memory.batches import uniform_batch
    from mldebug_cli.memory.estimate import estimate

    e = estimate(shape, setup, uniform_batch(2, 6))
    grads, states = _one_step(wrapped, config["vocab_size"])
    assert e.term("gradients").bytes == grads
    assert e.term("optimizer states").bytes == states
    assert e.term("adapters").bytes + e.term("modules to save").bytes == sum(
        p.nbytes for p in wrapped.parameters() if p.requires_grad)
