"""A causal LM's shapes read from its ``config.json`` (no torch): what every memory term is computed from.

Parameter counts follow the decoder-only layout transformers builds for Llama, Qwen2/2.5/3, Mistral, Gemma
and Phi-3 style models (embedding, per layer q/k/v/o projections and a gated MLP, RMSNorms, an LM head unless
``tie_word_embeddings``), with each family's extra norms (Gemma 2/3: four per layer; Qwen3, Gemma 3: q_norm and
k_norm; OLMo 2: q_norm and k_norm over the projections). Keys the published ``config.json`` omits take the default of
transformers' own config class for its ``model_type`` (Gemma 3 ties its embedding by default; its config.json does
not say so), never a guess from the keys present. Checked exactly against torch's own parameter count of real tiny
models of each family in tests/memory/test_torch_accounting.py.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from mldebug_cli.core.errors import InputError, in_one_line
from mldebug_cli.core.safe_io import read_text
from mldebug_cli.memory.linear import Linear
from mldebug_cli.memory.vision import VisionShape, vision_shape
from mldebug_cli.sources.model_config import checked_sizes
from mldebug_cli.sources.tokenizer import torch_hidden_from_transformers

# model types whose q/k/v projections carry a bias (Qwen2 and its descendants)
QKV_BIAS = frozenset({"qwen2", "qwen2_moe", "qwen2_vl", "qwen2_5_vl", "qwen2_vl_text", "qwen2_5_vl_text"})
# RMSNorms of hidden width per decoder layer (input and post-attention; Gemma 2/3 add pre/post feed-forward norms)
FOUR_NORMS = frozenset({"gemma2", "gemma3", "gemma3_text"})
# per-head q_norm/k_norm of head_dim (Qwen3, Gemma 3); OLMo 2 normalises the whole q and k projections
HEAD_NORMS = frozenset({"qwen3", "qwen3_moe", "gemma3", "gemma3_text"})
PROJECTION_NORMS = frozenset({"olmo2"})
# Phi-3 fuses q/k/v into qkv_proj and gate/up into gate_up_proj (what LoRA targets and adds r × (in + out) to)
FUSED_PROJECTIONS = frozenset({"phi3"})
REQUIRED = ("hidden_size", "num_attention_heads", "num_hidden_layers", "vocab_size")


@dataclass(frozen=True)
class ModelShape:
    model_type: str
    vocab: int
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    tied: bool
    qkv_bias: bool
    experts: int = 0  # MoE: experts per layer (all resident), 0 for a dense MLP
    experts_per_token: int = 0
    source: str = ""
    defaults: str = ""  # where the keys config.json omits came from
    vision: VisionShape | None = None  # a vision-language model's tower and projector (memory.vision)

    @property
    def norm_parameters(self) -> int:
        """The norm weights of one decoder layer."""
        norms = (4 if self.model_type in FOUR_NORMS else 2) * self.hidden
        if self.model_type in HEAD_NORMS:
            norms += 2 * self.head_dim
        elif self.model_type in PROJECTION_NORMS:
            norms += (self.heads + self.kv_heads) * self.head_dim
        return norms

    @property
    def layer_linears(self) -> tuple[Linear, ...]:
        h, q, kv = self.hidden, self.heads * self.head_dim, self.kv_heads * self.head_dim
        if self.model_type in FUSED_PROJECTIONS:
            return (Linear("qkv_proj", h, q + 2 * kv, self.qkv_bias), Linear("o_proj", q, h),
                    Linear("gate_up_proj", h, 2 * self.intermediate), Linear("down_proj", self.intermediate, h))
        attention = (Linear("q_proj", h, q, self.qkv_bias), Linear("k_proj", h, kv, self.qkv_bias),
                     Linear("v_proj", h, kv, self.qkv_bias), Linear("o_proj", q, h))
        mlp = (Linear("gate_proj", h, self.intermediate), Linear("up_proj", h, self.intermediate),
               Linear("down_proj", self.intermediate, h))
        return attention + mlp * max(1, self.experts)

    @property
    def layer_linear_parameters(self) -> int:
        return sum(x.parameters for x in self.layer_linears) + (self.hidden * self.experts if self.experts else 0)

    @property
    def layer_parameters(self) -> int:
        return self.layer_linear_parameters + self.norm_parameters

    @property
    def embedding_parameters(self) -> int:
        return self.vocab * self.hidden

    @property
    def lm_head_parameters(self) -> int:
        return 0 if self.tied else self.vocab * self.hidden

    @property
    def parameters(self) -> int:
        return (self.embedding_parameters + self.lm_head_parameters + self.layers * self.layer_parameters
                + self.hidden)

    @property
    def vision_parameters(self) -> int:
        return self.vision.parameters if self.vision is not None else 0

    def describe(self) -> str:
        return (f"{self.model_type}: {self.parameters / 1e9:.2f}B parameters, {self.layers} layers, hidden {self.hidden}, "
                f"{self.heads} heads ({self.kv_heads} kv, dim {self.head_dim}), MLP {self.intermediate}, vocab {self.vocab}"
                f"{', tied embeddings' if self.tied else ''}"
                + (f"; {self.vision.describe()}" if self.vision is not None else ""))


def read_model_shape(path: str | Path) -> ModelShape:
    """``path`` is a model folder or its ``config.json``."""
    path = Path(path)
    file = path / "config.json" if path.is_dir() else path
    try:
        config = json.loads(read_text(file))
    except FileNotFoundError:
        raise InputError(f"{file}: no model config.json there", "pass --model DIR, a folder with the model's config.json") from None
    except (OSError, ValueError, RecursionError) as error:  # ValueError: not UTF-8, not JSON, a number too long
        raise InputError(f"{file}: not a readable config.json ({in_one_line(error, 200)})") from None
    if not isinstance(config, dict):
        raise InputError(f"{file}: config.json is not a JSON object")
    return shape_from_config(config, str(file))


def with_class_defaults(config: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """``config`` completed by transformers' config class for its ``model_type`` (what ``from_pretrained`` builds),
    the text part of a multimodal config; unchanged, saying why, when transformers does not know the type."""
    model_type = config.get("model_type")
    try:
        with torch_hidden_from_transformers():  # config classes need no torch; memory's process keeps it out
            from transformers import CONFIG_MAPPING

        cls = CONFIG_MAPPING[str(model_type)]
    except (ImportError, KeyError):
        return config, f"keys as written (transformers has no config class for model_type {model_type!r})"
    try:
        built = cls(**{k: v for k, v in config.items() if k != "model_type"})
        text = built.get_text_config()
        full = text.to_dict()
        full["tie_word_embeddings"] = bool(getattr(text, "tie_word_embeddings", getattr(built, "tie_word_embeddings", False)))
        full["model_type"] = getattr(text, "model_type", model_type)
    except Exception as error:  # noqa: BLE001 - a config transformers refuses is read as written, said
        return config, f"keys as written (transformers {cls.__name__} refused it: {in_one_line(error, 120)})"
    return full, f"defaults of transformers {type(text).__name__}"


def _text_part(config: dict[str, Any]) -> dict[str, Any]:
    """The language model's keys: a vision-language config's `text_config`, else the config itself."""
    text = config.get("text_config")
    return text if isinstance(text, dict) else config


def shape_from_config(config: dict[str, Any], source: str = "", class_defaults: bool = True) -> ModelShape:
    checked_sizes(config, source or "config.json")  # 1e9 experts, 1e999 layers, zero heads: an error, not an estimate
    defaults = ""
    original = config
    written = _text_part(config)
    missing = next((k for k in REQUIRED if k not in written), None)
    if missing:  # the shape itself must be written down; only the rest takes the class's defaults
        raise InputError(f"{source or 'config.json'}: no {missing} (not a decoder-only language model config?)")
    if class_defaults:
        config, defaults = with_class_defaults(config)
    text = _text_part(config)
    try:
        hidden = int(text["hidden_size"])
        heads = int(text["num_attention_heads"])
        shape = ModelShape(
            model_type=str(text.get("model_type") or config.get("model_type") or "unknown"),
            vocab=int(text["vocab_size"]), hidden=hidden, layers=int(text["num_hidden_layers"]), heads=heads,
            kv_heads=int(text.get("num_key_value_heads") or heads),
            head_dim=int(text.get("head_dim") or hidden // heads),
            intermediate=int(text["moe_intermediate_size"] if text.get("num_experts") else text["intermediate_size"]),
            tied=bool(config.get("tie_word_embeddings", text.get("tie_word_embeddings", False))),
            qkv_bias=bool(text.get("attention_bias", str(text.get("model_type")) in QKV_BIAS)),
            experts=int(text.get("num_experts") or text.get("num_local_experts") or 0),
            experts_per_token=int(text.get("num_experts_per_tok") or 0),
            source=source, defaults=defaults,
        )
        if class_defaults and isinstance(original.get("vision_config"), dict):
            try:
                shape = replace(shape, vision=vision_shape(original, hidden))
            except Exception as error:  # noqa: BLE001 - transformers' config class refuses the vision_config its way
                raise InputError(f"{source or 'config.json'}: vision_config is not a readable vision tower "
                                 f"({in_one_line(error, 160)})") from None
    except KeyError as absent:
        raise InputError(f"{source or 'config.json'}: no {absent.args[0]} (not a decoder-only language model config?)") from None
    except (TypeError, ValueError) as error:
        raise InputError(f"{source or 'config.json'}: a shape value is not a number ({error})") from None
    return shape
