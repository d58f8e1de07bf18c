"""A model's ``config.json`` sizes checked against sane ranges before anything is computed or allocated from them.

``num_experts: 1e9``, ``num_hidden_layers: 1e6``, ``hidden_size: 1e999`` (JSON's infinity), a 4,000-digit vocabulary
or zero attention heads are the config's error, named by file and key, before memory multiplies them or transformers
builds the model. The ranges are far wider than any released model (the largest today: ~200 layers, ~30k hidden,
~1M vocabulary, 384 experts) and far narrower than what exhausts a machine.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from mldebug_cli.core.errors import InputError

# key -> (lowest, highest) whole-number value; a key that is absent or null is not checked here
SIZE_RANGES: Mapping[str, tuple[int, int]] = {
    "vocab_size": (1, 1 << 24),
    "hidden_size": (1, 1 << 18),
    "n_embd": (1, 1 << 18),
    "d_model": (1, 1 << 18),
    "num_hidden_layers": (1, 4096),
    "n_layer": (1, 4096),
    "num_layers": (1, 4096),
    "num_attention_heads": (1, 1 << 14),
    "n_head": (1, 1 << 14),
    "num_key_value_heads": (1, 1 << 14),
    "head_dim": (1, 1 << 14),
    "intermediate_size": (1, 1 << 20),
    "n_inner": (1, 1 << 20),
    "moe_intermediate_size": (1, 1 << 20),
    "shared_expert_intermediate_size": (0, 1 << 20),
    "num_experts": (0, 1 << 14),
    "num_local_experts": (0, 1 << 14),
    "n_routed_experts": (0, 1 << 14),
    "num_experts_per_tok": (0, 1 << 14),
    "max_position_embeddings": (1, 1 << 28),
    "n_positions": (1, 1 << 28),
}
NESTED = ("text_config",)  # multimodal configs keep the language model's sizes here


def checked_sizes(config: Mapping[str, Any], source: str) -> None:
    """Raise InputError naming ``source`` and the key for the first size outside its range or not a whole number."""
    for prefix, block in _blocks(config):
        for key, (low, high) in SIZE_RANGES.items():
            value = block.get(key)
            if value is not None:
                size(value, f"{prefix}{key}", source, low, high)


def size(value: Any, key: str, source: str, low: int, high: int) -> int:
    """``value`` as a whole number from ``low`` to ``high``; else an InputError naming the file and key."""
    number = _whole(value)
    if number is None:
        raise InputError(f"{source}: {key} must be a whole number, got {_shown(value)}")
    if not low <= number <= high:
        raise InputError(f"{source}: {key} is {_shown(value)}, outside the sane range {low:,} to {high:,}",
                         hint="a model config this large (or empty) is not a real model's; check the file")
    return number


def _blocks(config: Mapping[str, Any]):
    yield "", config
    for name in NESTED:
        block = config.get(name)
        if isinstance(block, Mapping):
            yield f"{name}.", block


def _whole(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return None


def _shown(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10 ** 30:
        return f"a {len(str(abs(value))):,}-digit number"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
