"""The tokens the rows train on that the base model may never have learned, and whether the run can change them."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from mldebug_cli.probe.subject import TokenRows


def added_tokens(tokenizer_dir: str) -> dict[int, str]:
    """id -> text of the tokenizer's added tokens (tokenizer.json ``added_tokens``), parsed once per version of the
    file."""
    path = Path(tokenizer_dir) / "tokenizer.json"
    try:
        stat = path.stat()
    except OSError:
        return {}
    return dict(_added_tokens(str(path), stat.st_mtime_ns, stat.st_size))


@functools.lru_cache(maxsize=32)
def _added_tokens(path: str, mtime_ns: int, size: int) -> tuple[tuple[int, str], ...]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ()
    if not isinstance(data, dict) or not isinstance(data.get("added_tokens", []), list):
        return ()
    return tuple((t["id"], t["content"]) for t in data.get("added_tokens", []) if isinstance(t, dict) and "id" in t)


def token_rows(model: Any, tokenizer_dir: str, trained: dict[int, list[int]], names: list[str],
               grads: list[Any]) -> list[TokenRows]:
    """For each added token in trained labels (``trained``: token id -> rows): how its rows compare with a typical
    row, and whether a trainable parameter can change its output row."""
    import torch

    added = {i: text for i, text in added_tokens(tokenizer_dir).items() if i in trained}
    if not added:
        return []
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    input_rows = _weight(base.get_input_embeddings())
    output_rows = _weight(base.get_output_embeddings())
    ways = _ways(model, names, grads, tied=output_rows is None or output_rows.data_ptr() == input_rows.data_ptr())
    out = []
    with torch.no_grad():
        in_norms = input_rows.float().norm(dim=-1)
        out_norms = output_rows.float().norm(dim=-1) if output_rows is not None else in_norms
        in_median, out_median = float(in_norms.median()), float(out_norms.median())
        for token_id, text in sorted(added.items()):
            if token_id >= in_norms.numel():
                continue
            ratio = min(float(in_norms[token_id]) / max(in_median, 1e-30), float(out_norms[token_id]) / max(out_median, 1e-30))
            learnable, how, grad_rows = _learnable(ways, token_id)
            grad_norm = float(grad_rows[token_id].float().norm()) if grad_rows is not None else None
            out.append(TokenRows(token_id, text, tuple(sorted(set(trained[token_id]))), ratio, learnable, how, grad_norm))
    return out


def _weight(module: Any) -> Any:
    if module is None:
        return None
    inner = getattr(module, "original_module", None)  # peft's ModulesToSaveWrapper
    return (inner if inner is not None else module).weight


def _ways(model: Any, names: list[str], grads: list[Any], tied: bool) -> list[tuple[str, Any, Any]]:
    """(how, token ids it covers or None for all, gradient rows or None) for each trainable way to change an output
    row: lm_head (or the tied embedding) trained whole, peft trainable tokens, LoRA on the output layer."""
    grad_of = dict(zip(names, grads))
    heads = ("lm_head",) + (("embed_tokens", "wte", "word_embeddings") if tied else ())
    ways: list[tuple[str, set[int] | None, Any]] = []
    for name, param in model.named_parameters():
        if not param.requires_grad or not any(h in name for h in heads):
            continue
        if "trainable_tokens_delta" in name:
            continue  # listed below with its token indices
        how = "LoRA on the output layer" if "lora_" in name else (
            "modules_to_save" if "modules_to_save" in name else "full fine-tuning")
        rows = grad_of.get(name) if "lora_" not in name else None
        ways.append((how, None, rows))
    for name, module in model.named_modules():
        indices = getattr(module, "token_indices", None)
        if isinstance(indices, dict) and any(h in name for h in heads):
            covered = {i for values in indices.values() for i in values}
            ways.append(("trainable_token_indices", covered, None))
    return ways


def _learnable(ways: list[tuple[str, Any, Any]], token_id: int) -> tuple[bool, str, Any]:
    for how, covered, rows in ways:
        if covered is None or token_id in covered:
            return True, how, rows
    return False, "its embedding and output rows are frozen", None
