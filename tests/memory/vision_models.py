"""Tiny random vision-language configs of each family modelled by ``mldebug_cli.memory.vision`` (the published
configs' layouts at test size), and the saved-tensor measurement the accounting tests compare against."""

from __future__ import annotations

from typing import Any

TEXT = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2,
            vocab_size=1000)
VISION = dict(hidden_size=32, intermediate_size=48, num_attention_heads=4, image_size=112, patch_size=14)


def tiny_config(family: str, depth: int, width: int = 32, mlp: int = 48, heads: int = 4, head: bool = False,
                text_hidden: int = 64) -> dict[str, Any]:
    """A config.json dict of ``family`` (a model_type) with a ``depth``-layer vision tower."""
    text = dict(TEXT, hidden_size=text_hidden)
    vision = dict(VISION, hidden_size=width, intermediate_size=mlp, num_attention_heads=heads, num_hidden_layers=depth)
    if family == "qwen2_vl":
        return dict(model_type=family, text_config=dict(text, model_type="qwen2_vl_text"),
                    vision_config=dict(depth=depth, embed_dim=width, hidden_size=text_hidden, num_heads=heads))
    if family == "qwen2_5_vl":
        return dict(model_type=family, text_config=dict(text, model_type="qwen2_5_vl_text"),
                    vision_config=dict(depth=depth, hidden_size=width, out_hidden_size=text_hidden,
                                       intermediate_size=mlp, num_heads=heads, fullatt_block_indexes=[],
                                       window_size=112))
    if family == "gemma3":
        return dict(model_type=family, text_config=dict(text, head_dim=16, model_type="gemma3_text"),
                    vision_config=dict(vision, vision_use_head=head, model_type="siglip_vision_model"),
                    mm_tokens_per_image=16)
    if family == "llava":
        return dict(model_type=family, text_config=dict(text, model_type="llama"),
                    vision_config=dict(vision, model_type="clip_vision_model", projection_dim=16),
                    vision_feature_layer=-1)
    if family == "idefics3":
        return dict(model_type=family, text_config=dict(text, model_type="llama"),
                    vision_config=dict(vision, model_type="idefics3_vision"), scale_factor=2)
    raise ValueError(family)
