"""Goldens for vision DPO rows: what TRL's own DataCollatorForVisionPreference makes of generated rows.

Runs TRL 1.16's ``trl.trainer.dpo_trainer.DataCollatorForVisionPreference`` (one row per batch) with the real
processor built from fixtures/processors/<name> (tools/vl_harness.py, as for tools/vl_goldens.py) on rows that hypothesis generates
in the shapes users have: an ``images`` list (or one ``image``), a conversational ``prompt`` with string contents (TRL
inserts the images) or content parts with image placeholders (sometimes too few or too many), a prompt that ends with
an assistant turn (continued) or a system turn (refused), chosen/rejected replies as strings or parts (now and then
with an image part, or an unknown role), rows without a prompt column, images of every size and mode, and
max_length None, 1024 or small. Each case keeps the row and, per side, the ids the collator keeps (attention mask 1)
with its completion mask, and the image tokens the processor's grid implies (what the model's forward compares the
kept ids with); or the exception TRL raised.

    python tools/vl_dpo_goldens.py --cases 3000     # writes fixtures/trl-1.16.0-vision/dpo-goldens-qwen2-vl.json.gz
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent))
# through vl_goldens, which loads the harness: hypothesis draws the string literals of every local module loaded, and
# these goldens were drawn with the SFT suite's loaded too
from vl_goldens import image_spec, make_goldens, make_image, text  # noqa: E402


def content(draw: Any, as_parts: bool, images: int) -> Any:
    if not as_parts:
        return draw(text())
    parts: list[dict[str, Any]] = [{"type": "text", "text": draw(text())} for _ in range(draw(st.integers(0, 2)))]
    for _ in range(images):
        parts.insert(draw(st.integers(0, len(parts))), {"type": "image"})
    return parts


def reply(draw: Any) -> list[dict[str, Any]]:
    role = draw(st.sampled_from(("assistant",) * 30 + ("gpt",)))
    images = draw(st.sampled_from((0,) * 30 + (1,)))
    return [{"role": role, "content": content(draw, draw(st.booleans()) or images > 0, images)}]


@st.composite
def case(draw: Any) -> dict[str, Any]:
    images = draw(st.lists(image_spec(), min_size=0, max_size=3))
    as_parts = draw(st.booleans())
    placeholders = max(0, len(images) + draw(st.sampled_from((0,) * 14 + (1, -1)))) if as_parts else 0
    prompt: list[dict[str, Any]] = []
    if draw(st.booleans()):
        prompt.append({"role": "system", "content": draw(text())})
    turns = draw(st.integers(1, 3))
    left = placeholders
    for turn in range(turns):
        here = left if turn == turns - 1 else draw(st.integers(0, left))
        left -= here
        role = draw(st.sampled_from(("user",) * 12 + ("human",))) if turn == 0 else "user"
        prompt.append({"role": role, "content": content(draw, as_parts, here)})
        if turn < turns - 1:
            prompt.append({"role": "assistant", "content": draw(text())})
    ending = draw(st.sampled_from(("user",) * 24 + ("assistant", "system")))
    if ending != "user":
        prompt.append({"role": ending, "content": draw(text())})
    row: dict[str, Any] = {"prompt": prompt, "chosen": reply(draw), "rejected": reply(draw)}
    if draw(st.integers(0, 49)) == 0:
        del row["prompt"]
    column = "image" if len(images) == 1 and draw(st.integers(0, 4)) == 0 else "images"
    max_length = draw(st.sampled_from((None, 1024, 1024, "small")))
    if max_length == "small":
        max_length = draw(st.integers(4, 700))
    return {"row": row, "images": images, "column": column, "max_length": max_length}


def run_trl(processor: Any, generated: dict[str, Any]) -> dict[str, Any]:
    from trl.trainer.dpo_trainer import DataCollatorForVisionPreference

    collator = DataCollatorForVisionPreference(processor=processor, max_length=generated["max_length"])
    images = [make_image(s) for s in generated["images"]]
    example = json.loads(json.dumps(generated["row"]))
    if generated["column"] == "image":
        example["image"] = images[0]
    else:
        example["images"] = images
    try:
        out = collator([example])
    except Exception as exc:  # noqa: BLE001 - what TRL raises is the golden
        return {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"}
    sides = {}
    for k, side in enumerate(("chosen", "rejected")):
        mask = out["attention_mask"][k].tolist()
        ids = [i for i, m in zip(out["input_ids"][k].tolist(), mask) if m]
        completion = [c for c, m in zip(out["completion_mask"][k].tolist(), mask) if m]
        sides[side] = {"input_ids": ids, "completion_mask": completion}
    grid = out.get("image_grid_thw")
    merge = processor.image_processor.merge_size
    image_tokens = 0 if grid is None else int(sum(int(t * h * w) for t, h, w in grid.tolist()[:len(images)])) // merge**2
    return {**sides, "image_tokens": image_tokens}


if __name__ == "__main__":
    make_goldens(__doc__, case, run_trl, lambda processor: f"dpo-goldens-{processor}.json.gz",
                 "trl.trainer.dpo_trainer.DataCollatorForVisionPreference")
