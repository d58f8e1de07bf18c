"""A vision-language model's vision tower and projector, read from its ``config.json`` (no torch): parameters, the
linears LoRA can adapt, and the bytes the tower saves for backward per image patch.

Families (the outer config's ``model_type``): Qwen2-VL (a ViT with LayerNorms, fused qkv, a quick-GELU MLP and a
patch merger), Qwen2.5-VL (RMSNorms, a gated SiLU MLP, window attention), Gemma 3 (SigLIP, an average pool and a
soft-embedding RMSNorm projector), LLaVA (CLIP with a class token and a two-layer projector), Idefics3/SmolVLM
(SigLIP-style, pixel shuffle and one projection). Keys the config omits take the defaults of transformers' own
config classes (as ``shapes.with_class_defaults``). Parameter counts equal torch's own for random tiny models of
each family; the activation bytes equal saved-tensor hooks on CPU (tests/memory/test_vision_accounting.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mldebug_cli.memory.linear import Linear

# what a vision family is built of, by the outer config's model_type
FAMILIES = {"qwen2_vl": "qwen2_vl", "qwen2_5_vl": "qwen2_5_vl", "gemma3": "siglip", "idefics3": "idefics3",
            "llava": "clip"}
# CUDA's native_layer_norm saves mean and rstd in fp32 for bf16/fp16 inputs (acc type); CPU saves them in the
# input's dtype (what the CPU tests measure, and correct for)
LAYERNORM_STATS = 8
# MLP tensors saved per patch, in units of the MLP width: GELU (its input and output), quick-GELU (the input, the
# sigmoid, the product), a gated SiLU MLP (gate, up, SiLU output, product)
MLP_SAVED = {"gelu": 2, "gelu_pytorch_tanh": 2, "quick_gelu": 3, "gated": 4}


@dataclass(frozen=True)
class VisionShape:
    model_type: str  # the outer config's (qwen2_vl, gemma3, ...)
    family: str  # qwen2_vl, qwen2_5_vl, siglip, clip, idefics3
    width: int  # the tower's hidden size
    layers: int
    heads: int
    mlp: int  # MLP width
    act: str  # the MLP activation: gelu, quick_gelu, gated
    patch: int
    channels: int
    text_hidden: int
    temporal_patch: int = 1  # Qwen: frames per patch (an image is repeated to fill them)
    merge: int = 1  # Qwen: spatial merge; Idefics3: pixel-shuffle scale factor
    merger_out: int = 0  # Qwen: the merger's output width
    image_size: int = 0  # SigLIP/CLIP: the square each image (or tile) is resized to
    head: bool = False  # SigLIP's attention-pooling head (vision_use_head)
    tokens_per_image: int = 0  # Gemma 3: soft tokens per image after the average pool
    projector_bias: bool = True  # LLaVA's multimodal_projector_bias
    window_patches: int = 0  # Qwen2.5-VL: patches per attention window in the windowed blocks
    full_attention_blocks: tuple[int, ...] = ()

    # -------------------------------------------------------------------------------------------- parameters

    @property
    def positions(self) -> int:
        """Learned position embeddings (SigLIP/CLIP/Idefics3; CLIP adds its class token)."""
        if self.family in ("qwen2_vl", "qwen2_5_vl"):
            return 0
        return (self.image_size // self.patch) ** 2 + (1 if self.family == "clip" else 0)

    @property
    def layer_linears(self) -> tuple[Linear, ...]:
        d, m = self.width, self.mlp
        if self.family in ("qwen2_vl", "qwen2_5_vl"):
            attention: tuple[Linear, ...] = (Linear("qkv", d, 3 * d, True), Linear("proj", d, d, True))
        else:
            attention = tuple(Linear(n, d, d, True) for n in ("q_proj", "k_proj", "v_proj", "out_proj"))
        if self.act == "gated":
            return attention + (Linear("gate_proj", d, m, True), Linear("up_proj", d, m, True),
                                Linear("down_proj", m, d, True))
        return attention + (Linear("fc1", d, m, True), Linear("fc2", m, d, True))

    @property
    def norm_parameters(self) -> int:
        """One layer's two norms: LayerNorm weight and bias, or RMSNorm weight."""
        return 2 * self.width * (1 if self.family == "qwen2_5_vl" else 2)

    @property
    def tower_parameters(self) -> int:
        """Patch embedding, position embeddings, the layers, the final norms (the tower a freeze flag freezes)."""
        d = self.width
        patch_embed = self.channels * self.temporal_patch * self.patch ** 2 * d
        if self.family in ("siglip", "idefics3"):
            patch_embed += d  # SigLIP's patch Conv2d has a bias; CLIP's and Qwen's have none
        layer = sum(x.parameters for x in self.layer_linears) + self.norm_parameters
        total = patch_embed + self.positions * d + self.layers * layer
        if self.family in ("siglip", "idefics3"):
            total += 2 * d  # post_layernorm
        if self.family == "clip":
            total += d + 4 * d  # class embedding, pre_layrnorm and post_layernorm
        if self.head:
            total += d + (3 * d * d + 3 * d) + (d * d + d) + 2 * d + self.mlp * d * 2 + self.mlp + d
        return total

    @property
    def projector_linears(self) -> tuple[Linear, ...]:
        if self.family in ("qwen2_vl", "qwen2_5_vl"):
            merged = self.width * self.merge ** 2
            return (Linear("mlp.0", merged, merged, True), Linear("mlp.2", merged, self.merger_out, True))
        if self.family == "clip":
            return (Linear("linear_1", self.width, self.text_hidden, self.projector_bias),
                    Linear("linear_2", self.text_hidden, self.text_hidden, self.projector_bias))
        if self.family == "idefics3":
            return (Linear("proj", self.width * self.merge ** 2, self.text_hidden),)
        return ()  # Gemma 3 projects with a bare parameter matrix, not a Linear

    @property
    def projector_parameters(self) -> int:
        """The merger or multimodal projector (its own freeze flag)."""
        total = sum(x.parameters for x in self.projector_linears)
        if self.family == "qwen2_vl":
            total += 2 * self.width  # ln_q LayerNorm
        elif self.family == "qwen2_5_vl":
            total += self.width  # ln_q RMSNorm
        elif self.family == "siglip":
            total += self.width * self.text_hidden + self.width  # mm_input_projection_weight, mm_soft_emb_norm
        return total

    @property
    def parameters(self) -> int:
        return self.tower_parameters + self.projector_parameters

    def lora_parameters(self, r: int, tower: bool, projector: bool, dora: bool = False,
                        names: set[str] | None = None) -> int:
        """LoRA on the tower's and the projector's linears: every one for ``all-linear`` (``names`` None: peft
        adapts every Linear but the LM head, the vision ones too), else those whose last name is targeted."""
        modules = list(self.layer_linears) * self.layers if tower else []
        if tower and self.head:
            modules += [Linear("out_proj", self.width, self.width), Linear("fc1", self.width, self.mlp),
                        Linear("fc2", self.mlp, self.width)]
        modules += list(self.projector_linears) if projector else []
        if names is not None:
            modules = [x for x in modules if x.name.rsplit(".", 1)[-1] in names]
        return sum(r * (x.fan_in + x.fan_out) + (x.fan_out if dora else 0) for x in modules)

    # ------------------------------------------------------------------------------------------- patches

    def patches(self, image_tokens: int) -> int:
        """Patches the tower runs for an image the processor gave ``image_tokens`` image tokens (Idefics3: all its
        tiles; Gemma 3: each pan-and-scan crop a view of its own)."""
        if self.family in ("qwen2_vl", "qwen2_5_vl", "idefics3"):
            return image_tokens * self.merge ** 2
        if self.family == "siglip":
            return self.positions * max(1, -(-image_tokens // max(1, self.tokens_per_image)))
        return self.positions  # one fixed-size view per image (CLIP's class token included)

    def attention_groups(self, image_tokens: int) -> list[int]:
        """The patch counts attention runs over, one per image (Idefics3: per tile; Qwen2.5-VL: per image, and per
        window in its windowed blocks, reported by ``window_patches``)."""
        if self.family == "idefics3":
            tile = (self.image_size // self.patch) ** 2
            return [tile] * max(1, self.patches(image_tokens) // tile)
        return [self.patches(image_tokens)]

    # --------------------------------------------------------------------------------------- activations

    def layer_bytes_per_patch(self, cb: int, eager: bool, stats: int = LAYERNORM_STATS) -> int:
        """Bytes one trained tower layer saves per patch, besides eager attention's probabilities (counted per
        group by ``eager_probability_bytes``): norms (LayerNorm: input, fp32 mean and rstd, output; RMSNorm: fp32
        input, rsqrt, normalised and scaled outputs), attention (Qwen: q and k after rotary, the fused qkv output
        that v is a view of, the output and o's input; SigLIP/CLIP: q, k, v and the output), sdpa's fp32
        log-sum-exp per head, and the MLP's tensors."""
        d = self.width
        norms = 2 * (4 * d + 4 + 2 * cb * d) if self.family == "qwen2_5_vl" else 2 * (2 * cb * d + stats)
        qwen = self.family in ("qwen2_vl", "qwen2_5_vl")
        attention = cb * d * ((6 if eager else 7) if qwen else 4) + (0 if eager else 4 * self.heads)
        return norms + attention + MLP_SAVED[self.act] * cb * self.mlp

    def eager_probability_bytes(self, groups: list[int]) -> int:
        """Eager attention keeps each head's probabilities in fp32 (softmax) and the compute dtype (P·V): 6 bytes
        per head per query per key, over each group's patches."""
        return sum(6 * self.heads * n * n for n in groups)

    def fixed_bytes(self, cb: int, images: int, patches: int, tower_trains: bool, projector_trains: bool,
                    stats: int = LAYERNORM_STATS) -> int:
        """What the tower saves outside its layers for ``images`` images of ``patches`` patches in all: the pixels
        (for the patch embedding's weight), position ids, rotary tables, final norms, and the projector's inputs."""
        d = self.width
        total = 0
        if tower_trains:
            pixels = patches - images if self.family == "clip" else patches  # CLIP's class token has no pixels
            total += cb * self.channels * self.temporal_patch * self.patch ** 2 * pixels
            if self.family in ("qwen2_vl", "qwen2_5_vl"):
                total += 8 * (d // self.heads) * patches  # fp32 cos and sin of the 2-D rotary, per patch
                if self.family == "qwen2_5_vl":
                    total += 2 * 8 * patches // self.merge ** 2  # window index and its reverse, int64 per token
            elif self.family == "idefics3":
                total += 8 * patches  # position ids per patch (int64)
            elif self.family == "siglip":
                total += 8 * self.positions  # one row of position ids, shared
            else:
                # CLIP: pre_layrnorm over every position, post_layernorm's statistics over the class tokens
                total += 8 * self.positions + patches * (2 * cb * d + stats) + images * stats
        if self.family == "qwen2_vl":  # merger: ln_q, then the MLP's input, hidden and GELU output
            return total + (patches * (cb * d + stats) if tower_trains or projector_trains else 0) + (
                3 * cb * d * patches if tower_trains or projector_trains else 0)
        if self.family == "qwen2_5_vl":
            return total + ((4 * d + 4 + cb * d + 3 * cb * d) * patches if tower_trains or projector_trains else 0)
        if self.family == "siglip":  # post_layernorm, the pool's input copy, the soft-embedding norm per token
            tokens = patches // max(1, self.positions) * self.tokens_per_image  # every view's soft tokens
            post = patches * (cb * d + stats + cb * d) if tower_trains else 0
            return total + post + (tokens * (10 * d + 4) + 4 * d if tower_trains or projector_trains else 0)
        if self.family == "idefics3":  # post_layernorm, the pixel-shuffled projection input
            post = patches * (cb * d + stats) if tower_trains else 0
            return total + post + (cb * d * patches if tower_trains or projector_trains else 0)
        # CLIP (LLaVA): the selected layer's patches copied for the projector, its hidden and GELU output
        tokens = patches - images
        return total + (tokens * (cb * d + 2 * cb * self.text_hidden) if tower_trains or projector_trains else 0)

    def describe(self) -> str:
        return (f"vision {self.family}: {self.parameters / 1e6:.1f}M parameters ({self.tower_parameters / 1e6:.1f}M "
                f"tower, {self.projector_parameters / 1e6:.1f}M projector), {self.layers} layers, width {self.width}")


def vision_shape(config: dict[str, Any], text_hidden: int) -> VisionShape | None:
    """The vision tower of a vision-language ``config.json`` (None: no ``vision_config``, or a family not modelled)."""
    model_type = str(config.get("model_type") or "")
    family = FAMILIES.get(model_type)
    if family is None or not isinstance(config.get("vision_config"), dict):
        return None
    vision = _vision_defaults(config)

    def get(key: str, default: Any = None) -> Any:
        return vision.get(key, default)

    if family in ("qwen2_vl", "qwen2_5_vl"):
        qwen25 = family == "qwen2_5_vl"
        width = int(get("hidden_size") if qwen25 else get("embed_dim"))
        window = int(get("window_size") or 0) // int(get("patch_size"))
        return VisionShape(
            model_type, family, width, int(get("depth")), int(get("num_heads")),
            int(get("intermediate_size")) if qwen25 else int(width * float(get("mlp_ratio"))),
            "gated" if qwen25 else str(get("hidden_act")), int(get("patch_size")), int(get("in_channels")),
            text_hidden, temporal_patch=int(get("temporal_patch_size")), merge=int(get("spatial_merge_size")),
            merger_out=int(get("out_hidden_size") if qwen25 else get("hidden_size")),
            window_patches=window * window if qwen25 else 0,
            full_attention_blocks=tuple(int(i) for i in get("fullatt_block_indexes") or ()) if qwen25 else ())
    return VisionShape(
        model_type, family, int(get("hidden_size")), int(get("num_hidden_layers")), int(get("num_attention_heads")),
        int(get("intermediate_size")), str(get("hidden_act")), int(get("patch_size")),
        int(get("num_channels") or 3), text_hidden,
        merge=int(get("outer.scale_factor") or 2) if family == "idefics3" else 1,
        image_size=int(get("image_size")), head=bool(get("vision_use_head")) if family == "siglip" else False,
        tokens_per_image=int(get("outer.mm_tokens_per_image") or 256) if family == "siglip" else 0,
        projector_bias=bool(get("outer.multimodal_projector_bias", True)))


def _vision_defaults(config: dict[str, Any]) -> dict[str, Any]:
    """``vision_config`` completed by transformers' config class for the model (what ``from_pretrained`` builds),
    with the outer config's keys that shape the projector (``scale_factor``, ``mm_tokens_per_image``,
    ``multimodal_projector_bias``)."""
    from mldebug_cli.sources.tokenizer import torch_hidden_from_transformers

    with torch_hidden_from_transformers():
        from transformers import CONFIG_MAPPING

        cls = CONFIG_MAPPING[str(config["model_type"])]
        built = cls(**{k: v for k, v in config.items() if k != "model_type"})
    vision = built.vision_config.to_dict()
    for key in ("scale_factor", "mm_tokens_per_image", "multimodal_projector_bias"):
        if hasattr(built, key):
            vision[f"outer.{key}"] = getattr(built, key)
    return vision
